"""muir.torch.Muon.like_torch against torch.optim.Muon (torch >= 2.9), the
optimizer a PyTorch user would pick: the same 2-D parameters (square, tall,
wide), the same gradients, both stepped 6 times under the same lr schedule
(warm-up then cosine, torch.optim.lr_scheduler), for each learning-rate
adjustment of torch's (adjust_lr_fn None / "original" / "match_rms_adamw"),
with and without Nesterov, with weight decay, and with torch's custom
ns_coefficients and ns_steps.

torch's Newton-Schulz casts the momentum to bfloat16 (grad.bfloat16()) and
iterates there, which moves its updates by about 1e-2 relative: no float32
implementation can agree with it closer than that. The equality (1e-5
relative, Frobenius, every parameter after every step) is therefore against
torch's own step with its own Newton-Schulz function run in float32: the
tensor it is given answers .bfloat16() with a float32 copy, so every other
line of torch's code (momentum, Nesterov, normalisation, transpose of a tall
matrix, the coefficients, the lr adjustment, the weight decay) runs as
shipped. The distance to the shipped bfloat16 torch is printed and bounded
(5e-2) for the record.

The updates are measured from parameters that start at zero, so that each
step's update is not the small difference of two large float32 values (from
weights of norm 0.1 an lr of 1e-3 moves them by 1e-4 relative, and the
rounding of the stored weights alone would be 1e-5 of the update); from
random weights the parameters themselves are compared (within 1e-6 of
their norm).
"""
import math

import torch
import torch.optim._muon as torch_muon

import muir.torch

torch.manual_seed(0)
torch.set_num_threads(1)
SHAPES = {"square": (64, 64), "tall": (96, 32), "wide": (32, 96),
          "odd": (48, 80)}
STEPS = 6
TOL = 1e-5

_shipped_ns = torch_muon._zeropower_via_newtonschulz


class _Float32(torch.Tensor):
    """A tensor whose cast to bfloat16 (.bfloat16() in torch 2.9,
    .to(dtype=torch.bfloat16, copy=True) in later ones) is a float32 copy
    of itself."""

    def bfloat16(self):
        return self.as_subclass(torch.Tensor).clone()

    def to(self, *args, **kwargs):
        if kwargs.get("dtype") is torch.bfloat16 or torch.bfloat16 in args:
            return self.as_subclass(torch.Tensor).clone()
        return super().to(*args, **kwargs)


def _float32_ns(grad, ns_coefficients, ns_steps, eps):
    return _shipped_ns(grad.as_subclass(_Float32), ns_coefficients,
                       ns_steps, eps)


def schedule(opt):
    warm = 2

    def factor(step):
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / (STEPS - warm)))
    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def params(scale):
    return {name: torch.randn(*shape) * scale
            for name, shape in SHAPES.items()}


def run(make, start, grads):
    ps = {n: torch.nn.Parameter(t.clone()) for n, t in start.items()}
    opt = make(list(ps.items()))
    sched = schedule(opt)
    out = []
    for g in grads:
        for n, p in ps.items():
            p.grad = g[n].clone()
        opt.step()
        sched.step()
        out.append({n: p.detach().clone() for n, p in ps.items()})
    return out


def rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


CONFIGS = [
    ("default", {}),
    ("original", dict(adjust_lr_fn="original", lr=0.02, weight_decay=0.01)),
    ("match_rms_adamw", dict(adjust_lr_fn="match_rms_adamw", lr=3e-3,
                             weight_decay=0.1, momentum=0.9)),
    ("no nesterov", dict(nesterov=False, lr=0.01, weight_decay=0.0)),
    ("coefficients", dict(ns_coefficients=(3.0, -3.2, 1.2), ns_steps=3,
                          eps=1e-6, lr=0.01)),
]
# torch 2.15 adds "spectral_unclamped" (sqrt(out / in)).
try:
    torch.optim.Muon([torch.nn.Parameter(torch.zeros(2, 2))],
                     adjust_lr_fn="spectral_unclamped")
    CONFIGS.append(("spectral_unclamped", dict(
        adjust_lr_fn="spectral_unclamped", lr=0.01)))
except ValueError:
    pass

failed = 0
def steps(kw, start, grads):
    """muir's, torch's (float32 Newton-Schulz) and the shipped torch's
    parameters after each step."""
    muir_steps = run(lambda ps: muir.torch.Muon.like_torch(
        ps, cache_dir=None, **kw), start, grads)
    torch_muon._zeropower_via_newtonschulz = _float32_ns
    try:
        torch_steps = run(lambda ps: torch.optim.Muon(
            [p for _, p in ps], **kw), start, grads)
    finally:
        torch_muon._zeropower_via_newtonschulz = _shipped_ns
    bf16_steps = run(lambda ps: torch.optim.Muon([p for _, p in ps], **kw),
                     start, grads)
    return muir_steps, torch_steps, bf16_steps


for label, kw in CONFIGS:
    grads = [{n: torch.randn(*s) for n, s in SHAPES.items()}
             for _ in range(STEPS)]
    start = params(0.0)
    muir_steps, torch_steps, bf16_steps = steps(kw, start, grads)
    # The updates themselves (the parameters move by lr-sized steps).
    worst = worst_bf16 = 0.0
    for k in range(STEPS):
        before = start if k == 0 else muir_steps[k - 1]
        before_t = start if k == 0 else torch_steps[k - 1]
        before_b = start if k == 0 else bf16_steps[k - 1]
        for n in SHAPES:
            want = torch_steps[k][n] - before_t[n]
            worst = max(worst, rel(muir_steps[k][n] - before[n], want))
            worst_bf16 = max(worst_bf16, rel(
                bf16_steps[k][n] - before_b[n], want))
    muir_w, torch_w, _ = steps(kw, params(0.1), grads)
    weights = max(rel(muir_w[-1][n], torch_w[-1][n]) for n in SHAPES)
    ok = worst < TOL and worst_bf16 < 5e-2 and weights < 1e-6
    failed += not ok
    print("%s: %d steps x %d matrices, updates within %g of torch.optim.Muon "
          "(float32 Newton-Schulz): %s; shipped bfloat16 torch within 5e-2: "
          "%s" % (label, STEPS, len(SHAPES), TOL, worst < TOL,
                  worst_bf16 < 5e-2))
    print("  largest relative difference %.1e (bfloat16 torch: %.1e); from "
          "random weights, the weights within 1e-6: %s"
          % (worst, worst_bf16, weights < 1e-6))

# Keywords torch.optim.Muon refuses are refused here too.
try:
    muir.torch.Muon.like_torch([torch.nn.Parameter(torch.zeros(4, 4))],
                               adjust_lr_fn="sqrt")
except ValueError as e:
    print("refused: %s" % e)
print("torch-optim-muon: %s" % ("PASS" if failed == 0 else "FAIL"))
