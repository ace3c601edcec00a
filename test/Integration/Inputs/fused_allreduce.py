"""The fused SYRK + packed-triangle all-reduce against the unfused pair.

(Every run --ns-form=standard: the standard form's modes; the Gram form's
distributed mode has gram_distributed.py.)

A step with two Muon matrices split over tp=2 (q_proj 128x32 by rows,
o_proj 32x128 by columns: Gram matrices of s = 32) runs 2 steps in the
distributed mode on 2 ranks, with --fuse-syrk-all-reduce=false and fused
with chunks of 0 (the cost model's), 1, 5 (not dividing 32), 32 and 64 rows.
A chunk's rows are a SYRK of its diagonal block and a GEMM of the block to
the right, summed in group-rank order as the unfused all-reduce sums.

On integer-valued inputs with power-of-two coefficients (gradients of +-1
entries with a power-of-two Frobenius norm, one NS step with coefficients
(2, -1, 0.5), momentum that passes the gradient through) every Gram entry
is exact, so every fused run equals the unfused one bitwise. On random
inputs (5 default NS steps) OpenBLAS rounds an entry differently in a GEMM
tile than in a SYRK tile, so chunked runs agree within 2e-6 relative
(measured below); one whole chunk (rows >= s) is the same SYRK call and
stays bitwise equal. The bytes each rank sends on tp per step are the
closed forms (norm, then 5 Gram all-reduces a matrix; NS steps 1 on the
exact inputs):
  unfused: 2 * (4 (g - 1) + 5 * s^2 * 4 (g - 1))
  fused:   2 * (4 (g - 1) + 5 * s (s + 1) / 2 * 4 (g - 1))
whose Gram parts are in the ratio (s + 1) / (2 s) = 0.516 for s = 32.
"""
import os
import sys

import numpy as np

import muir_reference as ref
import muirtest

args = muirtest.parse_args(__doc__)
tmp = args.tmp
compiler = muirtest.sibling_tool(args.muir_run, "muir-compile")

RANDOM = """name: fused
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, weight_decay: 0.1}
parameters:
  - {name: q_proj, shape: [128, 32], role: attention}
  - {name: o_proj, shape: [32, 128], role: attention}
"""
EXACT = RANDOM.replace("  muon: {lr: 0.02, weight_decay: 0.1}",
                       muirtest.EXACT_MUON)
SHAPES = {"q_proj": (128, 32), "o_proj": (32, 128)}
STEPS, G, S = 2, 2, 32
ok = True


run = muirtest.check_output


def step(tp2, inp, out, extra):
    text = run([args.muir_run, tp2, "--ranks", "2", "--steps", str(STEPS),
                "--load", inp, "--dump", out, "--quiet", "--comm-stats",
                "--ns-mode", "distributed", "--ns-form", "standard"] + extra)
    sent, _ = muirtest.comm_stats(text)
    return muirtest.read_dump(out), {r: b for (r, axes), b in sent.items()
                                     if axes == "tp"}


