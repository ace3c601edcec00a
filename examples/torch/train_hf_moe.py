#!/usr/bin/env python3
"""Train a tiny Hugging Face Qwen3-MoE causal LM (made by transformers from
a local config, random init: nothing is downloaded) on the bytes of a text
file of this repository (README.md by default), with muir's MoE layers
dropped into the transformers model (muir.hf.replace_moe_blocks) and
muir's optimizer step (muir.torch.Muon), against the same model with its
own Hugging Face blocks and PyTorch's optimizers.

    bash scripts/muir.sh python examples/torch/train_hf_moe.py [--steps 20]

Runs from the same weights on the same batches, each named
LAYERS:OPTIMIZER, each step's loss including the router's load-balancing
loss (output_router_logits=True, router_aux_loss_coef):

  muir:muir     muir blocks + muir.torch.Muon (scale_mode "shape" for
                torch's default adjust_lr_fn "original", or "spectral"
                with scale_extra 0.2 for --adjust-lr match_rms_adamw;
                ns_eps = torch's eps; AdamW for the rest, as muir assigns
                it), against
  hf:torch32    HF blocks + torch.optim.Muon with its Newton-Schulz in
                float32 (torch's own computes in bfloat16; see
                float32_newton_schulz) + torch.optim.AdamW: muir's whole
                stack against PyTorch's.
  muir:torch32  muir blocks + the same torch optimizers, against
                hf:torch32: the layers alone.
  muir:torch, hf:torch (not run by default, --runs): the stock
                torch.optim.Muon, bfloat16 Newton-Schulz. Their difference
                is printed, not checked: bfloat16 rounding turns the
                layers' float32 rounding differences into ulp-sized
                (0.4%) differences of single update elements, about 1e-4
                of the loss after 20 steps; and each step costs seconds
                (bfloat16 products on a CPU).

eps: torch.optim.Muon normalises X / max(||X||_F, eps) (a clamp), muir
X / (||X||_F + eps) (docs/description.md, optimizer.muon): the same when
||X|| >> eps. With torch's default eps 1e-7 and the experts' momentum
norms about 1e-2, the two differ by 1e-5 in every update's scale, which
20 steps of training amplify to 1e-4 of the loss (measured 9.4e-5 here);
so the example sets eps 1e-12 in both (--ns-eps), and then the whole
muir stack agrees with PyTorch's to about 1e-7.

Which parameter takes what, in every run (muir.torch.Muon's assignment):
Muon for the attention projections and the expert matrices, one Newton-
Schulz per expert matrix; AdamW for the embedding, the head, the norms and
the routers. torch.optim.Muon takes 2-D parameters only, so it is given
each expert's matrices as 2-D views of the 3-D stacks (their gradients
set from the stacks' before each step; its in-place update writes the
stacks): [I, H] gate and up halves of HF's fused gate_up_proj [E, 2I, H]
(as muir's layer holds gate_proj and up_proj apart: Newton-Schulz of the
fused [2I, H] matrix would be another update) and [H, I] of down_proj.

Prints each step's losses and each run's relative difference from its
reference (hf:torch32, or hf:torch for :torch); at the end the largest
differences, the first and last losses, and OK (exit 0) when every
checked run agrees with its reference within 1e-4 at every step and every
run's loss went down.
"""
import argparse
import contextlib
import copy
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import muir.description  # noqa: E402
import muir.hf  # noqa: E402
import muir.torch  # noqa: E402

import transformers  # noqa: E402
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM  # noqa: E402

TOLERANCE = 1e-4


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--text", default=os.path.join(ROOT, "README.md"),
                   help="a text file, read as bytes (vocabulary 256)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--length", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--expert-size", type=int, default=96)
    p.add_argument("--lr", type=float, default=0.02, help="Muon's lr")
    p.add_argument("--adamw-lr", type=float, default=3e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--adamw-weight-decay", type=float, default=0.01)
    p.add_argument("--adjust-lr", default="original",
                   choices=("original", "match_rms_adamw"),
                   help="torch.optim.Muon's adjust_lr_fn (muir's "
                   "scale_mode shape / spectral with scale_extra 0.2)")
    p.add_argument("--ns-eps", type=float, default=1e-12,
                   help="torch.optim.Muon's eps (muir's ns_eps; see the "
                   "docstring)")
    p.add_argument("--aux-coef", type=float, default=0.01,
                   help="router_aux_loss_coef")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", default="muir:muir,hf:torch32,muir:torch32",
                   help="the runs, comma-separated LAYERS:OPTIMIZER with "
                   "LAYERS muir or hf, OPTIMIZER muir, torch32 or torch")
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# data and model
# --------------------------------------------------------------------------

def load_bytes(path):
    with open(path, "rb") as f:
        return torch.tensor(list(f.read()), dtype=torch.int64)


