"""muir.torch.Muon as torch.optim: each constructor form, param groups with
their own hyperparameters, run-time momentum/betas/eps (OneCycleLR and
CyclicLR cycling momentum without compiling), late parameters, the bounded
cache of compiled steps, state_dict with several groups, deepcopy,
4-D convolution weights as matrices and non-contiguous gradients.

Every update is checked against the float64 reference of torchtest
(test/lib/muir_reference.py, written from the formulas), each parameter
with its own group's values; tolerance and why: torch_reference.py (5e-5
of the update plus float32 storage rounding).
"""
import copy
import io

import numpy as np
import torch

import muir.torch
import torchtest as tt

TOL = 5e-5
fail = tt.Failures("torch-groups")


def f64(t):
    return t.detach().double().numpy().copy()


def capture(opt):
    """Every parameter with a gradient: (w, g, state) in float64 and its
    group's values, just before opt.step()."""
    out = {}
    for gi, group in enumerate(opt.param_groups):
        for p in group["params"]:
            if p.grad is None:
                continue
            s = {k: (f64(v) if isinstance(v, torch.Tensor) else v)
                 for k, v in opt.state.get(p, {}).items()}
            out[p] = (f64(p), f64(p.grad), s, dict(group), gi)
    return out


def check_step(opt, before, what):
    """Each updated parameter against the float64 reference of its own
    group's values; the parameters without a gradient unchanged."""
    worst = 0.0
    for p, (w, g, s, group, gi) in before.items():
        info = opt._info[p]
        name, shape = info["name"], info["desc_shape"]
        w2, g2 = w.reshape(shape), g.reshape(shape)
        st = opt.state[p]
        if info["optimizer"] == "muon":
            m = s.get("momentum_buffer", 0.0 * w).reshape(shape)
            rw, rm = tt.ref.muon_update(
                w2, g2, m, group["lr"], beta=group["momentum"],
                nesterov=group["nesterov"],
                weight_decay=group["weight_decay"],
                scale_extra=group["scale_extra"],
                ns_steps=group["ns_steps"])
            refs = [("param", rw), ("momentum_buffer", rm)]
        else:
            t = s.get("step", 0) + 1
            b1, b2 = group["betas"]
            rw, rm, rv = tt.ref.adamw_update(
                w2, g2, s.get("exp_avg", 0.0 * w).reshape(shape),
                s.get("exp_avg_sq", 0.0 * w).reshape(shape), t, group["lr"],
                beta1=b1, beta2=b2, eps=group["eps"],
                weight_decay=group["weight_decay"])
            refs = [("param", rw), ("exp_avg", rm), ("exp_avg_sq", rv)]
            fail.check(st["step"] == t, "%s: %s AdamW count %r, expected %d"
                       % (what, name, st["step"], t))
        for kind, r in refs:
            if kind == "param":
                e = tt.update_error(w2, f64(p).reshape(shape), r, TOL)
            else:
                e = tt.rel(f64(st[kind]).reshape(shape), r) / TOL
            worst = max(worst, e)
            fail.check(e <= 1.0, "%s: %s (group %d) %s: error %.3g times the "
                       "tolerance" % (what, name, gi, kind, e))
    return worst


def run_step(opt, model, step, what):
    loss = tt.loss_of(model, step)
    loss.backward()
    before = capture(opt)
    frozen = {p: (p.detach().clone(),
                  {k: (v.clone() if isinstance(v, torch.Tensor) else v)
                   for k, v in opt.state.get(p, {}).items()})
              for g in opt.param_groups for p in g["params"]
              if p.grad is None}
    opt.step()
    for p, (old, old_state) in frozen.items():
        fail.check(torch.equal(p, old), "%s: %s has no gradient but changed"
                   % (what, opt._info[p]["name"]))
        st = opt.state.get(p, {})
        fail.check(set(st) == set(old_state) and all(
            torch.equal(st[k], v) if isinstance(v, torch.Tensor)
            else st[k] == v for k, v in old_state.items()),
            "%s: %s has no gradient but its state changed"
            % (what, opt._info[p]["name"]))
    opt.zero_grad(set_to_none=True)
    return check_step(opt, before, what)


# --- 1. Constructor forms ---------------------------------------------------
model = tt.make_model()
named = dict(model.named_parameters())
plain = muir.torch.Muon(model.parameters(), lr=0.02)
fail.check([g["use_muon"] for g in plain.param_groups] == [True, False],
           "parameters(): groups %r" % [g["use_muon"]
                                        for g in plain.param_groups])
