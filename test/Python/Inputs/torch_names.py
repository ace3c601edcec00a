"""muir.torch.Muon takes parameters whose names repeat, as torch.optim
does: two modules' named_parameters() (both holding "embed.weight",
"proj.weight", "weight", "bias") in one list, in two param groups, and in
a group added later. Every parameter steps by its own gradient, state and
group values: each update is checked against the float64 reference of
torchtest (test/lib/muir_reference.py, written from the formulas; tolerance
and why: torch_reference.py), so two parameters of one name mixed up (one
bound to the other's gradient or state) fail it. The compiled step's
argument names, the only place a name is a key, stay unique (the
parameters' places). A state_dict round trip resumes bitwise; a repeated
name cannot pick an attention block's q.
"""
import copy

import torch

import muir.torch
import torchtest as tt

TOL = 5e-5
STEPS = 3
torch.manual_seed(0)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)      # AdamW (by name)
        self.proj = torch.nn.Linear(8, 8)           # Muon, bias AdamW


def f64(t):
    return t.detach().double().numpy().copy()


def draw_grads(params, step):
    g = torch.Generator().manual_seed(500 + step)
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)


def worst_error(opt, params, step):
    """One step of opt over `params` (fresh gradients); the largest error
    of any parameter or state tensor against the float64 reference, in
    units of the tolerance."""
    draw_grads(params, step)
    before = {}
    for gi, group in enumerate(opt.param_groups):
        for p in group["params"]:
            st = {k: (f64(v) if isinstance(v, torch.Tensor) else v)
                  for k, v in opt.state.get(p, {}).items()}
            before[p] = (f64(p), f64(p.grad), st, dict(group))
    opt.step()
    worst = 0.0
    for p, (w, g, s, group) in before.items():
        info = opt._info[p]
        st = opt.state[p]
        if info["optimizer"] == "muon":
            rw, rm = tt.ref.muon_update(
                w, g, s.get("momentum_buffer", 0.0 * w), group["lr"],
                beta=group["momentum"], nesterov=group["nesterov"],
                weight_decay=group["weight_decay"],
                scale_extra=group["scale_extra"], ns_steps=group["ns_steps"])
            refs = [("momentum_buffer", rm)]
        else:
            b1, b2 = group["betas"]
            rw, rm, rv = tt.ref.adamw_update(
                w, g, s.get("exp_avg", 0.0 * w), s.get("exp_avg_sq", 0.0 * w),
                s.get("step", 0) + 1, group["lr"], beta1=b1, beta2=b2,
                eps=group["eps"], weight_decay=group["weight_decay"])
            refs = [("exp_avg", rm), ("exp_avg_sq", rv)]
        worst = max(worst, tt.update_error(w, f64(p), rw, TOL))
        for key, r in refs:
            worst = max(worst, tt.rel(f64(st[key]), r) / TOL)
    return worst


def run(what, make):
    opt, params = make()
    worst = max(worst_error(opt, params, k) for k in range(STEPS))
    names = sorted(opt._info[p]["name"] for p in params)
    args = [a.name for a in opt.compiled_steps()[-1].arguments
            if a.role == "param"]
    print("%s: %d parameters (%s), %d steps within %.2f of the tolerance: "
          "%s" % (what, len(params), " ".join(names), STEPS, worst,
                  worst <= 1.0))
    print("%s: the step's parameter arguments %s, unique %s"
          % (what, " ".join(args), len(set(args)) == len(args) ==
             len(params)))
    return opt, params


# One list of two modules' named_parameters().
a, b = Block(), Block()
run("one list", lambda: (muir.torch.Muon(
    list(a.named_parameters()) + list(b.named_parameters()), lr=0.02,
    weight_decay=0.1, adamw_lr=0.01, cache_dir=None),
    list(a.parameters()) + list(b.parameters())))

# Two groups, each its own values; plain Linears ("weight", "bias").
l1, l2 = torch.nn.Linear(8, 12), torch.nn.Linear(8, 12)
opt, params = run("two groups", lambda: (muir.torch.Muon(
    [{"params": l1.named_parameters()},
     {"params": l2.named_parameters(), "lr": 0.01, "weight_decay": 0.05,
      "betas": (0.8, 0.9)}],
    lr=0.02, cache_dir=None), list(l1.parameters()) + list(l2.parameters())))

# Its state_dict, loaded into a fresh optimizer over copies, resumes
# bitwise.
c1, c2 = copy.deepcopy(l1), copy.deepcopy(l2)
resumed = muir.torch.Muon(
    [{"params": c1.named_parameters()},
     {"params": c2.named_parameters(), "lr": 0.01, "weight_decay": 0.05,
      "betas": (0.8, 0.9)}], lr=0.02, cache_dir=None)
resumed.load_state_dict(opt.state_dict())
copies = list(c1.parameters()) + list(c2.parameters())
for k in range(STEPS, STEPS + 2):
    draw_grads(params, k)
    opt.step()
    draw_grads(copies, k)
    resumed.step()
print("two groups: state_dict round trip, 2 more steps bitwise %s" % all(
    torch.equal(p, q) and all(torch.equal(opt.state[p][key],
                                          resumed.state[q][key])
                              for key in ("momentum_buffer", "exp_avg")
                              if key in opt.state[p])
    for p, q in zip(params, copies)))

# A group of the same names added later (it compiles a new step).
l3, l4 = torch.nn.Linear(8, 12), torch.nn.Linear(8, 12)


def added_later():
    o = muir.torch.Muon(l3.named_parameters(), lr=0.02, cache_dir=None)
    o.add_param_group({"params": l4.named_parameters(), "lr": 0.03})
    return o, list(l3.parameters()) + list(l4.parameters())


run("added later", added_later)

# A name two parameters share cannot pick an attention block's q.
try:
    muir.torch.Muon(list(l1.named_parameters()) +
                    list(l2.named_parameters()), qk_clip=100.0,
                    attention=[{"name": "l0", "q": "weight", "k": "weight",
                                "heads": 2}])
    print("attention by a repeated name: NOT refused")
except ValueError as e:
    print("attention by a repeated name: %s" % e)
