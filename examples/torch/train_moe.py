#!/usr/bin/env python3
"""Train a small MoE transformer, character by character, on the text of
the GNU GPL (shipped by every Debian system), with muir's compiled Muon
step (muir.torch.Muon) and, for comparison, with a plain PyTorch Muon
written here from the formulas muir documents. Both start from the same
weights and see the same batches; the script prints both losses and both
optimizer-step times every step.

  PYTHONPATH=python MUIR_BUILD_DIR=build .venv/bin/python \\
      examples/torch/train_moe.py [--steps 30] [--text FILE] [--moe muir]

With --moe muir, the muir run's MoE blocks are muir.torch.MoE layers
(muir's compiled forward and backward, from the same weights) while the
PyTorch run keeps the MoE layer written here from the documented formulas.
Under `mpirun -np N` with --moe muir --ep N, the muir layers are expert
parallel (rank r holds experts [r E/N, (r+1) E/N) and exchanges tokens
with the others); every rank reads its own batches, the gradients of the
replicated parameters are averaged over the ranks (torch.distributed,
gloo) as DDP does, the experts' (summed over every rank's tokens by the
layer) divided by N, and both runs minimise the mean loss over the ranks,
which rank 0 prints:

  mpirun -np 2 .venv/bin/python examples/torch/train_moe.py --moe muir --ep 2

With --qk-clip TAU both runs apply MuonClip's QK-clip after each step:
the muir run through muir.torch.Muon's qk_clip and attention (each block's
largest pre-softmax logit per head passed to step()), the PyTorch run with
the formulas written here.

The model: token embedding, 2 blocks of (RMSNorm, causal multi-head
attention, RMSNorm, MoE MLP), final RMSNorm, head. The MoE MLP has a
router (a Linear to the experts' logits), top-2 routing with the softmax
of the two chosen logits as weights, and SwiGLU experts held as 3-D stacks
[experts, out, in] (nn.Parameters), which Muon orthogonalises per expert.
Muon takes the 2-D and 3-D weights; AdamW the embedding, the head (by
name) and the norms (1-D), in both optimizers.
"""
import argparse
import copy
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import muir.torch  # noqa: E402
from muir.description import assign  # noqa: E402

DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------

class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.k = torch.nn.Linear(dim, dim, bias=False)
        self.v = torch.nn.Linear(dim, dim, bias=False)
        self.o_proj = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf"))
        # Each head's largest pre-softmax logit of this forward (MuonClip's
        # input, --qk-clip).
        self.max_logits = att.detach().amax(dim=(0, 2, 3))
        att = att.softmax(-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(b, t, d))


