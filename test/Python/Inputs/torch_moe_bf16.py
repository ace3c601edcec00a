"""muir.torch.MoE's bfloat16 expert products (products="bfloat16", and
the default under torch.autocast(bfloat16) or for a bfloat16 model).

A float64 reference written here: the layer (softmax router, top-k
renormalised, SwiGLU experts) in float64 where each expert product is
`rmm`, whose forward rounds both operands to bfloat16 (via float32, to
nearest even, as torch rounds) and whose backward rounds the output
gradient and the other operand the same way: the numerics
docs/description.md gives `expert_products: bf16` (every operand of the
eight grouped products rounded, products exact, sums in float32; the
router, the SwiGLU and the combine unrounded). Outputs and every gradient
must be within TOL of it, and much further from the unrounded float64
layer (the rounding is seen). Then which products each call picks, by
bitwise comparison with the layer forced each way; recompute keeps the
bits; a bad `products` is refused.
"""
import copy

import torch

import muir.torch as mt
import torchtest

torch.manual_seed(0)
failures = torchtest.Failures("torch-moe-bf16", verbose=True)
F64 = torch.float64
H, I, E, K, T = 64, 48, 8, 2, 200
# Relative to the largest element: a float32 sum of up to 64 exact products
# is good to ~1e-6; an operand that rounds the other way across a bfloat16
# boundary (float32 and float64 intermediates differ in their last bits)
# moves a term by 2^-8 of itself.
TOL = 1e-4


def check(what, ok, detail=""):
    failures.check(ok, what + (" (%s)" % detail if detail else ""))


def r(t):
    """t rounded to bfloat16 (through float32), as float64."""
    return t.float().bfloat16().to(F64)


class RoundedMatmul(torch.autograd.Function):
    """a @ b of bfloat16-rounded operands; the backward's products round
    theirs too (the output gradient and the other operand)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return r(a) @ r(b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return r(g) @ r(b).t(), r(a).t() @ r(g)


def reference(x, params, rounded):
    """y of the layer in float64; `rounded`: the expert products rmm's."""
    mm = RoundedMatmul.apply if rounded else (lambda a, b: a @ b)
    logits = x @ params["router"].t()
    s = logits.softmax(-1)
    idx = torch.sort(s.detach(), dim=-1, descending=True,
                     stable=True).indices[:, :K]
    w = s.gather(1, idx)
    w = w / w.sum(-1, keepdim=True)
    y = torch.zeros_like(x)
    for e in range(E):
        tok, slot = (idx == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        rows = x[tok]
        g = mm(rows, params["gate_proj"][e].t())
        u = mm(rows, params["up_proj"][e].t())
        o = mm(torch.nn.functional.silu(g) * u, params["down_proj"][e].t())
        y = y.index_add(0, tok, w[tok, slot].unsqueeze(1) * o)
    return y


def reference_grads(layer, x, dy, rounded):
    params = {n: p.detach().to(F64).requires_grad_(True)
              for n, p in layer.named_parameters()}
    xr = x.detach().to(F64).requires_grad_(True)
    y = reference(xr, params, rounded)
    (y * dy.to(F64)).sum().backward()
    return y.detach(), xr.grad, {n: p.grad for n, p in params.items()}


def run(layer, x, dy, autocast=None):
    x = x.detach().clone().requires_grad_(True)
    for p in layer.parameters():
        p.grad = None
    if autocast is None:
        y = layer(x)
    else:
        with torch.autocast("cpu", dtype=autocast):
            y = layer(x)
    (y.float() * dy).sum().backward()
    return y.detach(), x.grad, {n: p.grad for n, p in
                                layer.named_parameters()}


def rel(got, want):
    scale = float(want.abs().max())
    return float((got.to(F64) - want).abs().max()) / scale


layer = mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K,
               products="bfloat16")
with torch.no_grad():
    for p in layer.parameters():
        p.normal_(0, 1 / p.shape[-1] ** 0.5)
x = torch.randn(T, H)
dy = torch.randn(T, H)

