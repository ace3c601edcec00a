"""muir.torch.NorMuon: Muon with NorMuon's row normalisation, on a 2-D
matrix, a 3-D stack, a 4-D convolution weight (the matrix [out, in*kh*kw])
beside AdamW parameters (a bias, an embedding), 4 steps with new gradients
and the lr changed by hand, each checked against the float64 reference
written from the formulas (docs/description.md, optimizer.normuon;
test/lib/muir_reference.py: normuon_update). Then: the state's shapes,
state_dict after 2 steps loaded into a new optimizer giving the 4-step
run's bits, a parameter without a gradient skipped bit for bit, and bad
arguments.
"""
import inspect
import io

import numpy as np
import torch

import muir.torch
import muir_reference as ref
import torchtest

TOL = 2e-5
failures = torchtest.Failures("torch-normuon", verbose=True)
check = failures.check


def make():
    torch.manual_seed(3)
    return {"up": torch.nn.Parameter(0.02 * torch.randn(48, 32)),
            "experts": torch.nn.Parameter(0.02 * torch.randn(3, 16, 24)),
            "conv": torch.nn.Parameter(0.02 * torch.randn(8, 4, 3, 3)),
            "bias": torch.nn.Parameter(torch.zeros(8)),
            "embed.weight": torch.nn.Parameter(0.02 * torch.randn(20, 8))}


def grads(params, k):
    g = torch.Generator().manual_seed(100 + k)
    for p in params.values():
        p.grad = torch.randn(p.shape, generator=g)


SETTINGS = dict(lr=0.02, momentum=0.9, weight_decay=0.01, beta2=0.9,
                eps2=1e-8, adamw_lr=1e-3)
params = make()
opt = muir.torch.NorMuon(list(params.items()), cache_dir=None, **SETTINGS)
kinds = {opt._info[p]["name"]: opt._info[p]["optimizer"]
         for p in params.values()}
print("takes NorMuon:", " ".join(n for n in sorted(kinds)
                                 if kinds[n] == "muon"))
print("takes AdamW:", " ".join(n for n in sorted(kinds)
                               if kinds[n] == "adamw"))

# The float64 reference, state from zeros as the optimizer starts.
refs = {}
for name, p in params.items():
    shape = opt._info[p]["desc_shape"]
    w = p.detach().double().numpy().reshape(shape)
    if kinds[name] == "muon":
        refs[name] = (w, np.zeros(shape), np.zeros(shape[:-1]))
    else:
        refs[name] = (w, np.zeros(shape), np.zeros(shape))
worst = 0.0
saved = None
for k in range(4):
    lr = 0.02 if k < 2 else 0.01
    opt.param_groups[0]["lr"] = lr
    grads(params, k)
    for name, p in params.items():
        shape = opt._info[p]["desc_shape"]
        g = p.grad.double().numpy().reshape(shape)
        W, M, v = refs[name]
        if kinds[name] == "muon":
            refs[name] = ref.normuon_update(W, g, M, v, lr, beta=0.9,
                                              weight_decay=0.01, beta2=0.9,
                                              eps2=1e-8)
        else:
            refs[name] = ref.adamw_update(W, g, M, v, k + 1, lr=1e-3,
                                          beta1=0.9, beta2=0.95, eps=1e-8,
                                          weight_decay=0.0)
    before = {n: p.detach().double().numpy().copy()
              for n, p in params.items()}
    opt.step()
    for name, p in params.items():
        shape = opt._info[p]["desc_shape"]
        got = p.detach().double().numpy().reshape(shape)
        want = refs[name][0]
        e = ref.rel_fro(got - before[name].reshape(shape),
                        want - before[name].reshape(shape))
        worst = max(worst, e)
    if k == 1:
        buf = io.BytesIO()
        torch.save({"params": {n: p.detach().clone()
                               for n, p in params.items()},
                    "opt": opt.state_dict()}, buf)
        saved = buf.getvalue()
check(worst <= TOL, "4 steps within %g of the float64 reference (worst "
      "update error %.2e)" % (TOL, worst))
for name in ("up", "experts", "conv"):
    st = opt.state[params[name]]
    v = st["variance"].double().numpy()
    e = ref.rel_fro(v, refs[name][2])
    check(e <= TOL, "%s variance %s within %g (%.2e)"
          % (name, tuple(st["variance"].shape), TOL, e))
check(sorted(opt.state[params["up"]]) == ["momentum_buffer", "variance"],
      "state keys: %s" % ", ".join(sorted(opt.state[params["up"]])))

# state_dict after step 2 into a new optimizer: steps 3 and 4 the same bits.
blob = torch.load(io.BytesIO(saved))
params2 = make()
for n, p in params2.items():
    p.data.copy_(blob["params"][n])
opt2 = muir.torch.NorMuon(list(params2.items()), cache_dir=None, **SETTINGS)
opt2.load_state_dict(blob["opt"])
for k in (2, 3):
    opt2.param_groups[0]["lr"] = 0.01
    grads(params2, k)
    opt2.step()
same = all(torch.equal(params[n], params2[n]) for n in params) and all(
    torch.equal(opt.state[params[n]][key], opt2.state[params2[n]][key])
    for n in ("up", "experts", "conv")
    for key in ("momentum_buffer", "variance"))
check(same, "state_dict after 2 steps, 2 more: the 4-step run's bits")

# A parameter without a gradient is skipped, its state bit for bit.
keep = {k: t.clone() for k, t in opt.state[params["up"]].items()}
w = params["up"].detach().clone()
grads(params, 9)
params["up"].grad = None
opt.step()
check(torch.equal(params["up"], w) and all(
    torch.equal(opt.state[params["up"]][k], keep[k]) for k in keep),
      "no gradient: up, its momentum and variance unchanged")

# Bad arguments.
for kwargs, exc in ((dict(scale_mode="shape"), TypeError),
                    (dict(beta2=1.0), ValueError),
                    (dict(eps2=0.0), ValueError)):
    try:
        muir.torch.NorMuon(list(make().items()), **kwargs)
        check(False, "NorMuon(%s) raises %s" % (kwargs, exc.__name__))
    except exc as e:
        check(True, "NorMuon(%s) raises %s: %s" % (kwargs, exc.__name__, e))

# The classes' keyword defaults are the description sections' (the
# registry's, muir.optimizers()): Muon's and AdamW's for Muon, NorMuon's
# for NorMuon.
sections = muir.optimizers()
for cls, section, names in (
        (muir.torch.Muon, "muon",
         ("lr", "momentum", "nesterov", "weight_decay", "ns_steps",
          "schedule", "scale_mode", "scale_extra")),
        (muir.torch.NorMuon, "normuon",
         ("lr", "momentum", "nesterov", "weight_decay", "ns_steps",
          "schedule", "scale_extra", "beta2", "eps2"))):
    params_ = inspect.signature(cls.__init__).parameters
    wrong = [k for k in names
             if params_[k].default != sections[section].settings[k]]
    if cls is muir.torch.Muon:
        adamw = sections["adamw"].settings
        given = {"adamw_betas": (adamw["beta1"], adamw["beta2"]),
                 "adamw_eps": adamw["eps"],
                 "adamw_weight_decay": adamw["weight_decay"]}
        wrong += [k for k, v in given.items() if params_[k].default != v]
    check(not wrong and set(names) <= set(sections[section].settings),
          "%s's defaults are optimizer.%s's%s" % (
              cls.__name__, section,
              " (not: %s)" % ", ".join(wrong) if wrong else ""))
failures.finish()