class MoE(torch.nn.Module):
    """Top-k routed SwiGLU experts; the expert weights are 3-D stacks."""

    def __init__(self, dim, hidden, experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.router = torch.nn.Linear(dim, experts, bias=False)
        self.gate_proj = torch.nn.Parameter(
            torch.randn(experts, hidden, dim) / math.sqrt(dim))
        self.up_proj = torch.nn.Parameter(
            torch.randn(experts, hidden, dim) / math.sqrt(dim))
        self.down_proj = torch.nn.Parameter(
            torch.randn(experts, dim, hidden) / math.sqrt(hidden))

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        logits = self.router(x)
        top, expert = logits.topk(self.top_k, dim=-1)
        weight = top.softmax(-1)
        out = torch.zeros_like(x)
        for e in range(self.gate_proj.shape[0]):
            rows, slot = (expert == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            xe = x[rows]
            h = F.silu(xe @ self.gate_proj[e].t()) * (xe @ self.up_proj[e].t())
            ye = (h @ self.down_proj[e].t()) * weight[rows, slot, None]
            out = out.index_add(0, rows, ye)
        return out.reshape(shape)


class Block(torch.nn.Module):
    def __init__(self, dim, heads, hidden, experts, top_k):
        super().__init__()
        self.attn_norm = RMSNorm(dim)
        self.attn = Attention(dim, heads)
        self.moe_norm = RMSNorm(dim)
        self.moe = MoE(dim, hidden, experts, top_k)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.moe(self.moe_norm(x))


class TinyMoE(torch.nn.Module):
    def __init__(self, vocab, dim=64, layers=2, heads=4, hidden=128,
                 experts=4, top_k=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(
            Block(dim, heads, hidden, experts, top_k) for _ in range(layers))
        self.final_norm = RMSNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.final_norm(x))


# --------------------------------------------------------------------------
# a plain PyTorch Muon, from the formulas of muir.muon_update and
# muir.adamw_update (dialects/Muir/MuirOps.td, docs/description.md)
# --------------------------------------------------------------------------

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)   # the "simple" schedule


def newton_schulz(g, steps=5, eps=1e-7):
    """X / (||X||_F + eps), then on the wide form (X^T if tall):
    A = X X^T, B = b A + c A A, X = a X + B X, `steps` times; per matrix of
    a 3-D stack."""
    a, b, c = NS_COEFFICIENTS
    x = g / (torch.linalg.matrix_norm(g, keepdim=True) + eps)
    tall = g.shape[-2] > g.shape[-1]
    if tall:
        x = x.transpose(-2, -1)
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.transpose(-2, -1) if tall else x


class TorchMuon(torch.optim.Optimizer):
    """Muon (momentum ema + Nesterov, NS5, spectral scale
    0.2 sqrt(max(m, n)), decoupled weight decay) for 2-D and 3-D weights,
    AdamW for the rest; the same grouping as muir.torch.Muon."""

    def __init__(self, named_parameters, lr, momentum=0.95, weight_decay=0.0,
                 ns_steps=5, scale_extra=0.2, adamw_lr=None,
                 adamw_betas=(0.9, 0.95), adamw_eps=1e-8,
                 adamw_weight_decay=0.0):
        muon, adamw = [], []
        for name, p in named_parameters:
            opt = getattr(p, "_muir_optimizer", None) or \
                assign(name, tuple(p.shape))[0]
            (muon if opt == "muon" else adamw).append(p)
        super().__init__([
            dict(params=muon, optimizer="muon", lr=lr,
                 weight_decay=weight_decay, momentum=momentum,
                 ns_steps=ns_steps, scale_extra=scale_extra),
            dict(params=adamw, optimizer="adamw",
                 lr=lr if adamw_lr is None else adamw_lr,
                 weight_decay=adamw_weight_decay, betas=adamw_betas,
                 eps=adamw_eps)], dict(lr=lr))

    @torch.no_grad()
    def step(self):
        mg, ag = self.param_groups
        beta, lr, wd = mg["momentum"], mg["lr"], mg["weight_decay"]
        for p in mg["params"]:
            if p.grad is None:
                continue
            g = p.grad
            state = self.state[p]
            if not state:
                state["momentum_buffer"] = torch.zeros_like(p)
            m = state["momentum_buffer"]
            m.mul_(beta).add_(g, alpha=1 - beta)          # M' = b M + (1-b) G
            u = g.mul(1 - beta).add_(m, alpha=beta)       # Nesterov
            o = newton_schulz(u, mg["ns_steps"])
            scale = mg["scale_extra"] * math.sqrt(max(p.shape[-2:]))
            p.mul_(1 - lr * wd).add_(o, alpha=-lr * scale)
        (b1, b2), eps = ag["betas"], ag["eps"]
        lr, wd = ag["lr"], ag["weight_decay"]
        for p in ag["params"]:
            if p.grad is None:
                continue
            g = p.grad
            state = self.state[p]
            if not state:
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] = 0
            state["step"] += 1
            t = state["step"]
            m, v = state["exp_avg"], state["exp_avg_sq"]
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v / (1 - b2 ** t)).sqrt_().add_(eps)
            p.mul_(1 - lr * wd).addcdiv_(m / (1 - b1 ** t), denom, value=-lr)


def qk_clip(attention, tau):
    """MuonClip's QK-clip after the optimizer step, from the formulas of
    docs/description.md: gamma_h = min(1, tau / max_logits_h); the rows of
    query head h of q and of key head h of k (multi-head attention: one
    query head per key head) times sqrt(gamma_h)."""
    with torch.no_grad():
        for att in attention:
            x = att.max_logits
            gamma = torch.where(x > tau, tau / x, torch.ones_like(x))
            s = gamma.sqrt()
            for w in (att.q.weight, att.k.weight):
                w.view(att.heads, -1, w.shape[1]).mul_(s[:, None, None])


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------

def load_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return torch.tensor([index[c] for c in text], dtype=torch.long), chars