order = [n for n, _ in model.named_parameters()]
fail.check(sorted(plain._info[p]["name"] for p in model.parameters()) ==
           sorted("param%d" % i for i in range(len(order))),
           "parameters(): names %r" % sorted(
               plain._info[p]["name"] for p in model.parameters()))
fail.check(all(set(g) >= {"params", "use_muon", "lr", "weight_decay"}
               for g in plain.param_groups), "group keys")
by_named = muir.torch.Muon(model.named_parameters(), lr=0.02)
fail.check({by_named._info[p]["name"] for p in model.parameters()} ==
           set(order), "named_parameters(): names")
muon_names = {by_named._info[p]["name"]
              for p in by_named.param_groups[0]["params"]}
print("named: muon %s" % " ".join(sorted(muon_names)))

groups = [
    {"params": [named["proj.weight"], named["router.weight"]],
     "use_muon": True, "lr": 0.03, "momentum": 0.9, "weight_decay": 0.1},
    {"params": [("up", named["up"]), ("down", named["down"])],
     "use_muon": True, "lr": 0.01, "nesterov": False, "ns_steps": 6},
    {"params": [named["embed.weight"], named["head.weight"]],
     "use_muon": False, "lr": 3e-3, "betas": (0.8, 0.99), "eps": 1e-6,
     "weight_decay": 0.01},
    {"params": [named["norm"], named["proj.bias"]]},   # no use_muon: mixed
]
opt = muir.torch.Muon(groups, lr=0.02, adamw_lr=1e-3)
fail.check(len(opt.param_groups) == 4, "groups: %d" % len(opt.param_groups))
g3 = opt.param_groups[3]
fail.check(g3["use_muon"] is None and "betas" in g3 and "momentum" in g3,
           "mixed group keys: %s" % sorted(k for k in g3 if k != "params"))
fail.check(opt.param_groups[2]["weight_decay"] == 0.01 and
           opt.param_groups[1]["weight_decay"] == 0.0, "group defaults")
sd = opt.state_dict()
print("state_dict groups %d keys %s" % (
    len(sd["param_groups"]), " ".join(sorted(sd["param_groups"][2]))))
try:
    muir.torch.Muon([{"params": [named["norm"]], "use_muon": True}])
    fail.check(False, "use_muon=True on a 1-D parameter was accepted")
except ValueError as e:
    print("refused: %s" % e)

# --- 2. Per-group values, changed at run time, against the reference ------
worst = 0.0
for step in range(1, 4):
    worst = max(worst, run_step(opt, model, step, "groups step %d" % step))
    # New values of every run-time key in every group: no compile.
    for g in opt.param_groups:
        g["lr"] *= 0.7
        g["weight_decay"] += 0.01
        if "momentum" in g:
            g["momentum"] = 0.85 + 0.03 * step
        if "betas" in g:
            g["betas"] = (0.7 + 0.05 * step, 0.98 - 0.01 * step)
            g["eps"] = 10.0 ** (-6 - step)
fail.check(len(opt.compiled_steps()) == 1, "groups: %d compiled steps, "
           "expected 1" % len(opt.compiled_steps()))
print("groups: 3 steps within %.3f of the tolerance, %d compiled step"
      % (worst, len(opt.compiled_steps())))

# --- 3. Late and frozen parameters -----------------------------------------
extra = torch.nn.Parameter(torch.randn(12, 16) / 4)
opt.add_param_group({"params": [("late", extra)], "lr": 0.05,
                     "momentum": 0.8})
fail.check(opt.param_groups[-1]["use_muon"] is None, "late group use_muon")
named["up"].requires_grad_(False)
for step in range(4, 6):
    extra.grad = torch.randn(12, 16, generator=torch.Generator().manual_seed(
        step)) / 10
    run_step(opt, model, step, "late step %d" % step)
fail.check("momentum_buffer" in opt.state[extra], "late parameter has no "
           "state after its steps")
fail.check(named["up"] not in opt.state or
           opt.state[named["up"]]["momentum_buffer"].abs().sum() > 0,
           "frozen parameter state")
named["up"].requires_grad_(True)
print("late: %d compiled steps" % len(opt.compiled_steps()))

# --- 3b. Parameters skipped at run time: one compiled step ----------------
# Each step a different set has no gradient (requires_grad toggled, a
# gradient set to None): the step skips them by their take flags, bit for
# bit (parameter and state), and counts each AdamW parameter's own steps;
# the members (parameters that have taken part) compile once. A parameter
# without a gradient from the start joins when it first has one: one more
# compile, then none.
model = tt.make_model()
named = dict(model.named_parameters())
opt = muir.torch.Muon(model.named_parameters(), lr=0.02, weight_decay=0.1,
                      adamw_lr=1e-3, adamw_weight_decay=0.01)
