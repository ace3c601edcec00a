"""Tensor-parallel Newton-Schulz modes against the single-rank step.

(Every run --ns-form=standard: the standard form's modes; the Gram form's
distributed mode has gram_distributed.py.)

A step with column-parallel q_proj (64x32) and up_proj (32x64: split on its
smaller dimension) and row-parallel o_proj (32x64) Muon matrices, a norm
(AdamW) and an expert stack runs for 2 steps on 1 rank and, compiled
for tp=2 (2 ranks) and dp=2,tp=2 (4 ranks), in each mode:
  duplicated  - bitwise equal to 1 rank (the whole matrix is orthogonalised
                on every rank from the same gathered values);
  distributed - within 1e-6 relative (the Gram matrices are summed over
                shards, so rounding differs from the single-rank GEMM) where
                the Gram matrix is over the smaller dimension, as on one
                rank (q_proj, o_proj); up_proj, split on its smaller
                dimension, gets the larger Gram matrix and is held to the
                fp64 Muon bound, 1e-5 (the cost model re-shards it instead);
  resharded   - all_to_all moves each split to the other dimension,
                distributed runs there, all_to_all moves back: the other
                way round, within 1e-6 for up_proj and the fp64 bound for
                q_proj and o_proj (never the model's choice);
  blockwise   - equal, within 1e-5 (as the fp64 Muon tests), to an fp64
                Muon update of each shard on its own, with the shard's scale.
Every dp rank runs every Newton-Schulz here (--dp-assign=replicated), so
that the tp modes are seen alone; dp_assign.py shares them out over dp.
The runtime's byte counters, and the plan report's prediction, must equal
the closed forms per rank and step:
  duplicated:  sum over split matrices of local_numel * 4 * (g - 1)
  distributed: sum over split matrices of 4 * (g - 1)              (norm)
               + ns_steps * s (s + 1) / 2 * 4 * (g - 1)   (the Gram matrix
                 over the unsplit dim s: its packed triangle, fused with
                 its SYRK)
  resharded:   the distributed form with s the originally split dimension
               + 2 * (local / g) * 4 * (g - 1)      (two all_to_all)
(every split matrix's shard holds local = 1024 floats).
(all-gathers and all-reduces send their own data to g - 1 peers).
"""
import os
import sys

import numpy as np

import muir_reference as ref
import muirtest

args = muirtest.parse_args(__doc__)
tmp = args.tmp
os.makedirs(tmp, exist_ok=True)
compiler = muirtest.sibling_tool(args.muir_run, "muir-compile")

YAML = """name: modes
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, weight_decay: 0.1}
parameters:
  - {name: q_proj, shape: [64, 32], role: attention}
  - {name: o_proj, shape: [32, 64], role: attention}
  - {name: up_proj, shape: [32, 64], role: mlp}
  - {name: norm, shape: [32], role: norm}
  - {name: experts.up_proj, shape: [4, 16, 32], role: expert}
"""
SHAPES = {"q_proj": (64, 32), "o_proj": (32, 64), "up_proj": (32, 64),
          "norm": (32,),
          "experts.up_proj": (4, 16, 32)}
STEPS = 2

rng = np.random.default_rng(5)
inp = os.path.join(tmp, "in")
os.makedirs(inp, exist_ok=True)
for name, shape in SHAPES.items():
    muirtest.write_npy(inp, name, (rng.standard_normal(shape) * 0.02)
                       .astype(np.float32))
    muirtest.write_npy(inp, name + ".grad",
                       rng.standard_normal(shape).astype(np.float32))
desc = os.path.join(tmp, "step.yaml")
with open(desc, "w") as f:
    f.write(YAML)


run = muirtest.check_output


def step(yaml, ranks, mode, out):
    cmd = [args.muir_run, yaml, "--steps", str(STEPS), "--load", inp,
           "--dump", out, "--quiet", "--comm-stats", "--ns-mode", mode,
           "--ns-form", "standard", "--dp-assign", "replicated"]
    if ranks > 1:
        cmd += ["--ranks", str(ranks)]
    sent, _ = muirtest.comm_stats(run(cmd))
    return muirtest.read_dump(out), sent


