#!/usr/bin/python3
"""Tensor-parallel Newton-Schulz modes on 4 ranks: measured beside modelled.

A step with two 512x2048 Muon matrices (one column-, one row-parallel) and a
norm, compiled for tp=4 and run on 4 MPI ranks of this machine in each mode
(duplicated, distributed, blockwise). For each mode it prints the measured
step time (min over steps), the bytes each rank sent (runtime counters) and,
beside them, the plan report's prediction: the cost model's modelled
Newton-Schulz time (cpu profile) and its closed-form bytes per rank.

The machine has 2 cores, so 4 ranks oversubscribe it: measured times include
that contention; the bytes must match the prediction exactly.

Run:  /usr/bin/python3 bench/ns_modes.py --build build
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

YAML = """name: ns-modes-bench
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, weight_decay: 0.1}
parameters:
  - {name: up_proj, shape: [2048, 512], role: mlp}
  - {name: down_proj, shape: [512, 2048], role: mlp}
  - {name: norm, shape: [512], role: norm}
"""


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if p.returncode != 0:
        sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), p.stdout,
                                             p.stderr))
    return p.stdout


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
        run([compiler, desc, "--layout", "tp=4", "--emit=description",
             "--quiet", "-o", tp4])
        print("Newton-Schulz modes, 2 matrices 512x2048 split over tp=4, "
              "4 MPI ranks on %d cores, OPENBLAS_NUM_THREADS=1, %d steps"
              % (os.cpu_count(), args.steps))
        print()
        print("%-12s %12s %16s %14s %16s %s" % (
            "mode", "step ms", "bytes/rank/step", "model NS ms",
            "model bytes", "bytes match"))
        for mode in ["duplicated", "distributed", "blockwise"]:
            out = run([runner, tp4, "--ranks", "4", "--steps",
                       str(args.steps), "--quiet", "--comm-stats",
                       "--ns-mode", mode], env=env)
            step_ms = float(out.split("min_ms")[1].split()[0])
            sent = {}
            for line in out.splitlines():
                if line.startswith("comm: rank"):
                    f = line.split()
                    sent[int(f[2])] = int(f[6]) / args.steps
            report = json.loads(run([compiler, desc, "--layout", "tp=4",
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
