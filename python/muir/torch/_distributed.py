"""muir.torch.Muon over several ranks: the process group or mesh it runs
on, the meshes of DTensor parameters, NCCL's options, and the checks the
ranks agree on (finite gradients, replicas equal)."""
import math
import os
import torch
import muir
from muir import _dist
from muir._errors import NonFiniteGradientError, ParameterError
from muir._dtensor import _mesh_group, _shard_dim
from muir.torch._common import _world_size


class _Distributed:
    """Part of muir.torch.Muon (a mixin of its methods)."""

    def _infer_group(self):
        """FSDP2 / HSDP parameters sharded over some of the ranks (HSDP's
        shard dim): without a group given, the step runs over that dim's
        group."""
        if self._group == (None, None) and any(
                d["split"] for d in self._info.values()):
            shard_group = _mesh_group([(d["name"], p)
                                       for p, d in self._info.items()
                                       if d["split"]])
            if shard_group is not None:
                self._group = (shard_group, None)

    def _check_finite_grads(self, c, work, target):
        """NonFiniteGradientError for the first parameter whose gradient
        holds a NaN or an infinity. The CPU target: one pass over the bound
        gradients in muir's runtime (memory speed, one call). CUDA: one sum
        per gradient, one read of their total (a NaN or an infinity makes a
        sum non-finite; a large finite gradient can too, by overflow: then
        its elements are searched and none is found)."""
        if target == "cpu":
            found = c.step.first_nonfinite("grad")
            if found is None:
                return
            index, element = found
            i = next(i for k, i, kind in c.binds
                     if k == index and kind == 1)
            if i in work:
                g = work[i][1].reshape(-1)
                raise NonFiniteGradientError(work[i][3]["name"], element,
                                             g.numel(), float(g[element]))
            # A skipped member's stand-in (its state): search the
            # gradients themselves.
        grads = [w[1] for w in work.values()]
        sums = torch.stack([g.sum() for g in grads])
        if math.isfinite(float(sums.sum())):
            return
        for w, total in zip(work.values(), sums.tolist()):
            if math.isfinite(total):
                continue
            flat = w[1].reshape(-1)
            bad = torch.nonzero(~torch.isfinite(flat))
            if bad.numel():
                element = int(bad[0, 0])
                raise NonFiniteGradientError(
                    w[3]["name"], element, flat.numel(), float(flat[element]))

    def _agrees_finite(self):
        """Whether the ranks agree on the non-finite check at every step
        (some parameter is sharded over them: the same answer on every
        rank, empty parts included)."""
        if not self._check_finite or not self._any_sharded:
            return False
        import torch.distributed as dist
        return _dist.group() is not None or dist.is_initialized()

    def _agree_finite(self, index):
        """The largest `index` of the ranks' (one MAX all-reduce)."""
        import torch.distributed as dist
        flag = torch.tensor([index], dtype=torch.int64)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=_dist.group())
        return int(flag)

    def _check_finite_sharded(self, c, work, target):
        """_check_finite_grads, and where parameters are sharded over the
        ranks (FSDP2, tensor parallel: a non-finite value lies in one
        rank's part), every rank raises when one finds one (one MAX
        all-reduce of a flag), before any exchange of the step."""
        if not self._agrees_finite():
            return self._check_finite_grads(c, work, target)
        found = None
        try:
            self._check_finite_grads(c, work, target)
        except NonFiniteGradientError as e:
            found = e
        # The parameter's index + 1 (the same on every rank), 0: none.
        index = 0 if found is None else 1 + next(
            (i for i, w in work.items() if w[3]["name"] == found.name), -1)
        flag = self._agree_finite(index)
        if found is not None:
            raise found
        if flag:
            raise ParameterError(
                self._records[int(flag) - 1][1]["name"], "its gradient holds "
                "a NaN or an infinity in another rank's part; stopped before "
                "the step on every rank, nothing updated (check_finite=False "
                "turns this check off)")

    def _check_replica_grads(self, params, grads):
        """ParameterError naming the first parameter whose gradient differs
        between ranks: each gradient's hash (the sum of its elements' bit
        patterns as int64, exact and independent of the order of the sum)
        is all-reduced as a maximum and a minimum over torch.distributed's
        ranks, which agree only where every rank holds the same bits
        (parameters sharded over the ranks, FSDP2's, are not passed)."""
        if not params:
            return
        world = _world_size(self._target or params[0].device.type,
                            self._group)
        if world == 1:
            return
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                "muir.torch.Muon: check_replicas on %d ranks needs "
                "torch.distributed initialised (gloo or nccl): the hashes "
                "of the gradients are all-reduced over it" % world)
        hashes = torch.stack([g.reshape(-1).view(torch.int32).sum(
            dtype=torch.int64) for g in grads])
        group = _dist.group()
        if dist.get_backend(group) == "gloo" and hashes.device.type != "cpu":
            hashes = hashes.cpu()
        high, low = hashes.clone(), hashes.clone()
        dist.all_reduce(high, op=dist.ReduceOp.MAX, group=group)
        dist.all_reduce(low, op=dist.ReduceOp.MIN, group=group)
        differ = torch.nonzero(high != low)
        if differ.numel():
            p = params[int(differ[0, 0])]
            raise ParameterError(
                self._info[p]["name"], "its gradient differs between the "
                "ranks (check_replicas: the hashes of rank %d's and of "
                "another rank's differ); all-reduce the gradients before "
                "step(); stopped before the step, nothing updated"
                % dist.get_rank())

    def _check_meshes(self, params, target):
        """ValueError unless every DTensor parameter split over dp lies on
        a mesh of the step's ranks in their order (its part on this rank
        is the dp rank's block the step declares)."""
        rank = _dist.ranks()[0]
        for p in params:
            d = self._info[p]
            if not d["split"]:
                continue
            if target != "cpu":
                # The CUDA steps' ranks are NCCL's world, not the mesh
                # dim's group; never run on a GPU yet.
                raise ParameterError(
                    d["name"], "is a DTensor split over ranks on the %s "
                    "target; muir.torch steps split DTensors on the CPU "
                    "target only (for now)" % target)
            mesh, k = p.device_mesh, _shard_dim(p)
            if mesh.size(k) != self._devices or \
                    mesh.get_local_rank(k) != rank:
                raise ParameterError(
                    d["name"], "is sharded over %d ranks (this rank at %d) "
                    "but the optimizer's step runs over %d rank(s) (this "
                    "one at %d); give the optimizer the mesh dim's group "
                    "(process_group=) or shard over the job's ranks in "
                    "order"
                    % (mesh.size(k), mesh.get_local_rank(k), self._devices,
                       rank))

    def _nccl_options(self, target):
        """CUDA on several ranks without mpirun (torchrun): rank 0 makes an
        NCCL unique id, torch.distributed hands it to every rank. Made once
        and kept for every step compiled later."""
        if target != "cuda" or self._devices == 1 or \
                os.environ.get("OMPI_COMM_WORLD_SIZE") or \
                any(k.startswith("nccl") for k in self._options):
            return {}
        if getattr(self, "_nccl", None) is None:
            import torch.distributed as dist
            if not (dist.is_available() and dist.is_initialized()):
                return {}
            rank, world = dist.get_rank(), dist.get_world_size()
            box = [muir.nccl_unique_id() if rank == 0 else None]
            dist.broadcast_object_list(box, src=0)
            self._nccl = {"nccl-id": box[0], "nccl-rank": rank,
                          "nccl-world": world}
        return self._nccl

    def _step_target(self, params):
        """The target and the torch device of the taking-part parameters."""
        first = params[0]
        device = first.device
        for p in params:
            dev = p.device
            name = self._info[p]["name"]
            if dev.type not in ("cpu", "cuda"):
                raise ParameterError(name, "is on device '%s'; muir runs "
                                     "CPU tensors (target cpu) and CUDA "
                                     "tensors (target cuda)" % dev)
            want = self._target or device.type
            if dev.type != want:
                raise ParameterError(
                    name, "is on device '%s' but the step runs on the %s "
                    "target%s" % (dev, want, "" if self._target else
                                  " (of '%s', on %s)" %
                                  (self._info[first]["name"], device)))
            if dev != device and dev.type == "cuda":
                raise ParameterError(name, "is on %s but '%s' is on %s; one "
                                     "step runs on one GPU" % (
                                         dev, self._info[first]["name"],
                                         device))
        return self._target or device.type, device
