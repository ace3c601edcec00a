"""Run-time learning rates: muir-run --lr-schedule vs the float64 reference.

One description with two Muon matrices (one with its own lr from an
override, so its own hyperparameter "overrides.0.lr"), one AdamW vector
and weight decay on both optimizers, run 4 steps from loaded float32
tensors with the learning rates changed every step:

  file    factors 1, 0.5, 0.25, 2 (file:PATH, one per line)
  cosine  cosine:1:4:0.1 (warmup 1 step, then cosine to 0.1 at step 4;
          the factors are computed here from the documented formula)

The reference applies muir.muon_update / muir.adamw_update (their
documented formulas, test/lib/muir_reference.py) in float64 with
lr = base lr x factor at each step (weight decay unchanged). Bounds
(relative Frobenius error): W4 - W0 <= 1e-5 (as muon-reference.test),
AdamW's W4 <= 1e-6, state <= 1e-6. A constant-lr reference must miss the
run by far more (>= 1e-2 on W4 - W0), so the schedule is shown to act.
"""
import math
import os
import subprocess

import numpy as np

import muir_reference as ref
import muirtest as mt

STEPS = 4
DESC = """name: lr_schedule
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, momentum: 0.95, weight_decay: 0.1}
  adamw: {lr: 0.001, beta1: 0.9, beta2: 0.95, weight_decay: 0.05}
  overrides:
    - {match: "b", lr: 0.05}
parameters:
  - {name: a, shape: [48, 32]}
  - {name: b, shape: [32, 64]}
  - {name: n, shape: [32], role: norm}
"""
MUON = {"a": 0.02, "b": 0.05}
ADAMW_LR, ADAMW_WD, MUON_WD = 0.001, 0.05, 0.1


def cosine(s, warmup, total, lo):
    if s <= warmup:
        return s / warmup
    if s >= total:
        return lo
    return lo + (1 - lo) * 0.5 * (1 + math.cos(math.pi * (s - warmup) /
                                               (total - warmup)))


def reference(tensors, factors):
    out = {}
    for name, lr in MUON.items():
        W, M = tensors[name], tensors[name + ".momentum"]
        for f in factors:
            W, M = ref.muon_update(W, tensors[name + ".grad"], M, lr * f,
                                   weight_decay=MUON_WD)
        out[name], out[name + ".momentum"] = W, M
    W, m, v = tensors["n"], tensors["n.exp_avg"], tensors["n.exp_avg_sq"]
    for s, f in enumerate(factors, 1):
        W, m, v = ref.adamw_update(W, tensors["n.grad"], m, v, s,
                                   ADAMW_LR * f, beta1=0.9, beta2=0.95,
                                   weight_decay=ADAMW_WD)
    out["n"], out["n.exp_avg"], out["n.exp_avg_sq"] = W, m, v
    return out


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(7)
    tensors = {}
    for name, shape in [("a", (48, 32)), ("b", (32, 64)), ("n", (32,))]:
        tensors[name] = rng.standard_normal(shape) * 0.02
        tensors[name + ".grad"] = rng.standard_normal(shape)
    for name in MUON:
        tensors[name + ".momentum"] = rng.standard_normal(
            tensors[name].shape) * 0.1
    tensors["n.exp_avg"] = rng.standard_normal(32) * 0.01
    tensors["n.exp_avg_sq"] = rng.random(32) * 0.01
    tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
    load = os.path.join(args.tmp, "in")
    for k, v in tensors.items():
        mt.write_npy(load, k, v)
    desc = os.path.join(args.tmp, "step.yaml")
    with open(desc, "w") as f:
        f.write(DESC)
    factors_file = os.path.join(args.tmp, "factors.txt")
    with open(factors_file, "w") as f:
        f.write("1\n0.5\n0.25\n2\n")
    schedules = {
        "file": ("file:" + factors_file, [1, 0.5, 0.25, 2]),
        "cosine": ("cosine:1:4:0.1",
                   [cosine(s, 1, 4, 0.1) for s in range(1, STEPS + 1)]),
    }
    checker = mt.Checker()
    for label, (flag, factors) in schedules.items():
        out = os.path.join(args.tmp, "out-" + label)
        text = subprocess.run(
            [args.muir_run, desc, "--load", load, "--dump", out, "--steps",
             str(STEPS), "--lr-schedule=" + flag],
            check=True, capture_output=True, text=True).stdout
        for s, f in enumerate(factors, 1):
            line = next((l for l in text.splitlines()
                         if l.startswith("step %d: " % s)), "no step line")
            checker.expect("%s step %d prints lr x%g" % (label, s, f),
                           ("lr x%g" % f) in line, line)
        got = mt.read_dump(out)
        want = reference(tensors, factors)
        flat = reference(tensors, [1.0] * STEPS)
        for name in MUON:
            delta = got[name].astype(np.float64) - tensors[name]
            checker.check("%s %s delta" % (label, name),
                          ref.rel_fro(delta, want[name] - tensors[name]), 1e-5)
            checker.check("%s %s momentum" % (label, name),
                          ref.rel_fro(got[name + ".momentum"],
                                      want[name + ".momentum"]), 1e-6)
            miss = ref.rel_fro(delta, flat[name] - tensors[name])
            checker.expect("%s %s differs from constant lr" % (label, name),
                           miss >= 1e-2, "%.3e apart" % miss)
        for name in ["n", "n.exp_avg", "n.exp_avg_sq"]:
            checker.check("%s %s" % (label, name),
                          ref.rel_fro(got[name], want[name]), 1e-6)
    checker.finish()


if __name__ == "__main__":
    main()
