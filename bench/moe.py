#!/usr/bin/env python3
"""The tiny-moe MoE layer, forward + backward: muir at ep = 1, 2, 4 and
PyTorch eager at ep = 1.

The layer: 1024 tokens a rank, hidden 256, 8 experts of size 512 (SwiGLU),
top-2 with Qwen3-MoE's router (softmax, normalised top-k). One step runs
route, dispatch, the experts, combine, and the backward pass to the
gradients of the tokens, the router logits and the three expert stacks
(the module of test/Integration/Inputs/moe_layer.py).

  * muir: the module through muir-run, `--steps K --quiet --no-probes`,
    min_ms (rank 0's at ep > 1, every rank running its own 1024 tokens on
    this 2-core machine, so the ranks share the cores); bytes sent per
    rank and step from `--comm-stats` (their closed form is checked by
    moe-layer.test).
  * torch: the usual eager layer (softmax, topk, a stable argsort of the
    tokens by expert, one F.linear chain per expert, index_add_ of the
    weighted outputs), forward and `backward` to the same gradients, best
    of N after a warm-up, at both thread settings (torch.set_num_threads(2);
    and torch.set_num_threads(1) with OPENBLAS_NUM_THREADS=2), the faster
    reported.
  Both sides run --rounds times (default 2), interleaved, best of each.

Run:  .venv/bin/python bench/moe.py --build build
"""
import argparse
import json
import os
import re
import sys
import tempfile

import common

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "lib"))

TOKENS, HIDDEN, EXPERTS, FFN, TOPK = 1024, 256, 8, 512, 2


def torch_worker(args):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(0)
    t, h, e, f, k = TOKENS, HIDDEN, EXPERTS, FFN, TOPK
    logits = torch.randn(t, e, requires_grad=True)
    x = torch.randn(t, h, requires_grad=True)
    wg = (torch.randn(e, f, h) / h ** 0.5).requires_grad_()
    wu = (torch.randn(e, f, h) / h ** 0.5).requires_grad_()
    wd = (torch.randn(e, h, f) / f ** 0.5).requires_grad_()
    dy = torch.randn(t, h)

    def step():
        for p in (logits, x, wg, wu, wd):
            p.grad = None
        probs = torch.softmax(logits, dim=1)
        w, idx = torch.topk(probs, k, dim=1)
        w = w / w.sum(1, keepdim=True)
        flat = idx.flatten()
        order = torch.argsort(flat, stable=True)
        tok = order // k
        counts = torch.bincount(flat, minlength=e).tolist()
        xs = x[tok]
        outs, start = [], 0
        for ex in range(e):
            rows = xs[start:start + counts[ex]]
            a = F.silu(F.linear(rows, wg[ex])) * F.linear(rows, wu[ex])
            outs.append(F.linear(a, wd[ex]))
            start += counts[ex]
        out = torch.cat(outs) * w.flatten()[order][:, None]
        y = torch.zeros_like(x).index_add_(0, tok, out)
        y.backward(dy)

    step()
    print(json.dumps({"ms": common.fastest_ms(step, args.reps)}))
    return 0


def flops():
    """GEMM flops of one forward + backward: 3 expert products forward,
    the data and weight gradients of each backward (T k rows)."""
    rows = TOKENS * TOPK
    one = 2 * rows * HIDDEN * FFN
    return 3 * one + 6 * one


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2,
                    help="interleaved rounds; each side's best is reported")
    ap.add_argument("--eps", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--torch-worker", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    import muirtest as mt

    runner = os.path.join(os.path.abspath(args.build), "bin", "muir-run")
    attrs = {"normalize": True}
    print("MoE layer fwd+bwd: %d tokens/rank, hidden %d, %d experts of %d "
          "(SwiGLU), top-%d; fp32, 2 cores" % (TOKENS, HIDDEN, EXPERTS, FFN,
                                             TOPK))
    results = {}
    torch_best, setting = None, None
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for g in args.eps:
            paths[g] = os.path.join(tmp, "ep%d.mlir" % g)
            with open(paths[g], "w") as f:
                f.write(mt.moe_layer_module(g, TOKENS, EXPERTS, TOPK, HIDDEN,
                                            FFN, attrs))
        # Bytes per rank and step (one step, counters of every rank).
        sent = {}
        for g in args.eps:
            cmd = [runner, paths[g], "--steps", "1", "--quiet",
                   "--no-probes", "--comm-stats"]
            if g > 1:
                cmd += ["--ranks", str(g)]
            got, _ = mt.comm_stats(common.run(cmd))
            sent[g] = [sum(b for (r, _), b in got.items() if r == rank)
                       for rank in range(g)]
        for _ in range(args.rounds):
            for g in args.eps:
                cmd = [runner, paths[g], "--steps", str(args.steps),
                       "--quiet", "--no-probes"]
                if g > 1:
                    cmd += ["--ranks", str(g)]
                env = dict(os.environ)
                if g == 1:
                    env["OPENBLAS_NUM_THREADS"] = "2"
                ms = float(re.search(r"min_ms ([\d.]+)",
                                     common.run(cmd, env=env)).group(1))
                results[g] = min(results.get(g, ms), ms)
            ms, label = common.best_torch(__file__,
                                          ["--reps", str(args.reps)])
            if torch_best is None or ms < torch_best:
                torch_best, setting = ms, label
    print("%-6s %10s %12s %22s" % ("ep", "muir ms", "GFLOP/s", "bytes sent per rank"))
    for g in args.eps:
        per = sent[g]
        print("%-6d %10.1f %12.1f %22s" % (
            g, results[g], flops() / results[g] / 1e6,
            "%d" % per[0] if len(set(per)) == 1 else
            "%d..%d" % (min(per), max(per))))
    if 1 in results:
        print("torch eager ep 1: %.1f ms (%s); torch/muir %.2f"
              % (torch_best, setting, torch_best / results[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
