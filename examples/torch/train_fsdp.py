#!/usr/bin/env python3
"""Train train_moe.py's MoE language model the way a multi-rank PyTorch job
does: launched by torchrun, the dense part sharded with FSDP2
(fully_shard), the MoE blocks muir.torch.MoE layers expert-parallel over
the ranks (ep = the number of ranks), every weight stepped by
muir.torch.Muon, checkpointed with torch.distributed.checkpoint (DCP), and
resumed on another number of ranks, 1 included:

  torchrun --nproc-per-node 2 examples/torch/train_fsdp.py \\
      --steps 20 --save-at 10 --checkpoint /tmp/muir-ckpt
  .venv/bin/python examples/torch/train_fsdp.py --steps 20 \\
      --resume /tmp/muir-ckpt                       # 1 rank, steps 11-20

(with PYTHONPATH=python MUIR_BUILD_DIR=build, or `bash scripts/muir.sh
python ...`; torchrun is `.venv/bin/python -m torch.distributed.run`).

Each step's global batch (--batch sequences of --length characters of
the GNU GPL) is split over the ranks, so a run on any number of ranks
minimises the same loss, which rank 0 prints (the mean over the ranks).
FSDP2 averages the dense part's gradients; the MoE layers are left out of
it (fully_shard's ignored_params: each rank holds its own experts, and
their gradients are already summed over every rank's tokens by the
layer), so the script averages their router gradients itself and divides
the experts' by the ranks. muir.torch.Muon takes the FSDP2 parameters as
they are (each matrix orthogonalised whole on one rank, the blocks sent
back into the shards) and the expert stacks per expert where they lie.
muir.torch.get_state_dict / set_state_dict are
torch.distributed.checkpoint.state_dict's, with the expert stacks as
DTensors over the expert-parallel ranks, so DCP saves each expert once and
a checkpoint loads on any number of ranks.

--losses FILE writes the printed losses as JSON (step -> loss).
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import muir.torch  # noqa: E402
from train_moe import (  # noqa: E402
    TinyMoE, add_training_arguments, get_batch, load_text, lr_factor)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_training_arguments(ap, steps=20)
    ap.add_argument("--checkpoint", metavar="DIR",
                    help="where --save-at writes the DCP checkpoint")
    ap.add_argument("--save-at", type=int, default=None, metavar="STEP",
                    help="save a checkpoint after this step")
    ap.add_argument("--resume", metavar="DIR",
                    help="continue from a DCP checkpoint (any ranks)")
    ap.add_argument("--ep", type=int, default=None,
                    help="expert-parallel ranks (default: all of them); "
                    "fewer fold edp = ranks / ep replicas of each expert "
                    "block")
    ap.add_argument("--losses", metavar="FILE")
    args = ap.parse_args()
    if args.save_at is not None and not args.checkpoint:
        ap.error("--save-at needs --checkpoint DIR")
    if args.save_at is not None and os.path.exists(args.checkpoint) and (
            not os.path.isdir(args.checkpoint) or
            os.listdir(args.checkpoint)):
        # DCP writes its files into the folder: never over another's.
        ap.error("--checkpoint %s exists and is not an empty folder; give "
                 "a new one" % args.checkpoint)

    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo")
    world = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    ep = args.ep or world
    if args.batch % world or args.experts % ep or world % ep:
        ap.error("--batch %d must divide over %d ranks, --experts %d over "
                 "ep=%d, and ep the ranks" % (args.batch, world,
                                              args.experts, ep))
    say = print if rank == 0 else (lambda *a, **k: None)

    data, chars = load_text(args.text)
    torch.manual_seed(args.seed)
    model = TinyMoE(len(chars), dim=args.dim, layers=args.layers,
                    heads=args.heads, hidden=args.hidden,
                    experts=args.experts, top_k=args.top_k)
    local_batch = args.batch // world
    # Rank r holds expert block r % ep (the folding edp x ep).
    lo = (rank % ep) * (args.experts // ep)
    hi = lo + args.experts // ep
    moe_params = set()
    for block in model.layers:
        plain = block.moe
        layer = muir.torch.MoE(
            args.dim, args.hidden, args.experts, args.top_k, ep=ep,
            max_tokens=local_batch * args.length if world > 1 else None)
        layer.load_state_dict({
            "router": plain.router.weight.detach(),
            "gate_proj": plain.gate_proj.detach()[lo:hi],
            "up_proj": plain.up_proj.detach()[lo:hi],
            "down_proj": plain.down_proj.detach()[lo:hi]})
        block.moe = layer
        moe_params.update(layer.parameters())
    if world > 1:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
        for block in model.layers:
            fully_shard(block.attn, mesh=mesh)
        fully_shard(model, mesh=mesh, ignored_params=moe_params)
    opt = muir.torch.Muon(model.named_parameters(), lr=args.lr,
                          weight_decay=args.weight_decay,
                          adamw_weight_decay=args.weight_decay)
    say("%d rank(s): FSDP2 over the dense part%s, muir.torch.MoE ep=%d%s"
        % (world, "" if world > 1 else " (not sharded on 1 rank)", ep,
           " (edp=%d)" % (world // ep) if ep < world else ""))

    base = [g["lr"] for g in opt.param_groups]

    start = 0
    if args.resume:
        import torch.distributed.checkpoint as dcp
        model_sd, optim_sd = muir.torch.get_state_dict(model, opt)
        state = {"model": model_sd, "optim": optim_sd,
                 "step": torch.zeros((), dtype=torch.int64)}
        dcp.load(state, checkpoint_id=args.resume)
        muir.torch.set_state_dict(model, opt, model_sd, optim_sd)
        start = int(state["step"])
        say("resumed from %s after step %d" % (args.resume, start))

    losses = {}
    for s in range(start, args.steps):
        x, y = get_batch(data, s, args.batch, args.length, args.seed)
        x = x[rank * local_batch:(rank + 1) * local_batch]
        y = y[rank * local_batch:(rank + 1) * local_batch]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               y.reshape(-1))
        loss.backward()
        if world > 1:
            # What FSDP2 does not reduce: the MoE layers' routers (the
            # mean over the ranks); their experts' gradients are sums over
            # every rank's tokens already (also over edp replicas).
            for block in model.layers:
                router = block.moe.router.grad
                dist.all_reduce(router)
                router.div_(world)
                for n in ("gate_proj", "up_proj", "down_proj"):
                    getattr(block.moe, n).grad.div_(world)
        for g, b in zip(opt.param_groups, base):
            g["lr"] = b * lr_factor(args, s)
        opt.step()
        opt.zero_grad(set_to_none=True)
        value = loss.detach().clone()
        if world > 1:
            dist.all_reduce(value)
            value /= world
        losses[s + 1] = float(value)
        say("step %3d  loss %.5f" % (s + 1, losses[s + 1]), flush=True)
        if args.save_at == s + 1:
            import torch.distributed.checkpoint as dcp
            model_sd, optim_sd = muir.torch.get_state_dict(model, opt)
            dcp.save({"model": model_sd, "optim": optim_sd,
                      "step": torch.tensor(s + 1)},
                     checkpoint_id=args.checkpoint)
            say("saved %s after step %d (DCP, %d rank(s))"
                % (args.checkpoint, s + 1, world))
    if args.losses and rank == 0:
        # Whole or not at all: a temporary beside it, renamed over it.
        part = args.losses + ".part"
        with open(part, "w") as f:
            json.dump(losses, f)
        os.replace(part, args.losses)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
