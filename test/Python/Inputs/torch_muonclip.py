"""muir.torch.Muon with MuonClip (qk_clip=tau, attention=[...]): an MHA
block (q and k given as tensors) and a GQA block (given by name) beside an
unclipped matrix and AdamW parameters, 3 steps with new gradients and new
max_logits (heads over tau, at it, under it), each checked against the
float64 reference written from the formulas (docs/description.md,
"MuonClip"; test/lib/muir_reference.py: muon_update then qk_clip). Then:
the optimizer state is the unclipped Muon's (the clip changes no state), a
block whose q and k have no gradient is skipped bit for bit and needs no
max_logits, muir.torch.NorMuon clips too (on float32 and on float64
parameters, these within 1e-8), and bad arguments are refused
with nothing changed.
"""
import numpy as np
import torch

import muir.torch
import muir_reference as ref
import torchtest

TOL = 2e-5
TAU = 30.0
failures = torchtest.Failures("torch-muonclip", verbose=True)
check = failures.check


def make():
    torch.manual_seed(5)
    return {"mha.q": torch.nn.Parameter(0.02 * torch.randn(32, 24)),
            "mha.k": torch.nn.Parameter(0.02 * torch.randn(32, 24)),
            "gqa.q": torch.nn.Parameter(0.02 * torch.randn(48, 24)),
            "gqa.k": torch.nn.Parameter(0.02 * torch.randn(16, 24)),
            "o": torch.nn.Parameter(0.02 * torch.randn(24, 32)),
            "norm.bias": torch.nn.Parameter(torch.zeros(24))}


def grads(params, k):
    g = torch.Generator().manual_seed(200 + k)
    for p in params.values():
        p.grad = torch.randn(p.shape, generator=g)


# name: (q, k, heads, kv_heads); per step each block's max_logits.
BLOCKS = {"mha": ("mha.q", "mha.k", 4, 4), "gqa": ("gqa.q", "gqa.k", 6, 2)}
LOGITS = [{"mha": [10.0, 45.0, 30.0, 60.0], "gqa": [5, 90, 1, 31, 2, 3]},
          {"mha": [29.0, 1.0, -3.0, 100.0], "gqa": [1, 2, 3, 4, 5, 6]},
          {"mha": [31.0, 32.0, 33.0, 34.0], "gqa": [300, 1, 1, 1, 1, 40]}]
SETTINGS = dict(lr=0.02, momentum=0.9, weight_decay=0.01, adamw_lr=1e-3,
                cache_dir=None)


def blocks(params):
    return [dict(name="mha", q=params["mha.q"], k=params["mha.k"], heads=4),
            dict(name="gqa", q="gqa.q", k="gqa.k", heads=6, kv_heads=2)]


params = make()
opt = muir.torch.Muon(list(params.items()), qk_clip=TAU,
                      attention=blocks(params), **SETTINGS)
refs = {n: (p.detach().double().numpy(), np.zeros(p.shape),
            np.zeros(p.shape)) for n, p in params.items()}
worst = 0.0
for k in range(3):
    grads(params, k)
    for n, p in params.items():
        W, M, V = refs[n]
        g = p.grad.double().numpy()
        if n == "norm.bias":
            refs[n] = ref.adamw_update(W, g, M, V, k + 1, lr=1e-3, beta1=0.9,
                                       beta2=0.95, eps=1e-8)
        else:
            refs[n] = ref.muon_update(W, g, M, 0.02, beta=0.9,
                                      weight_decay=0.01) + (None,)
    for b, (q, kk, heads, kv) in BLOCKS.items():
        x = np.asarray(LOGITS[k][b], np.float32).astype(np.float64)
        wq, wk = ref.qk_clip(refs[q][0], refs[kk][0], x, TAU, heads, kv)
        refs[q] = (wq,) + refs[q][1:]
        refs[kk] = (wk,) + refs[kk][1:]
    before = {n: p.detach().double().numpy().copy()
              for n, p in params.items()}
    opt.step(max_logits={b: torch.tensor(LOGITS[k][b]) for b in BLOCKS})
    for n, p in params.items():
        e = ref.rel_fro(p.detach().double().numpy() - before[n],
                        refs[n][0] - before[n])
        worst = max(worst, e)
check(worst <= TOL, "3 steps, MHA and GQA, some heads clipped: within %g "
      "of the float64 reference (worst update error %.2e)" % (TOL, worst))
state_err = max(ref.rel_fro(opt.state[params[n]]["momentum_buffer"].double()
                            .numpy(), refs[n][1])
                for n in ("mha.q", "mha.k", "gqa.q", "gqa.k"))
check(state_err <= 1e-6, "momenta as Muon's without the clip (%.2e)"
      % state_err)

# q and k without gradients: skipped bit for bit, no max_logits needed.
keep = {n: params[n].detach().clone() for n in ("mha.q", "mha.k")}
grads(params, 7)
params["mha.q"].grad = None
params["mha.k"].grad = None
opt.step(max_logits={"gqa": torch.tensor([1.0, 2, 3, 4, 5, 6])})
check(all(torch.equal(params[n], keep[n]) for n in keep),
      "mha's q and k without gradients: unchanged, no max_logits needed")

