#!/usr/bin/env python3
"""Newton-Schulz benchmark: muir against a PyTorch eager reference.

For each shape (fp32; default 1024x1024, 1024x4096, 4096x1024) times one
Newton-Schulz orthogonalisation (5 steps, the "simple" coefficients
a, b, c = 3.4445, -4.7750, 2.0315, Frobenius normalisation first, iterating
on the wide form) three ways, all in this one run on this machine:

  * muir: a module with one function x <- newton_schulz(x), run by
    `muir-run --steps K --quiet --no-probes` at OPENBLAS_NUM_THREADS=2;
    the time is muir-run's min_ms (the fastest of K steps, so the first,
    warm-up step does not count).
  * torch: the same algorithm written as NVIDIA Emerging-Optimizers writes
    it (torch.addmm for B = bA + cAA and X = aX + BX), float32, eager,
    best of N calls after one warm-up call. It runs in a subprocess twice,
    once per thread setting, and the faster setting is reported:
      torch2      torch.set_num_threads(2), OpenBLAS threads left at their
                  default (OPENBLAS_NUM_THREADS unset)
      blas2       torch.set_num_threads(1), OPENBLAS_NUM_THREADS=2
  * the machine's SGEMM rate from muir-sgemm-rate at OPENBLAS_NUM_THREADS=2,
    the roofline that muir's achieved GFLOP/s is compared with.

The whole set is measured --rounds times (default 2), interleaved, and each
figure is the best over the rounds, so that a slow spell of a shared
machine does not fall on one side only. About a minute on 2 cores.

Run:  .venv/bin/python bench/run.py --build build      (or: scripts/muir.sh bench)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import common

COEFFS = (3.4445, -4.7750, 2.0315)  # the "simple" schedule
NS_STEPS = 5
EPS = 1e-7
DEFAULT_SHAPES = ["1024x1024", "1024x4096", "4096x1024"]
BLAS_THREADS = "2"
TORCH_SETTINGS = {
    # name: (torch.set_num_threads, OPENBLAS_NUM_THREADS or None for unset)
    "torch2": (2, None),
    "blas2": (1, BLAS_THREADS),
}


def parse_shape(text):
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError("expected MxN, got %r" % text)
    return int(m.group(1)), int(m.group(2))


def ns_flops(rows, cols):
    """Flops of one Newton-Schulz call: per step, with m = min dim and
    n = max dim, A = X X^T (2 m^2 n), B = bA + cAA (2 m^3) and
    X = aX + BX (2 m^2 n)."""
    m, n = min(rows, cols), max(rows, cols)
    return NS_STEPS * (4 * m * m * n + 2 * m ** 3)


# --------------------------------------------------------------------------
# PyTorch reference (runs in a subprocess: --torch-worker)
# --------------------------------------------------------------------------

def torch_worker(args):
    import torch

    torch.set_num_threads(args.torch_threads)
    a, b, c = COEFFS

    def newton_schulz(G, steps=NS_STEPS, eps=EPS):
        X = G / (G.norm() + eps)
        transpose = G.size(0) > G.size(1)
        if transpose:
            X = X.T
        for _ in range(steps):
            A = X @ X.T
            B = torch.addmm(A, A, A, beta=b, alpha=c)
            X = torch.addmm(X, B, X, beta=a, alpha=1.0)
        if transpose:
            X = X.T
        return X

    torch.manual_seed(0)
    result = {"version": torch.__version__,
              "threads": torch.get_num_threads(),
              "openblas": os.environ.get("OPENBLAS_NUM_THREADS"),
              "ms": {}}
    with torch.no_grad():
        for shape in args.shapes:
            G = torch.randn(*parse_shape(shape), dtype=torch.float32)
            newton_schulz(G)  # warm-up: thread pools, page faults
            result["ms"][shape] = common.fastest_ms(
                lambda: newton_schulz(G), args.reps)
    print(json.dumps(result))
    return 0


def run_torch(setting, shapes, reps, timeout):
    threads, openblas = TORCH_SETTINGS[setting]
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if openblas is not None:
        env["OPENBLAS_NUM_THREADS"] = openblas
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker",
           "--torch-threads", str(threads), "--reps", str(reps),
           "--shapes", *shapes]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        sys.exit("bench: torch reference (%s) failed:\n%s"
                 % (setting, proc.stderr))
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------
# muir
# --------------------------------------------------------------------------

MODULE = """\
func.func @ns(%x: tensor<{t}> {{muir.name = "x"}})
    -> (tensor<{t}> {{muir.updates = "x"}}) {{
  %y = muir.newton_schulz %x steps({steps}) schedule(simple) : tensor<{t}>
  return %y : tensor<{t}>
}}
"""


def blas_env():
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = BLAS_THREADS
    return env


def run_muir(bindir, workdir, shape, steps, timeout):
    rows, cols = parse_shape(shape)
    path = os.path.join(workdir, "ns_%s.mlir" % shape)
    with open(path, "w") as f:
        f.write(MODULE.format(t="%dx%dxf32" % (rows, cols), steps=NS_STEPS))
    cmd = [os.path.join(bindir, "muir-run"), path, "--steps", str(steps),
           "--quiet", "--no-probes"]
    proc = subprocess.run(cmd, env=blas_env(), capture_output=True,
                          text=True, timeout=timeout)
    m = re.search(r"muir-run: steps \d+ mean_ms ([\d.]+) min_ms ([\d.]+)",
                  proc.stdout)
    if proc.returncode != 0 or not m:
        sys.exit("bench: muir-run failed on %s (exit %d):\n%s%s"
                 % (shape, proc.returncode, proc.stdout, proc.stderr))
    return float(m.group(2))


def run_sgemm_rate(bindir, timeout):
    cmd = [os.path.join(bindir, "muir-sgemm-rate")]
    proc = subprocess.run(cmd, env=blas_env(), capture_output=True,
                          text=True, timeout=timeout)
    m = re.search(r"sgemm_gflops ([\d.]+) n (\d+) threads (\d+)", proc.stdout)
    if proc.returncode != 0 or not m:
        sys.exit("bench: muir-sgemm-rate failed (exit %d):\n%s%s"
                 % (proc.returncode, proc.stdout, proc.stderr))
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def busy_cores(seconds=0.5):
    """CPU cores kept busy by other processes over a short window before a
    measurement (from /proc/stat); None where that is not available."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)  # total, idle+iowait
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError):
        return None
    if t1 == t0:
        return 0.0
    return (1 - (i1 - i0) / (t1 - t0)) * (os.cpu_count() or 1)


