"""The ranks muir.torch's CPU steps run over: mpirun's MPI world, or a
torch.distributed process group (a torchrun launch).

Under mpirun (OMPI_COMM_WORLD_SIZE set) the runtime's collectives run on
MPI, as they always did. Otherwise, when torch.distributed is initialised
with several ranks (torchrun, or any init_process_group), or a layer or an
optimizer is given `process_group=` or `device_mesh=`, the runtime moves
the bytes of every collective through that group: one
torch.distributed.all_to_all_single of bytes per exchange (gloo on the CPU),
registered once per process with muir.set_transport. The reductions stay
muir's own, in group-rank order, so a step's bits are those of the same
layout under mpirun (docs/design.md, "Transports").

A process runs its steps over one group: joining a second, different one
is refused. The default group joins only when its backend moves CPU
tensors (gloo, or "cpu:gloo,cuda:nccl"); a default NCCL-only group leaves
the CPU steps on one rank each, as before (a given one is refused).
"""
import ctypes
import os

import torch

import muir

# The group this process's steps run over (None: none joined yet).
_joined = None


def under_mpirun():
    return bool(os.environ.get("OMPI_COMM_WORLD_SIZE"))


def _mpi_world():
    return (int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")),
            int(os.environ["OMPI_COMM_WORLD_SIZE"]))


def _group_of(who, process_group, device_mesh):
    """The torch.distributed group named by process_group or device_mesh
    (None: the default group when torch.distributed is initialised)."""
    import torch.distributed as dist
    if process_group is not None and device_mesh is not None:
        raise ValueError("%s: give process_group= or device_mesh=, not both"
                         % who)
    if device_mesh is not None:
        mesh = getattr(device_mesh, "mesh", None)
        if mesh is None or not hasattr(device_mesh, "get_group"):
            raise ValueError("%s: device_mesh=%r is not a torch "
                             "DeviceMesh" % (who, device_mesh))
        if mesh.ndim == 1:
            return device_mesh.get_group()
        # Every rank of the mesh: muir's steps lay their own axes over
        # them (layout=), so the mesh's dims only say which ranks.
        ranks = sorted(int(r) for r in mesh.flatten().tolist())
        if ranks != list(range(dist.get_world_size())):
            raise ValueError(
                "%s: device_mesh of shape %s holds %d of the job's %d ranks; "
                "a mesh of several dims must hold them all (for some "
                "ranks, give process_group= or a 1-D mesh)"
                % (who, tuple(mesh.shape), len(ranks),
                   dist.get_world_size()))
        return dist.group.WORLD
    if process_group is not None:
        return process_group
    if dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    return None


def join(who, process_group=None, device_mesh=None):
    """(rank, size) of the ranks this process's CPU steps run over, the
    transport registered on first use (see the module's docstring)."""
    global _joined
    if under_mpirun():
        rank, size = _mpi_world()
        if process_group is not None or device_mesh is not None:
            import torch.distributed as dist
            group = _group_of(who, process_group, device_mesh)
            if dist.get_world_size(group) != size:
                raise ValueError(
                    "%s: the process group has %d ranks but this mpirun job "
                    "has %d; under mpirun muir's steps run over the whole "
                    "MPI world" % (who, dist.get_world_size(group), size))
        return rank, size
    import torch.distributed as dist
    given = process_group is not None or device_mesh is not None
    if not given and _joined is not None:
        return dist.get_rank(_joined), dist.get_world_size(_joined)
    group = _group_of(who, process_group, device_mesh)
    if group is None:
        return 0, 1
    size = dist.get_world_size(group)
    rank = dist.get_rank(group)
    if size <= 1:
        return 0, 1
    if _joined is not None:
        if _joined is not group:
            raise ValueError(
                "%s: this process's muir steps already run over another "
                "process group; the steps of a process run over one group "
                "(give every layer and optimizer the same one)" % who)
        return rank, size
    backend = str(dist.get_backend(group))
    if "gloo" not in backend:
        if not given:
            # The default group moves no CPU tensors (NCCL only): each
            # rank's CPU steps stay its own.
            return 0, 1
        raise ValueError(
            "%s: the CPU steps' collectives need a process group whose "
            "backend moves CPU tensors (gloo, or \"cpu:gloo,cuda:nccl\"); "
            "this one is %s" % (who, backend))
    empty = torch.empty(0, dtype=torch.uint8)

    def view(address, count):
        if count == 0:
            return empty
        return torch.frombuffer((ctypes.c_uint8 * count)
                                .from_address(address), dtype=torch.uint8)

    def exchange(send, send_bytes, recv, recv_bytes):
        dist.all_to_all_single(view(recv, sum(recv_bytes)),
                               view(send, sum(send_bytes)),
                               output_split_sizes=recv_bytes,
                               input_split_sizes=send_bytes, group=group)

    muir.set_transport(exchange, rank, size)
    _joined = group
    return rank, size


def group():
    """The joined torch.distributed group (None: mpirun's job, or none
    joined: torch.distributed's default group)."""
    return _joined


def ranks():
    """(rank, size) of the ranks this process's steps run over now:
    mpirun's, else the joined group's, else (0, 1)."""
    if under_mpirun():
        return _mpi_world()
    if _joined is not None:
        import torch.distributed as dist
        return dist.get_rank(_joined), dist.get_world_size(_joined)
    return 0, 1