named["down"].requires_grad_(False)          # frozen until step 5
skips = {1: (), 2: ("up", "norm"), 3: ("embed.weight", "proj.weight"),
         4: ("up", "head.weight", "proj.bias"), 5: (), 6: ("router.weight",),
         7: ("norm", "embed.weight", "up")}
worst, compiled = 0.0, []
for step in range(1, 8):
    if step == 5:
        named["down"].requires_grad_(True)
    for n in skips[step]:
        named[n].requires_grad_(False)
    worst = max(worst, run_step(opt, model, step, "skipped step %d" % step))
    for n in skips[step]:
        named[n].requires_grad_(True)
    compiled.append(len(opt.compiled_steps()))
counts = {n: opt.state[p].get("step") for n, p in named.items()
          if opt._info[p]["optimizer"] == "adamw"}
fail.check(compiled == [1, 1, 1, 1, 2, 2, 2], "skipped: compiled steps %r"
           % compiled)
print("skipped: 7 steps within %.3f of the tolerance, compiled steps %s, "
      "AdamW counts %s" % (worst, " ".join(map(str, compiled)),
                           " ".join("%s=%d" % kv for kv in
                                    sorted(counts.items()))))

# --- 4. OneCycleLR and CyclicLR cycling momentum: no compile --------------
for make in (lambda o: torch.optim.lr_scheduler.OneCycleLR(
                 o, max_lr=0.05, total_steps=6, cycle_momentum=True,
                 base_momentum=0.85, max_momentum=0.95),
             lambda o: torch.optim.lr_scheduler.CyclicLR(
                 o, base_lr=0.005, max_lr=0.05, step_size_up=2,
                 cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.95)):
    model = tt.make_model()
    o = muir.torch.Muon(model.named_parameters(), lr=0.02,
                        weight_decay=0.05)
    sched = make(o)
    seen = set()
    worst = 0.0
    for step in range(1, 7):
        seen.add(round(o.param_groups[0]["momentum"], 12))
        worst = max(worst, run_step(o, model, step, "%s step %d" % (
            type(sched).__name__, step)))
        sched.step()
    fail.check(len(seen) >= 3, "%s: momentum took %d values"
               % (type(sched).__name__, len(seen)))
    fail.check(len(o.compiled_steps()) == 1, "%s: %d compiled steps, "
               "expected 1" % (type(sched).__name__, len(o.compiled_steps())))
    print("%s: momentum %d values, within %.3f of the tolerance, %d compiled "
          "step" % (type(sched).__name__, len(seen), worst,
                    len(o.compiled_steps())))

# --- 5. The bounded cache ---------------------------------------------------
model = tt.make_model()
o = muir.torch.Muon(model.named_parameters(), lr=0.02, max_compiled_steps=2)
params = dict(model.named_parameters())
sets = [("proj.weight",), ("router.weight",), ("up", "down"),
        ("proj.weight",)]
for step, frozen in enumerate(sets, 1):
    for n, p in params.items():
        p.requires_grad_(n not in frozen)
    run_step(o, model, step, "cache step %d" % step)
    fail.check(len(o.compiled_steps()) <= 2, "cache: %d steps held"
               % len(o.compiled_steps()))
for p in params.values():
    p.requires_grad_(True)
held = o.compiled_steps()
print("cache: %d held of 4 sets, closed: %s" % (
    len(held), all(s._handle is not None for s in held)))
try:
    o.max_compiled_steps = 0
    fail.check(False, "max_compiled_steps 0 accepted")
except ValueError as e:
    print("refused: %s" % e)

# --- 6. state_dict with several groups, deepcopy ----------------------------
def build(model):
    n = dict(model.named_parameters())
    return muir.torch.Muon([
        {"params": [n["proj.weight"], n["up"], n["down"]], "lr": 0.03},
        {"params": [n["router.weight"]], "use_muon": True, "lr": 0.01,
         "momentum": 0.9},
        {"params": [n["embed.weight"], n["head.weight"], n["norm"],
                    n["proj.bias"]], "use_muon": False, "lr": 2e-3}])


model = tt.make_model()
o = build(model)
for step in range(1, 3):
    tt.train_step(model, o, step)
buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": o.state_dict()}, buf)
twin = copy.deepcopy((model, o))
for step in range(3, 5):
    tt.train_step(model, o, step)
