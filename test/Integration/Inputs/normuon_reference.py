"""NorMuon (`optimizer: normuon:`) against a float64 reference written
from its formulas (issue 39): for W [m, n], each matrix of a stack [E, m, n]
alone, with U the momentum/Nesterov input exactly as Muon's and
O = NewtonSchulz(U) (test/lib/muir_reference.py: normuon_update, written
from these formulas, on newton_schulz, the reference of every Muon test):

    v <- beta2 * v + (1 - beta2) * mean over columns of O*O   (v: [m])
    P  = O / (sqrt(v) + eps2)                                 (row by row)
    P <- P * (0.2 * sqrt(m * n) / ||P||_F)                    (update RMS 0.2)
    W <- W * (1 - lr * weight_decay) - lr * P

One description holds a tall and a wide matrix, a 3-D expert stack (with
an override: its own lr, nesterov off, 8 polar_express steps) and an
embedding that takes AdamW. Loaded parameters, gradients, momenta and
second moments (v > 0), then 4 steps with a new gradient each (each step
one muir-run, loading the last one's dumped parameters and state). Bounds, relative
Frobenius errors: W4 - W0 <= 1e-5 (float32 computation), v <= 1e-5, the
momentum <= 1e-6; each update's RMS is 0.2 (to 1e-5).
Then: the same run on dp=2 (2 ranks, each the whole matrix) gives the
1-rank run's bits (both with one BLAS thread); 1 step saved, 1 resumed gives the 2-step run's bits.

Split matrices, on 4 ranks (dp=2, tp=2), 2 steps from the loaded state,
each matrix under its own Newton-Schulz mode: rows split over tp
(duplicated, distributed, resharded), columns split over tp (duplicated,
distributed in the Gram form, resharded), a stack's rows split over tp,
rows split over dp (FSDP) and columns over tp, an FSDP split over dp (the
dp owner orthogonalises), a replicated matrix (shared out over dp), each
against the same float64 reference (W2 - W0, v: 1e-5). The rows' sums are
all-reduced over the axes that split the columns, the norm over every
axis that splits the matrix: the plan report counts these bytes.
"""
import os
import subprocess

import numpy as np

import muir_reference as ref
import muirtest as mt

STEPS = 4
TOL_DELTA = 1e-5
TOL_V = 1e-5
TOL_M = 1e-6

GLOBAL = dict(lr=0.02, beta=0.9, weight_decay=0.01, beta2=0.9, eps2=1e-8,
              ns_steps=5, schedule="simple", nesterov=True)

DESCRIPTION = """name: normuonref
grid: {axes: {dp: %(dp)d}}
optimizer:
  normuon: {lr: 0.02, momentum: 0.9, weight_decay: 0.01, beta2: 0.9,
            eps2: 1.0e-8}
  adamw: {lr: 0.001, beta1: 0.9, beta2: 0.95, eps: 1.0e-8, weight_decay: 0.1}
  overrides:
    - {names: [stack], lr: 0.05, nesterov: false, schedule: polar_express,
       ns_steps: 8}
parameters:
  - {name: tall, shape: [96, 64], role: mlp}
  - {name: wide, shape: [48, 80], role: attention}
  - {name: stack, shape: [3, 32, 40], role: expert}
  - {name: embed, shape: [50, 16], role: embedding}
"""

PARAMS = [
    ("tall", (96, 64), {}),
    ("wide", (48, 80), {}),
    ("stack", (3, 32, 40),
     dict(lr=0.05, nesterov=False, schedule="polar_express", ns_steps=8)),
]


run = mt.run_step


def describe(tmp, name, dp=1):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(DESCRIPTION % {"dp": dp})
    return path


