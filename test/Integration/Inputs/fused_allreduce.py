"""The fused SYRK + packed-triangle all-reduce against the unfused pair.

A step with two Muon matrices split over tp=2 (q_proj 64x32 by rows,
o_proj 32x64 by columns: Gram matrices of s = 32) runs 2 steps in the
distributed mode on 2 ranks, with --fuse-syrk-all-reduce=false and fused
with chunks of 0 (the cost model's), 1, 5 (not dividing 32), 32 and 64 rows.
Every fused run equals the unfused one bitwise (the same SYRK, and every
element summed in group-rank order), and the bytes each rank sends on tp
per step are the closed forms (norm, then 5 Gram all-reduces a matrix):
  unfused: 2 * (4 (g - 1) + 5 * s^2 * 4 (g - 1))
  fused:   2 * (4 (g - 1) + 5 * s (s + 1) / 2 * 4 (g - 1))
whose Gram parts are in the ratio (s + 1) / (2 s) = 0.516 for s = 32.
"""
import os
import sys

import numpy as np

import muirtest

args = muirtest.parse_args(__doc__)
tmp = args.tmp
compiler = muirtest.sibling_tool(args.muir_run, "muir-compile")

YAML = """name: fused
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, weight_decay: 0.1}
parameters:
  - {name: q_proj, shape: [64, 32], role: attention}
  - {name: o_proj, shape: [32, 64], role: attention}
"""
SHAPES = {"q_proj": (64, 32), "o_proj": (32, 64)}
STEPS, G, S = 2, 2, 32
ok = True


run = muirtest.check_output


rng = np.random.default_rng(9)
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
tp2 = os.path.join(tmp, "tp2.yaml")
run([compiler, desc, "--layout", "tp=2", "--emit=description", "--quiet",
     "-o", tp2])


def step(out, extra):
    text = run([args.muir_run, tp2, "--ranks", "2", "--steps", str(STEPS),
                "--load", inp, "--dump", out, "--quiet", "--comm-stats",
                "--ns-mode", "distributed"] + extra)
    sent, _ = muirtest.comm_stats(text)
    return muirtest.read_dump(out), {r: b for (r, axes), b in sent.items()
                                     if axes == "tp"}


base, base_sent = step(os.path.join(tmp, "unfused"),
                       ["--fuse-syrk-all-reduce=false"])
norm = 4 * (G - 1)
want_unfused = STEPS * 2 * (norm + 5 * S * S * 4 * (G - 1))
want_fused = STEPS * 2 * (norm + 5 * S * (S + 1) // 2 * 4 * (G - 1))
for r in range(G):
    if base_sent.get(r) != want_unfused:
        ok = False
        print("FAIL unfused rank %d: sent %s, closed form %d"
              % (r, base_sent.get(r), want_unfused))
for chunk in [0, 1, 5, 32, 64]:
    got, sent = step(os.path.join(tmp, "fused-%d" % chunk),
                     ["--syrk-chunk-rows", str(chunk)])
    same = all(np.array_equal(base[n], got[n]) for n in SHAPES)
    bytes_ok = all(sent.get(r) == want_fused for r in range(G))
    ok &= same and bytes_ok
    print("chunk rows %d: %s the unfused result; %s bytes/rank on tp "
          "(closed form %d)%s" % (
              chunk, "bitwise equal to" if same else "DIFFERS from",
              sent.get(0), want_fused,
              "" if same and bytes_ok else "  FAIL"))
gram_unfused = 5 * S * S * 4 * (G - 1)
gram_fused = 5 * S * (S + 1) // 2 * 4 * (G - 1)
print("Gram bytes fused / unfused = %.4f; all bytes %.4f" % (
    gram_fused / gram_unfused, want_fused / want_unfused))
print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
