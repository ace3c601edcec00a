"""muir.torch.Muon on 2 ranks under mpirun (layout dp=2 by default from
OMPI_COMM_WORLD_SIZE: Newton-Schulz shared out over the ranks, results
gathered) against 1 rank, bitwise. Every rank sees the same data (as after
a data-parallel gradient all-reduce), so every rank must end with the
parameters and state of the 1-rank run; step 3 skips two parameters (no
gradient) on every rank.

  torch_mpi.py run OUT_PREFIX      writes OUT_PREFIX<rank>.pt (1 rank: 0)
      [--first S] [--last S]      only steps S..S (default 1..4)
      [--load CKPT] [--save CKPT] start from a checkpoint (model, optimizer
                                  and lr scheduler state_dicts), write one
                                  after the last step (rank 0)
  torch_mpi.py compare ONE R0 R1   every tensor bitwise equal

A checkpoint saved on 2 ranks and loaded on 1, or saved on 1 and loaded on
2, continues as the run that never stopped (issue 41: a state_dict loads
on another world size).
"""
import os
import sys

import torch

import muir.torch
import torchtest as tt

STEPS = 4


def run(prefix, first=1, last=STEPS, load=None, save=None):
    launcher = "mpirun"
    if "OMPI_COMM_WORLD_SIZE" not in os.environ and "WORLD_SIZE" in os.environ:
        # torchrun: muir.torch's steps run over torch.distributed's group.
        import torch.distributed as dist
        dist.init_process_group("gloo")
        launcher = "torchrun"
    model = tt.make_model()
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1, adamw_weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.8)
    if load:
        ckpt = torch.load(load)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        sched.load_state_dict(ckpt["sched"])
    named = dict(model.named_parameters())
    losses = []
    for step in range(first, last + 1):
        # Step 3 skips two parameters (no gradient): their take flags.
        skip = [named["up"], named["norm"]] if step == 3 else []
        for p in skip:
            p.requires_grad_(False)
        losses.append(tt.train_step(model, opt, step))
        for p in skip:
            p.requires_grad_(True)
        sched.step()
    compiled = len(opt.compiled_steps())
    step = opt.compiled_steps()[0]
    env = int(os.environ.get("OMPI_COMM_WORLD_SIZE",
                             os.environ.get("WORLD_SIZE", "1")))
    print("rank %d of %d (%s: %d); %d compiled step; losses %s" % (
        step.rank, step.world_size, launcher, env, compiled,
        " ".join("%.6f" % x for x in losses)), flush=True)
    if step.world_size != env:
        print("FAIL: the step runs on %d ranks, the job has %d"
              % (step.world_size, env))
        sys.exit(1)
    if save and step.rank == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                    "sched": sched.state_dict()}, save)
    names = {p: n for n, p in model.named_parameters()}
    torch.save({"params": {n: p.detach().clone()
                           for n, p in model.named_parameters()},
                "state": {names[p]: dict(s) for p, s in opt.state.items()},
                "rank": step.rank, "world": step.world_size},
               "%s%d.pt" % (prefix, step.rank))


def compare(paths):
    fail = tt.Failures("torch-mpi")
    runs = [torch.load(p) for p in paths]
    one = runs[0]
    fail.check(one["world"] == 1, "the reference ran on %d ranks"
               % one["world"])
    for r in runs[1:]:
        fail.check(r["world"] == len(runs) - 1, "rank %d ran on %d ranks"
                   % (r["rank"], r["world"]))
        for n, t in one["params"].items():
            fail.check(torch.equal(t, r["params"][n]),
                       "rank %d: parameter %s differs from 1 rank" % (
                           r["rank"], n))
        for n, s in one["state"].items():
            for k, v in s.items():
                w = r["state"][n][k]
                eq = torch.equal(v, w) if isinstance(v, torch.Tensor) \
                    else v == w
                fail.check(eq, "rank %d: state %s of %s differs from 1 rank"
                           % (r["rank"], k, n))
    print("%d ranks: %d parameters and their state bitwise equal to 1 rank "
          "and to each other" % (len(runs) - 1, len(one["params"])))
    fail.finish()


if __name__ == "__main__":
    if sys.argv[1] == "run":
        flags = dict(zip(sys.argv[3::2], sys.argv[4::2]))
        run(sys.argv[2], first=int(flags.get("--first", 1)),
            last=int(flags.get("--last", STEPS)), load=flags.get("--load"),
            save=flags.get("--save"))
    else:
        compare(sys.argv[2:])
