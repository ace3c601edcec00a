#!/usr/bin/env python3
"""Newton-Schulz in bf16 on the CPU: muir f32, muir bf16, torch's bf16.

NS5 with torch.optim.Muon's coefficients (muir's "simple" schedule),
Frobenius normalisation first, on the wide form, for each shape:

  * muir f32 and muir bf16 (precision = #muir.ns_precision<bf16>: bf16
    operands and results, f32 accumulation; the CPU runtime's muirrt_bgemm
    and muirrt_bsyrk, on oneDNN's bf16 matmul when the runtime has it):
    one function per shape and precision run by muir-run with `--steps K
    --quiet --no-probes` at OPENBLAS_NUM_THREADS=2 (oneDNN takes the same
    count); min_ms.
  * torch: torch.optim._muon._zeropower_via_newtonschulz (torch.optim.Muon's
    own Newton-Schulz, in bf16: oneDNN's bf16 matmul), one call per matrix
    of a stack, best of --reps after a warm-up, at torch.set_num_threads(1)
    and (2), each reported.

Every side runs --rounds times, interleaved (a slow spell of a shared
machine does not fall on one side only); the best of each is reported.

Run:  .venv/bin/python bench/bf16_gemm.py --build build
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
SHAPES = [(1, 256, 256), (1, 512, 512), (1, 1024, 1024), (8, 512, 256)]
TORCH_THREADS = (1, 2)


def shape_name(shape):
    count, m, n = shape
    return ("%dx" % count if count > 1 else "") + "%dx%d" % (m, n)


def torch_worker(args):
    import torch
    from torch.optim._muon import _zeropower_via_newtonschulz

    torch.set_num_threads(args.torch_threads)
    count, m, n = (int(v) for v in args.shape.split(","))
    torch.manual_seed(0)
    mats = [torch.randn(m, n) for _ in range(count)]

    def run():
        return [_zeropower_via_newtonschulz(g, COEFFS, NS_STEPS, EPS)
                for g in mats]

    with torch.no_grad():
        run()
        ms = common.fastest_ms(run, args.reps)
    print(json.dumps({"ms": ms}))
    return 0


def muir_module(shape, precision):
    count, m, n = shape
    t = "tensor<%s%dx%dxf32>" % ("%dx" % count if count > 1 else "", m, n)
    attrs = (" {precision = #muir.ns_precision<%s>}" % precision
             if precision != "f32" else "")
    return ('func.func @ns(%%x: %s {muir.name = "x"})\n'
            '    -> (%s {muir.updates = "x"}) {\n'
            '  %%y = muir.newton_schulz %%x steps(%d) schedule(simple)%s : %s\n'
            '  return %%y : %s\n}\n' % (t, t, NS_STEPS, attrs, t, t))


def flops(shape):
    count, m, n = shape
    r, c = min(m, n), max(m, n)
    return count * NS_STEPS * (4 * r * r * c + 2 * r ** 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-worker", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    runner = os.path.join(os.path.abspath(args.build), "bin", "muir-run")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    print("NS5 (torch.optim.Muon's coefficients), ms, best of %d rounds; "
          "muir on 2 threads" % args.rounds)
    print("%-12s %9s %9s %9s %9s %10s %12s" % (
        "shape", "muir f32", "muir bf16", "torch t1", "torch t2",
        "f32/bf16", "torch/bf16"))
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES:
            best = {}
            paths = {}
            for precision in ("f32", "bf16"):
                paths[precision] = os.path.join(
                    tmp, "%s-%s.mlir" % (shape_name(shape), precision))
                with open(paths[precision], "w") as f:
                    f.write(muir_module(shape, precision))
            for _ in range(args.rounds):
                for precision in ("f32", "bf16"):
                    out = common.run([runner, paths[precision], "--steps",
                                      str(args.steps), "--quiet",
                                      "--no-probes"], env=env)
                    ms = float(re.search(r"min_ms ([\d.]+)", out).group(1))
                    best[precision] = min(best.get(precision, ms), ms)
                for threads in TORCH_THREADS:
                    out = common.run([
                        sys.executable, os.path.abspath(__file__),
                        "--torch-worker", "--torch-threads", str(threads),
                        "--reps", str(args.reps), "--shape",
                        ",".join(map(str, shape))])
                    ms = json.loads(out.strip().splitlines()[-1])["ms"]
                    key = "t%d" % threads
                    best[key] = min(best.get(key, ms), ms)
            torch_best = min(best["t%d" % t] for t in TORCH_THREADS)
            print("%-12s %9.2f %9.2f %9.2f %9.2f %10.2f %12.2f  "
                  "(muir bf16 %.0f GFLOP/s)" % (
                      shape_name(shape), best["f32"], best["bf16"],
                      best["t1"], best["t2"], best["f32"] / best["bf16"],
                      torch_best / best["bf16"],
                      flops(shape) / best["bf16"] / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
