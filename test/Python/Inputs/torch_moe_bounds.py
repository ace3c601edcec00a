"""muir.torch.MoE compiles a token bound per size class (the call's T
rounded up to a power of two, at least 128) and keeps the passes of the
max_compiled_bounds most recently used classes: after a large batch, a
small batch runs on a small bound (its work and memory scale with the
bound), bitwise as on a layer that never saw the large one, and its output
and gradients match the float64 reference (test/lib/moe_reference.py,
written from the formulas; max |muir - ref| / max |ref| <= 2e-5, as
torch_moe.py's tolerance). The least recently used class is freed; a
forward whose class was freed before its backward compiles the backward
again. With max_tokens the bound is fixed (every ep rank compiles it).
"""
import torch

import moe_reference
import muir.torch as mt

H, F, E, K = 32, 48, 8, 2
F64 = torch.float64
torch.manual_seed(0)


def make(**kw):
    torch.manual_seed(0)
    return mt.MoE(hidden=H, expert_size=F, experts=E, top_k=K,
                  normalize=False, **kw)


def tokens(T, seed):
    return torch.randn(T, H, generator=torch.Generator().manual_seed(seed))


def weights_of(layer):
    return {n: getattr(layer, n).detach().to(F64).requires_grad_(True)
            for n in ("router", "gate_proj", "up_proj", "down_proj")}


def reference(layer, xs):
    """y of each x in xs and the weights' gradients of sum_k <y_k, c_k>
    (c_k the cotangents of `cotangent`), in float64."""
    w = weights_of(layer)
    ys, loss = [], 0.0
    for x in xs:
        y = moe_reference.layer(x.to(F64), w["router"], w["gate_proj"],
                                w["up_proj"], w["down_proj"], {}, E, K)
        ys.append(y.detach())
        loss = loss + (y * cotangent(y)).sum()
    loss.backward()
    return ys, {n: t.grad for n, t in w.items()}


def cotangent(y):
    return torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)


def muir_call(layer, xs):
    """muir's y of each x and the weights' gradients (every forward first,
    then one backward of their sum)."""
    for n in layer._weight_names:
        getattr(layer, n).grad = None
    ys = [layer(x) for x in xs]
    sum((y * cotangent(y)).sum() for y in ys).backward()
    return [y.detach() for y in ys], {n: getattr(layer, n).grad.clone()
                                      for n in layer._weight_names}


def error(got, want):
    scale = float(want.abs().max())
    return float((got.to(F64) - want).abs().max()) / scale


def check_reference(what, layer, xs, got):
    ys, grads = got
    rys, rgrads = reference(layer, xs)
    worst = max([error(a, b) for a, b in zip(ys, rys)] +
                [error(grads[n], rgrads[n]) for n in rgrads])
    print("%s: y and gradients match the float64 reference %s"
          % (what, worst <= 2e-5))


layer = make()
big, small = tokens(2000, 1), tokens(100, 2)
muir_call(layer, [big])
print("after 2000 tokens: bound %d, compiled bounds %s"
      % (layer.bound, layer.compiled_bounds()))
got = muir_call(layer, [small])
print("then 100 tokens: bound %d, compiled bounds %s, the passes' bounds %s"
      % (layer.bound, layer.compiled_bounds(), sorted(
          {p.shapes["x"][0] for p in layer._passes.values()})))
check_reference("100 tokens after 2000", layer, [small], got)
fresh = muir_call(make(), [small])
print("100 tokens after 2000: bitwise a fresh layer's %s" % (
    all(torch.equal(a, b) for a, b in zip(got[0], fresh[0])) and
    all(torch.equal(got[1][n], fresh[1][n]) for n in got[1])))

# A third size class frees the least recently used (2048).
steps = [p.step for k, p in layer._passes.items() if k[0] == 2048]
muir_call(layer, [tokens(300, 3)])
print("then 300 tokens: bound %d, compiled bounds %s, 2048's passes "
      "closed %s" % (layer.bound, layer.compiled_bounds(),
                     len(steps) == 2 and
                     all(s._handle is None for s in steps)))

# One class kept: forwards of two classes, then one backward; the first
# forward's class is freed before its backward, which compiles it again.
layer.max_compiled_bounds = 1
print("max_compiled_bounds 1: compiled bounds %s" % layer.compiled_bounds())
xs = [tokens(700, 4), tokens(50, 5)]
got = muir_call(layer, xs)
print("forwards of 700 and 50 tokens, one backward: compiled bounds %s"
      % layer.compiled_bounds())
check_reference("700 + 50 tokens, one class kept", layer, xs, got)

# max_tokens: one fixed bound.
fixed = make(max_tokens=256)
muir_call(fixed, [tokens(10, 6)])
print("max_tokens 256, 10 tokens: bound %d, compiled bounds %s"
      % (fixed.bound, fixed.compiled_bounds()))
layer.close()
print("close: compiled bounds %s" % layer.compiled_bounds())
for bad in (0, 1.5, True):
    try:
        make(max_compiled_bounds=bad)
        print("max_compiled_bounds %r: NOT refused" % (bad,))
    except ValueError as e:
        print("max_compiled_bounds %r: %s" % (bad, e))