def get_batch(data, step, batch, length, seed):
    g = torch.Generator().manual_seed(seed * 100003 + step)
    start = torch.randint(0, data.numel() - length - 1, (batch,),
                          generator=g)
    x = torch.stack([data[s:s + length] for s in start.tolist()])
    y = torch.stack([data[s + 1:s + length + 1] for s in start.tolist()])
    return x, y


def add_training_arguments(ap, steps):
    """The text, batch, schedule and model options (train_fsdp.py's too)."""
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--text", default=DEFAULT_TEXT)
    ap.add_argument("--batch", type=int, default=16,
                    help="sequences a step (train_fsdp.py: over all the ranks)")
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256,
                    help="each expert's intermediate size")


def lr_factor(args, s):
    """The lr factor of step s: linear warm-up, then cosine to a tenth."""
    if s < args.warmup:
        return (s + 1) / args.warmup
    done = (s - args.warmup) / max(1, args.steps - args.warmup)
    return 0.1 + 0.45 * (1 + math.cos(math.pi * done))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_training_arguments(ap, steps=30)
    ap.add_argument("--qk-clip", type=float, default=None, metavar="TAU",
                    help="MuonClip: after each step, scale down the query "
                    "and key heads whose largest logit went over TAU "
                    "(muir.torch's qk_clip and attention; the PyTorch run "
                    "clips with the formulas written here)")
    ap.add_argument("--moe", choices=("torch", "muir"), default="torch",
                    help="the muir run's MoE layers: the script's PyTorch "
                    "layer, or muir.torch.MoE")
    ap.add_argument("--ep", type=int, default=1,
                    help="with --moe muir under mpirun -np N: expert "
                    "parallel over the N ranks (N)")
    args = ap.parse_args()
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    if args.ep > 1 and (args.moe != "muir" or args.ep != world):
        ap.error("--ep %d needs --moe muir and mpirun -np %d"
                 % (args.ep, args.ep))
    dist = None
    if world > 1:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        # One port per mpirun job (OpenMPI's job id, the same on its
        # ranks), so that two jobs on one machine do not meet (a fixed
        # port made concurrent runs join each other's group and hang).
        job = int(os.environ.get("OMPI_MCA_ess_base_jobid") or 0)
        os.environ.setdefault("MASTER_PORT", str(20000 + job % 20000))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    if rank != 0:
        sys.stdout = open(os.devnull, "w")

    def average(model):
        """The mean over the ranks of each gradient (an expert-parallel
        stack's is the sum over every rank's tokens already)."""
        if dist is None:
            return
        for p in model.parameters():
            if p.grad is None:
                continue
            if getattr(p, "_muir_ep", 1) > 1:
                p.grad.div_(world)
            else:
                dist.all_reduce(p.grad)
                p.grad.div_(world)

    def mean_loss(loss):
        value = loss.detach().clone()
        if dist is not None:
            dist.all_reduce(value)
            value /= world
        return float(value)

    data, chars = load_text(args.text)
    torch.manual_seed(args.seed)
    model_muir = TinyMoE(len(chars), dim=args.dim, layers=args.layers,
                         heads=args.heads, hidden=args.hidden,
                         experts=args.experts, top_k=args.top_k)
    model_torch = copy.deepcopy(model_muir)
    if args.moe == "muir":
        # muir.torch.MoE from the same weights: its router is the
        # Linear's weight, its expert stacks the same tensors.
        local = args.experts // args.ep
        lo, hi = rank * local, (rank + 1) * local
        for block in model_muir.layers:
            plain = block.moe
            layer = muir.torch.MoE(
                args.dim, args.hidden, args.experts, args.top_k, ep=args.ep,
                max_tokens=args.batch * args.length if args.ep > 1 else None)
            layer.load_state_dict({
                "router": plain.router.weight.detach(),
                "gate_proj": plain.gate_proj.detach()[lo:hi],
                "up_proj": plain.up_proj.detach()[lo:hi],
                "down_proj": plain.down_proj.detach()[lo:hi]})
            block.moe = layer
        # muir.torch.MoE's router takes AdamW: the PyTorch run's too.
        for block in model_torch.layers:
            block.moe.router.weight._muir_optimizer = "adamw"
        print("the muir run's MoE layers: muir.torch.MoE%s"
              % (" (ep=%d, %d ranks)" % (args.ep, world) if args.ep > 1
                 else ""))
    n_params = sum(p.numel() for p in model_torch.parameters())
    print("text: %s (%d characters, vocabulary %d); model: %d parameters"
          % (args.text, data.numel(), len(chars), n_params))
    settings = dict(lr=args.lr, weight_decay=args.weight_decay,
                    adamw_weight_decay=args.weight_decay)
    clip = {}
    if args.qk_clip is not None:
        clip = dict(qk_clip=args.qk_clip, attention=[
            dict(name="layers.%d.attn" % i, q=block.attn.q.weight,
                 k=block.attn.k.weight, heads=args.heads)
            for i, block in enumerate(model_muir.layers)])
    opt_muir = muir.torch.Muon(model_muir.named_parameters(), **settings,
                               **clip)
    opt_torch = TorchMuon(model_torch.named_parameters(), **settings)
    names = {p: n for n, p in model_muir.named_parameters()}
    print("Muon: %s" % ", ".join(names[p] for p in
                                 opt_muir.param_groups[0]["params"]))
    print("AdamW: %s" % ", ".join(names[p] for p in
                                  opt_muir.param_groups[1]["params"]))

    # Linear warm-up, then cosine to a tenth; the same for both groups and
    # both optimizers (muir reads the lr at every step: no recompiling).
    def schedule(s):
        return lr_factor(args, s)
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, schedule)
              for o in (opt_muir, opt_torch)]

    print("%5s %10s %10s %11s %12s %12s" % ("step", "loss muir", "loss torch",
                                             "rel diff", "muir step ms",
                                             "torch step ms"))
    losses, times = {"muir": [], "torch": []}, {"muir": [], "torch": []}
    clipped = {"muir": 0, "torch": 0}
    for step in range(args.steps):
        x, y = get_batch(data, step, args.batch, args.length,
                         args.seed + 1000 * rank)
        for key, model, opt in (("muir", model_muir, opt_muir),
                                ("torch", model_torch, opt_torch)):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   y.reshape(-1))
            loss.backward()
            average(model)
            blocks = [b.attn for b in model.layers]
            if args.qk_clip is not None and dist is not None:
                # The largest logit over every rank's batch.
                for a in blocks:
                    dist.all_reduce(a.max_logits, op=dist.ReduceOp.MAX)
            t0 = time.perf_counter()
            if args.qk_clip is None:
                opt.step()
            elif key == "muir":
                opt.step(max_logits={"layers.%d.attn" % i: a.max_logits
                                     for i, a in enumerate(blocks)})
                clipped[key] += sum(int((a.max_logits > args.qk_clip).sum())
                                    for a in blocks)
            else:
                opt.step()
                qk_clip(blocks, args.qk_clip)
                clipped[key] += sum(int((a.max_logits > args.qk_clip).sum())
                                    for a in blocks)
            times[key].append((time.perf_counter() - t0) * 1e3)
            opt.zero_grad(set_to_none=True)
            losses[key].append(mean_loss(loss))
        for s in scheds:
            s.step()
        lm, lt = losses["muir"][-1], losses["torch"][-1]
        print("%5d %10.5f %10.5f %11.2e %12.2f %12.2f" % (
            step + 1, lm, lt, abs(lm - lt) / abs(lt), times["muir"][-1],
            times["torch"][-1]), flush=True)

    first = min(5, args.steps)
    agree = max(abs(a - b) / abs(b) for a, b in
                zip(losses["muir"][:first], losses["torch"][:first]))
    tail = max(1, args.steps // 5)

    def mean(v):
        return sum(v) / len(v)
    print("first %d steps: losses agree to %.2e relative (fp32 rounding: "
          "below 1e-4)" % (first, agree))
    for key in ("muir", "torch"):
        later = times[key][1:] or times[key]
        print("%-5s loss %.4f -> %.4f (mean of the first/last %d steps); "
              "optimizer step %.2f ms (mean after the first; first %.1f ms)"
              % (key, mean(losses[key][:tail]), mean(losses[key][-tail:]),
                 tail, mean(later), times[key][0]))
    if args.qk_clip is not None:
        print("qk-clip %g: %d and %d head clips over the steps (muir, "
              "torch)" % (args.qk_clip, clipped["muir"], clipped["torch"]))
    ok = agree < 1e-4 and all(
        mean(losses[k][-tail:]) < mean(losses[k][:tail]) for k in losses)
    print("OK" if ok else "NOT OK: the curves disagree or a loss did not "
          "decrease")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
