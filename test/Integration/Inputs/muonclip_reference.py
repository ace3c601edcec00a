"""MuonClip's QK-clip (`optimizer.muon.qk_clip: tau` with `attention:`
blocks) against a float64 reference written from its formulas (issue 39;
test/lib/muir_reference.py: qk_clip, after muon_update, the reference of
every Muon test). After q and k have been updated by Muon:

    gamma_h = min(1, tau / max_logits_h)           (per query head h)
    rows of query head h of q       *= sqrt(gamma_h)
    rows of kv head g of k          *= sqrt(min of gamma_h over the
                                        heads / kv_heads query heads of g)

and the optimizer state is not changed.

One rank: an MHA block (8 heads) and a GQA block (6 query heads, 2 kv
heads), an unclipped matrix and an AdamW embedding; 3 steps with a new
gradient and new max_logits each (each step one muir-run on the last one's
dump), heads above tau, at tau, under it and negative. Bounds (relative
Frobenius): W3 - W0 <= 1e-5, momentum <= 1e-6. Then an exact construction:
one step with these logits against one with every logit 0 (nothing clips),
from the same state: an unclipped head's rows and every momentum are the
same bits, a clipped head's rows are the unclipped ones times
sqrt(min gamma) computed in float32, bit for bit.

Four ranks (dp=2, tp=2), 2 steps: blocks whose q and k rows are split over
tp (the heads are split: each rank clips its own), whose columns are split
over tp, whose rows are split over dp (FSDP), and whole (shared out over
dp: the clip runs after the gather), MHA and GQA, some heads clipped and
some not, against the same reference (1e-5).
"""
import os

import numpy as np

import muir_reference as ref
import muirtest as mt

TAU = 50.0
MUON = dict(lr=0.02, beta=0.9, weight_decay=0.01)
TOL_DELTA = 1e-5
TOL_M = 1e-6

DESCRIPTION = """name: muonclip
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, momentum: 0.9, weight_decay: 0.01, qk_clip: 50}
  adamw: {lr: 0.001}
attention:
  - {name: mha, q: mha.q, k: mha.k, heads: 8}
  - {name: gqa, q: gqa.q, k: gqa.k, heads: 6, kv_heads: 2}
parameters:
  - {name: mha.q, shape: [64, 32], role: attention}
  - {name: mha.k, shape: [64, 32], role: attention}
  - {name: gqa.q, shape: [48, 32], role: attention}
  - {name: gqa.k, shape: [16, 32], role: attention}
  - {name: o, shape: [32, 48], role: attention}
  - {name: embed, shape: [40, 32], role: embedding}
"""
MATRICES = {"mha.q": (64, 32), "mha.k": (64, 32), "gqa.q": (48, 32),
            "gqa.k": (16, 32), "o": (32, 48)}
# name: (q, k, heads, kv_heads)
BLOCKS = {"mha": ("mha.q", "mha.k", 8, 8), "gqa": ("gqa.q", "gqa.k", 6, 2)}
# Per step: each block's max_logits. Over tau, at tau (kept), under it,
# negative; step 2 clips nothing in gqa.
LOGITS = [
    {"mha": [10, 60, 50, 120, -5, 49, 200, 51],
     "gqa": [10, 80, 30, 40, 55, 100]},
    {"mha": [70, 1, 2, 3, 50.5, 500, 0, 49.99],
     "gqa": [1, 2, 3, 4, 5, 6]},
    {"mha": [51, 52, 53, 54, 10, 20, 30, 40],
     "gqa": [-1, 50, 1000, 75, 10, 20]},
]


run = mt.run_step


def f32(a):
    return np.asarray(a, np.float32).astype(np.float64)


def reference(inputs, grads, logits, matrices, blocks, steps):
    """Muon then the clip, in float64, over `steps` steps."""
    W = {n: f32(inputs[n]) for n in matrices}
    M = {n: f32(inputs[n + ".momentum"]) for n in matrices}
    for s in range(steps):
        for n in matrices:
            W[n], M[n] = ref.muon_update(W[n], f32(grads[s][n]), M[n],
                                         **MUON)
        for b, (q, k, heads, kv) in blocks.items():
            W[q], W[k] = ref.qk_clip(W[q], W[k], f32(logits[s][b]), TAU,
                                     heads, kv)
    return W, M


