"""A model holding muir.torch.MoE(ep=W) (and a replicated Linear before it,
shared experts) trained under DistributedDataParallel on W mpirun ranks
(gloo), each rank its own tokens, against one process holding every expert
(ep=1) on all the tokens with the mean of the ranks' losses (what DDP's
averaged gradients are the gradients of); the selection bias updated
(update_bias) after each step from the loads of every rank's tokens.

  torch_moe_ddp.py one W OUT        the single-process reference (OUT.pt)
  mpirun -n W torch_moe_ddp.py ddp W OUT      muir.torch.prepare_ddp, DDP
  mpirun -n W torch_moe_ddp.py ddp-dp W OUT   the same with ep = 1
  torchrun ... torch_moe_ddp.py ddp-edp W OUT  ep = W / 2 (edp = 2)
  mpirun -n W torch_moe_ddp.py reducer W OUT  prepare_ddp, no DDP forward
                                              (gradients averaged by hand)
  mpirun -n 2 torch_moe_ddp.py refuse 2 OUT   DDP without prepare_ddp
  torch_moe_ddp.py compare W ONE OUT   each rank's OUT<rank>.pt against
                                       ONE.pt
  torchrun --nproc-per-node W torch_moe_ddp.py ddp W OUT
                                       the ddp run launched by torchrun:
                                       muir's exchanges over the gloo group
  torch_moe_ddp.py same W A B          each rank's A<rank>.pt and
                                       B<rank>.pt bitwise equal

After prepare_ddp and the wrap, each rank's experts are still its own (DDP
broadcast none of them); the gradients of the first step and the
parameters and the selection bias after 3 SGD steps (DDP's replicated
ones and each rank's experts) are within 1e-5 of the reference's. Without prepare_ddp the first
forward refuses, naming it.
"""
import os
import sys

import torch
import torch.distributed as dist

import muir.torch as mt

H, F, E, K = 32, 24, 8, 2
STEPS = 3
TOKENS = (40, 29, 33, 21)
TOL = 1e-5


class Net(torch.nn.Module):
    def __init__(self, ep):
        super().__init__()
        self.pre = torch.nn.Linear(H, H)
        self.moe = mt.MoE(hidden=H, expert_size=F, experts=E, top_k=K,
                          shared_experts=1, ep=ep, max_tokens=128,
                          e_score_correction_bias=True,
                          bias_update_rate=0.05)

    def forward(self, x):
        return self.moe(torch.tanh(self.pre(x)))


def weights():
    torch.manual_seed(5)
    return Net(1).state_dict()


def data(step, rank):
    g = torch.Generator().manual_seed(100 * step + rank)
    t = TOKENS[rank]
    return torch.randn(t, H, generator=g), torch.randn(t, H, generator=g)


def grads(net):
    return {n: p.grad.clone() for n, p in net.named_parameters()}


def one(world, path):
    net = Net(1)
    net.load_state_dict(weights())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    first = None
    for step in range(STEPS):
        xs, dys = zip(*(data(step, r) for r in range(world)))
        opt.zero_grad()
        y = net(torch.cat(xs))
        # The mean over the ranks of each rank's loss (y_r * dy_r).sum().
        (y * torch.cat(dys)).sum().div(world).backward()
        if first is None:
            first = grads(net)
        opt.step()
        net.moe.update_bias()
    torch.save({"grads": first, "params": net.state_dict()}, path + ".pt")
    print("one process: %d ranks' tokens, %d steps" % (world, STEPS))


