"""Helpers the benchmarks share: running a command, and PyTorch at its best
thread setting.

Debian's torch runs OpenMP threads over OpenBLAS's own threads, which
oversubscribes 2 cores; so every benchmark measures PyTorch both ways
(torch.set_num_threads(2); torch.set_num_threads(1) with
OPENBLAS_NUM_THREADS=2) and reports the faster.
"""
import argparse
import json
import os
import subprocess
import sys
import time

# (label, torch threads, OPENBLAS_NUM_THREADS or None for the default)
TORCH_SETTINGS = [("torch2", 2, None), ("blas2", 1, "2")]


def run(cmd, env=None):
    """stdout of `cmd`; exits with its output if it fails."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if p.returncode != 0:
        sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), p.stdout,
                                             p.stderr))
    return p.stdout


def fastest_ms(fn, reps):
    """The fastest of `reps` calls of fn(), in milliseconds (warm it up
    first: the first call pays thread pools and page faults)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def torch_env(blas):
    """The environment of a torch worker for one setting: the repository's
    python/ first on PYTHONPATH (muir's package, which the environment does
    not install)."""
    env = dict(os.environ)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(repo, "python")] +
        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("OPENBLAS_NUM_THREADS", None)
    if blas:
        env["OPENBLAS_NUM_THREADS"] = blas
    return env


def best_torch(script, args):
    """Runs `script --torch-worker --torch-threads N ARGS` at each setting;
    the worker prints {"ms": ...} as its last line. Returns (ms, label) of
    the faster setting."""
    best, label = None, None
    for name, threads, blas in TORCH_SETTINGS:
        out = run([sys.executable, os.path.abspath(script), "--torch-worker",
                   "--torch-threads", str(threads)] + list(args),
                  env=torch_env(blas))
        ms = json.loads(out.strip().splitlines()[-1])["ms"]
        if best is None or ms < best:
            best, label = ms, name
    return best, label


def parse_args(doc, steps, rounds):
    """The flags every step benchmark takes (--build, --steps, --rounds),
    parsed; `bin` is the build's folder of tools (muir-run, muir-compile)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--rounds", type=int, default=rounds)
    args = ap.parse_args()
    args.bin = os.path.join(os.path.abspath(args.build), "bin")
    return args
