"""muir.torch.Muon's errors: each names the parameter (or the param group
and its key), and nothing is updated (parameters and optimizer state
bitwise as before, no state created, AdamW's step counts as they were).
Parameters without a gradient are skipped, as torch optimizers do:
unchanged, no state. Gradients holding NaN or inf are refused
(check_finite); hyperparameters out of the description reader's ranges
are refused by the constructor and by step(); a param_groups key the step
does not read is refused at step(), the lr schedulers' keys are not.
"""
import torch

import muir
import muir.torch
import torchtest as tt

fail = tt.Failures("torch-errors")


def fresh(steps=1, **kw):
    """A model and optimizer after `steps` good steps, and a backward pass
    ready for the next."""
    model = tt.make_model()
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1, **kw)
    for step in range(1, steps + 1):
        tt.train_step(model, opt, step)
    tt.loss_of(model, steps + 1).backward()
    return model, opt


def expect_error(case, model, opt, exc=muir.torch.ParameterError, name=None,
                 key=None):
    before = tt.snapshot(model, opt)
    try:
        opt.step()
    except exc as e:
        print("%s: %s: %s" % (case, type(e).__name__, e))
        if name is not None:
            fail.check(getattr(e, "name", None) == name and
                       "'%s'" % name in str(e),
                       "%s: the error does not name '%s'" % (case, name))
        if key is not None:
            fail.check(getattr(e, "key", None) == key and key in str(e),
                       "%s: the error does not name the key '%s'"
                       % (case, key))
    except Exception as e:
        fail.check(False, "%s: raised %s: %s, expected %s" % (
            case, type(e).__name__, e, exc.__name__))
    else:
        fail.check(False, "%s: step() did not raise" % case)
    ok, what = tt.same(before, tt.snapshot(model, opt))
    fail.check(ok, "%s: something was updated: %s" % (case, what))


# A parameter made float64 after the optimizer was built (a float32 one
# when built; float64 ones from the start are updated in float64), at the
# first step: no state created.
model, opt = fresh(steps=0)
model.proj.weight.data = model.proj.weight.data.double()
model.proj.weight.grad = None
model.proj.weight.grad = torch.ones(16, 16, dtype=torch.float64)
expect_error("float64", model, opt, name="proj.weight")
fail.check(len(opt.state) == 0, "float64: state was created")

# float16 parameter after some steps (bfloat16 is updated; float16 not).
model, opt = fresh()
model.norm.data = model.norm.data.half()
model.norm.grad = None
model.norm.grad = torch.ones(16, dtype=torch.float16)
expect_error("float16", model, opt, name="norm")

# float64 gradient of a float32 parameter.
model, opt = fresh()
model.up.grad.data = model.up.grad.data.double()
expect_error("float64 gradient", model, opt, name="up")

# A non-contiguous parameter (same shape, transposed storage) and a
# non-contiguous gradient are not errors: the step reads them through
# contiguous copies, with bitwise the result of contiguous ones (and the
# parameter keeps its own strides).
model, opt = fresh()
ref_model, ref_opt = fresh()
ref_opt.step()
w = model.router.weight
w.data = w.data.t().contiguous().t()
g = model.down.grad
model.down.grad = g.transpose(1, 2).contiguous().transpose(1, 2)
opt.step()
ok, what = tt.same(tt.snapshot(model, opt), tt.snapshot(ref_model, ref_opt))
fail.check(ok and not w.is_contiguous(), "non-contiguous: %s" % what)
print("non-contiguous parameter and gradient: bitwise the contiguous step "
      "%s, strides kept %s" % (ok, tuple(w.stride())))

# Shape change after compiling.
model, opt = fresh()
model.proj.weight.data = torch.zeros(8, 16)
model.proj.weight.grad = None
model.proj.weight.grad = torch.ones(8, 16)
expect_error("shape change", model, opt, name="proj.weight")

# A device muir cannot run ('meta'), beside the model's CPU parameters.
model = tt.make_model()
meta = torch.nn.Parameter(torch.empty(16, 16, device="meta"))
opt = muir.torch.Muon(list(model.named_parameters()) + [("extra", meta)],
                      lr=0.02)