one, _ = step(desc, 1, "auto", os.path.join(tmp, "one"))
ok = True
for layout, ranks in [("tp=2", 2), ("dp=2,tp=2", 4)]:
    yaml = os.path.join(tmp, "%d.yaml" % ranks)
    run([compiler, desc, "--layout", layout, "--emit=description", "--quiet",
         "-o", yaml])
    for mode in ["duplicated", "distributed", "resharded", "blockwise"]:
        got, sent = step(yaml, ranks, mode,
                         os.path.join(tmp, "%s-%d" % (mode, ranks)))
        g = 2
        local = 32 * 32  # every split matrix's shard
        # (split dimension, unsplit dimension) of each split matrix.
        dims = {"q_proj": (64, 32), "o_proj": (64, 32), "up_proj": (32, 64)}
        if mode == "duplicated":
            want = STEPS * 3 * local * 4 * (g - 1)
        elif mode == "distributed":
            want = STEPS * sum(4 * (g - 1) + 5 * u * (u + 1) // 2 * 4 * (g - 1)
                               for _, u in dims.values())
        elif mode == "resharded":
            want = STEPS * sum(4 * (g - 1) + 5 * k * (k + 1) // 2 * 4 * (g - 1)
                               + 2 * (local // g) * 4 * (g - 1)
                               for k, _ in dims.values())
        else:
            want = 0
        # The plan report predicts the same bytes (its formula lives in
        # lib/Report/PlanReport.cpp).
        import json
        report = json.loads(run([compiler, desc, "--layout", layout,
                                 "--ns-mode", mode, "--ns-form", "standard",
                                 "--dp-assign", "replicated",
                                 "--emit=none", "--quiet",
                                 "--report=-"]))
        bytes_ok = True
        for r in range(ranks):
            have = sent.get((r, "tp"), 0)
            predicted = STEPS * report["ranks"][r]["collective_bytes"]["tp"]
            if have != want or predicted != want:
                ok = bytes_ok = False
                print("FAIL %s %s rank %d: sent %d bytes on tp, closed form "
                      "%d, plan report %d" % (mode, layout, r, have, want,
                                              predicted))
        print("%s %s bytes on tp: every rank %d = closed form = plan report%s"
              % (mode, layout, want, " ok" if bytes_ok else "  FAIL"))
        for name in ["q_proj", "o_proj", "up_proj", "norm",
                     "experts.up_proj"]:
            a, b = one[name], got[name]
            p0 = np.load(os.path.join(inp, name + ".npy"))
            if mode == "duplicated" or name in ("norm", "experts.up_proj"):
                good = np.array_equal(a, b)
                what = "bitwise" if good else "NOT bitwise"
            elif mode in ("distributed", "resharded") and \
                    (mode == "distributed") == (name != "up_proj"):
                # The Gram matrix over the smaller dimension, as on one rank.
                err = ref.rel_fro(b - p0, a - p0)
                good = err < 1e-6
                what = "rel %.1e <= 1e-6" % err
            elif mode in ("distributed", "resharded"):
                g0 = np.load(os.path.join(inp, name + ".grad.npy"))
                w, mom = p0, np.zeros_like(p0)
                for _ in range(STEPS):
                    w, mom = ref.muon_update(w, g0, mom, lr=0.02,
                                             weight_decay=0.1)
                err = ref.rel_fro(b - p0, w - p0)
                good = err < 1e-5
                what = "vs fp64 rel %.1e <= 1e-5" % err
            else:
                # Each shard alone: q_proj rows split, o_proj columns split.
                g0 = np.load(os.path.join(inp, name + ".grad.npy"))
                expect = np.empty_like(p0, dtype=np.float64)
                axis = 1 if name == "o_proj" else 0
                for pb, gb, eb in zip(np.split(p0, 2, axis),
                                      np.split(g0, 2, axis),
                                      np.split(expect, 2, axis)):
                    w, mom = pb, np.zeros_like(pb)
                    for _ in range(STEPS):
                        w, mom = ref.muon_update(w, gb, mom, lr=0.02,
                                                 weight_decay=0.1)
                    eb[...] = w
                err = ref.rel_fro(b - p0, expect - p0)
                good = err < 1e-5
                what = "vs per-shard fp64 rel %.1e <= 1e-5" % err
            ok &= good
            print("%s %s %-16s %s%s" % (mode, layout, name, what,
                                        " ok" if good else "  FAIL"))
print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