def main():
    args = mt.parse_args(__doc__)
    chk = mt.Checker()
    rng = np.random.default_rng(39)
    yaml = describe(args.tmp, "one")

    # Step 1's inputs; steps 2..4 load a new gradient each (--resume keeps
    # everything else).
    inputs = {}
    first = os.path.join(args.tmp, "in0")
    for name, shape, _ in PARAMS:
        inputs[name] = 0.02 * rng.standard_normal(shape)
        inputs[name + ".momentum"] = 0.5 * rng.standard_normal(shape)
        inputs[name + ".variance"] = 0.01 + 0.02 * rng.random(shape[:-1])
        for k in (name, name + ".momentum", name + ".variance"):
            mt.write_npy(first, k, inputs[k])
    grads = []
    for s in range(STEPS):
        g = {name: rng.standard_normal(shape) for name, shape, _ in PARAMS}
        grads.append(g)
        d = first if s == 0 else os.path.join(args.tmp, "in%d" % s)
        for name in g:
            mt.write_npy(d, name + ".grad", g[name])
    for s in range(STEPS):
        d = first if s == 0 else os.path.join(args.tmp, "in%d" % s)
        if s > 0:
            # The previous step's parameters and state, as dumped.
            prev = mt.read_dump(os.path.join(args.tmp, "out%d" % (s - 1)))
            for name, _, _ in PARAMS:
                for k in (name, name + ".momentum", name + ".variance"):
                    mt.write_npy(d, k, prev[k])
        run(args.muir_run, yaml, "--steps", "1", "--load", d, "--dump",
            os.path.join(args.tmp, "out%d" % s))
    out = mt.read_dump(os.path.join(args.tmp, "out%d" % (STEPS - 1)))

    for name, shape, extra in PARAMS:
        label = "%s %s" % (name, "x".join(map(str, shape)))
        settings = dict(GLOBAL, **extra)
        f32 = lambda a: np.asarray(a, np.float32).astype(np.float64)
        W0 = f32(inputs[name])
        W, M, v = W0, f32(inputs[name + ".momentum"]), \
            f32(inputs[name + ".variance"])
        for s in range(STEPS):
            W, M, v = ref.normuon_update(W, f32(grads[s][name]), M, v,
                                         **settings)
        chk.check(label + " delta", ref.rel_fro(out[name] - W0, W - W0),
                  TOL_DELTA)
        chk.check(label + " momentum", ref.rel_fro(out[name + ".momentum"], M),
                  TOL_M)
        chk.check(label + " variance", ref.rel_fro(out[name + ".variance"], v),
                  TOL_V)
        chk.expect(label + " variance shape",
                   out[name + ".variance"].shape == shape[:-1],
                   str(out[name + ".variance"].shape))
        # The last step's update, undone from the weight decay: RMS 0.2
        # (per matrix of a stack).
        lr, wd = settings["lr"], settings["weight_decay"]
        got = np.asarray(out[name], np.float64)
        prev = mt.read_dump(os.path.join(args.tmp, "out%d" % (STEPS - 2)))
        step = (prev[name] * (1.0 - lr * wd) - got) / lr
        rms = np.sqrt(np.mean(step * step, axis=(-2, -1)))
        chk.check(label + " update RMS 0.2", float(np.max(np.abs(rms - 0.2)))
                  / 0.2, 1e-5, "rel_dev")

    # dp=2: each rank updates the whole matrices, the same bits as one rank
    # (with one BLAS thread, as each of the 2 ranks on this machine has:
    # OpenBLAS's sums may change with its thread count).
    yaml2 = describe(args.tmp, "two", dp=2)
    run(args.muir_run, yaml2, "--ranks", "2", "--steps", "1", "--load", first,
        "--dump", os.path.join(args.tmp, "dp2"),
        env={"OPENBLAS_NUM_THREADS": "1"})
    run(args.muir_run, yaml, "--steps", "1", "--load", first, "--dump",
        os.path.join(args.tmp, "dp1"), env={"OPENBLAS_NUM_THREADS": "1"})
    a = mt.read_dump(os.path.join(args.tmp, "dp1"))
    b = mt.read_dump(os.path.join(args.tmp, "dp2"))
    differ = [k for k in a if a[k].tobytes() != b[k].tobytes()]
    chk.expect("dp=2 on 2 ranks: the 1-rank step's bits", not differ,
               "differ: " + ", ".join(differ) if differ
               else "%d tensors equal" % len(a))

    # Resume: 1 step saved, 1 more resumed: the 2-step run's bits.
    two = os.path.join(args.tmp, "two-steps")
    run(args.muir_run, yaml, "--steps", "2", "--load", first, "--dump", two)
    half = os.path.join(args.tmp, "half")
    run(args.muir_run, yaml, "--steps", "1", "--load", first, "--save-state",
        half)
    resumed = os.path.join(args.tmp, "resumed")
    run(args.muir_run, yaml, "--steps", "1", "--resume", half, "--dump",
        resumed)
    x, y = mt.read_dump(two), mt.read_dump(resumed)
    differ = [k for k in x if x[k].tobytes() != y[k].tobytes()]
    chk.expect("1 step, saved, 1 resumed: the 2-step run bitwise",
               not differ, "differ: " + ", ".join(differ) if differ
               else "%d tensors equal" % len(x))
    split_runs(args, chk, rng)
    chk.finish()


