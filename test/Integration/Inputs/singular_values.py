"""The singular values muir-run reports, against NumPy's SVD.

1. The runtime's muirrt_singular_values (ctypes, from libmuir_step.so) on
   square, tall, wide, rank-deficient, tiny and structured float32
   matrices: every singular value within 1e-7 of the largest of
   np.linalg.svd's (float64, of the same float32 values).
2. muir-run's table: a step with a tall and a wide matrix (5 simple
   Newton-Schulz steps) and a square one (8 polar_express steps) runs one
   step from loaded tensors; the update it applied, (W - W') / (lr *
   scale) with weight decay 0, from the dump, has the singular values the
   table prints (to its 3 decimals), and the count below the band.
3. The header's expected bands: the range of the iterated polynomial over
   normalised singular values in [1/500, 1], computed here in float64.

Each line prints the values compared; FileCheck checks "ok".
"""
import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys

import numpy as np

import muirtest as mt

SIMPLE = [(3.4445, -4.7750, 2.0315)]
POLAR_EXPRESS = [(8.2051, -22.9019, 16.4607), (4.0664, -2.8612, 0.5184),
                 (3.9096, -2.8234, 0.5250), (3.2856, -2.4153, 0.4853),
                 (2.2779, -1.6198, 0.3985), (1.8726, -1.2307, 0.3585),
                 (1.8564, -1.2132, 0.3568), (1.875, -1.25, 0.375)]

# One line per check, "FAIL ..." for a failure (muirtest's Checker).
chk = mt.Checker()


# ---------------------------------------------------------------------------
# 1. The runtime function
# ---------------------------------------------------------------------------

def check_runtime(lib):
    rt = ctypes.CDLL(lib)
    f = rt.muirrt_singular_values
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                  ctypes.c_void_p]
    rng = np.random.default_rng(7)
    u, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    v, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    spread = np.geomspace(1e-3, 10, 40)
    cases = {
        "square 128x128": rng.standard_normal((128, 128)),
        "tall 300x70": rng.standard_normal((300, 70)),
        "wide 70x300": rng.standard_normal((70, 300)),
        "rank 5 of 64x48": rng.standard_normal((64, 5)) @
                           rng.standard_normal((5, 48)),
        "spread 1e-3..10 60x40": (u[:, :40] * spread) @ v.T,
        "row 1x33": rng.standard_normal((1, 33)),
        "column 33x1": rng.standard_normal((33, 1)),
        "zero 8x8": np.zeros((8, 8)),
    }
    for name, x in cases.items():
        x = np.ascontiguousarray(x, dtype=np.float32)
        m, n = x.shape
        sigma = np.empty(min(m, n), dtype=np.float64)
        rc = f(x.ctypes.data, m, n, sigma.ctypes.data)
        ref = np.sort(np.linalg.svd(x.astype(np.float64), compute_uv=False))
        scale = max(ref[-1], 1e-300)
        err = float(np.max(np.abs(sigma - ref))) / scale if ref[-1] else \
            float(np.max(np.abs(sigma)))
        chk.expect("runtime %s: min %.6g max %.6g (numpy %.6g %.6g), "
                   "max error %.1e of the largest <= 1e-7"
                   % (name, sigma[0], sigma[-1], ref[0], ref[-1], err),
                   rc == 0 and err <= 1e-7)
    bad = np.zeros(1, dtype=np.float64)
    rc = f(None, 1, 1, bad.ctypes.data)
    chk.expect("runtime null matrix refused", rc == -1, "returned %d" % rc)


# ---------------------------------------------------------------------------
# 2. muir-run's table
# ---------------------------------------------------------------------------