buf.seek(0)
saved = torch.load(buf)
model2 = tt.make_model(seed=5)
model2.load_state_dict(saved["model"])
o2 = build(model2)
o2.load_state_dict(saved["opt"])
for step in range(3, 5):
    tt.train_step(model2, o2, step)
tm, to = twin
for step in range(3, 5):
    tt.train_step(tm, to, step)
ok, why = tt.same(tt.snapshot(model, o), tt.snapshot(model2, o2))
fail.check(ok, "resumed from torch.load: %s" % why)
ok2, why2 = tt.same(tt.snapshot(model, o), tt.snapshot(tm, to))
fail.check(ok2, "deepcopy: %s" % why2)
fail.check(all(p is not q for p, q in zip(model.parameters(),
                                          tm.parameters())),
           "deepcopy shares parameters")
print("state_dict 3 groups: resume bitwise %s; deepcopy bitwise %s" % (ok, ok2))

for what, other in (
        ("two groups", muir.torch.Muon(tt.make_model().named_parameters())),
        ("other shapes", None)):
    sd = copy.deepcopy(saved["opt"])
    if other is None:
        other = build(tt.make_model())
        first = sd["param_groups"][0]["params"][0]
        sd["state"][first]["momentum_buffer"] = torch.zeros(3, 3)
    try:
        other.load_state_dict(sd)
        fail.check(False, "load_state_dict of %s accepted" % what)
    except ValueError as e:
        print("load %s refused: %s" % (what, e))

# --- 7. 4-D convolution weights, non-contiguous gradients ------------------
conv = torch.nn.Conv2d(3, 8, 3)
o = muir.torch.Muon(conv.named_parameters(), lr=0.02)
fail.check(o._info[conv.weight]["optimizer"] == "muon",
           "conv weight takes %s" % o._info[conv.weight]["optimizer"])
x = torch.randn(2, 3, 6, 6)
conv(x).square().sum().backward()
conv.weight.grad = conv.weight.grad.contiguous(
    memory_format=torch.channels_last)
fail.check(not conv.weight.grad.is_contiguous(), "grad is contiguous")
before = capture(o)
o.step()
e = check_step(o, before, "conv")
print("conv: weight %s takes Muon as %s, within %.3f of the tolerance "
      "(channels_last gradient)" % (tuple(conv.weight.shape),
                                    o._info[conv.weight]["desc_shape"], e))
conv.weight.data = conv.weight.data.contiguous(
    memory_format=torch.channels_last)
o.zero_grad()
conv(x).square().sum().backward()
before = capture(o)
o.step()
e = check_step(o, before, "conv channels_last")
fail.check(not conv.weight.is_contiguous(), "weight became contiguous")
print("conv channels_last weight: within %.3f of the tolerance" % e)

# --- 8. bfloat16 parameters: float32 state and maths, rounded once ------
torch.manual_seed(3)
net = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.Tanh(),
                          torch.nn.Linear(24, 8)).to(torch.bfloat16)
o = muir.torch.Muon(net.named_parameters(), lr=0.02, weight_decay=0.1)
worst_ulp = 0.0
for step in range(1, 4):
    x = torch.randn(5, 16, dtype=torch.bfloat16)
    net(x).float().square().sum().backward()
    before = capture(o)
    o.step()
    for p, (w, g, s, group, gi) in before.items():
        info = o._info[p]
        fail.check(p.dtype is torch.bfloat16 and all(
            t.dtype is torch.float32 for t in o.state[p].values()
            if isinstance(t, torch.Tensor)), "bf16: dtypes")
        if info["optimizer"] == "muon":
            rw, rm = tt.ref.muon_update(
                w, g, s.get("momentum_buffer", 0.0 * w), group["lr"],
                beta=group["momentum"], weight_decay=group["weight_decay"])
            rstate = [("momentum_buffer", rm)]
        else:
            t = s.get("step", 0) + 1
            rw, rm, rv = tt.ref.adamw_update(
                w, g, s.get("exp_avg", 0.0 * w), s.get("exp_avg_sq", 0.0 * w),
                t, group["lr"], beta1=group["betas"][0],
                beta2=group["betas"][1], eps=group["eps"],
                weight_decay=group["weight_decay"])
            rstate = [("exp_avg", rm), ("exp_avg_sq", rv)]
        # One bfloat16 ulp at the reference's value: 2^(exponent - 7).
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(rw), 1e-30))) - 7)
        err = float(np.max(np.abs(f64(p) - rw) / ulp))
        worst_ulp = max(worst_ulp, err)
        fail.check(err <= 1.0, "bf16 step %d %s: %.3g ulp from the float64 "
                   "step" % (step, info["name"], err))
        for kind, r in rstate:
            e = tt.rel(f64(o.state[p][kind]), r) / TOL
            fail.check(e <= 1.0, "bf16 step %d %s %s: %.3g times the "
                       "tolerance" % (step, info["name"], kind, e))
    o.zero_grad(set_to_none=True)
