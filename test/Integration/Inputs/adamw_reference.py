"""muir.adamw_update over 3 steps vs the float64 reference.

The bias correction depends on the step counter t (1, 2, 3 in one muir-run
with --steps 3), so the reference applies the op's formulas with t = 1, 2, 3
in float64, starting from the same float32 values. Gradients are constant
across steps (muir-run does not change them); with zero state and a
constant gradient the bias-corrected moments are exactly g and g^2 at every
t, so cases with random non-zero loaded exp_avg / exp_avg_sq make the
result depend on t in a less degenerate way. Shapes: 1-D and 2-D.

Checked after 3 steps (relative Frobenius errors vs float64):
  W - W0  <= 3e-5   Measured 4e-8 .. 2.5e-6. The change (~3 lr per element,
                    lr = 1e-3 .. 1e-2) carries a few float32 roundings per
                    step, plus the rounding of W itself to float32 after
                    each step; with |W| ~ 1 (the norm/decay cases) that is
                    ~6e-8 absolute against a change of ~3e-3, the dominant
                    term. 3e-5 leaves 12x margin.
  exp_avg, exp_avg_sq <= 1e-6   (measured <= 1e-7: two roundings a step)
  grad unchanged, bitwise.
What the bound separates (on the reference, with these inputs): step
counter stuck at 1: 0.16 .. 0.30; no bias correction: 0.44 .. 3.1;
weight decay dropped: 2e-4 (emb_2d, wd 0.01, |W| ~ 0.02) .. 6e-2;
beta1 + 0.01 with loaded state: 0.07 .. 0.13 (with zero state and a
constant gradient beta1 cancels exactly, hence the loaded-state cases).
"""
import numpy as np

import muir_reference as ref
import muirtest as mt

STEPS = 3
TOL_DELTA = 3e-5
TOL_STATE = 1e-6

# name, shape, attributes, load non-zero state?, param std
CASES = [
    ("bias_1d", (1000,), dict(lr=1e-3), False, 0.02),
    ("norm_1d", (513,), dict(lr=1e-3, beta2=0.95, weight_decay=0.1), True, 1.0),
    ("decay_1d", (300,), dict(lr=1e-2, weight_decay=0.1), True, 1.0),
    ("emb_2d", (64, 48), dict(lr=1e-3, weight_decay=0.01, eps=1e-6), False,
     0.02),
    ("head_2d", (32, 40), dict(lr=3e-3, beta1=0.8, beta2=0.99), True, 0.02),
]


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(5)
    chk = mt.Checker()
    m = mt.Module()
    t = m.step_arg()
    inputs = {}
    for name, shape, attrs, load_state, wstd in CASES:
        a = [m.arg(name + sfx, shape)
             for sfx in ("", ".grad", ".exp_avg", ".exp_avg_sq")]
        res = m.adamw_update(a[0], a[1], a[2], a[3], t, shape, **attrs)
        for r, sfx in zip(res, ("", ".exp_avg", ".exp_avg_sq")):
            m.result(r, shape, updates=name + sfx)
        inputs[name] = (wstd * rng.standard_normal(shape)).astype(np.float32)
        # Gradients over several magnitudes, some tiny (eps matters there).
        g = rng.standard_normal(shape) * np.exp(rng.uniform(-6, 1, shape))
        inputs[name + ".grad"] = g.astype(np.float32)
        if load_state:
            inputs[name + ".exp_avg"] = (
                0.1 * rng.standard_normal(shape)).astype(np.float32)
            inputs[name + ".exp_avg_sq"] = (
                0.01 * rng.standard_normal(shape) ** 2).astype(np.float32)
    out = mt.run_muir(args.muir_run, m.text(), args.tmp + "/run",
                      inputs=inputs, steps=STEPS)

    for name, shape, attrs, load_state, _ in CASES:
        label = "%s %s" % (name, "x".join(map(str, shape)))
        W0 = inputs[name].astype(np.float64)
        zeros = np.zeros(shape, np.float32)
        W, mo, v = (W0, inputs.get(name + ".exp_avg", zeros),
                    inputs.get(name + ".exp_avg_sq", zeros))
        stuck = W0, mo, v
        for step in range(1, STEPS + 1):
            W, mo, v = ref.adamw_update(W, inputs[name + ".grad"], mo, v,
                                        step, **attrs)
            stuck = ref.adamw_update(stuck[0], inputs[name + ".grad"],
                                     stuck[1], stuck[2], 1, **attrs)
        if args.verbose:
            print("%s info: step counter stuck at 1 would move W - W0 by "
                  "%.3e" % (label, ref.rel_fro(stuck[0] - W0, W - W0)))
        got = out[name].astype(np.float64)
        chk.check(label + " delta", ref.rel_fro(got - W0, W - W0), TOL_DELTA)
        chk.check(label + " exp_avg", ref.rel_fro(out[name + ".exp_avg"], mo),
                  TOL_STATE)
        chk.check(label + " exp_avg_sq",
                  ref.rel_fro(out[name + ".exp_avg_sq"], v), TOL_STATE)
        chk.expect(label + " grad unchanged",
                   np.array_equal(out[name + ".grad"], inputs[name + ".grad"]),
                   mt.compare_bits(out[name + ".grad"], inputs[name + ".grad"]))
    chk.finish()


if __name__ == "__main__":
    main()
