"""DTensor parameters for muir.torch.Muon: FSDP2's (fully_shard), HSDP's
and DTensor tensor parallel's. Each is stepped through its local part (a
DTensor's own data_ptr() is 0); a Muon matrix split over one mesh dim is
described whole with its shard (fsdp on dp, tp_column / tp_row on tp), an
AdamW one as its local part; the optimizer's state is DTensors placed as
the parameter (docs/design.md, "FSDP2 and DTensor parameters")."""
import sys

import torch

from muir._errors import ParameterError

_DTENSOR = []


def _dtensor_type():
    """torch.distributed.tensor.DTensor (None where torch has none)."""
    if not _DTENSOR:
        if "torch.distributed.tensor" not in sys.modules:
            # Not imported: no DTensor can exist yet.
            return None
        try:
            from torch.distributed.tensor import DTensor
        except Exception:
            DTensor = None
        _DTENSOR.append(DTensor)
    return _DTENSOR[0]


def _is_dtensor(t):
    cls = _dtensor_type()
    return cls is not None and isinstance(t, cls)


def _local(t):
    """A DTensor's local tensor (this rank's part); other tensors as they
    are."""
    return t._local_tensor if _is_dtensor(t) else t


def _shard_dim(p):
    """The mesh dim over which DTensor p's rows are split (None: held
    whole on every rank of its mesh)."""
    dims = [k for k, place in enumerate(p.placements) if place.is_shard()]
    return dims[0] if dims else None


def _dtensor_split(name, p, optimizer):
    """(shard, local shape) of a DTensor parameter: for a Muon matrix split
    over one mesh dim, the description's shard ({"kind", "axis"}): over a
    mesh dim named "tp" (DTensor tensor parallel: ColwiseParallel's
    Shard(0), RowwiseParallel's Shard(1)) tp_column / tp_row on a "tp"
    axis, whose Newton-Schulz mode the cost model picks; over any other
    (FSDP2, HSDP's shard dim) on "dp", each matrix gathered to one owner.
    None for one held whole (Replicate) or an AdamW parameter
    (element-wise: its local part stepped as a tensor of its own).
    ParameterError for what muir cannot step."""
    mesh, placements = p.device_mesh, tuple(p.placements)
    local = tuple(p._local_tensor.shape)
    if mesh.ndim > 2:
        raise ParameterError(
            name, "is a DTensor on a mesh of %d dims %s; muir.torch.Muon "
            "takes DTensors on a 1-D mesh (FSDP2, tensor parallel) or a "
            "2-D one of replicas x shards (HSDP)"
            % (mesh.ndim, tuple(mesh.shape)))
    if any(place.is_partial() for place in placements):
        raise ParameterError(name, "is a DTensor with a Partial placement; "
                             "muir steps whole values (reduce it first)")
    shards = [place for place in placements if place.is_shard()]
    if optimizer != "muon" or not shards:
        return None, local
    k = _shard_dim(p)
    names = mesh.mesh_dim_names or ()
    axis = "tp" if k < len(names) and names[k] == "tp" else "dp"
    rank = p.dim()
    dim = shards[0].dim % rank
    kind = None
    if len(shards) == 1:
        if dim == rank - 1 and rank in (2, 3):
            kind = "tp_row"
        elif dim == 1 and rank == 3:
            kind = "tp_column"
        elif dim == 0 and (axis == "dp" or rank == 2):
            kind = "fsdp" if axis == "dp" else "tp_column"
    if kind is None:
        raise ParameterError(
            name, "is a DTensor placed %s; muir.torch.Muon takes a Muon "
            "matrix split over one mesh dim on its rows (FSDP2's Shard(0), "
            "HSDP's (Replicate(), Shard(0)), ColwiseParallel) or columns "
            "(RowwiseParallel), or whole (Replicate)"
            % ("(" + ", ".join(map(str, placements)) + ")",))
    ranks = mesh.size(k)
    if p.shape[dim] % ranks:
        raise ParameterError(
            name, "has shape %s and is sharded over %d ranks, which do not "
            "divide its dim %d (%d); muir splits a matrix evenly: give it a "
            "size divisible by %d or leave it unsharded"
            % (tuple(p.shape), ranks, dim, p.shape[dim], ranks))
    return {"kind": kind, "axis": axis}, local


def _mesh_group(params):
    """The group of the mesh dim that shards the DTensor parameters
    (FSDP2's, HSDP's shard dim): None where there is none, or where it
    holds every rank (the default group serves); ValueError where they
    are sharded over different groups of ranks."""
    import torch.distributed as dist
    found = None
    for name, p in params:
        if not _is_dtensor(p) or _shard_dim(p) is None:
            continue
        mesh, k = p.device_mesh, _shard_dim(p)
        if mesh.get_coordinate() is None:
            raise ParameterError(name, "is a DTensor on a mesh that does not "
                                 "hold this rank")
        # The ranks along dim k through this rank.
        index = list(mesh.get_coordinate())
        index[k] = slice(None)
        ranks = tuple(int(r) for r in mesh.mesh[tuple(index)].tolist())
        if found is None:
            found = (ranks, mesh.get_group(k), name)
        elif found[0] != ranks:
            raise ParameterError(
                name, "is sharded over ranks %s but '%s' over %s; the "
                "optimizer's step runs over one group of ranks"
                % (list(ranks), found[2], list(found[0])))
    if found is None or len(found[0]) == dist.get_world_size():
        return None
    return found[1]


def _parts(p, d):
    """(the tensor the step updates, the gradient it reads) of parameter p
    (record d): a DTensor's local parts."""
    if d["dtensor"]:
        g = p.grad
        return p._local_tensor, (g._local_tensor if _is_dtensor(g) else g)
    return p, p.grad


def _as_placed(p, local, shape):
    """`local` (this rank's part) of a whole state tensor of `shape` as a
    DTensor placed as p's state (_state_placements; its parts may be
    uneven: the shape is given)."""
    shape = torch.Size(shape)
    stride = torch.empty(shape, device="meta").stride()
    return _dtensor_type().from_local(
        local, p.device_mesh, _state_placements(p, local), run_check=False,
        shape=shape, stride=stride)


def _state_placements(p, t):
    """The placements of a state tensor `t` of DTensor parameter p (of p's
    shape, or one value per row): p's, a split on a dimension `t` lacks
    (a row state of a matrix split on its columns) held whole."""
    from torch.distributed.tensor import Replicate
    return [place if not place.is_shard() or place.dim < t.dim()
            else Replicate() for place in p.placements]


def _rows_of(p, t):
    """This rank's part of a state tensor `t` of DTensor parameter p (of
    p's shape, or one value per row; whole, or a DTensor placed otherwise)
    as _state_placements places it: DTensor's own split (uneven and empty
    parts as FSDP2 makes them), from the whole tensor every rank holds (no
    communication), or redistributed (every rank calls this)."""
    from torch.distributed.tensor import distribute_tensor
    placements = _state_placements(p, t)
    if _is_dtensor(t):
        if t.device_mesh == p.device_mesh:
            return t.redistribute(p.device_mesh, placements)._local_tensor
        t = t.full_tensor()
    return distribute_tensor(t, p.device_mesh, placements,
                             src_data_rank=None)._local_tensor