STEP = """
muir.grid @world axes = ["dp"] shape = [1]
func.func @step(
    %t: tensor<96x32xf32> {muir.name = "tall"},
    %tg: tensor<96x32xf32> {muir.name = "tall.grad"},
    %tm: tensor<96x32xf32> {muir.name = "tall.momentum"},
    %w: tensor<32x96xf32> {muir.name = "wide"},
    %wg: tensor<32x96xf32> {muir.name = "wide.grad"},
    %wm: tensor<32x96xf32> {muir.name = "wide.momentum"},
    %s: tensor<48x48xf32> {muir.name = "square"},
    %sg: tensor<48x48xf32> {muir.name = "square.grad"},
    %sm: tensor<48x48xf32> {muir.name = "square.momentum"})
    -> (tensor<96x32xf32> {muir.updates = "tall"},
        tensor<96x32xf32> {muir.updates = "tall.momentum"},
        tensor<32x96xf32> {muir.updates = "wide"},
        tensor<32x96xf32> {muir.updates = "wide.momentum"},
        tensor<48x48xf32> {muir.updates = "square"},
        tensor<48x48xf32> {muir.updates = "square.momentum"}) {
  %t1, %tm1 = muir.muon_update %t, %tg, %tm {lr = 0.02} : tensor<96x32xf32>
  %w1, %wm1 = muir.muon_update %w, %wg, %wm {lr = 0.02} : tensor<32x96xf32>
  %s1, %sm1 = muir.muon_update %s, %sg, %sm {lr = 0.02, ns_steps = 8,
      schedule = #muir<schedule polar_express>} : tensor<48x48xf32>
  return %t1, %tm1, %w1, %wm1, %s1, %sm1
      : tensor<96x32xf32>, tensor<96x32xf32>, tensor<32x96xf32>,
        tensor<32x96xf32>, tensor<48x48xf32>, tensor<48x48xf32>
}
"""
SHAPES = {"tall": (96, 32), "wide": (32, 96), "square": (48, 48)}
LR = 0.02


def band(coefficients, steps, floor=2e-3):
    x = np.geomspace(floor, 1.0, 200001)
    for k in range(steps):
        a, b, c = coefficients[min(k, len(coefficients) - 1)]
        x = a * x + b * x ** 3 + c * x ** 5
    return x.min(), x.max()


def check_table(muir_run, tmp):
    step = os.path.join(tmp, "step.mlir")
    with open(step, "w") as f:
        f.write(STEP)
    load = os.path.join(tmp, "in")
    os.makedirs(load)
    rng = np.random.default_rng(11)
    before = {}
    for name, shape in SHAPES.items():
        before[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
        np.save(os.path.join(load, name + ".npy"), before[name])
        # The square gradient has a few weak directions: singular values
        # down to 1e-4 of the largest, which Newton-Schulz cannot lift.
        g = rng.standard_normal(shape)
        if name == "square":
            u, _, vt = np.linalg.svd(g)
            g = (u * np.geomspace(1e-4, 1, 48)[::-1]) @ vt
        np.save(os.path.join(load, name + ".grad.npy"), g.astype(np.float32))
    dump = os.path.join(tmp, "out")
    out = subprocess.run([muir_run, step, "--steps", "1", "--load", load,
                          "--dump", dump], capture_output=True, text=True)
    print(out.stdout, end="")
    if out.returncode:
        chk.expect("muir-run failed: " + out.stderr, False)
        return
    rows = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s+(\S+)\s+(\S+)\s+sigma ([0-9.]+)\.\.([0-9.]+)"
                     r"(?:.*\((\d+) of (\d+) below the band\))?", line)
        if m:
            rows[m.group(1)] = m
    bands = {"tall": band(SIMPLE, 5), "wide": band(SIMPLE, 5),
             "square": band(POLAR_EXPRESS, 8)}
    for name, (m, n) in SHAPES.items():
        after = np.load(os.path.join(dump, name + ".npy")).astype(np.float64)
        scale = 0.2 * np.sqrt(max(m, n))
        update = (before[name].astype(np.float64) - after) / (LR * scale)
        sigma = np.linalg.svd(update, compute_uv=False)
        row = rows.get(name)
        if not row:
            chk.expect("table has no sigma for " + name, False)
            continue
        low, high = float(row.group(3)), float(row.group(4))
        below = int(np.sum(sigma < bands[name][0] * 0.99))
        printed = int(row.group(5)) if row.group(5) else 0
        chk.expect("table %s: sigma %.3f..%.3f, %d below the band (numpy of "
                   "the applied update %.4f..%.4f, %d below)"
                   % (name, low, high, printed, sigma.min(), sigma.max(),
                      below),
                   abs(low - sigma.min()) <= 1.5e-3 and
                   abs(high - sigma.max()) <= 1.5e-3 and below == printed)
    simple, polar = bands["tall"], bands["square"]
    want = "expected %.2f..%.2f (5 simple steps), %.2f..%.2f (8 " \
           "polar_express steps)" % (simple + polar)
    chk.expect("header: " + want, want in out.stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True)
    p.add_argument("--muir-run", required=True)
    p.add_argument("--tmp", required=True)
    args = p.parse_args()
    if os.path.exists(args.tmp):
        shutil.rmtree(args.tmp)
    os.makedirs(args.tmp)
    check_runtime(args.lib)
    check_table(args.muir_run, args.tmp)
    chk.finish()  # exits 1 after a failure
    return 0


if __name__ == "__main__":
    sys.exit(main())