tt.loss_of(model, 1).backward()
meta.grad = torch.empty(16, 16, device="meta")
expect_error("meta device", model, opt, name="extra")

# CPU tensors with target="cuda" (no GPU needed: it is refused before).
model, opt = fresh(steps=0, target="cuda")
expect_error("target cuda", model, opt, name="norm")

NAN, INF = float("nan"), float("inf")
GroupError = muir.torch.ParamGroupError

# A compile-time setting out of the description reader's range (momentum
# 1.5): refused before it is compiled, nothing updated.
model, opt = fresh()
opt.param_groups[0]["momentum"] = 1.5
expect_error("momentum 1.5", model, opt, exc=GroupError, key="momentum")

# A learning rate that is not finite: refused before any state is made.
model, opt = fresh(steps=0)
tt.loss_of(model, 1).backward()
opt.param_groups[1]["lr"] = NAN
expect_error("lr nan", model, opt, exc=ValueError, key="lr")
fail.check(len(opt.state) == 0, "lr nan: state made before the refusal")

# More values set in param_groups that the reader refuses, after a step
# (state and AdamW counts exist and must stay).
for group, key, value in ((0, "weight_decay", -0.1), (0, "lr", INF),
                          (1, "betas", (0.9, 1.0)), (1, "betas", (0.9,)),
                          (1, "eps", 0.0), (0, "nesterov", "true"),
                          (0, "ns_steps", 2.5), (0, "schedule", "cubic"),
                          (0, "scale_mode", "rms"),
                          (0, "scale_extra", NAN)):
    model, opt = fresh()
    opt.param_groups[group][key] = value
    expect_error("group %s %r" % (key, value), model, opt, exc=GroupError,
                 key=key)

# The constructor refuses the same values, naming its keyword.
for kw in ({"lr": NAN}, {"lr": -1.0}, {"weight_decay": INF},
           {"momentum": 1.0}, {"momentum": -0.5}, {"adamw_lr": INF},
           {"adamw_weight_decay": -1e-3}, {"adamw_betas": (0.9, 1.5)},
           {"adamw_betas": 0.9}, {"adamw_eps": -1e-8}, {"adamw_eps": NAN},
           {"nesterov": "yes"}, {"nesterov": None}, {"ns_steps": 0},
           {"scale_extra": 0.0}, {"lr": "0.02"}):
    (keyword, value), = kw.items()
    args = {"lr": 0.02}
    args.update(kw)
    try:
        muir.torch.Muon(tt.make_model().named_parameters(), **args)
    except GroupError as e:
        print("constructor %s=%r: %s" % (keyword, value, e))
        key = keyword.replace("adamw_", "")
        fail.check(e.key == key and e.group == (1 if "adamw" in keyword
                                                 else 0),
                   "constructor %s: key %r group %r" % (keyword, e.key,
                                                        e.group))
    except Exception as e:
        fail.check(False, "constructor %s: raised %s: %s" % (
            keyword, type(e).__name__, e))
    else:
        fail.check(False, "constructor %s=%r: no error" % (keyword, value))
for kw in ({"ns_eps": 0.0}, {"momentum_kind": "nesterov"},
           {"check_finite": "no"}):
    try:
        muir.torch.Muon(tt.make_model().named_parameters(), lr=0.02, **kw)
    except ValueError as e:
        print("constructor %s: %s" % (", ".join(kw), e))
    else:
        fail.check(False, "constructor %r: no error" % (kw,))

# param_groups keys the step does not read, removed ones and changed
# structural ones: refused at the next step(), naming the key.
def edit_unknown(opt, model):
    opt.param_groups[0]["foo"] = 1
def edit_typo(opt, model):
    opt.param_groups[0]["weight_decy"] = 0.0
def edit_other(opt, model):
    opt.param_groups[1]["nesterov"] = False  # Muon's, not AdamW's
def edit_removed(opt, model):
    del opt.param_groups[1]["eps"]
