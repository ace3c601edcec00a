#!/usr/bin/env python3
"""The cost of deterministic reductions: muir-run's default (every
all-reduce sums the ranks' pieces in rank order: on 2 ranks every rank
gathers every piece; on 3 or more each rank sums one slice and the sums
are gathered) against --deterministic=false (MPI_Allreduce, in the order MPI
picks).

The step: Muon on two matrices split over tp (1024x1024, 1024x2048) with
distributed Newton-Schulz and unfused Gram all-reduces
(--ns-mode distributed --fuse-syrk-all-reduce=false), so every NS step
all-reduces a Gram matrix: the most reduction-heavy step muir makes. Both
modes run --rounds times, interleaved, best min_ms of each; the overhead
is deterministic / nondeterministic - 1 (target <= 5%). Also printed:
whether the two modes' results are bitwise equal.

Run:  .venv/bin/python bench/determinism.py --build build
"""
import argparse
import os
import re
import sys
import tempfile

import common

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "lib"))


def description(ranks):
    return """name: det
grid: {axes: {tp: %d}}
optimizer:
  muon: {lr: 0.02, ns_steps: 5}
parameters:
  - {name: a, shape: [1024, 1024], role: mlp, shard: {kind: tp_column, axis: tp}}
  - {name: b, shape: [1024, 2048], role: mlp, shard: {kind: tp_column, axis: tp}}
""" % ranks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranks", type=int, nargs="*", default=[2, 4])
    args = ap.parse_args()
    import numpy as np
    import muirtest as mt

    runner = os.path.join(os.path.abspath(args.build), "bin", "muir-run")
    print("Deterministic (rank-order) vs MPI_Allreduce reductions: Muon with "
          "distributed NS, unfused Gram all-reduces")
    print("%-6s %14s %18s %10s %s" % ("ranks", "determ. ms", "nondeterm. ms",
                                      "overhead", "bitwise equal"))
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in args.ranks:
            path = os.path.join(tmp, "det%d.yaml" % ranks)
            with open(path, "w") as f:
                f.write(description(ranks))
            best = {}
            for _ in range(args.rounds):
                for mode in ("det", "nondet"):
                    dump = os.path.join(tmp, "%s%d" % (mode, ranks))
                    cmd = [runner, path, "--ranks", str(ranks), "--steps",
                           str(args.steps), "--quiet", "--no-probes",
                           "--ns-mode", "distributed",
                           "--fuse-syrk-all-reduce=false", "--dump", dump]
                    if mode == "nondet":
                        cmd.append("--deterministic=false")
                    ms = float(re.search(r"min_ms ([\d.]+)",
                                         common.run(cmd)).group(1))
                    best[mode] = min(best.get(mode, ms), ms)
            a = mt.read_dump(os.path.join(tmp, "det%d" % ranks))
            b = mt.read_dump(os.path.join(tmp, "nondet%d" % ranks))
            equal = all(np.array_equal(a[k], b[k]) for k in a)
            print("%-6d %14.1f %18.1f %9.1f%% %s" % (
                ranks, best["det"], best["nondet"],
                100 * (best["det"] / best["nondet"] - 1),
                "yes" if equal else "no"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