rng = np.random.default_rng(9)
norm = 4 * (G - 1)
for kind, text, ns in [("exact", EXACT, 1), ("random", RANDOM, 5)]:
    inp = os.path.join(tmp, kind + "-in")
    muirtest.write_param_inputs(inp, SHAPES, kind, rng)
    desc = os.path.join(tmp, kind + ".yaml")
    with open(desc, "w") as f:
        f.write(text)
    tp2 = os.path.join(tmp, kind + "-tp2.yaml")
    run([compiler, desc, "--layout", "tp=2", "--emit=description",
         "--quiet", "-o", tp2])
    base, base_sent = step(tp2, inp, os.path.join(tmp, kind + "-unfused"),
                           ["--fuse-syrk-all-reduce=false"])
    want_unfused = STEPS * 2 * (norm + ns * S * S * 4 * (G - 1))
    want_fused = STEPS * 2 * (norm + ns * S * (S + 1) // 2 * 4 * (G - 1))
    for r in range(G):
        if base_sent.get(r) != want_unfused:
            ok = False
            print("FAIL %s unfused rank %d: sent %s, closed form %d"
                  % (kind, r, base_sent.get(r), want_unfused))
    for chunk in [0, 1, 5, 32, 64]:
        got, sent = step(tp2, inp,
                         os.path.join(tmp, "%s-fused-%d" % (kind, chunk)),
                         ["--syrk-chunk-rows", str(chunk)])
        same = all(np.array_equal(base[n], got[n]) for n in SHAPES)
        if kind == "exact" or chunk == 0 or chunk >= S:
            good = same
            what = "bitwise equal to" if same else "DIFFERS from"
        else:
            err = max(ref.rel_fro(got[n] - np.load(os.path.join(
                inp, n + ".npy")), base[n] - np.load(os.path.join(
                    inp, n + ".npy"))) for n in SHAPES)
            good = err < 2e-6
            what = "within %.1e relative of" % err
        bytes_ok = all(sent.get(r) == want_fused for r in range(G))
        ok &= good and bytes_ok
        print("%s, chunk rows %d: %s the unfused result; %s bytes/rank on "
              "tp (closed form %d)%s" % (
                  kind, chunk, what, sent.get(0), want_fused,
                  "" if good and bytes_ok else "  FAIL"))

# On 4 ranks the unfused Gram all-reduce (s^2 = 1024 floats, 256 a rank)
# scatters slices and gathers the reduced ones; the fused exchange of one
# whole chunk still gathers whole packed triangles. Both sum in group-rank
# order, so they agree bitwise; each rank sends, per Gram all-reduce,
# 4 (s^2 - s^2/4) + (s^2/4) 4 (g - 1) bytes (a ring's), which the plan
# report predicts too.
G4 = 4
inp = os.path.join(tmp, "random-in")
tp4 = os.path.join(tmp, "random-tp4.yaml")
run([compiler, os.path.join(tmp, "random.yaml"), "--layout", "tp=4",
     "--emit=description", "--quiet", "-o", tp4])


def step4(out, extra):
    text = run([args.muir_run, tp4, "--ranks", "4", "--steps", str(STEPS),
                "--load", inp, "--dump", out, "--quiet", "--comm-stats",
                "--ns-mode", "distributed", "--ns-form", "standard"] + extra)
    sent, _ = muirtest.comm_stats(text)
    return muirtest.read_dump(out), {r: b for (r, axes), b in sent.items()
                                     if axes == "tp"}


unfused4, sent4 = step4(os.path.join(tmp, "tp4-unfused"),
                        ["--fuse-syrk-all-reduce=false"])
fused4, _ = step4(os.path.join(tmp, "tp4-fused"), ["--syrk-chunk-rows", "64"])
slice4 = S * S // G4
want4 = STEPS * 2 * (4 * (G4 - 1) + 5 * (4 * (S * S - slice4)
                                         + slice4 * 4 * (G4 - 1)))
import json
report4 = json.loads(run([compiler, tp4, "--ns-mode", "distributed",
                          "--ns-form", "standard",
                          "--fuse-syrk-all-reduce=false", "--emit=none",
                          "--quiet", "--report=-"]))
same4 = all(np.array_equal(unfused4[n], fused4[n]) for n in SHAPES)
bytes4 = all(sent4.get(r) == want4 and
             STEPS * report4["ranks"][r]["collective_bytes"]["tp"] == want4
             for r in range(G4))
ok &= same4 and bytes4
print("tp=4, unfused (slices scattered) %s the fused (whole triangles "
      "gathered); %s bytes/rank on tp (closed form %d, plan report %s)%s" % (
          "bitwise equal to" if same4 else "DIFFERS from", sent4.get(0),
          want4, STEPS * report4["ranks"][0]["collective_bytes"]["tp"],
          "" if same4 and bytes4 else "  FAIL"))
gram_unfused = 5 * S * S * 4 * (G - 1)
gram_fused = 5 * S * (S + 1) // 2 * 4 * (G - 1)
print("Gram bytes fused / unfused = %.4f; all bytes %.4f (random)" % (
    gram_fused / gram_unfused, want_fused / want_unfused))
print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
