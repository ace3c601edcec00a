"""The SYRK path (muir-form-syrk) and the batched path
(muir-batch-newton-schulz), both defaults, against the GEMM path and
against one Newton-Schulz per matrix.

Batching: b and the stack e (8x32 each) orthogonalise as one [5, 8, 32]
batch; batched must equal per-matrix (--batch=false) bitwise on every
input, random included, since each item's GEMMs are the same calls.

On integer-valued inputs with power-of-two coefficients (gradients of +-1
entries whose Frobenius norm is a power of two, one NS step with
coefficients (2, -1, 0.5), momentum that passes the gradient through) every
product and sum is exact in fp32, so the two paths must agree bitwise: on
one rank (X X^T, A A) and on tp=2 in the distributed mode (X^T X of the row
split, the all-reduced Gram matrix, A A) and the resharded mode. On random
inputs with the default schedule they agree within 2e-6 relative (two
fp32 orders of summation after 5 steps: measured up to 1.0e-6).
"""
import os
import sys

import numpy as np

import muir_reference as ref
import muirtest

args = muirtest.parse_args(__doc__)
tmp = args.tmp
compiler = muirtest.sibling_tool(args.muir_run, "muir-compile")
ok = True

EXACT = """name: exact
grid: {axes: {dp: 1}}
optimizer:
""" + muirtest.EXACT_MUON + """
parameters:
  - {name: a, shape: [16, 16], role: attention}
  - {name: b, shape: [8, 32], role: mlp}
  - {name: c, shape: [32, 8], role: mlp}
  - {name: e, shape: [4, 8, 32], role: expert}
  - {name: b2, shape: [8, 32], role: mlp}
"""
RANDOM = EXACT.replace(muirtest.EXACT_MUON,
                      "  muon: {lr: 0.02, weight_decay: 0.1}")
SHAPES = {"a": (16, 16), "b": (8, 32), "c": (32, 8), "e": (4, 8, 32),
          "b2": (8, 32)}


run = muirtest.check_output


def step(yaml, inp, ranks, out, extra):
    cmd = [args.muir_run, yaml, "--steps", "2", "--load", inp, "--dump",
           out, "--quiet"] + extra
    if ranks > 1:
        cmd += ["--ranks", str(ranks)]
    run(cmd)
    return muirtest.read_dump(out)


rng = np.random.default_rng(3)
for kind, text in [("exact", EXACT), ("random", RANDOM)]:
    inp = os.path.join(tmp, kind + "-in")
    muirtest.write_param_inputs(inp, SHAPES, kind, rng)
    desc = os.path.join(tmp, kind + ".yaml")
    with open(desc, "w") as f:
        f.write(text)
    tp2 = os.path.join(tmp, kind + "-tp2.yaml")
    run([compiler, desc, "--layout", "tp=2", "--emit=description", "--quiet",
         "-o", tp2])
    for label, yaml, ranks, extra in [
            ("1 rank", desc, 1, []),
            ("tp=2 distributed", tp2, 2, ["--ns-mode", "distributed"]),
            ("tp=2 resharded", tp2, 2, ["--ns-mode", "resharded"])]:
        tag = label.replace(" ", "-").replace("=", "")
        syrk = step(yaml, inp, ranks, os.path.join(tmp, kind + tag + "-s"),
                    extra)
        gemm = step(yaml, inp, ranks, os.path.join(tmp, kind + tag + "-g"),
                    extra + ["--syrk=false"])
        alone = step(yaml, inp, ranks, os.path.join(tmp, kind + tag + "-1"),
                     extra + ["--batch=false"])
        for name in SHAPES:
            good = np.array_equal(syrk[name], alone[name])
            ok &= good
            print("%s %s %s: batched vs one by one %s" % (
                kind, label, name, "bitwise" if good else "NOT bitwise  FAIL"))
        for name in SHAPES:
            a, b = syrk[name], gemm[name]
            if kind == "exact":
                good = np.array_equal(a, b)
                what = "bitwise" if good else "NOT bitwise (max %g)" % \
                    np.abs(a - b).max()
            else:
                p0 = np.load(os.path.join(inp, name + ".npy"))
                err = ref.rel_fro(a - p0, b - p0)
                good = err < 2e-6
                what = "rel %.1e" % err
            ok &= good
            print("%s %s %s: SYRK vs GEMM %s%s" % (kind, label, name, what,
                                                   "" if good else "  FAIL"))
print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