SPLIT_DESCRIPTION = """name: normuonsplit
grid: {axes: {dp: 2, tp: 2}}
optimizer:
  normuon: {lr: 0.02, momentum: 0.9, weight_decay: 0.01, beta2: 0.9,
            eps2: 1.0e-8}
parameters:
%s
"""

# name, shape, shards, ns_mode
SPLITS = [
    ("rows_dup", (64, 48), "[{kind: tp_column, axis: tp}]", "duplicated"),
    ("rows_dist", (64, 48), "[{kind: tp_column, axis: tp}]", "distributed"),
    ("rows_resh", (64, 48), "[{kind: tp_column, axis: tp}]", "resharded"),
    ("cols_dup", (48, 64), "[{kind: tp_row, axis: tp}]", "duplicated"),
    ("cols_dist", (48, 64), "[{kind: tp_row, axis: tp}]", "distributed"),
    ("cols_resh", (48, 64), "[{kind: tp_row, axis: tp}]", "resharded"),
    ("stack_rows", (3, 32, 40), "[{kind: tp_column, axis: tp}]", "auto"),
    ("both", (64, 48), "[{kind: fsdp, axis: dp}, {kind: tp_row, axis: tp}]",
     "distributed"),
    ("fsdp", (64, 40), "[{kind: fsdp, axis: dp}]", "auto"),
    ("whole", (40, 56), None, "auto"),
]
SPLIT_STEPS = 2


def split_runs(args, chk, rng):
    lines = []
    for name, shape, shard, mode in SPLITS:
        entry = "  - {name: %s, shape: [%s], role: mlp" % (
            name, ", ".join(map(str, shape)))
        if len(shape) == 3:
            entry = entry.replace("role: mlp", "role: expert")
        if shard:
            entry += ", shard: %s" % shard
        if mode != "auto":
            entry += ", ns_mode: %s" % mode
        lines.append(entry + "}")
    yaml = os.path.join(args.tmp, "split.yaml")
    with open(yaml, "w") as f:
        f.write(SPLIT_DESCRIPTION % "\n".join(lines))
    load = os.path.join(args.tmp, "split-in")
    inputs = {}
    for name, shape, _, _ in SPLITS:
        inputs[name] = 0.02 * rng.standard_normal(shape)
        inputs[name + ".grad"] = rng.standard_normal(shape)
        inputs[name + ".momentum"] = 0.5 * rng.standard_normal(shape)
        inputs[name + ".variance"] = 0.01 + 0.02 * rng.random(shape[:-1])
        for k in ("", ".grad", ".momentum", ".variance"):
            mt.write_npy(load, name + k, inputs[name + k])
    out_dir = os.path.join(args.tmp, "split-out")
    run(args.muir_run, yaml, "--ranks", "4", "--steps", str(SPLIT_STEPS),
        "--load", load, "--dump", out_dir)
    out = mt.read_dump(out_dir)
    f32 = lambda a: np.asarray(a, np.float32).astype(np.float64)
    for name, shape, shard, mode in SPLITS:
        W0 = f32(inputs[name])
        W, M, v = W0, f32(inputs[name + ".momentum"]), \
            f32(inputs[name + ".variance"])
        for _ in range(SPLIT_STEPS):
            W, M, v = ref.normuon_update(W, f32(inputs[name + ".grad"]), M, v,
                                     **GLOBAL)
        label = "split %s %s (%s)" % (name, "x".join(map(str, shape)), mode)
        chk.check(label + " delta", ref.rel_fro(out[name] - W0, W - W0),
                  TOL_DELTA)
        chk.check(label + " variance",
                  ref.rel_fro(out[name + ".variance"], v), TOL_V)
    # The reductions in the plan report: muir-compile's per-rank bytes.
    p = subprocess.run([mt.sibling_tool(args.muir_run, "muir-compile"), yaml,
                        "--emit=none"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    chk.expect("plan report of the split step", p.returncode == 0,
               p.stdout.strip().splitlines()[-1] if p.stdout else "")


if __name__ == "__main__":
    main()
