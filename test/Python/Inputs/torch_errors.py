"""muir.torch.Muon's errors: each names the parameter, and nothing is
updated (parameters and optimizer state bitwise as before, no state
created). Parameters without a gradient are skipped, as torch optimizers
do: unchanged, no state.
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


def expect_error(case, model, opt, exc=muir.torch.ParameterError, name=None):
    before = tt.snapshot(model, opt)
    try:
        opt.step()
    except exc as e:
        print("%s: %s: %s" % (case, type(e).__name__, e))
        if name is not None:
            fail.check(getattr(e, "name", None) == name and
                       "'%s'" % name in str(e),
                       "%s: the error does not name '%s'" % (case, name))
    except Exception as e:
        fail.check(False, "%s: raised %s: %s, expected %s" % (
            case, type(e).__name__, e, exc.__name__))
    else:
        fail.check(False, "%s: step() did not raise" % case)
    ok, what = tt.same(before, tt.snapshot(model, opt))
    fail.check(ok, "%s: something was updated: %s" % (case, what))


# float64 parameter (and gradient), at the first step: no state created.
model, opt = fresh(steps=0)
model.proj.weight.data = model.proj.weight.data.double()
model.proj.weight.grad = None
model.proj.weight.grad = torch.ones(16, 16, dtype=torch.float64)
expect_error("float64", model, opt, name="proj.weight")
fail.check(len(opt.state) == 0, "float64: state was created")

# bfloat16 parameter after some steps.
model, opt = fresh()
model.norm.data = model.norm.data.bfloat16()
model.norm.grad = None
model.norm.grad = torch.ones(16, dtype=torch.bfloat16)
expect_error("bfloat16", model, opt, name="norm")

# float64 gradient of a float32 parameter.
model, opt = fresh()
model.up.grad.data = model.up.grad.data.double()
expect_error("float64 gradient", model, opt, name="up")

# Non-contiguous parameter (same shape, transposed storage).
model, opt = fresh()
w = model.router.weight
w.data = w.data.t().contiguous().t()
expect_error("non-contiguous", model, opt, name="router.weight")

# Non-contiguous gradient.
model, opt = fresh()
g = model.down.grad
model.down.grad = g.transpose(1, 2).contiguous().transpose(1, 2)
expect_error("non-contiguous gradient", model, opt, name="down")

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

# A compile-time setting the description reader refuses (momentum 1.5):
# the step is compiled again, fails, and nothing is updated.
model, opt = fresh()
opt.param_groups[0]["momentum"] = 1.5
expect_error("momentum 1.5", model, opt, exc=muir.MuirError)

# A learning rate that is not finite: refused before any state is made.
model, opt = fresh(steps=0)
tt.loss_of(model, 1).backward()
opt.param_groups[1]["lr"] = float("nan")
expect_error("lr nan", model, opt, exc=ValueError)
fail.check(len(opt.state) == 0, "lr nan: state made before the refusal")

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
fail.finish()