# --------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build"),
        help="muir build directory (holds bin/muir-run)")
    p.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES,
                   help="matrix shapes MxN (default: %(default)s)")
    p.add_argument("--steps", type=int, default=4,
                   help="muir-run steps per shape; the minimum is reported "
                        "(default: %(default)s)")
    p.add_argument("--reps", type=int, default=4,
                   help="timed torch calls per shape after one warm-up; the "
                        "best is reported (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=2,
                   help="times the whole set of measurements is repeated; "
                        "each figure is the best over the rounds "
                        "(default: %(default)s)")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds allowed for each subprocess")
    p.add_argument("--torch-worker", action="store_true",
                   help=argparse.SUPPRESS)
    p.add_argument("--torch-threads", type=int, default=1,
                   help=argparse.SUPPRESS)
    args = p.parse_args()
    for s in args.shapes:
        parse_shape(s)
    if args.torch_worker:
        return torch_worker(args)
    if args.steps < 2 or args.reps < 1 or args.rounds < 1:
        p.error("--steps must be at least 2 (the first is warm-up), "
                "--reps and --rounds at least 1")

    bindir = os.path.join(os.path.abspath(args.build), "bin")
    for tool in ("muir-run", "muir-sgemm-rate"):
        if not os.access(os.path.join(bindir, tool), os.X_OK):
            sys.exit("bench: %s not found in %s (build first)" % (tool, bindir))

    # Rounds interleave all measurements so that a slow spell of a shared
    # machine does not land on one side only; each figure is the best over
    # the rounds (fastest time, highest SGEMM rate).
    start = time.time()
    sgemm, sgemm_n, sgemm_threads = 0.0, 0, 0
    busy = 0.0
    muir_ms = {s: float("inf") for s in args.shapes}
    torch_runs = {name: {"ms": {s: float("inf") for s in args.shapes}}
                  for name in TORCH_SETTINGS}
    with tempfile.TemporaryDirectory(prefix="muir-bench-") as workdir:
        for _ in range(args.rounds):
            load = busy_cores()
            if load is not None:
                busy = max(busy, load)
            rate, sgemm_n, sgemm_threads = run_sgemm_rate(bindir, args.timeout)
            sgemm = max(sgemm, rate)
            for shape in args.shapes:
                muir_ms[shape] = min(muir_ms[shape], run_muir(
                    bindir, workdir, shape, args.steps, args.timeout))
            for name in TORCH_SETTINGS:
                run = run_torch(name, args.shapes, args.reps, args.timeout)
                best = torch_runs[name]["ms"]
                torch_runs[name].update(run, ms={
                    s: min(best[s], run["ms"][s]) for s in args.shapes})
    elapsed = time.time() - start

    print("Newton-Schulz, %d steps, simple coefficients, fp32; "
          "%d CPUs, OPENBLAS_NUM_THREADS=%s for muir"
          % (NS_STEPS, os.cpu_count(), BLAS_THREADS))
    print("sgemm rate: %.1f GFLOP/s (muir-sgemm-rate, n %d, %d threads, "
          "best of %d rounds)" % (sgemm, sgemm_n, sgemm_threads, args.rounds))
    print("muir: min of %d muir-run steps; torch %s eager: best of %d calls "
          "after a warm-up; each over %d rounds"
          % (args.steps, torch_runs["torch2"]["version"], args.reps,
             args.rounds))
    print("torch setting: the faster of torch2 (set_num_threads(2), default "
          "OpenBLAS threads) and blas2 (set_num_threads(1), "
          "OPENBLAS_NUM_THREADS=2)")
    print()
    header = ("shape", "muir ms", "torch ms (setting)", "torch/muir",
              "muir GFLOP/s", "of sgemm")
    rows = []
    for shape in args.shapes:
        r, c = parse_shape(shape)
        setting = min(TORCH_SETTINGS,
                      key=lambda n: torch_runs[n]["ms"][shape])
        t_ms = torch_runs[setting]["ms"][shape]
        m_ms = muir_ms[shape]
        gflops = ns_flops(r, c) / (m_ms * 1e-3) / 1e9
        rows.append((shape, "%.1f" % m_ms, "%.1f (%s)" % (t_ms, setting),
                     "%.2f" % (t_ms / m_ms), "%.1f" % gflops,
                     "%.0f%%" % (100 * gflops / sgemm)))
    widths = [max(len(h), *(len(row[i]) for row in rows))
              for i, h in enumerate(header)]
    fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w
                    for i, w in enumerate(widths))
    print(fmt % header)
    for row in rows:
        print(fmt % row)
    print()
    print("torch ms per setting: " + "; ".join(
        "%s %s" % (name, ", ".join("%.1f" % run["ms"][s] for s in args.shapes))
        for name, run in torch_runs.items()))
    print("benchmark took %.0f s" % elapsed)
    if busy > 0.25:
        print("warning: other processes kept %.1f CPU cores busy before a "
              "round; these timings are not reliable (rerun on an idle "
              "machine)" % busy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
