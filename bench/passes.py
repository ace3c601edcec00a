#!/usr/bin/env python3
"""What muir-form-syrk and muir-batch-newton-schulz buy, side by side.

c. SYRK vs GEMM path: NS5 (simple) of one 2048x2048 matrix, fp32, one rank
   (OpenBLAS's 2 threads): step time with --syrk (default) and
   --syrk=false, their ratio, and each path's achieved GFLOP/s (the flops
   the runtime counted as performed) against this machine's sgemm rate
   measured in the same run (numpy float32 matmul on the same OpenBLAS);
   --rounds interleaved rounds, the best of each figure.
d. The MindSpore case: 74 matrices of 24x10240, batched (default) vs one
   by one (--batch=false): runtime calls per step (BLAS calls plus
   normalise/transpose calls, from the runtime's counters) and step time.
e. The distributed mode's Gram all-reduce on 2 ranks (tp=2; a 512x2048
   row-parallel matrix: Gram matrices of s = 512): bytes per rank and step
   fused with its SYRK, packed triangle (default) vs unfused
   (--fuse-syrk-all-reduce=false), from the runtime's counters, and their
   ratio; step times beside.

Run:  .venv/bin/python bench/passes.py --build build
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import common


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), p.stdout,
                                             p.stderr))
    return p.stdout


def step(runner, yaml, steps, extra):
    # The standard form throughout (the Gram form has bench/gram_ns.py).
    out = run([runner, yaml, "--steps", str(steps), "--no-probes",
               "--comm-stats", "--quiet", "--ns-form=standard"] + extra)
    ms = float(out.split("min_ms")[1].split()[0])
    f = [l for l in out.splitlines() if l.startswith("compute: rank 0")][0]
    f = f.split()
    blas, flops, other = int(f[4]), int(f[6]), int(f[8])
    return ms, blas / steps, other / steps, flops / steps


def sgemm_rate(n=2048, reps=5):
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = a.copy()
    a @ b
    return 2.0 * n ** 3 / common.fastest_ms(lambda: a @ b, reps) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds of c; each figure is its best")
    args = ap.parse_args()
    runner = os.path.join(os.path.abspath(args.build), "bin", "muir-run")
    with tempfile.TemporaryDirectory() as tmp:
        sq = os.path.join(tmp, "square.yaml")
        with open(sq, "w") as f:
            f.write("name: square\ngrid: {axes: {dp: 1}}\n"
                    "optimizer:\n  muon: {lr: 0.02}\nparameters:\n"
                    "  - {name: w, shape: [2048, 2048], role: mlp}\n")
        # Interleaved rounds, the best of each (the sgemm rate included):
        # this machine's rate drifts by 10% between minutes.
        rate, res, perf = 0.0, {}, {}
        for _ in range(args.rounds):
            rate = max(rate, sgemm_rate())
            for label, extra in [("SYRK", []), ("GEMM", ["--syrk=false"])]:
                ms, blas, other, flops = step(runner, sq, args.steps, extra)
                if label not in res or ms < res[label]:
                    res[label], perf[label] = ms, flops
        print("c. NS5 of 2048x2048, fp32, 1 rank, %d steps, best of %d "
              "interleaved rounds; sgemm %.1f GFLOP/s (numpy float32, same "
              "OpenBLAS)" % (args.steps, args.rounds, rate))
        for label in ("SYRK", "GEMM"):
            ms, flops = res[label], perf[label]
            print("   %-5s %8.1f ms/step  %6.2f GFLOP performed  %6.1f "
                  "GFLOP/s = %.2f of sgemm" % (label, ms, flops / 1e9,
                                               flops / ms / 1e6,
                                               flops / ms / 1e6 / rate))
        print("   SYRK path %.2fx faster than the GEMM path"
              % (res["GEMM"] / res["SYRK"]))
        print()
        ms74 = os.path.join(tmp, "ms74.yaml")
        with open(ms74, "w") as f:
            f.write("name: mindspore\ngrid: {axes: {dp: 1}}\n"
                    "optimizer:\n  muon: {lr: 0.02}\nparameters:\n")
            for i in range(74):
                f.write("  - {name: w%d, shape: [24, 10240], role: mlp}\n"
                        % i)
        print("d. 74 matrices of 24x10240, NS5, 1 rank, %d steps"
              % args.steps)
        res = {}
        for label, extra in [("batched", []),
                             ("one by one", ["--batch=false"])]:
            ms, blas, other, flops = step(runner, ms74, args.steps, extra)
            res[label] = (ms, blas + other)
            print("   %-10s %8.1f ms/step  %5d runtime calls/step (%d BLAS,"
                  " %d other)" % (label, ms, blas + other, blas, other))
        print("   batched: %.1fx fewer runtime calls, %.2fx faster" % (
            res["one by one"][1] / res["batched"][1],
            res["one by one"][0] / res["batched"][0]))
        print()
        e = os.path.join(tmp, "e.yaml")
        with open(e, "w") as f:
            f.write("name: gram\ngrid: {axes: {dp: 1}}\n"
                    "optimizer:\n  muon: {lr: 0.02}\nparameters:\n"
                    "  - {name: down_proj, shape: [512, 2048], role: mlp}\n")
        e2 = os.path.join(tmp, "e2.yaml")
        run([os.path.join(os.path.dirname(runner), "muir-compile"), e,
             "--layout", "tp=2", "--emit=description", "--quiet", "-o", e2])
        print("e. Gram all-reduces of a 512x2048 row-parallel matrix, tp=2, "
              "distributed, 2 ranks, %d steps" % args.steps)
        res = {}
        for label, extra in [("fused", []),
                             ("unfused", ["--fuse-syrk-all-reduce=false"])]:
            out = run([runner, e2, "--ranks", "2", "--steps",
                       str(args.steps), "--no-probes", "--comm-stats",
                       "--quiet", "--ns-mode", "distributed",
                       "--ns-form=standard"] + extra)
            ms = float(out.split("min_ms")[1].split()[0])
            sent = [int(l.split()[6]) for l in out.splitlines()
                    if l.startswith("comm: rank 0 axes tp ")][0]
            res[label] = sent / args.steps
            print("   %-8s %8.1f ms/step  %10.0f bytes/rank/step"
                  % (label, ms, sent / args.steps))
        print("   fused / unfused bytes = %.4f" % (res["fused"] /
                                                   res["unfused"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
