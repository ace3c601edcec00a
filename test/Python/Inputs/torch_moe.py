"""muir.torch.MoE against a float64 plain-PyTorch MoE layer written here
from the formulas of docs/description.md ("MoE layers"): the forward and
every gradient (autograd of the reference), over softmax and
sigmoid+groups routing, shared experts, capacity drops under both
policies, exact ties, T below the bound and T = 0; finite differences of
muir's own forward; and every bad input named.

Tolerance: muir computes in float32 (products by OpenBLAS sgemm, routing
and combine sums in double); outputs and gradients are compared as
max |muir - ref| / max |ref| <= 2e-5 (float32 products over hidden <= 64
give about 1e-6; the margin covers sums of up to a few hundred terms).
The routing itself (which experts, which pairs a capacity drops) must
agree exactly: the layers are random Gaussian with no near-ties except the
exact ones constructed on purpose.
"""
import math
import os
import sys

import torch

import muir
import muir.torch as mt

torch.manual_seed(0)
F64 = torch.float64
failures = []
# --device cuda: the layer on the GPU (the CUDA target) against the same
# float64 reference on the CPU; the cases and T = 0 only.
DEVICE = sys.argv[sys.argv.index("--device") + 1] \
    if "--device" in sys.argv else "cpu"


def check(what, ok, detail=""):
    print("%s %s%s" % (what, "ok" if ok else "FAIL",
                       (" (%s)" % detail) if detail else ""))
    if not ok:
        failures.append(what)


# --------------------------------------------------------------------------
# the float64 reference
# --------------------------------------------------------------------------

def ref_route(logits, layer):
    """indices [T, K] (ties to the lower expert), weights [T, K] (autograd
    through the scores), counts [E]."""
    T, E = logits.shape
    K = layer.top_k
    s = logits.softmax(-1) if layer.scoring == "softmax" else logits.sigmoid()
    sel = s.detach().clone()
    if layer.groups > 1:
        G = layer.groups
        per = E // G
        g = sel.view(T, G, per)
        best = torch.sort(g, dim=-1, descending=True, stable=True).values
        gscore = best[..., :2].sum(-1) if per > 1 else best[..., 0]
        order = torch.sort(gscore, dim=-1, descending=True, stable=True)
        keep = torch.zeros(T, G, dtype=torch.bool)
        keep.scatter_(1, order.indices[:, :layer.groups_per_token], True)
        sel = sel.masked_fill(~keep.repeat_interleave(per, dim=1),
                              -float("inf"))
    idx = torch.sort(sel, dim=-1, descending=True, stable=True).indices[:, :K]
    w = s.gather(1, idx)
    if layer.normalize:
        w = w / w.sum(-1, keepdim=True)
    w = w * layer.routed_scaling
    counts = torch.bincount(idx.reshape(-1), minlength=E)
    return idx, w, counts


def ref_capacity(idx, w, layer):
    """Kept pairs as a [T, K] mask (muir.capacity over the call's T)."""
    T, K = idx.shape
    E = layer.experts
    keep = torch.zeros(T, K, dtype=torch.bool)
    if layer.capacity_factor is None:
        return torch.ones(T, K, dtype=torch.bool)
    C = math.ceil(layer.capacity_factor * T * K / E)
    wd = w.detach()
    for e in range(E):
        pairs = [(t, k) for t in range(T) for k in range(K)
                 if idx[t, k] == e]
        if layer.drop_policy == "weight":
            pairs.sort(key=lambda p: -float(wd[p]))   # stable: token order
        for p in pairs[:C]:
            keep[p] = True
    return keep


def ref_layer(x, params, layer, el_offset=0):
    """y [T, H] of the layer in float64 (params: name -> float64 leaf)."""
    T = x.shape[0]
    logits = x @ params["router"].t()
    idx, w, counts = ref_route(logits, layer)
    keep = ref_capacity(idx, w, layer)
    y = torch.zeros_like(x)
    for t in range(T):
        for k in range(layer.top_k):
            if not keep[t, k]:
                continue
            e = int(idx[t, k]) - el_offset
            h = torch.nn.functional.silu(params["gate_proj"][e] @ x[t]) * \
                (params["up_proj"][e] @ x[t])
            y[t] = y[t] + w[t, k] * (params["down_proj"][e] @ h)
    if layer.shared_experts:
        h = torch.nn.functional.silu(x @ params["shared_gate_proj"].t()) * \
            (x @ params["shared_up_proj"].t())
        y = y + h @ params["shared_down_proj"].t()
    return y, counts


