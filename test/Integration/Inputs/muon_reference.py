"""muir.muon_update over 3 steps vs the float64 reference.

Every case is one parameter W, its gradient G (the same at every step:
muir-run does not change gradients) and its momentum buffer M, all in one
module run for --steps 3. W, G and (where given) M are loaded from float32
.npy files; the reference applies the op's formulas three times in float64
starting from the same float32 values.

Cases: ema+nesterov (the default), ema without nesterov, accumulate with
and without nesterov, weight decay, every scale mode (spectral with the
default and a non-default scale_extra, shape, unit_rms) on a tall and a
wide matrix (shape and unit_rms differ only on wide ones), another beta,
the polar_express and custom schedules inside the op, and 3-D stacks
(Newton-Schulz and scale per matrix, from the last two dimensions).

Checked after 3 steps (all relative Frobenius errors vs float64):
  W - W0: the total change (the part the optimizer computed; W0 itself is
      exact) <= 1e-5. Measured 1.6e-7 .. 9.7e-7. The change is lr * scale
      * (sum of three NS outputs) plus weight decay; each NS output carries
      ~1e-6 of float32 error (ns-reference), plus float32 rounding of W
      and M each step. 10x margin. For scale, the alternatives differ by
      far more (with these inputs, on the reference): nesterov off 0.15,
      accumulate instead of ema 1.1, beta 0.94 instead of 0.95 0.09,
      weight decay 0.1 dropped 1.2e-2, shape vs unit_rms scale on a wide
      matrix 0.22, 4 NS steps instead of 5 0.32.
  W3: <= 5e-6 (measured <= 6e-7).
  M:  <= 1e-6 (element-wise float32 arithmetic, a few roundings per step;
      measured <= 8.7e-8).
  G:  unchanged, bitwise.
Note: with zero initial momentum and a constant gradient, U is a multiple
of G whatever the momentum rule, so most cases load a random non-zero
momentum; two cases (not loaded) check the zero initialisation.
"""
import numpy as np

import muir_reference as ref
import muirtest as mt

STEPS = 3
TOL_DELTA = 1e-5
TOL_W = 5e-6
TOL_M = 1e-6

TALL, WIDE = (96, 64), (64, 96)


def E(kind, value):
    return ("enum", kind, value)


# name, shape, op attributes (as the reference takes them), load momentum?
CASES = [
    ("ema_nesterov_tall", TALL, dict(lr=0.02), True),
    ("ema_nesterov_wide", WIDE, dict(lr=0.02), False),
    ("ema_plain_tall", TALL, dict(lr=0.02, nesterov=False), True),
    ("accumulate_plain_wide", WIDE,
     dict(lr=0.02, momentum_kind="accumulate", nesterov=False), True),
    ("accumulate_plain_tall", TALL,
     dict(lr=0.02, momentum_kind="accumulate", nesterov=False), False),
    ("accumulate_nesterov_tall", TALL,
     dict(lr=0.02, momentum_kind="accumulate", nesterov=True), True),
    ("weight_decay_tall", TALL, dict(lr=0.05, weight_decay=0.1), True),
    ("weight_decay_wide", WIDE,
     dict(lr=0.05, weight_decay=0.3, momentum_kind="accumulate"), True),
    ("spectral_extra_wide", WIDE,
     dict(lr=0.02, scale_mode="spectral", scale_extra=0.5), True),
    ("shape_tall", TALL, dict(lr=0.02, scale_mode="shape"), True),
    ("shape_wide", WIDE, dict(lr=0.02, scale_mode="shape"), True),
    ("unit_rms_tall", TALL, dict(lr=0.02, scale_mode="unit_rms"), True),
    ("unit_rms_wide", WIDE, dict(lr=0.02, scale_mode="unit_rms"), True),
    ("beta_0.8_tall", TALL, dict(lr=0.02, beta=0.8), True),
    ("polar_express_wide", WIDE,
     dict(lr=0.02, ns_steps=8, schedule="polar_express"), True),
    ("custom_tall", TALL,
     dict(lr=0.02, ns_steps=4, schedule="custom",
          coefficients=[3.4445, -4.7750, 2.0315, 2.0, -1.5, 0.5]), True),
    ("stack_tall_3x96x64", (3,) + TALL,
     dict(lr=0.02, weight_decay=0.1, scale_mode="shape"), True),
    ("stack_wide_2x64x96", (2,) + WIDE,
     dict(lr=0.02, scale_mode="unit_rms", momentum_kind="accumulate"), True),
    ("stack_spectral_4x32x48", (4, 32, 48), dict(lr=0.02), True),
]

ENUMS = {"momentum_kind": "momentum_kind", "scale_mode": "scale_mode",
         "schedule": "schedule"}


def mlir_attrs(attrs):
    out = {}
    for k, v in attrs.items():
        out[k] = E(ENUMS[k], v) if k in ENUMS else v
    return out


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(11)
    chk = mt.Checker()
    m = mt.Module()
    inputs = {}
    for name, shape, attrs, load_m in CASES:
        w = m.arg(name, shape)
        g = m.arg(name + ".grad", shape)
        mom = m.arg(name + ".momentum", shape)
        w1, m1 = m.muon_update(w, g, mom, shape, **mlir_attrs(attrs))
        m.result(w1, shape, updates=name)
        m.result(m1, shape, updates=name + ".momentum")
        inputs[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
        inputs[name + ".grad"] = rng.standard_normal(shape).astype(np.float32)
        if load_m:
            inputs[name + ".momentum"] = (
                0.5 * rng.standard_normal(shape)).astype(np.float32)
    out = mt.run_muir(args.muir_run, m.text(), args.tmp + "/run",
                      inputs=inputs, steps=STEPS)

    for name, shape, attrs, load_m in CASES:
        label = "%s %s" % (name, "x".join(map(str, shape)))
        W0 = inputs[name].astype(np.float64)
        G = inputs[name + ".grad"]
        M = inputs.get(name + ".momentum", np.zeros(shape, np.float32))
        W, Mom = W0, M.astype(np.float64)
        for _ in range(STEPS):
            W, Mom = ref.muon_update(W, G, Mom, **attrs)
        got_w = out[name].astype(np.float64)
        chk.check(label + " delta", ref.rel_fro(got_w - W0, W - W0),
                  TOL_DELTA)
        chk.check(label + " param", ref.rel_fro(got_w, W), TOL_W)
        chk.check(label + " momentum", ref.rel_fro(out[name + ".momentum"],
                                                   Mom), TOL_M)
        chk.expect(label + " grad unchanged",
                   np.array_equal(out[name + ".grad"], G),
                   mt.compare_bits(out[name + ".grad"], G))
    chk.finish()


if __name__ == "__main__":
    main()
