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
  number of experts, full_state_dict without torch.distributed, and
  full_state_dict of optimizers that hold state on one rank only.

  torch_moe_relayout.py run ROOT [JOB...]     the continuous run on
                                              ep = the world (ROOT/ep<world>),
                                              then each JOB
  torch_moe_relayout.py resume ROOT JOB...    only the JOBs
  torch_moe_relayout.py compare ROOT          every run against its
                                              reference, bitwise
JOB: ep<n>:full (ROOT/ep<n>'s full_state_dict after step 1, resumed here
for step 2), ep<n>:own (the own state_dict() of the ep<n> rank whose
experts hold this rank's), or errors (2 ranks, after ep2's run).
"""
import glob
import os
import sys

import torch

import muir.torch as mt
from muir import _moe_records as muir_moe

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
        rows = muir_moe.expert_rows(params[n])
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


def run(root):
    """The continuous run on this layout: ROOT/ep<world>."""
    d = "%s/ep%d" % (root, world)
    os.makedirs(d, exist_ok=True)
    for kind in KINDS:
        net, opt = build(kind, root + "/cache")
        net.load_state_dict(draw(net, 7))
        step(net, opt, 1)
        f = full(net, opt)
        save(f, "%s/%s.full%d.pt" % (d, kind, rank))
        save({"model": net.state_dict(), "opt": opt.state_dict()},
             "%s/%s.own%d.pt" % (d, kind, rank))
        step(net, opt, 2)
        save(full(net, opt), "%s/%s.final%d.pt" % (d, kind, rank))
    print("run on ep=%d: rank %d saved" % (world, rank), flush=True)


def resume(root, src):
    """SRC = ep<n>:full (that run's full_state_dict) or ep<n>:own (the
    saved rank's own state_dict() whose experts hold this rank's), resumed
    here for step 2: ROOT/ep<world>-from-ep<n>-<how>."""
    layout, how = src.split(":")
    d = "%s/%s" % (root, layout)
    out = "%s/ep%d-from-%s-%s" % (root, world, layout, how)
    os.makedirs(out, exist_ok=True)
    for kind in KINDS:
        if how == "full":
            path = "%s/%s.full0.pt" % (d, kind)
        else:
            saved = len(glob.glob("%s/%s.own*.pt" % (d, kind)))
            # The saved rank whose experts hold this rank's.
            path = "%s/%s.own%d.pt" % (d, kind, rank * saved // world)
        state = torch.load(path)
        net, opt = build(kind, root + "/cache")
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step(net, opt, 2)
        save(full(net, opt), "%s/%s.final%d.pt" % (out, kind, rank))
    print("resumed on ep=%d from %s's %s: rank %d stepped"
          % (world, layout, "full_state_dict" if how == "full" else
             "own state_dicts", rank), flush=True)


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


def compare_runs(a, b):
    """Every rank's final whole state in b equal to a's rank 0's, bitwise
    (the optimizer's param_groups too, lr and all); b's full_state_dict the
    same on every rank."""
    bad = []
    tensors = 0
    for kind in KINDS:
        want = torch.load("%s/%s.final0.pt" % (a, kind))
        tensors += len(want["model"]) + sum(
            len(e) for e in want["opt"]["state"].values())
        for path in sorted(glob.glob("%s/%s.final*.pt" % (b, kind))):
            equal(want, torch.load(path), path, bad)
        for path in sorted(glob.glob("%s/%s.full*.pt" % (b, kind))):
            equal(torch.load("%s/%s.full0.pt" % (b, kind)),
                  torch.load(path), path, bad)
    a, b = os.path.basename(a), os.path.basename(b)
    if bad:
        print("%s vs %s: FAIL, not bitwise: %s" % (b, a, ", ".join(bad[:6])))
        return False
    print("%s == %s: %d tensors bitwise, every rank" % (b, a, tensors))
    return True


def compare(root):
    """Each continuous run against ep=1's, each resumed run against the
    continuous run on its layout."""
    ok = True
    for d in sorted(os.listdir(root)):
        if not d.startswith("ep"):
            continue
        layout = d.split("-")[0]
        want = "ep1" if layout == d else layout
        if d != want:
            ok = compare_runs(os.path.join(root, want),
                              os.path.join(root, d)) and ok
    if not ok:
        sys.exit(1)


def unrefused():
    """Before torch.distributed: full_state_dict of split stacks refused."""
    net = Net()
    try:
        mt.full_state_dict(net)
        print("rank %d: full_state_dict without torch.distributed: NOT "
              "refused" % rank)
    except RuntimeError as e:
        print("rank %d: %s" % (rank, e), flush=True)


def errors(root):
    """On ep=2 after its run: rank 0's own part on both ranks, a stack of
    6 experts' rows."""
    kind = "muon"
    net, opt = build(kind, root + "/cache")
    net.load_state_dict(draw(net, 7))
    step(net, opt, 1)
    before_opt = opt.state_dict()
    # Rank 0's own part, on both ranks: rank 0 loads it, rank 1 refuses.
    own0 = torch.load("%s/ep2/%s.own0.pt" % (root, kind))
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
        equal(before_opt, opt.state_dict(), "optimizer", bad)
        print("rank 1: after the refusals, the optimizer %s" %
              ("unchanged" if not bad else "CHANGED: " + ", ".join(bad)))
    # Only rank 1's optimizer holds state: full_state_dict refuses on both
    # ranks (instead of one rank waiting in a gather the other skips).
    net2, opt2 = build(kind, root + "/cache")
    if rank == 1:
        opt2.load_state_dict(opt.state_dict())
    try:
        mt.full_state_dict(opt2)
        print("rank %d: state on one rank gathered: NOT refused" % rank)
    except ValueError as e:
        print("rank %d: state on one rank: %s" % (rank, e), flush=True)
    # A hand-made stack of 6 experts' rows.
    sd = dict(net.state_dict())
    sd["moe.up_proj"] = torch.zeros(6, F, H)
    try:
        net.load_state_dict(sd)
        print("rank %d: 6 experts' rows loaded" % rank)
    except RuntimeError as e:
        print("rank %d: 6 rows: %s" % (rank, str(e).strip()), flush=True)


def main():
    if sys.argv[1] == "compare":
        compare(sys.argv[2])
        return
    root, jobs = sys.argv[2], sys.argv[3:]
    if "errors" in jobs:
        unrefused()
    init_dist("%s/rendezvous-%d" % (root, world))
    if sys.argv[1] == "run":
        run(root)
    for job in jobs:
        if job == "errors":
            errors(root)
        else:
            resume(root, job)
    end_dist()


if __name__ == "__main__":
    main()
