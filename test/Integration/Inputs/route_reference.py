"""muir.route (run by muir-run) vs a float64 reference written here.

Each case routes T = 64 tokens of Gaussian router logits and returns the
top-k weights [T, K] (dumped as a float32 tensor); the reference computes
the same routing in float64 with NumPy, independently of the runtime:
scores by softmax or sigmoid, selection scores = scores + bias, the best
topk_group of n_group groups (a group scores the sum of its two best
selection scores), a stable sort for the top-k (ties to the lower expert),
then the weights (the unbiased scores, or the softmax of the k logits),
normalised and scaled as asked. A wrong expert choice changes a weight by
far more than the bound; indices and counts are checked exactly by the
runtime unit test (test/unit/RuntimeTest.cpp, Route.*).

Bound: max |muir - ref| / max |ref| <= 1e-6 (the runtime also computes in
double and rounds once to float32: measured <= 6e-8).
"""
import numpy as np

import muirtest as mt

T = 64
CASES = [
    # label, experts, k, attrs, bias
    ("qwen3 softmax normalize", 16, 4, "normalize", False),
    ("mixtral softmax after top-k", 8, 2, "softmax_after_topk", False),
    ("deepseek-v3 sigmoid bias groups", 16, 4,
     "scoring = #muir<route_scoring sigmoid>, n_group = 4, topk_group = 2, "
     "normalize, scaling = 2.5", True),
    ("softmax plain", 8, 3, "", False),
    ("sigmoid top-1", 8, 1, "scoring = #muir<route_scoring sigmoid>", False),
]


def reference(logits, bias, k, attrs):
    x = logits.astype(np.float64)
    if "sigmoid" in attrs:
        s = 1.0 / (1.0 + np.exp(-x))
    else:
        z = np.exp(x - x.max(axis=1, keepdims=True))
        s = z / z.sum(axis=1, keepdims=True)
    sel = s + (bias.astype(np.float64) if bias is not None else 0.0)
    t, e = x.shape
    groups = 4 if "n_group = 4" in attrs else 1
    keep = 2 if "topk_group = 2" in attrs else groups
    if groups > 1:
        g = sel.reshape(t, groups, e // groups)
        top2 = -np.sort(-g, axis=2)[:, :, :2].sum(axis=2)
        best = np.argsort(-top2, axis=1, kind="stable")[:, :keep]
        mask = np.zeros((t, groups), bool)
        np.put_along_axis(mask, best, True, axis=1)
        sel = np.where(np.repeat(mask, e // groups, axis=1), sel, -np.inf)
    idx = np.argsort(-sel, axis=1, kind="stable")[:, :k]
    if "softmax_after_topk" in attrs:
        chosen = np.take_along_axis(x, idx, axis=1)
        z = np.exp(chosen - chosen.max(axis=1, keepdims=True))
        w = z / z.sum(axis=1, keepdims=True)
    else:
        w = np.take_along_axis(s, idx, axis=1)
    if "normalize" in attrs:
        w = w / w.sum(axis=1, keepdims=True)
    if "scaling = 2.5" in attrs:
        w = w * 2.5
    return w


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(7)
    chk = mt.Checker()
    for label, experts, k, attrs, has_bias in CASES:
        logits = rng.standard_normal((T, experts)).astype(np.float32)
        bias = (rng.standard_normal(experts) * 0.1).astype(np.float32) \
            if has_bias else None
        m = mt.Module()
        lg = m.arg("logits", (T, experts))
        operands, types = lg, [mt.ttype((T, experts))]
        inputs = {"logits": logits, "w": np.zeros((T, k), np.float32)}
        if bias is not None:
            b = m.arg("bias", (experts,))
            operands += " bias " + b
            types.append(mt.ttype((experts,)))
            inputs["bias"] = bias
        m.arg("w", (T, k))
        i, w, c = m.value(), m.value(), m.value()
        m.op("%s, %s, %s = muir.route %s {top_k = %d%s} : (%s) -> "
             "(tensor<%dx%dxi64>, %s, tensor<%dxi64>)"
             % (i, w, c, operands, k, (", " + attrs) if attrs else "",
                ", ".join(types), T, k, mt.ttype((T, k)), experts))
        m.result(w, (T, k), updates="w")
        out = mt.run_muir(args.muir_run, m.text(),
                          "%s/%s" % (args.tmp, label.replace(" ", "_")),
                          inputs=inputs)
        want = reference(logits, bias, k, attrs)
        err = np.abs(out["w"] - want).max() / np.abs(want).max()
        chk.check("%s: %d tokens, %d experts, top-%d" % (label, T, experts, k),
                  err, 1e-6)
    chk.finish()


if __name__ == "__main__":
    main()