def batches(data, steps, batch, length, seed):
    """The (input_ids, labels) of every step: random windows of the text."""
    g = torch.Generator().manual_seed(seed + 1)
    out = []
    for _ in range(steps):
        starts = torch.randint(0, len(data) - length - 1, (batch,),
                               generator=g)
        ids = torch.stack([data[s:s + length] for s in starts.tolist()])
        out.append((ids, ids.clone()))  # the model shifts the labels
    return out


def make_model(args):
    config = Qwen3MoeConfig(
        vocab_size=256, hidden_size=args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=max(1, args.heads // 2),
        head_dim=args.hidden // args.heads,
        intermediate_size=2 * args.hidden,
        moe_intermediate_size=args.expert_size, num_experts=args.experts,
        num_experts_per_tok=args.top_k, norm_topk_prob=True,
        router_aux_loss_coef=args.aux_coef, output_router_logits=True,
        max_position_embeddings=max(128, args.length),
        tie_word_embeddings=False)
    torch.manual_seed(args.seed)
    return Qwen3MoeForCausalLM(config).float()


# --------------------------------------------------------------------------
# optimizers
# --------------------------------------------------------------------------

def float32_newton_schulz(grad, ns_coefficients, ns_steps, eps):
    """torch.optim.Muon's Newton-Schulz (torch/optim/_muon.py,
    _zeropower_via_newtonschulz) in float32 instead of bfloat16: X =
    G / max(||G||_F, eps) (transposed when tall), then ns_steps of
    X <- a X + (b A + c A A) X with A = X X^T."""
    a, b, c = ns_coefficients
    x = grad.to(torch.float32)
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        update = torch.addmm(gram, gram, gram, beta=b, alpha=c)
        x = torch.addmm(x, update, x, beta=a)
    return x.T if tall else x


@contextlib.contextmanager
def newton_schulz_in_float32():
    """torch.optim.Muon's steps inside use float32_newton_schulz."""
    import torch.optim._muon as tm
    saved = tm._zeropower_via_newtonschulz
    tm._zeropower_via_newtonschulz = float32_newton_schulz
    try:
        yield
    finally:
        tm._zeropower_via_newtonschulz = saved


def takes_muon(name, p):
    """muir.torch.Muon's assignment (muir.description.assign, and the
    router's mark), written for both layouts."""
    if getattr(p, "_muir_optimizer", None) == "adamw" or \
            name.endswith("mlp.gate.weight"):
        return False
    return muir.description.assign(name, tuple(p.shape))[0] == "muon"


class TorchOptimizers:
    """torch.optim.Muon (2-D matrices; expert stacks as per-expert 2-D
    views) and torch.optim.AdamW for the rest, stepped together."""

    def __init__(self, model, args, float32_ns):
        self.float32_ns = float32_ns
        self.views = []          # (view, stack, index)
        muon, adamw = [], []
        expert_size = args.expert_size
        for name, p in model.named_parameters():
            if not takes_muon(name, p):
                adamw.append(p)
            elif p.dim() == 2:
                muon.append(p)
            else:
                # One matrix per expert; HF's fused gate_up_proj as its
                # gate and up halves (muir's gate_proj and up_proj).
                parts = [slice(None)]
                if name.endswith("gate_up_proj"):
                    parts = [slice(0, expert_size),
                             slice(expert_size, 2 * expert_size)]
                for e in range(p.shape[0]):
                    for rows in parts:
                        v = p.data[e, rows]
                        self.views.append((v, p, (e, rows)))
                        muon.append(v)
        self.muon = torch.optim.Muon(
            muon, lr=args.lr, weight_decay=args.weight_decay,
            momentum=0.95, nesterov=True, eps=args.ns_eps, ns_steps=5,
            adjust_lr_fn=args.adjust_lr)
        self.adamw = torch.optim.AdamW(
            adamw, lr=args.adamw_lr, betas=(0.9, 0.95), eps=1e-8,
            weight_decay=args.adamw_weight_decay)
        self.param_groups = self.muon.param_groups + self.adamw.param_groups

    def step(self):
        for v, p, (e, rows) in self.views:
            v.grad = p.grad[e, rows]
        with (newton_schulz_in_float32() if self.float32_ns
              else contextlib.nullcontext()):
            self.muon.step()
        self.adamw.step()

    def zero_grad(self):
        self.muon.zero_grad()
        self.adamw.zero_grad()
        for v, p, _ in self.views:
            v.grad = None
            p.grad = None         # the stacks are no optimizer's own


def muir_optimizer(model, args):
    scale = dict(scale_mode="shape") if args.adjust_lr == "original" else \
        dict(scale_mode="spectral", scale_extra=0.2)
    return muir.torch.Muon(
        model.named_parameters(), lr=args.lr, momentum=0.95, nesterov=True,
        weight_decay=args.weight_decay, ns_steps=5, schedule="simple",
        ns_eps=args.ns_eps, adamw_lr=args.adamw_lr, adamw_betas=(0.9, 0.95),
        adamw_eps=1e-8, adamw_weight_decay=args.adamw_weight_decay, **scale)


def schedule(args):
    """Linear warm-up, then cosine to 10%: one factor for every group."""
    def factor(step):
        if step < args.warmup:
            return (step + 1) / args.warmup
        t = (step - args.warmup) / max(1, args.steps - args.warmup)
        return 0.1 + 0.45 * (1 + math.cos(math.pi * t))
    return factor


class Schedules:
    def __init__(self, opt, factor):
        opts = [opt.muon, opt.adamw] if isinstance(opt, TorchOptimizers) \
            else [opt]
        self.scheds = [torch.optim.lr_scheduler.LambdaLR(o, factor)
                       for o in opts]

    def step(self):
        for s in self.scheds:
            s.step()


# --------------------------------------------------------------------------
# the runs
# --------------------------------------------------------------------------

def train(run, base, data, args):
    layers, optimizer = run.split(":")
    if layers not in ("muir", "hf") or \
            optimizer not in ("muir", "torch32", "torch"):
        raise SystemExit("--runs: %r is not LAYERS:OPTIMIZER (muir or hf, "
                         "muir, torch32 or torch)" % run)
    model = copy.deepcopy(base)
    what = "HF blocks"
    if layers == "muir":
        paths = muir.hf.replace_moe_blocks(model)
        what = "muir.torch.MoE at %s" % ", ".join(paths)
    if optimizer == "muir":
        opt = muir_optimizer(model, args)
        what += "; muir.torch.Muon"
    else:
        opt = TorchOptimizers(model, args,
                              float32_ns=(optimizer == "torch32"))
        what += "; torch.optim.Muon%s + AdamW" % (
            " (Newton-Schulz in float32)" if optimizer == "torch32"
            else " (stock: Newton-Schulz in bfloat16)")
    print("%-12s %s" % (run, what))
    sched = Schedules(opt, schedule(args))
    model.train()
    losses, times = [], []
    for ids, labels in data:
        t = time.perf_counter()
        out = model(input_ids=ids, labels=labels, output_router_logits=True)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        times.append(time.perf_counter() - t)
        losses.append(out.loss.item())
    return losses, times


def reference(run):
    """The run a run is compared with, and whether the comparison is
    checked (the stock bfloat16 runs' is printed only)."""
    bf16 = run.endswith(":torch")
    ref = "hf:torch" if bf16 else "hf:torch32"
    return (ref, not bf16) if run != ref else (None, False)


def main(argv=None):
    args = parse_args(argv)
    transformers.logging.set_verbosity_error()
    torch.manual_seed(args.seed)
    text = load_bytes(args.text)
    data = batches(text, args.steps, args.batch, args.length, args.seed)
    base = make_model(args)
    runs = [r for r in args.runs.split(",") if r]
    print("model: Qwen3MoeForCausalLM, %d layers, hidden %d, %d experts "
          "top-%d of size %d, %d parameters; %d bytes of %s; %d tokens a "
          "step; adjust_lr %s, eps %g" % (
              args.layers, args.hidden, args.experts, args.top_k,
              args.expert_size, sum(p.numel() for p in base.parameters()),
              len(text), os.path.basename(args.text),
              args.batch * args.length, args.adjust_lr, args.ns_eps))
    results = {r: train(r, base, data, args) for r in runs}
    pairs = [(r,) + reference(r) for r in runs]
    pairs = [(r, ref, checked) for r, ref, checked in pairs
             if ref in results]
    print("step" + "".join(" %12s" % r for r in runs) + "".join(
        " %14s" % ("d " + r) for r, _, _ in pairs))
    worst = {r: 0.0 for r, _, _ in pairs}
    for i in range(args.steps):
        row = "%4d" % (i + 1) + "".join(" %12.6f" % results[r][0][i]
                                        for r in runs)
        for r, ref, _ in pairs:
            la, lb = results[r][0][i], results[ref][0][i]
            d = abs(la - lb) / abs(lb)
            worst[r] = max(worst[r], d)
            row += " %14.2e" % d
        print(row)
    ok = True
    for r, ref, checked in pairs:
        agree = worst[r] <= TOLERANCE
        if checked:
            ok &= agree
        print("%s vs %s: losses agree to %.2e relative over %d steps "
              "(%s)" % (r, ref, worst[r], args.steps,
                        "below %g: %s" % (TOLERANCE, agree) if checked
                        else "bfloat16 Newton-Schulz: not checked"))
    for r in runs:
        losses, times = results[r]
        down = losses[-1] < losses[0]
        ok &= down
        print("%-12s loss %.4f -> %.4f (down: %s); step %.1f ms (mean "
              "after the first)" % (r, losses[0], losses[-1], down,
                                   1e3 * sum(times[1:]) /
                                   max(1, len(times) - 1)))
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