def one_rank(args, chk, rng):
    yaml = os.path.join(args.tmp, "one.yaml")
    with open(yaml, "w") as f:
        f.write(DESCRIPTION)
    inputs = {}
    for n, shape in MATRICES.items():
        inputs[n] = 0.02 * rng.standard_normal(shape)
        inputs[n + ".momentum"] = 0.5 * rng.standard_normal(shape)
    steps = len(LOGITS)
    grads = [{n: rng.standard_normal(s) for n, s in MATRICES.items()}
             for _ in range(steps)]
    for s in range(steps):
        d = os.path.join(args.tmp, "in%d" % s)
        src = inputs if s == 0 else mt.read_dump(
            os.path.join(args.tmp, "out%d" % (s - 1)))
        for n in MATRICES:
            mt.write_npy(d, n, src[n])
            mt.write_npy(d, n + ".momentum", src[n + ".momentum"])
            mt.write_npy(d, n + ".grad", grads[s][n])
        for b in BLOCKS:
            mt.write_npy(d, b + ".max_logits", np.array(LOGITS[s][b]))
        run(args.muir_run, yaml, "--steps", "1", "--load", d, "--dump",
            os.path.join(args.tmp, "out%d" % s))
    out = mt.read_dump(os.path.join(args.tmp, "out%d" % (steps - 1)))
    W, M = reference(inputs, grads, LOGITS, MATRICES, BLOCKS, steps)
    for n, shape in MATRICES.items():
        label = "%s %s" % (n, "x".join(map(str, shape)))
        W0 = f32(inputs[n])
        chk.check(label + " delta", ref.rel_fro(out[n] - W0, W[n] - W0),
                  TOL_DELTA)
        chk.check(label + " momentum", ref.rel_fro(out[n + ".momentum"], M[n]),
                  TOL_M)

    # Exact: step 1's logits against none over tau, from the same state.
    first = os.path.join(args.tmp, "in0")
    none = os.path.join(args.tmp, "in-none")
    for n in MATRICES:
        for k in (n, n + ".momentum", n + ".grad"):
            mt.write_npy(none, k, inputs[k] if k in inputs else grads[0][n])
    for b in BLOCKS:
        mt.write_npy(none, b + ".max_logits", np.zeros(len(LOGITS[0][b])))
    run(args.muir_run, yaml, "--steps", "1", "--load", none, "--dump",
        os.path.join(args.tmp, "out-none"))
    plain = mt.read_dump(os.path.join(args.tmp, "out-none"))
    clipped = mt.read_dump(os.path.join(args.tmp, "out0"))
    kept = [n + ".momentum" for n in MATRICES] + ["o"]
    differ = [k for k in kept if clipped[k].tobytes() != plain[k].tobytes()]
    chk.expect("momenta and the unclipped matrix: the bits of a step that "
               "clips nothing", not differ,
               "differ: " + ", ".join(differ) if differ
               else "%d tensors equal" % len(kept))
    tau = np.float32(TAU)
    for b, (q, k, heads, kv) in BLOCKS.items():
        x = np.asarray(LOGITS[0][b], np.float32)
        gamma = np.where(x > tau, tau / np.where(x > tau, x, 1), 1)
        gamma = gamma.astype(np.float32)
        for name, rows, g in ((q, heads, gamma),
                              (k, kv, gamma.reshape(kv, -1).min(axis=1))):
            s = np.sqrt(g).astype(np.float32)
            want = plain[name] * np.repeat(s, plain[name].shape[0] // rows)[
                :, None]
            chk.expect("%s: %d of %d heads clipped, the rest kept, bit for "
                       "bit" % (name, int(np.sum(g < 1)), rows),
                       want.tobytes() == clipped[name].tobytes(),
                       mt.compare_bits(clipped[name], want))


