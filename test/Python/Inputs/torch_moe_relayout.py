"""muir.torch state_dicts of expert-parallel MoE stacks on another number
of ranks. A model (a muir.torch.MoE with ep = the mpirun world, 8 experts
and a shared expert, a dense Linear and a norm) steps with muir.torch.Muon
and NorMuon twice, on gradients given whole (the same on every layout, as
after an all-reduce; each rank takes its experts' rows), so that every
layout's continuous run is the same computation. Checked:

- muir.torch.full_state_dict (the stacks and their optimizer state
  gathered whole over torch.distributed) is the same on every rank;
- the state after step 1, saved on ep=2, resumed on ep=1 and ep=4 (each
  rank keeps its experts' rows of the whole stacks), steps to bitwise the
  continuous run on the new layout; so does a one-rank state_dict() resumed
  on ep=2, and each ep=2 rank's own state_dict() resumed on ep=4 (a rank
  takes its rows of the part that holds them);
- refused, naming the tensor: another rank's part, a stack of another
  number of experts, and full_state_dict without torch.distributed.

  torch_moe_relayout.py run DIR                 step 1, save, step 2
  torch_moe_relayout.py resume DIR SRC OUT      SRC: full (DIR/full.pt) or
                                                own (DIR/own<r>.pt, the part
                                                with this rank's experts)
  torch_moe_relayout.py errors DIR              (2 ranks; DIR an ep=2 run's)
  torch_moe_relayout.py compare A B             (two runs' final states)
"""
import glob
import os
import sys

import torch

import muir.torch as mt

H, F, E, K = 32, 48, 8, 2
KINDS = ("muon", "normuon")
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.moe = mt.MoE(hidden=H, expert_size=F, experts=E, top_k=K,
                          shared_experts=1, ep=world, max_tokens=64)
        self.head = torch.nn.Linear(H, H, bias=False)
        self.norm = torch.nn.Parameter(torch.ones(H))


def whole_shape(p):
    experts = getattr(p, "_muir_experts", None)
    return tuple(p.shape) if experts is None else \
        (experts,) + tuple(p.shape[1:])


def draw(net, seed):
    """Whole tensors for every parameter, the same on every layout."""
    g = torch.Generator().manual_seed(seed)
    return {n: torch.randn(whole_shape(p), generator=g) * 0.1
            for n, p in sorted(net.named_parameters())}


def build(kind, cache):
    # Another start on every rank: a loaded state must replace all of it.
    torch.manual_seed(1000 + rank)
    net = Net()
    make = mt.Muon if kind == "muon" else mt.NorMuon
    opt = make(net.named_parameters(), lr=0.02, weight_decay=0.1,
               cache_dir=cache)
    return net, opt


def step(net, opt, k):
    params = dict(net.named_parameters())
    for n, g in draw(net, 100 + k).items():
        rows = mt._moe.expert_rows(params[n])
        params[n].grad = (g if rows is None else g[rows[0]:rows[1]]).clone()
    opt.step()
    opt.zero_grad()


def init_dist(path):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + path, rank=rank,
                            world_size=world)


def end_dist():
    # Joins gloo's threads before the interpreter ends (torch 1.13's gloo
    # thread can free a tensor while Python shuts down, and abort).
    import torch.distributed as dist
    dist.barrier()
    dist.destroy_process_group()


def full(net, opt):
    return {"model": mt.full_state_dict(net), "opt": mt.full_state_dict(opt)}


def save(obj, path):
    torch.save(obj, path)


def run(d):
    init_dist(d + "/rendezvous")
    for kind in KINDS:
        net, opt = build(kind, d + "/../cache")
        net.load_state_dict(draw(net, 7))
        step(net, opt, 1)
        f = full(net, opt)
        save(f, "%s/%s.full%d.pt" % (d, kind, rank))
        save({"model": net.state_dict(), "opt": opt.state_dict()},
             "%s/%s.own%d.pt" % (d, kind, rank))
        step(net, opt, 2)
        save(full(net, opt), "%s/%s.final%d.pt" % (d, kind, rank))
    end_dist()
    print("run on ep=%d: rank %d saved" % (world, rank), flush=True)