def compare(what, got, want, tol=2e-5):
    scale = float(want.abs().max()) if want.numel() else 0.0
    err = float((got.to(F64) - want).abs().max()) if want.numel() else 0.0
    rel = err / scale if scale > 0 else err
    check(what, rel <= tol, "rel err %.1e" % rel)


def run_case(name, T, **kw):
    layer = mt.MoE(**kw)
    x = torch.randn(T, layer.hidden)
    dy = torch.randn(T, layer.hidden)
    xr = x.to(F64).requires_grad_(True)
    params = {n: getattr(layer, n).detach().to(F64).requires_grad_(True)
              for n in layer._weight_names}
    yr, counts = ref_layer(xr, params, layer)
    (yr * dy.to(F64)).sum().backward()
    layer.to(DEVICE)
    xm = x.to(DEVICE).requires_grad_(True)
    y = layer(xm)
    (y * dy.to(DEVICE)).sum().backward()
    compare("%s y" % name, y.detach().cpu(), yr.detach())
    tpe = layer.tokens_per_expert.cpu()
    check("%s tokens_per_expert" % name, torch.equal(tpe, counts),
          "%s vs %s" % (tpe.tolist(), counts.tolist()))
    compare("%s dx" % name, xm.grad.cpu(), xr.grad)
    for n in layer._weight_names:
        compare("%s d%s" % (name, n), getattr(layer, n).grad.cpu(),
                params[n].grad)
    return layer


H, F = 32, 48
base = dict(hidden=H, expert_size=F, experts=8, top_k=2)
run_case("softmax", 64, **base)
run_case("softmax-unnormalized", 64, normalize=False, routed_scaling=2.5,
         **base)
run_case("sigmoid-groups", 64, scoring="sigmoid", groups=4,
         groups_per_token=2, routed_scaling=1.5, **base)
run_case("shared", 48, shared_experts=2, **base)
run_case("capacity-weight", 64, capacity_factor=0.5, **base)
run_case("capacity-position", 64, capacity_factor=0.5,
         drop_policy="position", **base)

# T below the bound, then T = 0, on one compiled layer (bound 128).
layer = run_case("bound-128-T-37", 37, **base)
x = torch.zeros(0, H, device=DEVICE, requires_grad=True)
y = layer(x)
y.sum().backward()
for n in layer._weight_names:
    getattr(layer, n).grad = None
y = layer(x)
y.sum().backward()
check("T=0 y empty", tuple(y.shape) == (0, H))
check("T=0 gradients zero",
      all(float(getattr(layer, n).grad.abs().max()) == 0.0
          for n in layer._weight_names) and x.grad.shape == (0, H))
check("one compile per pass", len(layer._passes) == 2,
      str(sorted(layer._passes)))
if DEVICE != "cpu":
    print("torch-moe (%s): %s" % (DEVICE, "PASS" if not failures else
                                  "FAIL (%s)" % ", ".join(failures)))
    sys.exit(1 if failures else 0)

# Exact ties: experts 1 and 2 share their router row (equal logits); the
# lower index wins both in muir and in the reference's stable sort.
layer = mt.MoE(hidden=H, expert_size=F, experts=4, top_k=1)
with torch.no_grad():
    layer.router[2] = layer.router[1]
    layer.router[1] *= 4.0
    layer.router[2] *= 4.0
x = torch.randn(64, H)
y = layer(x)
idx, _, counts = ref_route(x.to(F64) @ layer.router.detach().to(F64).t(),
                           layer)
check("ties to the lower expert", int(layer.tokens_per_expert[2]) == 0 and
      torch.equal(layer.tokens_per_expert, counts),
      str(layer.tokens_per_expert.tolist()))

