"""muir.torch.Muon on a model sharded with FSDP2 (torch.distributed.fsdp.
fully_shard: DTensor parameters, Shard(0), on a 1-D mesh of the torchrun
or mpirun ranks), against the same model unsharded in one process, and checkpoints
with torch.distributed.checkpoint (DCP) resharded between 4, 2 and 1
ranks.

Every rank is given the same whole gradients (as FSDP2's reduce-scatter
would leave them: each rank its rows), made from a seed per step, so the
runs differ only in the layout. lr follows a schedule set by hand.

  torch_fsdp.py run OUT [--det MODE] [--save CKPT] [--load CKPT]
                       [--opt muon|normuon] [--mesh hsdp|tp|fsdp1]
      steps 1..4 (from 3 with --load: the model and optimizer from the
      DCP checkpoint CKPT; --save writes one after step 2); rank 0 writes
      OUT (the whole parameters and optimizer state after step 4, through
      muir.torch.full_state_dict) and OUT.json (the step's description).
      Step 1 is checked against a float64 reference of Muon (NorMuon) and
      AdamW. --mesh hsdp: a 2-D mesh, 2 replicas x (ranks / 2) shards;
      --mesh tp: no FSDP2, the blocks' up and down Linears tensor
      parallel (ColwiseParallel, RowwiseParallel) over a "tp" mesh;
      --mesh fsdp1: FSDP2 with the 2-D weights split on dim 1.
  torch_fsdp.py compare A B [TOL]  bitwise equal (or within TOL relative)
  torch_fsdp.py refuse             the refusals (run under torchrun)
"""
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

import muir.torch
import muir_reference as ref

LR, ADAMW_LR, WD, AWD = 0.02, 0.01, 0.1, 0.01


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(16, 24)           # [24, 16] Muon, bias AdamW
        self.down = torch.nn.Linear(24, 16, bias=False)
        self.experts = torch.nn.Parameter(torch.randn(4, 8, 16) * 0.1)
        self.norm = torch.nn.Parameter(torch.ones(5))   # uneven on 2 and 4


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 16)     # AdamW, uneven rows
        self.blocks = torch.nn.ModuleList([Block(), Block()])
        self.head = torch.nn.Linear(16, 12, bias=False)   # AdamW (pattern)


STORE = None     # mpirun: the file the gloo group meets at (OUT.store)


