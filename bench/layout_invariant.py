#!/usr/bin/env python3
"""The cost of --deterministic=layout-invariant against the default
deterministic mode (--deterministic=true), and the bits it buys.

The step: examples/tiny-moe.yaml with its MoE batch given over every rank
(`tokens: 1024` a layer instead of `tokens_per_rank: 1024`, the same step
on one rank), 2 MoE layers trained against a teacher, Muon and AdamW on
23 tensors, laid out by muir-compile --layout as dp=1 (1 rank),
dp=2;moe:ep=2, tp=2;moe:ep=2 and tp=2 (2 ranks; tp=2 folds the MoE
layers over tp, no ep), dp=4;moe:ep=4 and dp=4,ep=2 (4 ranks; the MoE
layers over edp=2 and ep=2).
Each layout runs both modes --rounds times, interleaved; the figure is the
best min_ms of each, and the cost is layout-invariant / default - 1 (the
issue's goal: <= 10% on 4 ranks). What the mode changes: every OpenBLAS
product on one thread (muir-run --ranks gives a rank cores / ranks, so on
this 2-core machine the 1-rank run loses its second BLAS thread and the
2- and 4-rank runs lose nothing), Newton-Schulz of tp-split matrices
duplicated instead of the cost model's choice (tp=2: distributed), and on
a folding with replicas of the ep stacks (tp=2, dp=4,ep=2) each rank
computes a block of its stack's experts over every rank's tokens instead
of all of them over its own tokens, the gradients gathered instead of
summed. Also
printed: whether each layout's parameters after --steps steps equal dp=1's
bitwise, in each mode.

Run:  .venv/bin/python bench/layout_invariant.py --build build
"""
import os
import re
import sys
import tempfile

import common

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "lib"))

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

LAYOUTS = [("dp=1", 1), ("dp=2;moe:ep=2", 2), ("tp=2;moe:ep=2", 2),
           ("tp=2", 2), ("dp=4;moe:ep=4", 4), ("dp=4,ep=2", 4)]


def main():
    import numpy as np
    import muirtest as mt
    args = common.parse_args(__doc__, steps=4, rounds=3)
    runner = os.path.join(args.bin, "muir-run")
    compiler = os.path.join(args.bin, "muir-compile")
    with tempfile.TemporaryDirectory() as tmp:
        src = open(os.path.join(ROOT, "examples", "tiny-moe.yaml")).read()
        base = os.path.join(tmp, "global.yaml")
        with open(base, "w") as f:
            f.write(src.replace("tokens_per_rank: 1024", "tokens: 1024"))
        print("--deterministic=layout-invariant against =true on tiny-moe "
              "(1024 tokens a layer over every rank), %d steps, best of %d"
              % (args.steps, args.rounds))
        print("%-16s %5s %12s %12s %8s %14s %14s" % (
            "layout", "ranks", "true ms", "invariant ms", "cost",
            "true = dp=1", "inv. = dp=1"))
        reference = {}
        for layout, ranks in LAYOUTS:
            desc = os.path.join(tmp, "l%d.yaml" % len(reference))
            common.run([compiler, base, "--layout", layout,
                        "--emit=description", "--quiet", "-o", desc])
            best = {}
            for _ in range(args.rounds):
                for mode in ("true", "layout-invariant"):
                    text = common.run(
                        [runner, desc, "--steps", str(args.steps), "--quiet",
                         "--ranks", str(ranks), "--deterministic=" + mode])
                    ms = float(re.search(r"min_ms ([\d.]+)", text).group(1))
                    best[mode] = min(best.get(mode, ms), ms)
            same = {}
            for mode in ("true", "layout-invariant"):
                out = os.path.join(tmp, "%s-%s" % (layout, mode))
                common.run([runner, desc, "--steps", str(args.steps),
                            "--quiet", "--ranks", str(ranks), "--dump", out,
                            "--deterministic=" + mode])
                dump = mt.read_dump(out)
                reference.setdefault(mode, dump)
                ref = reference[mode]
                same[mode] = all(np.array_equal(dump[k], ref[k])
                                 for k in ref)
            print("%-16s %5d %12.2f %12.2f %7.1f%% %14s %14s" % (
                layout, ranks, best["true"], best["layout-invariant"],
                100 * (best["layout-invariant"] / best["true"] - 1),
                "bitwise" if same["true"] else "differs",
                "bitwise" if same["layout-invariant"] else "differs"))


if __name__ == "__main__":
    main()