def edit_params(opt, model):
    opt.param_groups[0]["params"].append(torch.nn.Parameter(torch.ones(4)))
def edit_moved(opt, model):
    p = opt.param_groups[0]["params"].pop()
    opt.param_groups[1]["params"].append(p)
def edit_use_muon(opt, model):
    opt.param_groups[0]["use_muon"] = False
def edit_groups(opt, model):
    opt.param_groups.append(dict(opt.param_groups[1], params=[]))
for case, edit, key in (("unknown", edit_unknown, "foo"),
                        ("typo", edit_typo, "weight_decy"),
                        ("other's", edit_other, "nesterov"),
                        ("removed", edit_removed, "eps"),
                        ("params", edit_params, "params"),
                        ("moved", edit_moved, "params"),
                        ("use_muon", edit_use_muon, "use_muon"),
                        ("groups", edit_groups, None)):
    model, opt = fresh()
    edit(opt, model)
    expect_error("key %s" % case, model, opt, exc=GroupError, key=key)

# The keys torch's lr schedulers add are allowed (not read): a few steps
# under each, lr read at every step.
scheds = (
    ("OneCycleLR", lambda o: torch.optim.lr_scheduler.OneCycleLR(
        o, max_lr=[0.02, 0.003], total_steps=10, cycle_momentum=False)),
    ("CyclicLR", lambda o: torch.optim.lr_scheduler.CyclicLR(
        o, base_lr=0.001, max_lr=0.02, step_size_up=2,
        cycle_momentum=False)),
    ("CosineAnnealingLR", lambda o:
     torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4)),
    ("SWALR", lambda o: torch.optim.swa_utils.SWALR(o, swa_lr=0.01,
                                                      anneal_epochs=2)))
for case, make in scheds:
    model = tt.make_model()
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1)
    sched = make(opt)
    lrs = []
    try:
        for step in range(1, 4):
            tt.train_step(model, opt, step)
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
    except Exception as e:
        fail.check(False, "scheduler %s: %s: %s" % (case, type(e).__name__,
                                                    e))
    added = sorted(set(opt.param_groups[0]) - {
        "params", "use_muon", "lr", "weight_decay", "momentum", "nesterov",
        "ns_steps", "schedule", "scale_mode", "scale_extra"})
    print("scheduler %s: 3 steps, keys added %s, Muon lr %s" % (
        case, ", ".join(added), " ".join("%.4g" % x for x in lrs)))
model, opt = fresh()
for group in opt.param_groups:
    group["base_momentum"], group["max_momentum"] = 0.85, 0.95
opt.step()
print("base_momentum, max_momentum: stepped")

# Gradients holding NaN or inf: refused before anything changes, naming
# the parameter and the element (after a step: state and counts stay).
Finite = muir.torch.NonFiniteGradientError
model, opt = fresh()
model.up.grad[1, 2, 3] = NAN
expect_error("nan gradient", model, opt, exc=Finite, name="up")
model, opt = fresh()
model.embed.weight.grad.view(-1)[-1] = -INF
expect_error("-inf gradient", model, opt, exc=Finite, name="embed.weight")
# ... at the first step: no state made.
model, opt = fresh(steps=0)
model.norm.grad[3] = INF
model.proj.bias.grad[0] = NAN
try:
    before = tt.snapshot(model, opt)
    opt.step()
except Finite as e:
    print("first step: %s: %s; element %d value %s" % (
        type(e).__name__, e.name, e.element, e.value))
    fail.check(tt.same(before, tt.snapshot(model, opt))[0] and
               not opt.state, "first step: something was updated")
else:
    fail.check(False, "first step: a non-finite gradient was not refused")
# Names that clash with the step's own (the step's arguments are p0,
# p1, ...): the error names the user's.
w, wg = (torch.nn.Parameter(torch.ones(8, 8)) for _ in range(2))
opt = muir.torch.Muon([("w", w), ("w.grad", wg)], lr=0.02)
w.grad, wg.grad = torch.ones(8, 8), torch.ones(8, 8)
wg.grad[7, 7] = NAN
try:
    opt.step()
