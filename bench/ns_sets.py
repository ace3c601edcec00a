#!/usr/bin/env python3
"""Newton-Schulz of whole parameter sets: muir against PyTorch eager.

NS5 (the "simple" coefficients, Frobenius normalisation first, iterating
on the wide form), fp32, on 2 threads, for every Muon matrix of a set:

  tiny-moe    the tiny-moe example's 56 Muon matrices: 8 of 256x256
              (attention), 32 of 512x256 and 16 of 256x512 (experts);
  qwen3-layer one Qwen3-30B-A3B layer: q 4096x2048, k and v 512x2048,
              o 2048x4096, and the first 8 experts of each of its three
              stacks (768x2048, 768x2048, 2048x768). All 384 experts would
              take minutes per run on 2 cores; 8 of each keep the mix.

  * muir: one function orthogonalising every matrix (stacks as [E, m, n]),
    compiled by muir-run's pipeline (batching, SYRK) and run with
    `--steps K --quiet --no-probes` at OPENBLAS_NUM_THREADS=2; min_ms.
  Both sides run --rounds times (default 2), interleaved, best of each.
  * torch: the per-matrix loop of NVIDIA Emerging-Optimizers (X @ X.T and
    torch.addmm), eager, best of N after a warm-up, at both thread settings
    (torch.set_num_threads(2); and torch.set_num_threads(1) with
    OPENBLAS_NUM_THREADS=2), the faster reported.

Run:  .venv/bin/python bench/ns_sets.py --build build
"""
import argparse
import json
import os
import re
import sys
import tempfile

import common

COEFFS = (3.4445, -4.7750, 2.0315)
NS_STEPS, EPS = 5, 1e-7

SETS = {
    "tiny-moe": [(8, 256, 256), (32, 512, 256), (16, 256, 512)],
    "qwen3-layer": [(1, 4096, 2048), (2, 512, 2048), (1, 2048, 4096),
                    (16, 768, 2048), (8, 2048, 768)],
}


def torch_worker(args):
    import torch

    torch.set_num_threads(args.torch_threads)
    a, b, c = COEFFS

    def newton_schulz(G):
        X = G / (G.norm() + EPS)
        transpose = G.size(0) > G.size(1)
        if transpose:
            X = X.T
        for _ in range(NS_STEPS):
            A = X @ X.T
            B = torch.addmm(A, A, A, beta=b, alpha=c)
            X = torch.addmm(X, B, X, beta=a, alpha=1.0)
        if transpose:
            X = X.T
        return X

    torch.manual_seed(0)
    mats = [torch.randn(m, n) for count, m, n in SETS[args.set]
            for _ in range(count)]
    with torch.no_grad():
        for G in mats:
            newton_schulz(G)
        ms = common.fastest_ms(lambda: [newton_schulz(G) for G in mats],
                               args.reps)
    print(json.dumps({"ms": ms}))
    return 0


def muir_module(name):
    args, body, results, types = [], [], [], []
    for i, (count, m, n) in enumerate(SETS[name]):
        t = "tensor<%s%dx%dxf32>" % ("%dx" % count if count > 1 else "",
                                      m, n)
        args.append('%%x%d: %s {muir.name = "x%d"}' % (i, t, i))
        body.append("  %%y%d = muir.newton_schulz %%x%d steps(%d) "
                    "schedule(simple) : %s" % (i, i, NS_STEPS, t))
        results.append('%s {muir.updates = "x%d"}' % (t, i))
        types.append(t)
    return ("func.func @ns(%s)\n    -> (%s) {\n%s\n  return %s : %s\n}\n" % (
        ", ".join(args), ", ".join(results), "\n".join(body),
        ", ".join("%%y%d" % i for i in range(len(types))),
        ", ".join(types)))


def flops(name):
    total = 0
    for count, m, n in SETS[name]:
        r, c = min(m, n), max(m, n)
        total += count * NS_STEPS * (4 * r * r * c + 2 * r ** 3)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--rounds", type=int, default=2,
                    help="interleaved rounds; each side's best is reported")
    ap.add_argument("--torch-worker", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help=argparse.SUPPRESS)
    ap.add_argument("--set", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    runner = os.path.join(os.path.abspath(args.build), "bin", "muir-run")
    print("NS5 of parameter sets, fp32, 2 threads; GEMM-equivalent GFLOP "
          "(4 r^2 c + 2 r^3 per step)")
    print("%-12s %8s %12s %12s %10s %s" % ("set", "matrices", "muir ms",
                                           "torch ms", "torch/muir",
                                           "torch setting"))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            path = os.path.join(tmp, name + ".mlir")
            with open(path, "w") as f:
                f.write(muir_module(name))
            env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
            muir_ms, best, setting = None, None, None
            # Interleaved rounds, each side's best: a slow spell of a shared
            # machine does not fall on one side only.
            for _ in range(args.rounds):
                out = common.run([runner, path, "--steps", str(args.steps),
                           "--quiet", "--no-probes"], env=env)
                ms = float(re.search(r"min_ms ([\d.]+)", out).group(1))
                muir_ms = ms if muir_ms is None else min(muir_ms, ms)
                ms, label = common.best_torch(__file__, [
                    "--reps", str(args.reps), "--set", name])
                if best is None or ms < best:
                    best, setting = ms, label
            count = sum(c for c, _, _ in SETS[name])
            print("%-12s %8d %12.1f %12.1f %10.2f %s  (muir %.1f GFLOP/s)"
                  % (name, count, muir_ms, best, best / muir_ms, setting,
                     flops(name) / muir_ms / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
