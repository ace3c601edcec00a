"""muir.newton_schulz with a bf16 iterate (precision bf16) vs float64.

The same four shapes as ns_reference.py (square 256x256, wide 128x384,
tall 384x128 and a 3-D stack 4x64x96), schedules simple (1 step and 5)
and polar_express (8), orthogonalised with `precision = #muir.ns_precision<
bf16>`: X normalised in f32, rounded to bf16, every product on bf16
operands accumulated in f32 and rounded to bf16.

Three checks per matrix, each the relative Frobenius error:
  - against the float64 iteration (ref.newton_schulz): <= 4e-2. bf16 keeps
    8 significant bits (unit roundoff 2^-9 = 2.0e-3); each of a step's
    three rounded products adds about that much, over 5 or 8 steps.
    Measured 6.6e-3 .. 1.4e-2 after 5 or 8 steps, 2.4e-3 after one.
  - the same error >= 1e-3: the products really ran in bf16 (the f32
    iterate is within 3e-6 of float64, ns_reference.py).
  - against float64 arithmetic rounded to bf16 where muir rounds
    (ref.newton_schulz with this script's `bf16`, nearest even on the
    float32 values, after the normalisation and after every product). After one step <= 5e-4: muir accumulates in f32, the
    emulation in f64, so now and then a product rounds to the neighbouring
    bf16 value; measured 0 .. 5.4e-5. A product left in f32, or a rounding
    missed or added, moves it by about 2e-3 (the one-step error against
    float64), 4x the bound. After 5 or 8 steps the iteration carries those
    neighbouring roundings on: <= 1.5e-2, measured 4.3e-3 .. 9.4e-3.
"""
import numpy as np

import muir_reference as ref
import muirtest as mt

SHAPES = [("square", (256, 256)), ("wide", (128, 384)), ("tall", (384, 128)),
          ("stack", (4, 64, 96))]
CASES = [("simple", 1), ("simple", 5), ("polar_express", 8)]

TOL_F64, FLOOR_F64 = 4e-2, 1e-3
TOL_EMU = {1: 5e-4}  # by steps; else TOL_EMU_LONG
TOL_EMU_LONG = 1.5e-2


def bf16(x):
    """float64 -> float32 -> bf16 (nearest even), as float64."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(20261202)
    chk = mt.Checker()
    inputs = {name: rng.standard_normal(shape).astype(np.float32)
              for name, shape in SHAPES}
    for schedule, steps in CASES:
        m = mt.Module()
        for name, shape in SHAPES:
            x = m.arg(name, shape)
            y = m.newton_schulz(x, shape, steps, schedule, precision="bf16")
            m.result(y, shape, updates=name)
        out = mt.run_muir(args.muir_run, m.text(),
                          "%s/%s%d" % (args.tmp, schedule, steps), inputs=inputs)
        for name, shape in SHAPES:
            what = "%s(%d) %s %s" % (schedule, steps, name,
                                   "x".join(map(str, shape)))
            f64 = ref.rel_fro_per_matrix(
                out[name], ref.newton_schulz(inputs[name], steps, schedule))
            chk.check(what + " vs f64", f64, TOL_F64)
            chk.expect(what + " ran in bf16", f64 >= FLOOR_F64,
                       "error vs f64 %.3e >= %.0e" % (f64, FLOOR_F64))
            emu = ref.rel_fro_per_matrix(
                out[name], ref.newton_schulz(inputs[name], steps, schedule,
                                             rounding=bf16))
            chk.check(what + " vs bf16 emulation", emu,
                      TOL_EMU.get(steps, TOL_EMU_LONG))
    chk.finish()


if __name__ == "__main__":
    main()