SPLIT_DESCRIPTION = """name: muonclipsplit
grid: {axes: {dp: 2, tp: 2}}
optimizer:
  muon: {lr: 0.02, momentum: 0.9, weight_decay: 0.01, qk_clip: 50}
attention:
  - {name: rows, q: rows.q, k: rows.k, heads: 4}
  - {name: cols, q: cols.q, k: cols.k, heads: 8, kv_heads: 2}
  - {name: fsdp, q: fsdp.q, k: fsdp.k, heads: 4, kv_heads: 2}
  - {name: whole, q: whole.q, k: whole.k, heads: 6, kv_heads: 3}
parameters:
  - {name: rows.q, shape: [32, 24], role: attention, shard: [{kind: tp_column, axis: tp}]}
  - {name: rows.k, shape: [32, 24], role: attention, shard: [{kind: tp_column, axis: tp}]}
  - {name: cols.q, shape: [64, 32], role: attention, shard: [{kind: tp_row, axis: tp}]}
  - {name: cols.k, shape: [16, 32], role: attention, shard: [{kind: tp_row, axis: tp}]}
  - {name: fsdp.q, shape: [32, 16], role: attention, shard: [{kind: fsdp, axis: dp}]}
  - {name: fsdp.k, shape: [16, 16], role: attention, shard: [{kind: fsdp, axis: dp}]}
  - {name: whole.q, shape: [24, 16], role: attention}
  - {name: whole.k, shape: [12, 16], role: attention}
"""
SPLIT_BLOCKS = {"rows": ("rows.q", "rows.k", 4, 4),
                "cols": ("cols.q", "cols.k", 8, 2),
                "fsdp": ("fsdp.q", "fsdp.k", 4, 2),
                "whole": ("whole.q", "whole.k", 6, 3)}
SPLIT_LOGITS = {"rows": [60, 10, 49, 150], "cols": [1, 2, 3, 99, 5, 6, 7, 8],
                "fsdp": [20, 30, 70, 80], "whole": [10, 51, 20, 30, 40, 45]}
SPLIT_STEPS = 2


def split_runs(args, chk, rng):
    yaml = os.path.join(args.tmp, "split.yaml")
    with open(yaml, "w") as f:
        f.write(SPLIT_DESCRIPTION)
    shapes = {}
    for line in SPLIT_DESCRIPTION.splitlines():
        if "shape: [" in line:
            name = line.split("name: ")[1].split(",")[0]
            dims = line.split("shape: [")[1].split("]")[0]
            shapes[name] = tuple(int(x) for x in dims.split(","))
    load = os.path.join(args.tmp, "split-in")
    inputs, grads = {}, {}
    for n, shape in shapes.items():
        inputs[n] = 0.02 * rng.standard_normal(shape)
        inputs[n + ".momentum"] = 0.5 * rng.standard_normal(shape)
        grads[n] = rng.standard_normal(shape)
        mt.write_npy(load, n, inputs[n])
        mt.write_npy(load, n + ".momentum", inputs[n + ".momentum"])
        mt.write_npy(load, n + ".grad", grads[n])
    for b, x in SPLIT_LOGITS.items():
        mt.write_npy(load, b + ".max_logits", np.array(x))
    out_dir = os.path.join(args.tmp, "split-out")
    run(args.muir_run, yaml, "--ranks", "4", "--steps", str(SPLIT_STEPS),
        "--load", load, "--dump", out_dir)
    out = mt.read_dump(out_dir)
    W, _ = reference(inputs, [grads] * SPLIT_STEPS,
                     [SPLIT_LOGITS] * SPLIT_STEPS, shapes, SPLIT_BLOCKS,
                     SPLIT_STEPS)
    for b, (q, k, heads, kv) in SPLIT_BLOCKS.items():
        clipped = int(np.sum(np.asarray(SPLIT_LOGITS[b]) > TAU))
        for n in (q, k):
            label = "split %s %s (%d of %d heads over tau)" % (
                n, "x".join(map(str, shapes[n])), clipped, heads)
            W0 = f32(inputs[n])
            chk.check(label + " delta", ref.rel_fro(out[n] - W0, W[n] - W0),
                      TOL_DELTA)


def main():
    args = mt.parse_args(__doc__)
    chk = mt.Checker()
    rng = np.random.default_rng(3939)
    one_rank(args, chk, rng)
    split_runs(args, chk, rng)
    chk.finish()


if __name__ == "__main__":
    main()
