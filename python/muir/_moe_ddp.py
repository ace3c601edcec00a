"""muir.torch.prepare_ddp: DistributedDataParallel told what the
muir.torch.MoE layers of a model hold per rank."""
from muir._moe import MoE, _STACKS


def prepare_ddp(model):
    """Call before DistributedDataParallel(model): DDP is told to leave
    alone what a muir.torch.MoE inside `model` holds per rank: the expert
    stacks of an ep > 1 layer (each rank holds other experts; the layer
    scales their gradients by 1 / ranks under DDP, so that with DDP's
    averaged ones they are the gradients of the mean of the ranks' losses,
    as a single process on all the tokens gives) and the loads update_bias()
    sums over the ranks. By torch's own list of names DDP ignores
    (DistributedDataParallel._set_params_and_buffers_to_ignore_for_model),
    appended to one already set on `model`. Returns the list. The layers
    are marked: from then on an ep layer's stack gradients are DDP's
    convention (1 / ranks) on every forward, also where DDP runs its
    Python reducer (compiled autograd), which does not show the layer it
    is inside DDP. Without it a layer that DDP would reduce or broadcast
    refuses its first forward, naming this function."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    names = list(getattr(model, "_ddp_params_and_buffers_to_ignore", ()))
    for prefix, m in model.named_modules():
        if not isinstance(m, MoE):
            continue
        at = prefix + "." if prefix else ""
        if m.ep > 1:
            names += [at + n for n in _STACKS]
        if m.tokens_per_expert_since_update is not None:
            names.append(at + "tokens_per_expert_since_update")
        m._muir_ddp = True
    names = list(dict.fromkeys(names))
    DDP._set_params_and_buffers_to_ignore_for_model(model, names)
    return names
