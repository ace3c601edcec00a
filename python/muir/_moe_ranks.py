"""muir.torch.MoE's ranks: the job's size and this rank's place in it (the
ranks muir's steps run over), the edp groups of the replicas of an expert
block, and the exact sum of the experts' loads over the ranks
(update_bias)."""
import torch

import muir
from muir import _dist


def _world_size():
    return _dist.ranks()[1]


def _world_rank():
    return _dist.ranks()[0]


# (ep, ranks) -> this rank's edp group (the ranks holding its experts).
_EDP_GROUPS = {}


def _edp_group(ep, world):
    """The torch.distributed group of the ranks that hold this rank's
    expert block in the folding edp x ep of the `world` ranks muir's steps
    run over (group ranks r, r + ep, r + 2 ep, ...); every rank makes all
    of them, in one order (new_group is collective)."""
    import torch.distributed as dist
    key = (ep, world)
    if key in _EDP_GROUPS:
        return _EDP_GROUPS[key]
    if not (dist.is_available() and dist.is_initialized()):
        raise ValueError(
            "muir.torch.MoE: ep=%d over %d ranks folds edp=%d replicas of "
            "each expert block, whose gradients are summed over "
            "torch.distributed: call torch.distributed.init_process_group "
            "first (also under mpirun)" % (ep, world, world // ep))
    base = _dist.group()
    if world != dist.get_world_size():
        # new_group is collective over the whole job: ranks outside the
        # layer's group would never make the replicas' groups.
        raise ValueError(
            "muir.torch.MoE: ep=%d over a group of %d of the job's %d ranks; "
            "a layer with ep below its ranks (edp=%d replicas) needs its "
            "ranks to be the whole job" % (ep, world, dist.get_world_size(),
                                          world // ep))
    members = [dist.get_global_rank(base, r) if base is not None else r
               for r in range(world)]
    mine = None
    for j in range(ep):
        # gloo: the gradients are CPU tensors (also where the default
        # group is NCCL).
        group = dist.new_group(ranks=members[j::ep], backend="gloo")
        if j == _world_rank() % ep:
            mine = group
    _EDP_GROUPS[key] = mine
    return mine


# update_bias's sum over the job's MPI ranks: one compiled muir step per
# (length, ranks, ep), an all_gather of the counts' 16-bit pieces as
# float32 (each exact) summed here in int64, so the loads are exact for any
# count and any number of ranks. Its grids are the layer's (the ranks of a
# process run one grid at a time).
_GATHERS = {}
_PIECES = 4


def _gather_step(n, world, ep):
    key = (n, world, ep)
    if key not in _GATHERS:
        m = n * _PIECES
        moe = ("  muir.grid @moe axes = [\"edp\", \"ep\"] shape = [%d, %d] "
               "folds @world\n" % (world // ep, ep)) if ep > 1 else ""
        ir = ("module @moe_loads {\n"
              "  muir.grid @world axes = [\"dp\"] shape = [%d]\n%s"
              "  func.func @step(%%arg0: tensor<%dxf32> {muir.name = "
              "\"counts\", muir.role = #muir.role<data>}, %%arg1: "
              "tensor<%dxf32> {muir.name = \"every\", muir.role = "
              "#muir.role<data>}) -> (tensor<%dxf32> {muir.updates = "
              "\"every\"}) {\n"
              "    %%0 = muir.all_gather %%arg0 on @world axes = [\"dp\"] "
              "gather_axis = 0 : tensor<%dxf32> -> tensor<%dxf32>\n"
              "    return %%0 : tensor<%dxf32>\n  }\n}\n"
              % (world, moe, m, world * m, world * m, m, world * m,
                 world * m))
        _GATHERS[key] = muir.compile(ir, "moe_loads.mlir", {"target": "cpu"})
    return _GATHERS[key]


def _sum_over_ranks(counts, ep):
    """counts (int64 [n] on the CPU) summed over the job's ranks, exactly:
    under mpirun over MPI (muir's runtime, as the passes of a layer of this
    `ep`), else over torch.distributed when it is initialised with several
    ranks, else counts. Every rank calls it."""
    world = _world_size()
    if world > 1:
        step = _gather_step(counts.numel(), world, ep)
        pieces = torch.stack([(counts >> (16 * i)) & 0xFFFF
                              for i in range(_PIECES)]).to(torch.float32)
        every = torch.empty(world * pieces.numel())
        step.bind("counts", pieces.data_ptr())
        step.bind("every", every.data_ptr())
        step.run()
        sums = every.view(world, _PIECES, -1).to(torch.int64).sum(0)
        return sum(sums[i] << (16 * i) for i in range(_PIECES))
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized() and \
            dist.get_world_size() > 1:
        t = counts.clone()
        if dist.get_backend() == "nccl":
            t = t.cuda()
        dist.all_reduce(t)
        return t.cpu()
    return counts.clone()