def ranked(mode, world, path):
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        dist.init_process_group("gloo", init_method="file://%s.store" % path,
                                rank=rank, world_size=world)
    else:
        # torchrun: its env:// rendezvous; muir.torch runs the layer's
        # exchanges over this group.
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        assert dist.get_world_size() == world
    try:
        # ddp-dp: ep = 1 (every rank every expert; DDP averages them all);
        # ddp-edp: ep = W / 2 (the folding edp=2 x ep: rank r holds block
        # r % ep, its 2 replicas sum their gradients).
        ep = 1 if mode == "ddp-dp" else world // 2 if mode == "ddp-edp" \
            else world
        net = Net(ep)
        el = E // ep
        lo, hi = ((rank % ep) * el, (rank % ep + 1) * el) if ep > 1 \
            else (0, E)
        full = weights()
        net.load_state_dict({n: t[lo:hi] if n.split(".")[-1] in
                             ("gate_proj", "up_proj", "down_proj") else t
                             for n, t in full.items()})
        ignored = []
        if mode in ("ddp", "ddp-dp", "ddp-edp", "reducer"):
            ignored = mt.prepare_ddp(net)
            if rank == 0:
                print("prepare_ddp: %s" % ", ".join(ignored))
        # reducer: no DDP forward (as under DDP's Python reducer, which does
        # not show the layer it runs inside DDP); the replicated gradients
        # averaged by hand after the backward.
        ddp = net if mode == "reducer" else \
            torch.nn.parallel.DistributedDataParallel(net)
        own = all(torch.equal(getattr(net.moe, n), full["moe." + n][lo:hi])
                  for n in ("gate_proj", "up_proj", "down_proj"))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        first = None
        for step in range(STEPS):
            x, dy = data(step, rank)
            opt.zero_grad()
            try:
                y = ddp(x)
            except mt.MoEInputError as e:
                print("rank %d refused: %s" % (rank, e), flush=True)
                sys.stdout.flush()
                return
            (y * dy).sum().backward()
            if mode == "reducer":
                for n, p in net.named_parameters():
                    if n not in ignored:
                        dist.all_reduce(p.grad)
                        p.grad.div_(world)
            if first is None:
                first = grads(net)
            opt.step()
            net.moe.update_bias()
        torch.save({"grads": first, "params": net.state_dict(),
                    "own": own, "rows": (lo, hi)},
                   "%s%d.pt" % (path, rank))
        print("rank %d of %d: experts %d-%d, own after the wrap: %s"
              % (rank, world, lo, hi - 1, "ok" if own else "FAIL"),
              flush=True)
    finally:
        dist.destroy_process_group()


def compare(world, one_path, path):
    want = torch.load(one_path + ".pt")
    worst = {"grads": 0.0, "params": 0.0}
    ok = True
    for rank in range(world):
        got = torch.load("%s%d.pt" % (path, rank))
        ok &= got["own"]
        lo, hi = got["rows"]
        for what in ("grads", "params"):
            for n, t in got[what].items():
                if n.endswith("tokens_per_expert_since_update"):
                    continue
                w = want[what][n]
                if n.split(".")[-1] in ("gate_proj", "up_proj", "down_proj"):
                    w = w[lo:hi]
                err = float((t - w).abs().max() / w.abs().max())
                worst[what] = max(worst[what], err)
    for what, label in (("grads", "first step's gradients"),
                        ("params", "parameters and selection bias after %d "
                         "SGD steps" % STEPS)):
        good = worst[what] <= TOL
        ok &= good
        print("DDP on %d ranks: %s within %g of one process's %s"
              % (world, label, TOL, "ok" if good else
                 "FAIL (rel err %.1e)" % worst[what]))
    print("torch-moe-ddp %d: %s" % (world, "PASS" if ok else "FAIL"))
    if not ok:
        sys.exit(1)


def same(world, a, b):
    """Bitwise: the gradients and parameters of two runs, rank by rank."""
    ok = True
    for rank in range(world):
        x = torch.load("%s%d.pt" % (a, rank))
        y = torch.load("%s%d.pt" % (b, rank))
        for what in ("grads", "params"):
            for n, t in x[what].items():
                if not torch.equal(t, y[what][n]):
                    print("rank %d: %s %s differ" % (rank, what, n))
                    ok = False
    print("torchrun and mpirun on %d ranks: %s" % (
        world, "bitwise equal" if ok else "FAIL"))
    if not ok:
        sys.exit(1)


def main():
    mode, world, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "one":
        one(world, path)
    elif mode == "same":
        same(world, path, sys.argv[4])
    elif mode == "compare":
        compare(world, path, sys.argv[4])
    else:
        ranked(mode, world, path)


if __name__ == "__main__":
    main()