# Finite differences of muir's own forward (float32) on a tiny layer, every
# element of x and of each weight.
tiny = mt.MoE(hidden=4, expert_size=6, experts=4, top_k=2, shared_experts=1)
x = torch.randn(5, 4)
dy = torch.randn(5, 4)
xm = x.clone().requires_grad_(True)
(tiny(xm) * dy).sum().backward()
# (eps 1e-3: small enough that no token changes experts, large enough
# that float32's rounding of the sum stays near 1e-4.)
eps = 1e-3
worst = 0.0
with torch.no_grad():
    for n in ["x"] + tiny._weight_names:
        t = x if n == "x" else getattr(tiny, n)
        g = xm.grad if n == "x" else getattr(tiny, n).grad
        flat = t.view(-1)
        for i in range(flat.numel()):
            old = float(flat[i])
            flat[i] = old + eps
            fp = float((tiny(x) * dy).sum())
            flat[i] = old - eps
            fm = float((tiny(x) * dy).sum())
            flat[i] = old
            fd = (fp - fm) / (2 * eps)
            worst = max(worst, abs(fd - float(g.view(-1)[i])) /
                        max(1.0, abs(fd)))
check("finite differences", worst < 1e-3, "worst %.1e" % worst)

# aux loss: the Switch form, the router's gradient through autograd.
layer = mt.MoE(aux_loss_coef=0.01, **base)
x = torch.randn(64, H)
y, aux = layer(x)
aux.backward()
r = layer.router.detach().to(F64).requires_grad_(True)
p = (x.to(F64) @ r.t()).softmax(-1).mean(0)
f = layer.tokens_per_expert.to(F64) / (64 * 2)
want = 0.01 * 8 * (f * p).sum()
want.backward()
compare("aux loss", aux.detach().reshape(1), want.detach().reshape(1))
compare("aux loss d router", layer.router.grad, r.grad)

# Non-contiguous x and a leading batch shape.
layer = mt.MoE(**base)
xb = torch.randn(3, H, 40).transpose(1, 2)     # [3, 40, H], not contiguous
y = layer(xb)
yr, _ = ref_layer(xb.reshape(-1, H).to(F64),
                  {n: getattr(layer, n).detach().to(F64)
                   for n in layer._weight_names}, layer)
compare("non-contiguous [3, 40, H]", y.reshape(-1, H).detach(), yr)

# Bad input, each named.
layer = mt.MoE(name="blocks.3.moe", **base)
for what, x in (("float64", torch.randn(4, H, dtype=F64)),
                ("last dim", torch.randn(4, H + 1)),
                ("nan", torch.full((4, H), float("nan")))):
    try:
        layer(x)
        check("bad input %s" % what, False, "no error")
    except mt.MoEInputError as e:
        print("bad input %s: %s" % (what, e))
        check("bad input %s" % what, "'blocks.3.moe'" in str(e))
# Another device than the parameters' (a meta tensor here; a CUDA one
# where there is a GPU).
for device in ["meta"] + (["cuda"] if torch.cuda.is_available() else []):
    try:
        layer(torch.empty(4, H, device=device))
        check("bad input device %s" % device, False, "no error")
    except mt.MoEInputError as e:
        print("bad input device %s: %s" % (device, e))
        check("bad input device %s" % device, "'blocks.3.moe'" in str(e))
for kw in (dict(top_k=9), dict(experts=6, groups=4), dict(ep=2),
           dict(scoring="softmin")):
    args = dict(base)
    args.update(kw)
    try:
        mt.MoE(**args)
        check("bad settings %s" % kw, False, "no error")
    except ValueError as e:
        print("bad settings %s: %s" % (kw, e))
# ep=2 in a process a torchrun launch started (WORLD_SIZE set, no MPI job):
# the message says the runtime does not join those ranks yet.
os.environ["WORLD_SIZE"] = "2"
try:
    mt.MoE(**dict(base, ep=2))
    check("ep=2 under torchrun", False, "no error")
except ValueError as e:
    print("ep=2 under torchrun: %s" % e)
finally:
    del os.environ["WORLD_SIZE"]
bounded = mt.MoE(max_tokens=16, **base)
try:
    bounded(torch.randn(17, H))
    check("over max_tokens", False, "no error")
except mt.MoEInputError as e:
    print("over max_tokens: %s" % e)

print("torch-moe: %s" % ("PASS" if not failures else
                         "FAIL (%s)" % ", ".join(failures)))
sys.exit(1 if failures else 0)