def world():
    if "OMPI_COMM_WORLD_SIZE" in os.environ and not dist.is_initialized():
        # mpirun: muir's steps run over MPI, torch's over a gloo group.
        dist.init_process_group(
            "gloo", init_method="file://" + STORE,
            rank=int(os.environ["OMPI_COMM_WORLD_RANK"]),
            world_size=int(os.environ["OMPI_COMM_WORLD_SIZE"]))
    elif "WORLD_SIZE" in os.environ and not dist.is_initialized():
        dist.init_process_group("gloo")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def build(det, kind="muon", mesh_kind=None):
    rank, size = world()
    torch.manual_seed(0)
    model = Model()
    if size > 1:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        if mesh_kind == "tp":
            # DTensor tensor parallel: up column-wise (its weight and bias
            # Shard(0)), down row-wise (Shard(1)); the rest whole.
            from torch.distributed.tensor.parallel import (
                ColwiseParallel, RowwiseParallel, parallelize_module)
            mesh = init_device_mesh("cpu", (size,), mesh_dim_names=("tp",))
            for b in model.blocks:
                parallelize_module(b, mesh, {"up": ColwiseParallel(),
                                             "down": RowwiseParallel()})
            mesh = None
        elif mesh_kind == "hsdp":
            # 2 replicas x size/2 shards: (Replicate(), Shard(0)).
            mesh = init_device_mesh("cpu", (2, size // 2),
                                    mesh_dim_names=("rep", "shard"))
        else:
            mesh = init_device_mesh("cpu", (size,), mesh_dim_names=("dp",))
        place = None
        if mesh_kind == "fsdp1":
            # FSDP2 splitting the matrices' columns (Shard(1)): each still
            # gathered to one owner rank whole.
            from torch.distributed.tensor import Shard

            def place(p):
                return Shard(1) if p.dim() == 2 else None
        if mesh is not None:
            for b in model.blocks:
                fully_shard(b, mesh=mesh, shard_placement_fn=place)
            fully_shard(model, mesh=mesh, shard_placement_fn=place)
    cls = muir.torch.NorMuon if kind == "normuon" else muir.torch.Muon
    opt = cls(model.named_parameters(), lr=LR, weight_decay=WD,
                          adamw_lr=ADAMW_LR, adamw_weight_decay=AWD,
                          deterministic=det, check_replicas=True)
    return model, opt


def whole(t):
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def set_grads(model, step):
    gen = torch.Generator().manual_seed(1000 + step)
    for _, p in model.named_parameters():
        g = torch.randn(p.shape, generator=gen)
        if hasattr(p, "placements"):
            from torch.distributed.tensor import distribute_tensor
            g = distribute_tensor(g, p.device_mesh, p.placements)
        p.grad = g


def set_lr(opt, step):
    for group in opt.param_groups:
        base = LR if group["use_muon"] else ADAMW_LR
        group["lr"] = base * 0.8 ** (step - 1)


def check_step1(model, opt, before):
    """Step 1 against float64 Muon and AdamW (independent of muir)."""
    gen = torch.Generator().manual_seed(1001)
    worst = 0.0
    for name, p in model.named_parameters():
        g = torch.randn(p.shape, generator=gen).double().numpy()
        w0 = before[name].double().numpy()
        got = whole(p.detach()).double().numpy()
        if opt._info[p]["optimizer"] == "muon" and \
                isinstance(opt, muir.torch.NorMuon):
            want = ref.normuon_update(w0, g, np.zeros_like(w0),
                                      np.zeros(w0.shape[:-1]), LR,
                                      weight_decay=WD)[0]
        elif opt._info[p]["optimizer"] == "muon":
            want, _ = ref.muon_update(w0, g, np.zeros_like(w0), LR,
                                      weight_decay=WD)
        else:
            want, _, _ = ref.adamw_update(w0, g, np.zeros_like(w0),
                                          np.zeros_like(w0), 1, ADAMW_LR,
                                          beta1=0.9, beta2=0.95,
                                          weight_decay=AWD)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        worst = max(worst, err)
        if err > 1e-5:
            sys.exit("%s: step 1 is %.3g relative from float64" % (name, err))
    return worst


def dcp_state(model, opt):
    from torch.distributed.checkpoint.state_dict import get_state_dict
    msd, osd = get_state_dict(model, opt)
    return {"model": msd, "optim": osd}


def run(out, det="true", save=None, load=None, kind="muon", mesh=None):
    rank, size = world()
    model, opt = build(det, kind, mesh)
    first = 1
    if load:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict
        sd = dcp_state(model, opt)
        dcp.load(sd, checkpoint_id=load)
        set_state_dict(model, opt, model_state_dict=sd["model"],
                       optim_state_dict=sd["optim"])
        first = 3
    before = {n: whole(p.detach()).clone()
              for n, p in model.named_parameters()}
    worst = None
    for step in range(first, 5):
        set_grads(model, step)
        set_lr(opt, step)
        opt.step()
        opt.zero_grad()
        if step == 1:
            worst = check_step1(model, opt, before)
        if step == 2 and save:
            import torch.distributed.checkpoint as dcp
            dcp.save(dcp_state(model, opt), checkpoint_id=save)
    params = {n: whole(p.detach()).clone()
              for n, p in model.named_parameters()}
    state = muir.torch.full_state_dict(opt)
    # The whole state loads back into this layout: each rank takes its
    # part (uneven and empty ones too), the same bits.
    again = type(opt)(model.named_parameters(), lr=LR)
    again.load_state_dict(state)
    for p, st in opt.state.items():
        for key, t in st.items():
            u = again.state[p][key]
            if isinstance(t, torch.Tensor):
                t, u = getattr(t, "_local_tensor", t), \
                    getattr(u, "_local_tensor", u)
                if t.shape != u.shape or not torch.equal(t, u):
                    sys.exit("%s: the whole state loaded back differs"
                             % key)
    kinds = sorted({type(t).__name__ for e in opt.state.values()
                    for t in e.values() if isinstance(t, torch.Tensor)})
    if rank == 0:
        torch.save({"params": params, "state": state["state"]}, out)
        with open(out + ".json", "w") as f:
            f.write(opt.description())
    # One write: the ranks' lines do not interleave.
    sys.stdout.write("rank %d of %d: steps %d-4, state %s%s\n" % (
        rank, size, first, "/".join(kinds),
        "" if worst is None else "; step 1 within 1e-5 of float64"))
    sys.stdout.flush()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def compare(a, b, tol=None):
    A, B = torch.load(a), torch.load(b)
    n, worst = len(A["params"]), 0.0
    pairs = []
    for i in A["state"]:
        for k, x in A["state"][i].items():
            if isinstance(x, torch.Tensor):
                pairs.append(("state %s %s" % (i, k), x, B["state"][i][k]))
    for name in A["params"]:
        pairs.append((name, A["params"][name], B["params"][name]))
    for what, x, y in pairs:
        if x.shape != y.shape:
            sys.exit("%s: shapes %s and %s" % (what, x.shape, y.shape))
        if tol is None:
            if not torch.equal(x, y):
                sys.exit("%s differs (max %.3g)" % (
                    what, float((x - y).abs().max())))
        else:
            err = float((x - y).abs().max() / y.abs().max().clamp_min(1e-30))
            worst = max(worst, err)
            if err > tol:
                sys.exit("%s: %.3g relative" % (what, err))
    print("%d parameters and their state %s" % (
        n, "bitwise equal" if tol is None else "within %g" % tol))


def refuse():
    rank, size = world()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (size,), mesh_dim_names=("dp",))

    def tryit(what, make, on=0):
        try:
            make()
        except (ValueError, TypeError) as e:
            if rank == on:
                sys.stdout.write("%s: %s\n" % (what, e))
                sys.stdout.flush()
            return
        sys.exit("%s: not refused" % what)

    def nan_on_rank0():
        from torch.distributed.tensor import DTensor
        m = torch.nn.Linear(8, 8, bias=False)
        fully_shard(m, mesh=mesh)
        opt = muir.torch.Muon(m.named_parameters())
        g = torch.ones(m.weight._local_tensor.shape)
        if rank == 0:
            g[1, 2] = float("nan")
        m.weight.grad = DTensor.from_local(g, mesh, m.weight.placements)
        opt.step()

    def uneven():
        m = torch.nn.Linear(8, 6, bias=False)      # 6 rows over 4 ranks
        fully_shard(m, mesh=mesh)
        muir.torch.Muon(m.named_parameters())

    def mixed():
        from torch.distributed.tensor import Shard, distribute_tensor
        tp = init_device_mesh("cpu", (size,), mesh_dim_names=("tp",))
        w = torch.nn.Parameter(distribute_tensor(torch.randn(8, 8), tp,
                                                 [Shard(1)]))
        v = torch.nn.Parameter(distribute_tensor(torch.randn(8, 8), mesh,
                                                 [Shard(0)]))
        opt = muir.torch.Muon([("w", w), ("v", v)])
        for p in (w, v):
            p.grad = distribute_tensor(torch.ones(8, 8), p.device_mesh,
                                       p.placements)
        opt.step()

    def two_shards():
        from torch.distributed.tensor import Shard, distribute_tensor
        mesh2 = init_device_mesh("cpu", (2, size // 2),
                                 mesh_dim_names=("a", "b"))
        w = torch.nn.Parameter(distribute_tensor(
            torch.randn(8, 8), mesh2, [Shard(0), Shard(1)]))
        muir.torch.Muon([("w", w)])

    def one_rank_layout():
        m = torch.nn.Linear(8, 8, bias=False)
        fully_shard(m, mesh=mesh)
        opt = muir.torch.Muon(m.named_parameters(), layout="dp=1")
        from torch.distributed.tensor import distribute_tensor
        m.weight.grad = distribute_tensor(torch.ones(8, 8), mesh,
                                          m.weight.placements)
        opt.step()

    tryit("uneven", uneven)
    tryit("mixed", mixed)
    tryit("two shards", two_shards)
    tryit("dp=1", one_rank_layout)
    tryit("nan", nan_on_rank0, on=0)
    tryit("nan", nan_on_rank0, on=3)
    sys.stdout.write("torch-fsdp refusals rank %d: PASS\n" % rank)
    sys.stdout.flush()
    dist.destroy_process_group()


def main():
    args = sys.argv[1:]
    if args[0] == "run":
        global STORE
        STORE = os.path.abspath(args[1]) + ".store"
        opts = dict(zip(args[2::2], args[3::2]))
        run(args[1], det=opts.get("--det", "true"),
            save=opts.get("--save"), load=opts.get("--load"),
            kind=opts.get("--opt", "muon"),
            mesh=opts.get("--mesh"))
    elif args[0] == "compare":
        compare(args[1], args[2], float(args[3]) if len(args) > 3 else None)
    elif args[0] == "refuse":
        refuse()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
