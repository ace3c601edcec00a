"""muir.newton_schulz vs the float64 reference, every schedule and shape.

For each schedule, one module orthogonalises four tensors in place: square
256x256, wide 128x384, tall 384x128 (iterated in its transposed, wide form)
and a 3-D stack 4x64x96 (each matrix on its own). Inputs are Gaussian
float32; the reference runs in float64 on the same float32 values, so the
difference is muir's float32 arithmetic alone.

Tolerance: relative Frobenius error ||muir - ref||_F / ||ref||_F, per
matrix of a stack, <= 2e-5.
  Measured (OpenBLAS, x86-64): 2.4e-7 (custom) .. 2.8e-6 (polar_express
  wide/tall); deepseekv4 and cubic5 (and their repeats) 7.2e-7 ..
  1.6e-6; the script prints every value.
  Why 2e-5: each NS step is a few float32 GEMMs with inner dimension
  <= 384, each ~1e-6 relative (sqrt(k) * 2^-24 with blocked summation);
  the iteration contracts towards the polar factor along directions with
  large singular values; the few directions with tiny ones amplify their
  error (see ns-ill-conditioned) but carry little of the Frobenius norm. 2e-5 is 7x the worst measured value, room for another
  BLAS or summation order (the pessimistic k * 2^-24 bound for k = 384 is
  2.3e-5 per GEMM and is not reached in practice).
  What it catches: changing one coefficient in its last printed digit
  (e.g. 2.0315 -> 2.0316) moves the output by 2e-4, 10x the bound; a
  missed transpose, a skipped or repeated step, a wrong repeat of the last
  triple or an ignored eps (see the eps case) give 1e-3 .. 1e-1
  (deepseekv4's two last steps: 2e-4 at 12 steps against 10, 0.19 at 10
  against 10 simple steps; cubic5 at 7 steps cycling instead of repeating
  its last triple: 0.95).
"""
import numpy as np

import muir_reference as ref
import muirtest as mt

TOL = 2e-5

SHAPES = [("square", (256, 256)), ("wide", (128, 384)), ("tall", (384, 128)),
          ("stack", (4, 64, 96))]

CUSTOM = [3.4445, -4.7750, 2.0315, 2.0, -1.5, 0.5]
CASES = [
    # label, schedule, steps, coefficients, eps (None: the default 1e-7)
    ("simple", "simple", 5, None, None),
    ("quintic", "quintic", 5, None, None),
    ("polar_express", "polar_express", 8, None, None),
    ("custom", "custom", 6, CUSTOM, None),      # second triple repeats 5x
    ("quintic-repeat", "quintic", 7, None, None),   # last triple repeats
    ("polar_express-repeat", "polar_express", 10, None, None),
    ("deepseekv4", "deepseekv4", 10, None, None),
    ("cubic5", "cubic5", 5, None, None),
    ("deepseekv4-repeat", "deepseekv4", 12, None, None),
    ("cubic5-repeat", "cubic5", 7, None, None),
    # ||X||_F ~ 78 (stack matrices) .. 256 here, so eps = 1 changes the
    # normalisation by 0.4% .. 1.3% and the output by >= 5e-3 (250x the
    # bound): checks that eps is honoured.
    ("simple-eps1", "simple", 5, None, 1.0),
]


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(20250101)
    chk = mt.Checker()
    inputs = {name: rng.standard_normal(shape).astype(np.float32)
              for name, shape in SHAPES}
    for label, schedule, steps, coeffs, eps in CASES:
        m = mt.Module()
        for name, shape in SHAPES:
            x = m.arg(name, shape)
            y = m.newton_schulz(x, shape, steps, schedule, coeffs, eps)
            m.result(y, shape, updates=name)
        out = mt.run_muir(args.muir_run, m.text(),
                          "%s/%s" % (args.tmp, label), inputs=inputs)
        for name, shape in SHAPES:
            want = ref.newton_schulz(inputs[name], steps, schedule, coeffs,
                                     1e-7 if eps is None else eps)
            err = ref.rel_fro_per_matrix(out[name], want)
            chk.check("%s %s %s" % (label, name, "x".join(map(str, shape))),
                      err, TOL)
    chk.finish()


if __name__ == "__main__":
    main()