# NorMuon clips too.
p2 = make()
nm = muir.torch.NorMuon(list(p2.items()), qk_clip=TAU, attention=blocks(p2),
                        lr=0.02, momentum=0.9, cache_dir=None)
grads(p2, 0)
W0 = {n: p2[n].detach().double().numpy().copy() for n in p2}
nm.step(max_logits={b: torch.tensor(LOGITS[0][b]) for b in BLOCKS})
e = 0.0
for b, (q, kk, heads, kv) in BLOCKS.items():
    w = {}
    for n in (q, kk):
        w[n] = ref.normuon_update(W0[n], p2[n].grad.double().numpy(),
                                  np.zeros(W0[n].shape),
                                  np.zeros(W0[n].shape[0]), 0.02,
                                  beta=0.9)[0]
    x = np.asarray(LOGITS[0][b], np.float32).astype(np.float64)
    wq, wk = ref.qk_clip(w[q], w[kk], x, TAU, heads, kv)
    for n, want in ((q, wq), (kk, wk)):
        e = max(e, ref.rel_fro(p2[n].detach().double().numpy() - W0[n],
                               want - W0[n]))
check(e <= TOL, "NorMuon with qk_clip: within %g (%.2e)" % (TOL, e))

# float64 parameters: NorMuon and the clip in float64 (1e-8, the bound of
# a float64 step; float32 maths is at 1e-7 and above).
p3 = {n: torch.nn.Parameter(t.detach().double()) for n, t in make().items()}
nm64 = muir.torch.NorMuon(list(p3.items()), qk_clip=TAU,
                          attention=blocks(p3), lr=0.02, momentum=0.9,
                          cache_dir=None)
g = torch.Generator().manual_seed(200)
for t in p3.values():
    t.grad = torch.randn(t.shape, generator=g, dtype=torch.float64)
W0 = {n: p3[n].detach().numpy().copy() for n in p3}
nm64.step(max_logits={b: torch.tensor(LOGITS[0][b]) for b in BLOCKS})
e = 0.0
for b, (q, kk, heads, kv) in BLOCKS.items():
    w = {n: ref.normuon_update(W0[n], p3[n].grad.numpy(),
                               np.zeros(W0[n].shape),
                               np.zeros(W0[n].shape[0]), 0.02,
                               beta=0.9)[0] for n in (q, kk)}
    x = np.asarray(LOGITS[0][b], np.float32).astype(np.float64)
    wq, wk = ref.qk_clip(w[q], w[kk], x, TAU, heads, kv)
    for n, want in ((q, wq), (kk, wk)):
        e = max(e, ref.rel_fro(p3[n].detach().numpy() - W0[n], want - W0[n]))
check(e <= 1e-8 and all(p.dtype is torch.float64 for p in p3.values()),
      "float64 NorMuon with qk_clip: float64 parameters within 1e-8 (%.2e)"
      % e)

# Bad arguments, refused with nothing changed.
grads(params, 8)
snapshot = {n: p.detach().clone() for n, p in params.items()}
good = {b: torch.tensor(LOGITS[0][b]) for b in BLOCKS}
for what, logits in (
        ("a missing block", {"mha": good["mha"]}),
        ("an unknown block", dict(good, attn=torch.zeros(4))),
        ("a wrong shape", dict(good, mha=torch.zeros(5))),
        ("a NaN", dict(good, mha=torch.tensor([1.0, float("nan"), 2, 3]))),
        ("an infinity", dict(good, gqa=torch.tensor(
            [1.0, 2, float("inf"), 4, 5, 6])))):
    try:
        opt.step(max_logits=logits)
        check(False, "step with %s raises ValueError" % what)
    except ValueError as err:
        check(True, "step with %s raises ValueError: %s" % (what, err))
check(all(torch.equal(params[n], snapshot[n]) for n in params),
      "after the refused steps: every parameter unchanged")
try:
    muir.torch.Muon(list(make().items()), **SETTINGS).step(
        max_logits=good)
    check(False, "max_logits without attention blocks raises ValueError")
except ValueError as err:
    check(True, "max_logits without attention blocks raises ValueError: %s"
          % err)
for what, kwargs in (
        ("attention without qk_clip", dict(attention=[])),
        ("qk_clip 0", dict(qk_clip=0.0, attention=[])),
        ("heads not dividing q's rows",
         dict(qk_clip=1.0, attention=[dict(name="a", q="mha.q", k="mha.k",
                                           heads=5)])),
        ("heads not a multiple of kv_heads",
         dict(qk_clip=1.0, attention=[dict(name="a", q="mha.q", k="mha.k",
                                           heads=4, kv_heads=3)])),
        ("a q that is no parameter",
         dict(qk_clip=1.0, attention=[dict(name="a", q="nope", k="mha.k",
                                           heads=4)])),
        ("a parameter in two blocks",
         dict(qk_clip=1.0, attention=[
             dict(name="a", q="mha.q", k="mha.k", heads=4),
             dict(name="b", q="gqa.q", k="mha.k", heads=4)]))):
    try:
        muir.torch.Muon(list(make().items()), cache_dir=None, **kwargs)
        check(False, "%s raises ValueError" % what)
    except ValueError as err:
        check(True, "%s raises ValueError: %s" % (what, err))
failures.finish()
