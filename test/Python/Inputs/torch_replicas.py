"""muir.torch.Muon(check_replicas=True) on 2 ranks under mpirun, with
torch.distributed (gloo) initialised: equal gradients step; a gradient
that differs on one rank (a missing all-reduce; down to one bit of one
element) is refused on every rank, naming the parameter, and nothing is
updated (parameters, state and AdamW counts bitwise as before).

  torch_replicas.py INIT_FILE     (torch.distributed's file:// rendezvous)
"""
import os
import sys

import torch
import torch.distributed as dist

import muir.torch
import torchtest as tt

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
dist.init_process_group("gloo", init_method="file://" + sys.argv[1],
                        rank=rank, world_size=world)
fail = tt.Failures("torch-replicas rank %d" % rank)

model = tt.make_model()
opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                      check_replicas=True)
# Every rank the same data: the same gradients (as after an all-reduce).
tt.train_step(model, opt, 1)
print("rank %d of %d: equal gradients stepped" % (rank, world), flush=True)


def desync(case, name, change):
    tt.loss_of(model, 2).backward()
    p = dict(model.named_parameters())[name]
    if rank == 1:
        change(p.grad)
    before = tt.snapshot(model, opt)
    try:
        opt.step()
        fail.check(False, "%s: stepped" % case)
    except muir.torch.ParameterError as e:
        fail.check(e.name == name, "%s: names %r" % (case, e.name))
        print("rank %d %s: %s" % (rank, case, e), flush=True)
    ok, what = tt.same(before, tt.snapshot(model, opt))
    fail.check(ok, "%s: updated %s" % (case, what))
    opt.zero_grad(set_to_none=True)


desync("off by 1e-3", "head.weight", lambda g: g[3, 5].add_(1e-3))


def flip(g):
    bits = g.view(-1).view(torch.int32)
    bits[7] ^= 1


desync("one bit", "norm", flip)
# Off: the same desynchronised gradients step (each rank its own).
opt.check_replicas = False
tt.loss_of(model, 3).backward()
if rank == 1:
    model.head.weight.grad.mul_(2.0)
opt.step()
print("rank %d check_replicas=False: stepped" % rank, flush=True)
dist.destroy_process_group()
fail.finish()
