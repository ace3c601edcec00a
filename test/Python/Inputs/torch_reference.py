"""muir.torch.Muon on real autograd gradients, with an lr schedule, against
the float64 reference of torchtest (written from the formulas).

Every step the reference takes the step's inputs (the float32 parameters,
gradients and state just before opt.step(), and the lr and weight decay the
scheduler set for that step) to float64 and computes the update. Tolerance:
  * parameters: |W'_muir - W'_ref| <= 5e-5 |W'_ref - W| + 3 * 2^-24 |W'_ref|
    (Frobenius norms, per tensor): 5e-5 of the update plus the float32
    rounding of storing W' (see torchtest.update_error);
  * state (momentum, exp_avg, exp_avg_sq): 5e-5 relative.
Why 5e-5: the inputs are the same, so the only differences are float32
rounding inside muir. Element-wise ops round at 2^-24 = 6e-8 relative; NS5
is the loose part: its 5 steps of p(s) = a s + b s^3 + c s^5 multiply a
small singular value, and the rounding error along it, by up to
a^5 = 3.4445^5 = 486, so float32 rounding can reach 486 * 6e-8 = 3e-5 of
the update (measured: up to 1.2e-5, on the 4x16 router). A formula mistake
(a wrong lr, coefficient, scale, bias correction or momentum) is 1e-3 or
more. The schedule must matter: the reference with the previous step's lr
must miss by more than 20 times the tolerance.
"""
import math

import torch

import muir.torch
import torchtest as tt

STEPS = 6
TOL = 5e-5
fail = tt.Failures("torch-reference")

model = tt.make_model()
opt = muir.torch.Muon(model.named_parameters(), lr=0.02, weight_decay=0.1,
                      adamw_lr=0.01, adamw_weight_decay=0.05)
names = {p: n for n, p in model.named_parameters()}
muon = {names[p] for p in opt.param_groups[0]["params"]}
adamw = {names[p] for p in opt.param_groups[1]["params"]}
print("muon: %s" % " ".join(sorted(muon)))
print("adamw: %s" % " ".join(sorted(adamw)))
# Linear warm-up then cosine decay for Muon, exponential decay for AdamW:
# both lrs change at every step.
WARM = 2
sched = torch.optim.lr_scheduler.LambdaLR(opt, [
    lambda s: (s + 1) / (WARM + 1) if s < WARM else
    0.5 * (1 + math.cos(math.pi * (s - WARM) / STEPS)),
    lambda s: 0.9 ** s])


def references(n, w, g, s, lr, wd):
    """[(kind, muir's value, the reference's)] for parameter n."""
    if n in muon:
        m = s.get("momentum_buffer", 0.0 * w)
        rw, rm = tt.ref_muon(w, g, m, lr["muon"], wd["muon"])
        return [("param", rw), ("momentum_buffer", rm)]
    t = s.get("step", 0) + 1
    rw, rm, rv = tt.ref_adamw(w, g, s.get("exp_avg", 0.0 * w),
                              s.get("exp_avg_sq", 0.0 * w), t,
                              lr["adamw"], wd["adamw"])
    return [("param", rw), ("exp_avg", rm), ("exp_avg_sq", rv)]


lrs_seen, prev_lr = [], None
for step in range(1, STEPS + 1):
    loss = tt.loss_of(model, step)
    loss.backward()
    groups = {("muon" if g["use_muon"] else "adamw"): g for g in opt.param_groups}
    lr = {k: g["lr"] for k, g in groups.items()}
    wd = {k: g["weight_decay"] for k, g in groups.items()}
    lrs_seen.append((lr["muon"], lr["adamw"]))
    before = {}
    for n, p in model.named_parameters():
        s = opt.state.get(p, {})
        before[n] = (p.detach().double().numpy().copy(),
                     p.grad.detach().double().numpy().copy(),
                     {k: (v.double().numpy().copy()
                          if isinstance(v, torch.Tensor) else v)
                      for k, v in s.items()})
    opt.step()
    worst, worst_what, stale = 0.0, "", float("inf")
    for n, p in model.named_parameters():
        w, g, s = before[n]
        st = opt.state[p]
        if n in adamw:
            want = s.get("step", 0) + 1
            fail.check(st.get("step") == want, "step %d %s: AdamW count %r, "
                       "expected %d" % (step, n, st.get("step"), want))
        new_w = p.detach().double().numpy()
        for kind, r in references(n, w, g, s, lr, wd):
            if kind == "param":
                e = tt.update_error(w, new_w, r, TOL)
            else:
                e = tt.rel(st[kind].double().numpy(), r) / TOL
            if e > worst:
                worst, worst_what = e, "%s %s" % (n, kind)
            fail.check(e <= 1.0, "step %d %s %s: error %.3g times the "
                       "tolerance" % (step, n, kind, e))
        if prev_lr is not None:
            r = references(n, w, g, s, prev_lr, wd)[0][1]
            stale = min(stale, tt.update_error(w, new_w, r, TOL))
    print("step %d lr muon %.6f adamw %.6f loss %.5f worst %.3f of the "
          "tolerance (%s)%s" % (
              step, lr["muon"], lr["adamw"], float(loss), worst, worst_what,
              "" if prev_lr is None else
              "; with the previous step's lr: %.3g" % stale))
    if prev_lr is not None:
        fail.check(stale > 20, "step %d: the reference with the previous "
                   "step's lr is within %.3g of the tolerance: the schedule "
                   "did not take effect" % (step, stale))
    prev_lr = lr
    opt.zero_grad(set_to_none=True)
    sched.step()

fail.check(len(set(lrs_seen)) == STEPS, "the lr did not change every step: "
           "%s" % lrs_seen)
fail.check(len(opt.compiled_steps()) == 1, "compiled %d steps, expected one "
           "(lr changes must not recompile)" % len(opt.compiled_steps()))
print("%d steps, %d Muon and %d AdamW parameters within tolerance (%g) of "
      "the float64 reference; %d compiled step" % (
          STEPS, len(muon), len(adamw), TOL, len(opt.compiled_steps())))
fail.finish()
