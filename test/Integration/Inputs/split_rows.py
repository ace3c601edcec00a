"""muon_update with row_blocks (a fused QKV weight orthogonalised per block)
against an fp64 reference that runs the Muon update on each block of rows
separately, with the block's own shape for the update scale, while the
momentum stays whole.

The bound: 1e-5 relative Frobenius error of the parameter change, as for
the unsplit Muon tests (muon_reference.py); orthogonalising the whole matrix
instead of the blocks changes the result by far more (checked below), so the
test tells the two apart."""
import sys

import numpy as np

import muir_reference as ref
import muirtest

args = muirtest.parse_args(__doc__)
rng = np.random.default_rng(7)
m, n = 48, 32           # fused [q; k; v] rows of a 32-wide input
blocks = [24, 12, 12]   # q has twice the heads of k and v
p = rng.standard_normal((m, n)).astype(np.float32) * 0.02
g = rng.standard_normal((m, n)).astype(np.float32)
mom = rng.standard_normal((m, n)).astype(np.float32) * 0.1
t = muirtest.ttype([m, n])
module = f"""
func.func @step(%p: {t} {{muir.name = "qkv"}}, %g: {t} {{muir.name = "qkv.grad"}},
                %m: {t} {{muir.name = "qkv.momentum"}})
    -> ({t} {{muir.updates = "qkv"}}, {t} {{muir.updates = "qkv.momentum"}}) {{
  %p1, %m1 = muir.muon_update %p, %g, %m {{lr = 0.02, weight_decay = 0.1,
      row_blocks = array<i64: {", ".join(map(str, blocks))}>}} : {t}
  return %p1, %m1 : {t}, {t}
}}
"""
out = muirtest.run_muir(args.muir_run, module, args.tmp + "/split",
                        inputs={"qkv": p, "qkv.grad": g, "qkv.momentum": mom})

# Reference: momentum on the whole matrix, then each block on its own.
_, m_ref = ref.muon_update(p, g, mom, lr=0.02, weight_decay=0.1)
p_ref = np.empty((m, n))
r0 = 0
for rows in blocks:
    sl = slice(r0, r0 + rows)
    p_ref[sl], _ = ref.muon_update(p[sl], g[sl], mom[sl], lr=0.02,
                                   weight_decay=0.1)
    r0 += rows
whole, _ = ref.muon_update(p, g, mom, lr=0.02, weight_decay=0.1)

err = ref.rel_fro(out["qkv"] - p, p_ref - p)
err_m = ref.rel_fro(out["qkv.momentum"], m_ref)
gap = ref.rel_fro(whole - p, p_ref - p)
print("split %s: param change rel err %.2e, momentum %.2e, whole-matrix NS "
      "would differ by %.2e" % (blocks, err, err_m, gap))
ok = err < 1e-5 and err_m < 1e-6 and gap > 1e-2
print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
