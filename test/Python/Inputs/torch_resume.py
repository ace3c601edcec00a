"""A run resumed from a torch.save checkpoint (model, optimizer and lr
scheduler state_dicts) equals the continuous run bitwise.

  torch_resume.py continuous OUT       steps 1..6 in one process
  torch_resume.py first CKPT           steps 1..3, then torch.save
  torch_resume.py resume CKPT OUT      a fresh process: fresh model and
                                       optimizer, load_state_dict, steps 4..6
  torch_resume.py compare A B          every parameter and state equal
"""
import sys

import torch

import muir.torch
import torchtest as tt

STEPS, SPLIT = 6, 3


def setup(seed):
    model = tt.make_model(seed)
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1, adamw_weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    return model, opt, sched


def train(model, opt, sched, first, last):
    losses = {}
    for step in range(first, last + 1):
        losses[step] = tt.train_step(model, opt, step)
        sched.step()
        print("step %d loss %.7f" % (step, losses[step]))
    return losses


def final(model, opt, losses):
    names = {p: n for n, p in model.named_parameters()}
    return {"params": {n: p.detach().clone()
                       for n, p in model.named_parameters()},
            "state": {names[p]: dict(s) for p, s in opt.state.items()},
            "lr": [g["lr"] for g in opt.param_groups], "losses": losses}


def main(argv):
    mode = argv[1]
    if mode == "continuous":
        model, opt, sched = setup(0)
        losses = train(model, opt, sched, 1, STEPS)
        torch.save(final(model, opt, losses), argv[2])
    elif mode == "first":
        model, opt, sched = setup(0)
        train(model, opt, sched, 1, SPLIT)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                    "sched": sched.state_dict()}, argv[2])
    elif mode == "resume":
        # Another seed: everything must come from the checkpoint.
        model, opt, sched = setup(1)
        ckpt = torch.load(argv[2])
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        sched.load_state_dict(ckpt["sched"])
        losses = train(model, opt, sched, SPLIT + 1, STEPS)
        torch.save(final(model, opt, losses), argv[3])
    elif mode == "compare":
        fail = tt.Failures("torch-resume")
        a, b = torch.load(argv[2]), torch.load(argv[3])
        for n in a["params"]:
            fail.check(torch.equal(a["params"][n], b["params"][n]),
                       "parameter %s differs" % n)
        fail.check(set(a["state"]) == set(b["state"]), "state of different "
                   "parameters")
        count = 0
        for n in a["state"]:
            for k, v in a["state"][n].items():
                w = b["state"].get(n, {}).get(k)
                eq = torch.equal(v, w) if isinstance(v, torch.Tensor) \
                    else v == w
                fail.check(eq, "state %s of %s differs (%r)" % (
                    k, n, v if not isinstance(v, torch.Tensor) else "tensor"))
                count += 1
        for step, loss in b["losses"].items():
            fail.check(a["losses"][step] == loss, "step %d: loss %r resumed, "
                       "%r continuous" % (step, loss, a["losses"][step]))
        fail.check(a["lr"] == b["lr"], "lrs differ: %s %s" % (a["lr"],
                                                               b["lr"]))
        print("%d parameters, %d state values and the losses of steps %s "
              "bitwise equal" % (len(a["params"]), count,
                                 "-".join(map(str, (min(b["losses"]),
                                                    max(b["losses"]))))))
        fail.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