y, dx, grads = run(layer, x, dy)
y_r, dx_r, g_r = reference_grads(layer, x, dy, True)
y_f, dx_f, g_f = reference_grads(layer, x, dy, False)
for name, got, want, exact in (
        [("y", y, y_r, y_f), ("dx", dx, dx_r, dx_f)] +
        [("%s.grad" % n, grads[n], g_r[n], g_f[n]) for n in
         ("router", "gate_proj", "up_proj", "down_proj")]):
    err, off = rel(got, want), rel(got, exact)
    check("bfloat16 products: %s within %g of the rounded float64 "
          "reference" % (name, TOL), err <= TOL, "rel err %.1e" % err)
    check("bfloat16 products: %s differs from the unrounded float64 layer "
          "(rounding seen)" % name, off > 10 * max(err, 1e-6),
          "rel err %.1e against it" % off)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))


def same_run(a, b):
    return same(a[0], b[0]) and same(a[1], b[1]) and \
        all(same(a[2][n], b[2][n]) for n in a[2])


f32 = copy.deepcopy(layer)
f32.products = "float32"
auto = copy.deepcopy(layer)
auto.products = None
bf = run(layer, x, dy)
fl = run(f32, x, dy)
check("float32 products differ from bfloat16 ones", not same(bf[0], fl[0]))
check("default, float32 x: float32 products", same_run(run(auto, x, dy), fl))
# Under autocast y is returned in its dtype, so dy reaches the layer
# rounded to it.
dy_b, dy_h = dy.bfloat16().float(), dy.half().float()
bf_b, fl_b, fl_h = run(layer, x, dy_b), run(f32, x, dy_b), run(f32, x, dy_h)
a = run(auto, x, dy, torch.bfloat16)
check("default under autocast(bfloat16): bfloat16 products (y the "
      "products='bfloat16' layer's rounded, the gradients its)",
      same(a[0], bf_b[0].bfloat16()) and same(a[1], bf_b[1]) and
      all(same(a[2][n], bf_b[2][n]) for n in a[2]))
a = run(auto, x, dy, torch.float16)
check("default under autocast(float16): float32 products",
      same(a[0], fl_h[0].half()) and same(a[1], fl_h[1]))
a = run(f32, x, dy, torch.bfloat16)
check("products='float32' under autocast(bfloat16): float32 products",
      same(a[0], fl_b[0].bfloat16()) and same(a[1], fl_b[1]))

# A bfloat16 model (x and the parameters bfloat16): bfloat16 products, as
# its nn.Linear layers would compute, on the same values read as float32.
half = copy.deepcopy(auto).to(torch.bfloat16)
ref = copy.deepcopy(layer)
with torch.no_grad():
    for (n, p), (_, q) in zip(half.named_parameters(), ref.named_parameters()):
        q.copy_(p.float())
xb, dyb = x.bfloat16(), dy.bfloat16()
hb = run(half, xb, dyb.float())
rb = run(ref, xb.float(), dyb.float())
check("default, bfloat16 model: bfloat16 products",
      same(hb[0], rb[0].bfloat16()) and same(hb[1], rb[1].bfloat16()))
half32 = copy.deepcopy(half)
half32.products = "float32"
f32ref = copy.deepcopy(ref)
f32ref.products = "float32"
check("products='float32', bfloat16 model: float32 products",
      same(run(half32, xb, dyb.float())[0],
           run(f32ref, xb.float(), dyb.float())[0].bfloat16()))

# Activation recompute keeps the bfloat16 products' bits.
rec = copy.deepcopy(layer)
rec.recompute = True
check("recompute=True: bitwise the bfloat16 layer's", same_run(run(rec, x, dy), bf))

# prepare(): the passes of a call made ahead of it (the call compiles
# nothing more: the same passes, one bound).
fresh = mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K)
bound = fresh.prepare(T, "bfloat16")
held = dict(fresh._passes)
with torch.autocast("cpu", dtype=torch.bfloat16):
    fresh(x)
check("prepare(%d, 'bfloat16'): bound %d; the autocast call compiled "
      "nothing more" % (T, bound), bound == 256 and
      fresh.compiled_bounds() == [bound] and fresh._passes == held)
try:
    fresh.prepare(T, "float16")
    check("prepare refuses products='float16'", False)
except ValueError as e:
    print("refused: %s" % e)
try:
    mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K, products="fp8")
    check("refuses products='fp8'", False)
except ValueError as e:
    print("refused: %s" % e)
failures.finish()