def resume(d, src, out):
    os.makedirs(out, exist_ok=True)
    init_dist(out + "/rendezvous")
    for kind in KINDS:
        if src == "full":
            path = "%s/%s.full0.pt" % (d, kind)
        else:
            saved = len(glob.glob("%s/%s.own*.pt" % (d, kind)))
            # The saved rank whose experts hold this rank's.
            path = "%s/%s.own%d.pt" % (d, kind, rank * saved // world)
        state = torch.load(path)
        net, opt = build(kind, d + "/../cache")
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step(net, opt, 2)
        save(full(net, opt), "%s/%s.final%d.pt" % (out, kind, rank))
    end_dist()
    print("resumed on ep=%d from %s: rank %d stepped" % (world, src, rank),
          flush=True)


def equal(a, b, where, bad):
    if isinstance(a, dict):
        if set(a) != set(b):
            bad.append("%s: keys %s vs %s" % (where, sorted(a), sorted(b)))
        for k in a:
            if k in b:
                equal(a[k], b[k], "%s.%s" % (where, k), bad)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            bad.append("%s: lengths" % where)
        for i, (x, y) in enumerate(zip(a, b)):
            equal(x, y, "%s[%d]" % (where, i), bad)
    elif isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or \
                a.dtype != b.dtype or not torch.equal(a, b):
            bad.append(where)
    elif a != b:
        bad.append("%s: %r vs %r" % (where, a, b))


def compare(a, b):
    """Every rank's final whole state in b equal to a's rank 0's, bitwise
    (the optimizer's param_groups too, lr and all)."""
    bad = []
    tensors = 0
    for kind in KINDS:
        want = torch.load("%s/%s.final0.pt" % (a, kind))
        tensors += len(want["model"]) + sum(
            len(e) for e in want["opt"]["state"].values())
        for path in sorted(glob.glob("%s/%s.final*.pt" % (b, kind)) +
                           glob.glob("%s/%s.full*.pt" % (b, kind))):
            if ".full" in path:
                # full_state_dict: the same on every rank.
                equal(torch.load("%s/%s.full0.pt" % (b, kind)),
                      torch.load(path), path, bad)
            else:
                equal(want, torch.load(path), path, bad)
    if bad:
        print("compare %s %s: FAIL, not bitwise: %s"
              % (os.path.basename(a), os.path.basename(b),
                 ", ".join(bad[:6])))
        sys.exit(1)
    print("%s == %s: %d tensors bitwise, every rank"
          % (os.path.basename(b), os.path.basename(a), tensors))


def errors(d):
    """Under mpirun -n 2, next to an ep=2 run's DIR."""
    kind = "muon"
    net, opt = build(kind, d + "/../cache")
    try:
        mt.full_state_dict(net)
        print("rank %d: full_state_dict without torch.distributed: NOT "
              "refused" % rank)
    except RuntimeError as e:
        print("rank %d: %s" % (rank, e))
    init_dist(d + "/rendezvous-errors")
    net.load_state_dict(draw(net, 7))
    step(net, opt, 1)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    before_opt = opt.state_dict()
    # Rank 0's own part, on both ranks: rank 0 loads it, rank 1 refuses.
    own0 = torch.load("%s/%s.own0.pt" % (d, kind))
    for what, obj, state in (("model", net, own0["model"]),
                             ("optimizer", opt, own0["opt"])):
        try:
            obj.load_state_dict(state)
            print("rank %d: rank 0's %s part loaded" % (rank, what))
        except (RuntimeError, ValueError) as e:
            print("rank %d: rank 0's %s part: %s" % (rank, what,
                                                     str(e).strip()))
    if rank == 1:
        bad = []
        equal(before, net.state_dict(), "model", bad)
        equal(before_opt, opt.state_dict(), "optimizer", bad)
        print("rank 1: after the refusals, the optimizer %s" %
              ("unchanged" if not [b for b in bad if "optimizer" in b]
               else "CHANGED: " + ", ".join(bad)))
    # A hand-made stack of 6 experts' rows.
    sd = dict(net.state_dict())
    sd["moe.up_proj"] = torch.zeros(6, F, H)
    try:
        net.load_state_dict(sd)
        print("rank %d: 6 experts' rows loaded" % rank)
    except RuntimeError as e:
        print("rank %d: 6 rows: %s" % (rank, str(e).strip()))
    end_dist()


def main():
    mode = sys.argv[1]
    if mode == "run":
        run(sys.argv[2])
    elif mode == "resume":
        resume(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "errors":
        errors(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