except Finite as e:
    print("clashing names: %s" % e)
fail.check(torch.equal(w, torch.ones(8, 8)) and not opt.state,
           "clashing names: updated")
# Finite gradients whose sum overflows float32: the elements are
# searched, none is refused.
model, opt = fresh()
model.down.grad.fill_(3e38)
try:
    opt.step()
    print("overflowing sum: stepped")
except Exception as e:
    fail.check(False, "overflowing sum: %s: %s" % (type(e).__name__, e))
# check_finite=False (constructor or attribute): no check, the step runs.
for how in ("constructor", "attribute"):
    model, opt = fresh(**({"check_finite": False} if how == "constructor"
                          else {}))
    if how == "attribute":
        opt.check_finite = False
    model.router.weight.grad[0, 0] = NAN
    before = tt.snapshot(model, opt)
    opt.step()
    fail.check(not tt.same(before, tt.snapshot(model, opt))[0],
               "check_finite=False (%s): nothing updated" % how)
    print("check_finite=False (%s): stepped, check_finite %s" % (
        how, opt.check_finite))

# Parameters without a gradient are skipped: unchanged, no state.
model, opt = fresh(steps=0)
model.up.grad = None
model.head.weight.grad = None
up, head = model.up.detach().clone(), model.head.weight.detach().clone()
opt.step()
fail.check(torch.equal(model.up, up), "skipped: up changed")
fail.check(torch.equal(model.head.weight, head), "skipped: head changed")
fail.check(model.up not in opt.state and model.head.weight not in opt.state,
           "skipped: state created for a parameter without a gradient")
fail.check(not torch.equal(model.down.detach(), tt.make_model().down),
           "skipped: the others were not updated")
print("skipped: up and head.weight unchanged, no state; %d parameters "
      "updated" % len(opt.state))
# ... and take part again once they have one, with fresh state (AdamW
# count 1) while the others go on (count 2): two compiled steps.
tt.train_step(model, opt, 2)
fail.check(opt.state[model.head.weight]["step"] == 1 and
           opt.state[model.embed.weight]["step"] == 2,
           "skipped: AdamW counts %r, %r" % (
               opt.state[model.head.weight]["step"],
               opt.state[model.embed.weight]["step"]))
print("rejoined: AdamW counts head %d embed %d" % (
    opt.state[model.head.weight]["step"],
    opt.state[model.embed.weight]["step"]))

# Constructor errors.
for case, kw in (("layout", {"layout": "tp=2"}), ("target", {"target": "tpu"}),
                 ("keyword", {"nesterov_kind": 1})):
    try:
        model = tt.make_model()
        muir.torch.Muon(model.named_parameters(), lr=0.02, **kw)
        opt.step()
    except (ValueError, TypeError) as e:
        print("constructor %s: %s: %s" % (case, type(e).__name__, e))
    else:
        fail.check(False, "constructor %s: no error" % case)

# Every keyword explicit: the step library's user options (muir.options())
# are keywords of Muon's signature, and NorMuon's shows Muon's (but
# scale_mode) beside its own, as help() and IDEs read them.
import inspect
muon_keys = inspect.signature(muir.torch.Muon).parameters
user = [n.replace("-", "_") for n, o in muir.options().items() if o.user]
fail.check(all(k in muon_keys for k in user),
           "Muon lacks keywords %r" % [k for k in user if k not in muon_keys])
fail.check(not any(p.kind == p.VAR_KEYWORD for p in muon_keys.values()),
           "Muon takes **keywords")
normuon_keys = inspect.signature(muir.torch.NorMuon).parameters
fail.check("scale_mode" not in normuon_keys and
           all(k in normuon_keys for k in muon_keys if k != "scale_mode")
           and "beta2" in normuon_keys,
           "NorMuon's signature: %s" % list(normuon_keys))
print("signatures: Muon takes %d step options by keyword; NorMuon %d keywords"
      % (len(user), len(normuon_keys)))
fail.finish()
