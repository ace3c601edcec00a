#!/usr/bin/env python3
"""Distributed Newton-Schulz on 4 ranks: measured beside modelled.

1. Tensor-parallel modes: a step with three 512x2048 Muon matrices (up_proj
   and gate_proj column-parallel, gate_proj so split on its smaller
   dimension; down_proj row-parallel) and a norm, compiled for tp=4 and run
   on 4 MPI ranks in each mode (auto, duplicated, distributed, resharded,
   blockwise). Per mode: the measured step time (min over steps), the bytes
   each rank sent (runtime counters) and, beside them, the plan report's
   prediction: the cost model's modelled Newton-Schulz time (cpu profile)
   and its closed-form bytes per rank.
2. Data-parallel assignment: eight Muon matrices of mixed shapes (three of
   them FSDP-split in the second set), compiled for dp=4, run with
   --dp-assign replicated / round-robin / greedy. Per policy: the step
   time, the largest per-rank GEMM GFLOP measured (runtime counters) beside
   the report's largest per-rank NS GFLOP, max/mean load, and the dp bytes
   per rank measured beside the report's.

The machine has 2 cores, so 4 ranks oversubscribe it: measured times include
that contention; the bytes must match the prediction exactly.

Run:  .venv/bin/python bench/ns_modes.py --build build
"""
import argparse
import json
import os
import sys
import tempfile

import common

YAML = """name: ns-modes-bench
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, weight_decay: 0.1}
parameters:
  - {name: up_proj, shape: [2048, 512], role: mlp}
  - {name: gate_proj, shape: [512, 2048], role: mlp}
  - {name: down_proj, shape: [512, 2048], role: mlp}
  - {name: norm, shape: [512], role: norm}
"""

DP_SHAPES = [("a", [1024, 1024]), ("b", [512, 2048]), ("c", [2048, 512]),
             ("d", [1024, 512]), ("e", [512, 512]), ("f", [512, 512]),
             ("g", [256, 1024]), ("h", [1024, 256])]


def dp_yaml(fsdp):
    lines = ["name: dp-bench", "grid: {axes: {dp: 1}}", "optimizer:",
             "  muon: {lr: 0.02, weight_decay: 0.1}", "parameters:"]
    for name, shape in DP_SHAPES:
        shard = (", shard: [{kind: fsdp, axis: dp}]" if name in fsdp
                 else "")
        lines.append("  - {name: %s, shape: %s, role: mlp%s}"
                     % (name, shape, shard))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    bindir = os.path.join(os.path.abspath(args.build), "bin")
    compiler = os.path.join(bindir, "muir-compile")
    runner = os.path.join(bindir, "muir-run")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        desc = os.path.join(tmp, "step.yaml")
        with open(desc, "w") as f:
            f.write(YAML)
        tp4 = os.path.join(tmp, "tp4.yaml")
        common.run([compiler, desc, "--layout", "tp=4", "--emit=description",
             "--quiet", "-o", tp4])
        print("Newton-Schulz modes, 3 matrices 512x2048 split over tp=4, "
              "4 MPI ranks on %d cores, OPENBLAS_NUM_THREADS=1, %d steps"
              % (os.cpu_count(), args.steps))
        print()
        print("%-12s %12s %16s %14s %16s %s" % (
            "mode", "step ms", "bytes/rank/step", "model NS ms",
            "model bytes", "bytes match"))
        for mode in ["auto", "duplicated", "distributed", "resharded",
                     "blockwise"]:
            out = common.run([runner, tp4, "--ranks", "4", "--steps",
                       str(args.steps), "--quiet", "--comm-stats",
                       "--ns-mode", mode], env=env)
            step_ms = float(out.split("min_ms")[1].split()[0])
            sent = {}
            for line in out.splitlines():
                if line.startswith("comm: rank"):
                    f = line.split()
                    sent[int(f[2])] = int(f[6]) / args.steps
            report = json.loads(common.run([compiler, desc, "--layout", "tp=4",
                                     "--ns-mode", mode, "--emit=none",
                                     "--quiet", "--report=-"]))
            model_ms = sum(m["modelled_ms"] for m in report["matrices"])
            predicted = [r["collective_bytes"].get("tp", 0)
                         for r in report["ranks"]]
            measured = [sent.get(r, 0) for r in range(4)]
            match = all(abs(a - b) < 0.5 for a, b in zip(measured, predicted))
            print("%-12s %12.1f %16.0f %14s %16d %s" % (
                mode, step_ms, measured[0],
                "%.2f" % model_ms,
                predicted[0], "yes" if match else "NO"))
            if mode == "auto":
                print("%12s %s" % ("", ", ".join(
                    "%s %s" % (m["name"], m["ns_mode"])
                    for m in report["matrices"])))
        dp_bench(compiler, runner, tmp, env, args.steps)
    return 0


def dp_bench(compiler, runner, tmp, env, steps):
    print()
    print("Data-parallel assignment, dp=4, 4 MPI ranks: %s"
          % ", ".join("%s %dx%d" % (n, s[0], s[1]) for n, s in DP_SHAPES))
    for fsdp in [(), ("a", "d", "h")]:
        desc = os.path.join(tmp, "dp.yaml")
        with open(desc, "w") as f:
            f.write(dp_yaml(fsdp))
        dp4 = os.path.join(tmp, "dp4.yaml")
        common.run([compiler, desc, "--layout", "dp=4", "--emit=description",
             "--quiet", "-o", dp4])
        print()
        print("FSDP-split (dim 0 over dp): %s"
              % (", ".join(fsdp) if fsdp else "none"))
        print("%-12s %9s %14s %14s %9s %16s %16s %s" % (
            "dp-assign", "step ms", "GEMM GFLOP max", "model GFLOP max",
            "max/mean", "dp bytes/rank", "model dp bytes", "bytes match"))
        for policy in ["replicated", "round-robin", "greedy"]:
            out = common.run([runner, dp4, "--ranks", "4", "--steps", str(steps),
                       "--quiet", "--comm-stats", "--dp-assign", policy],
                      env=env)
            step_ms = float(out.split("min_ms")[1].split()[0])
            sent, flops = {}, {}
            for line in out.splitlines():
                f = line.split()
                if line.startswith("comm: rank") and f[4] == "dp":
                    sent[int(f[2])] = int(f[6]) / steps
                elif line.startswith("compute: rank"):
                    flops[int(f[2])] = int(f[6]) / steps
            report = json.loads(common.run([compiler, dp4, "--dp-assign", policy,
                                     "--emit=none", "--quiet",
                                     "--report=-"]))
            predicted = [r["collective_bytes"].get("dp", 0)
                         for r in report["ranks"]]
            model_flops = max(r["ns_flops"] for r in report["ranks"])
            measured = [sent.get(r, 0) for r in range(4)]
            match = all(abs(a - b) < 0.5 for a, b in zip(measured, predicted))
            dp = report["dp_assignment"]
            ratio = (dp["greedy" if policy == "greedy" else "round_robin"]
                     ["max_over_mean"] if policy != "replicated" else 1.0)
            print("%-12s %9.1f %14.2f %14.2f %9.3f %16.0f %16d %s" % (
                policy, step_ms, max(flops.values()) / 1e9,
                model_flops / 1e9, ratio, max(measured), max(predicted),
                "yes" if match else "NO"))


if __name__ == "__main__":
    sys.exit(main())
