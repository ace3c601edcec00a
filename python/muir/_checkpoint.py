"""Checkpoints of muir.torch models and optimizers over several ranks:
full_state_dict (expert-parallel stacks and DTensors gathered whole) and
get_state_dict / set_state_dict (torch.distributed.checkpoint's, with the
expert stacks of ep > 1 layers as DTensors over the expert-parallel
ranks). Re-exported by muir.torch."""
import torch

from muir import _dist
from muir import _moe
from muir import _moe_records
from muir._dtensor import _dtensor_type, _is_dtensor
from muir._moe import MoE

def _gather_experts(items, who, what):
    """Each item (label, tensor, (lo, hi, experts)): this rank's rows of a
    tensor split over ep; returns the whole tensors, the ranks' rows in
    rank order, gathered over torch.distributed (every rank calls this,
    with the same labels and shapes, or none; checked first, so that a
    mismatch raises on every rank instead of hanging). `what` names the
    first split tensor for the message without torch.distributed."""
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            "%s: %s is split over the ranks (expert parallel); gathering it "
            "whole needs torch.distributed initialised (gloo or nccl) over "
            "the same ranks, in the same order" % (who, what))
    # The group the steps run over (under torchrun), else the default one.
    group = _dist.group()
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    mine = [(label, tuple(t.shape), str(t.dtype), tuple(rows))
            for label, t, rows in items]
    # Each tensor's ep: rank r holds its expert block r % ep (the folding
    # edp x ep; edp > 1 replicas of each block).
    eps = [rows[2] // max(1, rows[1] - rows[0]) for _, _, rows in items]
    every = [None] * world
    dist.all_gather_object(every, mine, group=group)
    for r, theirs in enumerate(every):
        for (label, shape, dtype, rows), other, ep in zip(
                mine, theirs + [None] * len(mine), eps):
            lo, hi, experts = rows
            if other is None or other[:3] != (label, shape, dtype):
                raise ValueError(
                    "%s: rank %d and rank %d hold different tensors to "
                    "gather (%s %s %s here, %s there); every rank gathers "
                    "the same ones" % (who, rank, r, label, shape, dtype,
                                       "nothing" if other is None else
                                       " ".join(map(str, other[:3]))))
            olo, ohi, _ = other[3]
            if world % ep or (ohi - olo) * ep != experts or \
                    olo != (r % ep) * (ohi - olo):
                raise ValueError(
                    "%s: %s of torch.distributed's rank %d holds experts "
                    "%d-%d of %d; with ep=%d it would hold %d-%d "
                    "(torch.distributed's ranks must be the expert-parallel "
                    "ranks, in order)"
                    % (who, label, r, olo, ohi - 1, experts, ep,
                       (r % ep) * experts // ep,
                       (r % ep + 1) * experts // ep - 1))
        if len(theirs) != len(mine):
            raise ValueError("%s: rank %d gathers %d tensors, rank %d %d; "
                             "every rank gathers the same ones"
                             % (who, rank, len(mine), r, len(theirs)))
    nccl = dist.get_backend(group) == "nccl"
    whole = []
    for (label, t, rows), ep in zip(items, eps):
        src = t.detach().contiguous()
        if nccl and src.device.type != "cuda":
            src = src.cuda()
        elif not nccl and src.device.type != "cpu":
            src = src.cpu()
        parts = [torch.empty_like(src) for _ in range(world)]
        dist.all_gather(parts, src, group=group)
        whole.append(torch.cat(parts[:ep]).to(t.device))
    return whole


def _whole_dtensors(sd):
    """sd with every DTensor (FSDP2's parameters and their state) whole:
    gathered over its mesh (every rank calls this)."""
    if _dtensor_type() is None:
        return sd
    if "state" in sd and "param_groups" in sd:
        state = sd["state"]
        if any(_is_dtensor(t) for e in state.values() for t in e.values()):
            sd = dict(sd)
            # In one order on every rank (a rank's state is made in the
            # order its parameters first stepped).
            sd["state"] = {i: {k: e[k].full_tensor() if _is_dtensor(e[k])
                               else e[k] for k in sorted(e)}
                           for i, e in sorted(state.items())}
        return sd
    for key, t in list(sd.items()):
        if _is_dtensor(t):
            sd[key] = t.full_tensor()
    return sd


def full_state_dict(obj):
    """A state_dict of a model (torch.nn.Module) or of a muir.torch.Muon /
    NorMuon optimizer in which every expert stack of a muir.torch.MoE with
    ep > 1, and its optimizer state, is whole: every expert's rows, in
    expert order, gathered over torch.distributed (gloo or nccl, initialised
    over the expert-parallel ranks in order: every rank calls this, and
    every rank gets the whole stacks). Everything else is the object's own
    state_dict(), whole on every rank already. Such a state loads with
    load_state_dict on any ep and number of ranks (each rank keeps its
    experts' rows), as does a state saved on one rank. A rank's own
    state_dict() records the experts it holds, and loads only where those
    are the experts needed. DTensors (FSDP2's parameters and the
    optimizer's state of them) are gathered whole too (full_tensor(),
    over their mesh). Without ep > 1 stacks or DTensors this is
    state_dict() and needs no torch.distributed."""
    who = "muir.torch.full_state_dict"
    if isinstance(obj, torch.optim.Optimizer):
        params = [p for g in obj.param_groups for p in g["params"]]
        split = [getattr(p, "_muir_ep", 1) > 1 for p in params]
        sd = _whole_dtensors(obj.state_dict())
        if not any(split):
            return sd
        info = getattr(obj, "_info", {})

        def name(i):
            p = params[i]
            return "parameter '%s'" % info[p]["name"] if p in info else \
                "parameter %d" % i
        experts = dict(sd.get("muir_experts") or {})
        items = []
        for i, p in enumerate(params):
            if not split[i] or i not in sd["state"]:
                continue
            for key, t in sorted(sd["state"][i].items()):
                if isinstance(t, torch.Tensor) and t.dim() > 0:
                    items.append(("%s's state '%s'" % (name(i), key), t,
                                  experts[i], (i, key)))
        # Every rank gathers, also one that holds no state yet: a rank
        # that stepped its stacks when another did not is told so.
        whole = _gather_experts([it[:3] for it in items], who,
                                name(split.index(True)))
        sd["state"] = {i: dict(e) for i, e in sd["state"].items()}
        for (_, _, (lo, hi, n), (i, key)), t in zip(items, whole):
            sd["state"][i][key] = t
            experts[i] = [0, n, n]
        sd["muir_experts"] = experts
        return sd
    if not isinstance(obj, torch.nn.Module):
        raise TypeError("%s: expected a torch.nn.Module or a muir.torch "
                        "optimizer, got %s" % (who, type(obj).__name__))
    sd = _whole_dtensors(obj.state_dict())
    items = [(key, p, _moe_records.expert_rows(p))
             for key, p in obj.state_dict(keep_vars=True).items()
             if getattr(p, "_muir_ep", 1) > 1]
    if not items:
        return sd
    for (key, _, (lo, hi, n)), t in zip(
            items, _gather_experts(items, who, items[0][0])):
        sd[key] = t
        sd._metadata.setdefault(key.rpartition(".")[0], {})[
            "muir_experts"] = [0, n, n]
    return sd


def _ep_stacks(model):
    """{qualified name: (layer, stack)} of every expert stack a
    muir.torch.MoE with ep > 1 in `model` holds (this rank's experts)."""
    found = {}
    for prefix, module in model.named_modules():
        if isinstance(module, MoE) and module.ep > 1:
            for n in _moe._STACKS:
                found[(prefix + "." if prefix else "") + n] = (
                    module, getattr(module, n))
    return found


def _ep_rows_placed(t, layer):
    """A stack (or its state) of ep layer `layer` as a DTensor Shard(0)
    over the expert-parallel ranks: its rows, this rank's experts."""
    from torch.distributed.tensor import Replicate
    mesh = _ep_mesh(layer.ep, t.device.type)
    shape = torch.Size((layer.experts,) + tuple(t.shape[1:]))
    stride = torch.empty(shape, device="meta").stride()
    placements = [_shard0()] if mesh.ndim == 1 else [Replicate(), _shard0()]
    return _dtensor_type().from_local(t, mesh, placements, run_check=False,
                                      shape=shape, stride=stride)


_EP_MESHES = {}


def _ep_mesh(ep, device_type):
    """The DeviceMesh of the expert-parallel ranks: 1-D over the ranks
    muir's steps run over, or (edp, ep) where ep < ranks (made once: a
    mesh's groups are made collectively)."""
    from torch.distributed.device_mesh import DeviceMesh
    import torch.distributed as dist
    group = _dist.group() or dist.group.WORLD
    world = dist.get_world_size(group)
    key = (ep, world, device_type)
    if key not in _EP_MESHES:
        if ep == world:
            mesh = DeviceMesh.from_group(group, device_type)
        else:
            ranks = torch.tensor([dist.get_global_rank(group, r)
                                  for r in range(world)])
            mesh = DeviceMesh(device_type, ranks.reshape(world // ep, ep),
                              mesh_dim_names=("edp", "ep"))
        _EP_MESHES[key] = mesh
    return _EP_MESHES[key]


def _shard0():
    from torch.distributed.tensor import Shard
    return Shard(0)


def get_state_dict(model, optimizer, **options):
    """torch.distributed.checkpoint.state_dict.get_state_dict(model,
    optimizer, **options), i.e. (model state, optimizer state) keyed by
    parameter name as torch.distributed.checkpoint (DCP) saves them, with
    every expert stack of a muir.torch.MoE with ep > 1, and its optimizer
    state, as a DTensor Shard(0) over the expert-parallel ranks (each rank
    its experts' rows), so that DCP saves every expert once and loads them
    on any ep and number of ranks (FSDP2's DTensors are DCP's already).
    Every rank calls it. Load with set_state_dict:

        model_sd, optim_sd = muir.torch.get_state_dict(model, opt)
        dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=d)
        ...
        model_sd, optim_sd = muir.torch.get_state_dict(model, opt)
        dcp.load({"model": model_sd, "optim": optim_sd}, checkpoint_id=d)
        muir.torch.set_state_dict(model, opt, model_sd, optim_sd)
    """
    from torch.distributed.checkpoint import state_dict as tsd
    msd, osd = tsd.get_state_dict(model, optimizer, **options)
    stacks = _ep_stacks(model)
    if not stacks:
        return msd, osd
    osd = dict(osd)
    # The DTensors say which experts each rank holds.
    osd.pop("muir_experts", None)
    state = osd.get("state", {})
    for name, (layer, _) in stacks.items():
        if name in msd and not _is_dtensor(msd[name]):
            msd[name] = _ep_rows_placed(msd[name], layer)
        entry = state.get(name)
        if entry:
            state[name] = {k: _ep_rows_placed(t, layer)
                           if isinstance(t, torch.Tensor) and t.dim() > 0 and
                           not _is_dtensor(t) else t
                           for k, t in entry.items()}
    return msd, osd


def set_state_dict(model, optimizer, model_state_dict, optim_state_dict,
                   **options):
    """torch.distributed.checkpoint.state_dict.set_state_dict for the
    state get_state_dict made (and DCP loaded into): the expert stacks of
    ep > 1 layers, and their state, take this rank's rows."""
    from torch.distributed.checkpoint import state_dict as tsd
    stacks = _ep_stacks(model)
    if stacks:
        model_state_dict = dict(model_state_dict)
        optim_state_dict = dict(optim_state_dict)
        state = dict(optim_state_dict.get("state", {}))
        for name in stacks:
            if _is_dtensor(model_state_dict.get(name)):
                model_state_dict[name] = model_state_dict[name]._local_tensor
            if name in state:
                state[name] = {k: t._local_tensor if _is_dtensor(t) else t
                               for k, t in state[name].items()}
        optim_state_dict["state"] = state
    return tsd.set_state_dict(model, optimizer,
                              model_state_dict=model_state_dict,
                              optim_state_dict=optim_state_dict, **options)
