"""muir.route's counts feeding muir.grouped_matmul, through muir-run, vs a
float64 NumPy reference.

One step routes T tokens (top-k of E experts), then multiplies the rows of
x [T * K, H], taken in expert-major groups of the routed counts, by each
expert's weight [F, H] (a PyTorch Linear stack, `transpose_b`); rows past
the counts' total (none here, as the bound is exactly T * K) would be
zero. The reference derives the counts from its own top-k of the logits
(a stable sort: ties to the lower expert) and multiplies group by group in
float64. Cases: Gaussian logits; a router that sends every token to one
expert (the other groups empty); a case where most experts receive
nothing (T = 3 tokens, 16 experts, top-1); and the SwiGLU expert MLP,
down(silu(gate(x)) * up(x)) with muir.swiglu between three grouped
matmuls. A wrong count moves whole rows between experts, far beyond the
bound.

Bound: max |muir - ref| / max |ref| <= 1e-5 (float32 GEMMs of H = 32:
measured <= 3e-7).
"""
import numpy as np

import muirtest as mt

H, F = 32, 24
CASES = [
    # label, tokens, experts, k, logits maker
    ("gaussian", 64, 8, 2, lambda rng, t, e: rng.standard_normal((t, e))),
    ("all to expert 5", 16, 8, 1,
     lambda rng, t, e: np.where(np.arange(e) == 5, 9.0, 0.0)[None, :]
     .repeat(t, 0) + 0.01 * rng.standard_normal((t, e))),
    ("mostly empty experts", 3, 16, 1,
     lambda rng, t, e: rng.standard_normal((t, e))),
]


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(11)
    chk = mt.Checker()
    for label, t, e, k, make in CASES:
        logits = make(rng, t, e).astype(np.float32)
        rows = t * k
        x = rng.standard_normal((rows, H)).astype(np.float32)
        w = (rng.standard_normal((e, F, H)) / np.sqrt(H)).astype(np.float32)
        m = mt.Module()
        lg = m.arg("logits", (t, e))
        xa = m.arg("x", (rows, H))
        wa = m.arg("w", (e, F, H))
        m.arg("y", (rows, F))
        i, r, c, y = m.value(), m.value(), m.value(), m.value()
        m.op("%s, %s, %s = muir.route %s {top_k = %d} : (%s) -> "
             "(tensor<%dx%dxi64>, %s, tensor<%dxi64>)"
             % (i, r, c, lg, k, mt.ttype((t, e)), t, k, mt.ttype((t, k)), e))
        m.op("%s = muir.grouped_matmul %s, %s, %s {transpose_b} : "
             "(%s, %s, tensor<%dxi64>) -> %s"
             % (y, xa, wa, c, mt.ttype((rows, H)), mt.ttype((e, F, H)), e,
                mt.ttype((rows, F))))
        m.result(y, (rows, F), updates="y")
        out = mt.run_muir(args.muir_run, m.text(),
                          "%s/%s" % (args.tmp, label.replace(" ", "_")),
                          inputs={"logits": logits, "x": x, "w": w,
                                  "y": np.zeros((rows, F), np.float32)})
        # Counts from the reference's own top-k (ties to the lower expert).
        x64 = logits.astype(np.float64)
        idx = np.argsort(-x64, axis=1, kind="stable")[:, :k]
        counts = np.bincount(idx.ravel(), minlength=e)
        want = np.zeros((rows, F))
        start = 0
        for ex in range(e):
            n = counts[ex]
            want[start:start + n] = x[start:start + n].astype(np.float64) @ \
                w[ex].astype(np.float64).T
            start += n
        err = np.abs(out["y"] - want).max() / np.abs(want).max()
        chk.check("%s: %d tokens, %d experts, top-%d, counts %s"
                  % (label, t, e, k, " ".join(map(str, counts))), err, 1e-5)
    # The SwiGLU expert MLP: down(silu(gate(x)) * up(x)) per expert group.
    t, e, k = 48, 8, 2
    rows = t * k
    logits = rng.standard_normal((t, e)).astype(np.float32)
    x = rng.standard_normal((rows, H)).astype(np.float32)
    wg, wu = [(rng.standard_normal((e, F, H)) / np.sqrt(H)).astype(np.float32)
              for _ in range(2)]
    wd = (rng.standard_normal((e, H, F)) / np.sqrt(F)).astype(np.float32)
    m = mt.Module()
    lg, xa = m.arg("logits", (t, e)), m.arg("x", (rows, H))
    ga, ua, da = m.arg("wg", (e, F, H)), m.arg("wu", (e, F, H)), \
        m.arg("wd", (e, H, F))
    m.arg("y", (rows, H))
    i, r, c, g, u, h, y = [m.value() for _ in range(7)]
    m.op("%s, %s, %s = muir.route %s {top_k = %d} : (%s) -> "
         "(tensor<%dx%dxi64>, %s, tensor<%dxi64>)"
         % (i, r, c, lg, k, mt.ttype((t, e)), t, k, mt.ttype((t, k)), e))
    for dst, wa in ((g, ga), (u, ua)):
        m.op("%s = muir.grouped_matmul %s, %s, %s {transpose_b} : "
             "(%s, %s, tensor<%dxi64>) -> %s"
             % (dst, xa, wa, c, mt.ttype((rows, H)), mt.ttype((e, F, H)), e,
                mt.ttype((rows, F))))
    m.op("%s = muir.swiglu %s, %s : %s" % (h, g, u, mt.ttype((rows, F))))
    m.op("%s = muir.grouped_matmul %s, %s, %s {transpose_b} : "
         "(%s, %s, tensor<%dxi64>) -> %s"
         % (y, h, da, c, mt.ttype((rows, F)), mt.ttype((e, H, F)), e,
            mt.ttype((rows, H))))
    m.result(y, (rows, H), updates="y")
    out = mt.run_muir(args.muir_run, m.text(), "%s/mlp" % args.tmp,
                      inputs={"logits": logits, "x": x, "wg": wg, "wu": wu,
                              "wd": wd, "y": np.zeros((rows, H), np.float32)})
    idx = np.argsort(-logits.astype(np.float64), axis=1, kind="stable")[:, :k]
    counts = np.bincount(idx.ravel(), minlength=e)
    want = np.zeros((rows, H))
    start = 0
    for ex in range(e):
        xs = x[start:start + counts[ex]].astype(np.float64)
        gate = xs @ wg[ex].astype(np.float64).T
        up = xs @ wu[ex].astype(np.float64).T
        hid = gate / (1.0 + np.exp(-gate)) * up
        want[start:start + counts[ex]] = hid @ wd[ex].astype(np.float64).T
        start += counts[ex]
    err = np.abs(out["y"] - want).max() / np.abs(want).max()
    chk.check("swiglu expert mlp: %d tokens, %d experts, top-%d" % (t, e, k),
              err, 1e-5)
    chk.finish()


if __name__ == "__main__":
    main()