print("bf16: 3 steps, parameters within %.2f bfloat16 ulp of the float64 "
      "step, state float32" % worst_ulp)

# --- 9. float64 parameters: float64 throughout -------------------------
# A float64 model (a convolution weight as a matrix, linear weights,
# biases) beside a float32 linear layer in the same step; step 2 skips the
# head (no gradient: its float64 state bound as its stand-in). Each
# update's change within 1e-8 of the float64 reference's, the state within
# 1e-12 (float32 arithmetic is at 1e-7).
TOL64, TOL64_STATE = 1e-8, 1e-12
torch.manual_seed(4)
conv64 = torch.nn.Conv2d(3, 8, 3).double()
body = torch.nn.Sequential(torch.nn.Linear(72, 24), torch.nn.Tanh(),
                           torch.nn.Linear(24, 16)).double()
head32 = torch.nn.Linear(16, 4)
params = [("conv.weight", conv64.weight), ("conv.bias", conv64.bias)] + \
    [("body." + n, q) for n, q in body.named_parameters()] + \
    [("head." + n, q) for n, q in head32.named_parameters()]
o = muir.torch.Muon(params, lr=0.02, weight_decay=0.1)
worst64 = worst64_state = 0.0
for step in range(1, 4):
    x = torch.randn(2, 3, 5, 5, dtype=torch.float64)
    h = body(conv64(x).reshape(2, -1))
    loss = h.square().sum()
    if step != 2:
        loss = loss + head32(h.float()).square().sum()
    loss.backward()
    before = capture(o)
    o.step()
    for q, (w, g, s, group, gi) in before.items():
        info = o._info[q]
        wide = q.dtype is torch.float64
        shape = info["desc_shape"]
        w2, g2 = w.reshape(shape), g.reshape(shape)
        if info["optimizer"] == "muon":
            rw, rm = tt.ref.muon_update(
                w2, g2, s.get("momentum_buffer", 0.0 * w).reshape(shape),
                group["lr"], beta=group["momentum"],
                weight_decay=group["weight_decay"])
            rstate = [("momentum_buffer", rm)]
        else:
            t = s.get("step", 0) + 1
            rw, rm, rv = tt.ref.adamw_update(
                w2, g2, s.get("exp_avg", 0.0 * w2),
                s.get("exp_avg_sq", 0.0 * w2), t, group["lr"],
                beta1=group["betas"][0], beta2=group["betas"][1],
                eps=group["eps"], weight_decay=group["weight_decay"])
            rstate = [("exp_avg", rm), ("exp_avg_sq", rv)]
        got = f64(q).reshape(shape)
        if not wide:
            e = tt.update_error(w2, got, rw, TOL)
            fail.check(e <= 1.0, "f64 step %d %s (float32): %.3g times the "
                       "tolerance" % (step, info["name"], e))
            continue
        fail.check(all(t.dtype is torch.float64 for t in o.state[q].values()
                       if isinstance(t, torch.Tensor)),
                   "f64 step %d %s: state not float64" % (step, info["name"]))
        e = tt.rel(got - w2, rw - w2)
        worst64 = max(worst64, e)
        fail.check(e <= TOL64, "f64 step %d %s: change %.3g from the float64 "
                   "step's" % (step, info["name"], e))
        for kind, r in rstate:
            e = tt.rel(f64(o.state[q][kind]).reshape(shape), r)
            worst64_state = max(worst64_state, e)
            fail.check(e <= TOL64_STATE, "f64 step %d %s %s: %.3g from the "
                       "float64 step's" % (step, info["name"], kind, e))
    o.zero_grad(set_to_none=True)
counts = [int(o.state[q]["step"]) for q in (head32.bias, conv64.bias)]
print("f64: 3 steps, changes within %.1e and state within %.1e of the "
      "float64 step, %d compiled step, head counts %s"
      % (worst64, worst64_state, len(o.compiled_steps()), counts))
body[0].weight.data = body[0].weight.data.float()
body[0].weight.grad = torch.zeros(24, 72)
try:
    o.step()
    print("f64 refused: not refused")
except muir.torch.ParameterError as e:
    print("f64 refused:", e)
fail.finish()
