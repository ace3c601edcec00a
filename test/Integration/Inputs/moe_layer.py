"""An MoE layer's forward and backward over ep = 1, 2 and 4 ranks, through
muir-run, against an independent float64 reference (PyTorch autograd of the
dense layer: every expert on every token, masked by the routing).

The module routes this rank's tokens (`muir.route`), dispatches them to the
ranks holding their experts (`muir.dispatch`), runs the SwiGLU expert MLP
(`muir.grouped_matmul`, `muir.swiglu`) and combines (`muir.combine` with
the routing weights). Backward from a given output gradient dy: the rows'
gradient is dy dispatched with the weights, the weights' gradient
`muir.combine_weights_grad`, then `muir.grouped_matmul_wgrad`,
`muir.swiglu_grad`, grouped matmuls with the weights, `muir.add`, combine
without weights (dispatch's transpose) for dx, and `muir.route_grad` for
the logits.

Checked per case:
  - y, dx, dlogits and the three expert weight gradients against float64:
    max |muir - ref| / max |ref| <= 1e-5 (measured <= 4e-7);
  - ep = 2 and ep = 4 equal ep = 1 bitwise (every output);
  - each rank's bytes (muir-run --comm-stats) equal the closed form from
    the reference routing: per dispatch 8 (E + g)(g - 1) for the counts'
    all-gather plus, per token and other rank holding any of its experts,
    4 H + 4 K (+ 4 K with weights); per combine 4 H per pair held for
    another rank; per weights gradient 4 H per token sent and 4 per pair
    returned. A token that picks two experts on one rank is counted once,
    so a scheme that sent it twice would fail.

Cases: Qwen3-MoE's router (softmax, normalised), DeepSeek-V3's (sigmoid,
selection bias, 4 groups of which 2, normalised, scaled 2.5), Mixtral's
(softmax after top-k), every token to expert 5 (all other experts, and at
ep = 4 three whole ranks, receive nothing), 3 tokens a rank on 16 experts
(most empty), and capacity mode (`muir.capacity` between route and
dispatch, blocks of 12 tokens) dropping by weight and by position: the
reference drops by the same rule, in its own code.
"""
import numpy as np
import torch

import muirtest as mt

torch.set_num_threads(1)

H, F = 16, 12
CASES = [
    # label, tokens (global), experts, k, route attrs, logits maker
    ("qwen3 softmax", 48, 8, 2, {"normalize": True}, None),
    ("deepseek sigmoid groups bias", 48, 8, 2,
     {"scoring": "sigmoid", "normalize": True, "n_group": 4,
      "topk_group": 2, "scaling": 2.5, "bias": True}, None),
    ("mixtral softmax after top-k", 48, 8, 2,
     {"softmax_after_topk": True}, None),
    ("all to expert 5", 16, 8, 2, {"normalize": True},
     lambda rng, t, e: np.where(np.arange(e) == 5, 9.0, 0.0)[None, :]
     .repeat(t, 0) + 0.01 * rng.standard_normal((t, e))),
    ("mostly empty", 12, 16, 1, {}, None),
    # Capacity mode, blocks of 12 tokens (whole blocks on every rank at
    # ep = 1, 2, 4): C = ceil(1.0 * 12 * 2 / 8) = 3 and ceil(0.5 * 3) = 2.
    ("capacity 1.0 by weight", 48, 8, 2,
     {"normalize": True,
      "capacity": {"factor": 1.0, "policy": "weight", "group": 12}}, None),
    ("capacity 0.5 by position", 48, 8, 2,
     {"normalize": True,
      "capacity": {"factor": 0.5, "policy": "position", "group": 12}}, None),
]


def select(logits, bias, k, attrs):
    """The reference's own top-k (float64; ties to the lower expert)."""
    l64 = logits.astype(np.float64)
    if attrs.get("scoring") == "sigmoid":
        s = 1.0 / (1.0 + np.exp(-l64))
    else:
        s = np.exp(l64 - l64.max(1, keepdims=True))
        s /= s.sum(1, keepdims=True)
    sel = s + (bias.astype(np.float64) if bias is not None else 0.0)
    t, e = sel.shape
    ng = attrs.get("n_group", 1)
    if ng > 1:
        grp = sel.reshape(t, ng, e // ng)
        top2 = -np.sort(-grp, axis=2)[:, :, :2].sum(2)
        keep = np.argsort(-top2, axis=1, kind="stable")[:, :attrs["topk_group"]]
        mask = np.full((t, ng), -np.inf)
        np.put_along_axis(mask, keep, 0.0, axis=1)
        sel = (grp + mask[:, :, None]).reshape(t, e)
    return np.argsort(-sel, axis=1, kind="stable")[:, :k]


def reference(inp, k, attrs):
    """float64 dense layer with autograd: y and the gradients."""
    d = {n: torch.tensor(a.astype(np.float64), requires_grad=True)
         for n, a in inp.items() if n in ("logits", "x", "w_gate", "w_up",
                                          "w_down")}
    logits = d["logits"]
    idx = torch.tensor(select(inp["logits"], inp.get("bias"), k, attrs))
    t, e = logits.shape
    if attrs.get("softmax_after_topk"):
        w = torch.softmax(torch.gather(logits, 1, idx), dim=1)
    else:
        s = (torch.sigmoid(logits) if attrs.get("scoring") == "sigmoid"
             else torch.softmax(logits, dim=1))
        w = torch.gather(s, 1, idx)
    if attrs.get("normalize"):
        w = w / w.sum(1, keepdim=True)
    w = w * attrs.get("scaling", 1.0)
    kept = idx.numpy()
    cap = attrs.get("capacity")
    if cap:
        keep = mt.capacity_keep(idx.numpy(), w.detach().numpy(), e,
                                cap["factor"], cap["policy"], cap["group"])
        w = w * torch.tensor(keep, dtype=torch.float64)
        kept = np.where(keep, idx.numpy(), -1)
    mask = torch.zeros(t, e, dtype=torch.float64)
    mask = mask.scatter(1, idx, w)          # [t, e]: weight or 0
    x = d["x"]
    gate = torch.einsum("th,efh->tef", x, d["w_gate"])
    up = torch.einsum("th,efh->tef", x, d["w_up"])
    act = torch.nn.functional.silu(gate) * up
    out = torch.einsum("tef,ehf->teh", act, d["w_down"])
    y = (mask[:, :, None] * out).sum(1)
    y.backward(torch.tensor(inp["dy"].astype(np.float64)))
    return kept, {
        "y": y.detach().numpy(), "dx": d["x"].grad.numpy(),
        "dlogits": d["logits"].grad.numpy(),
        "dw_gate": d["w_gate"].grad.numpy(), "dw_up": d["w_up"].grad.numpy(),
        "dw_down": d["w_down"].grad.numpy()}


def closed_form_bytes(idx, g, e, k):
    """{rank: bytes sent over ep} for the module's two dispatches, two
    combines and one weights gradient."""
    t = idx.shape[0] // g
    el = e // g
    out = {}
    for r in range(g):
        mine = idx[r * t:(r + 1) * t]
        tokens_out = sum(len({int(x) // el for x in row if x >= 0} - {r})
                         for row in mine)
        # pairs this rank holds whose token lives elsewhere
        pairs_back = sum(1 for s in range(g) if s != r
                         for row in idx[s * t:(s + 1) * t]
                         for x in row if int(x) // el == r)
        gather = 8 * (e + g) * (g - 1)
        dispatch = gather + tokens_out * (4 * H + 4 * k)
        dispatch_w = gather + tokens_out * (4 * H + 8 * k)
        combine = pairs_back * 4 * H
        wgrad = tokens_out * 4 * H + pairs_back * 4
        out[r] = dispatch + dispatch_w + 2 * combine + wgrad
    return out


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(5)
    chk = mt.Checker()
    for label, t, e, k, attrs, make in CASES:
        logits = (make(rng, t, e) if make else
                  rng.standard_normal((t, e))).astype(np.float32)
        inp = {"logits": logits,
               "x": rng.standard_normal((t, H)).astype(np.float32),
               "dy": rng.standard_normal((t, H)).astype(np.float32),
               "w_gate": (rng.standard_normal((e, F, H)) / 4)
               .astype(np.float32),
               "w_up": (rng.standard_normal((e, F, H)) / 4)
               .astype(np.float32),
               "w_down": (rng.standard_normal((e, H, F)) / 3.5)
               .astype(np.float32)}
        if attrs.get("bias"):
            inp["bias"] = (0.1 * rng.standard_normal(e)).astype(np.float32)
        idx, ref = reference(inp, k, attrs)
        if attrs.get("capacity"):
            label += " (%d of %d pairs dropped)" % ((idx < 0).sum(), idx.size)
        zeros = {n: np.zeros_like(a) for n, a in ref.items()}
        results = {}
        for g in (1, 2, 4):
            if e % g or t % g:
                continue
            text = mt.moe_layer_module(g, t // g, e, k, H, F, attrs)
            work = "%s/%s-ep%d" % (args.tmp, label.replace(" ", "_"), g)
            extra = ["--quiet", "--no-probes", "--comm-stats"]
            if g > 1:
                extra += ["--ranks", str(g)]
            out = mt.run_muir(args.muir_run, text, work,
                              inputs=dict(inp, **zeros), extra=extra)
            results[g] = out
            if g == 1:
                errs = [np.abs(out[n] - ref[n]).max() /
                        max(np.abs(ref[n]).max(), 1e-30) for n in ref]
                chk.check("%s: ep 1 vs float64 (y, dx, dlogits, dw)" % label,
                          max(errs), 1e-5)
            else:
                same = all(np.array_equal(out[n], results[1][n]) for n in ref)
                chk.expect("%s: ep %d bitwise equal to ep 1" % (label, g),
                           same, "; ".join(
                               "%s %s" % (n, mt.compare_bits(out[n],
                                                             results[1][n]))
                               for n in ref))
            with open(work + "/stdout.txt") as f:
                sent, _ = mt.comm_stats(f.read())
            want = closed_form_bytes(idx, g, e, k)
            got = {r: sum(b for (rr, _), b in sent.items() if rr == r)
                   for r in range(g)}
            chk.expect("%s: ep %d bytes per rank %s equal the closed form"
                       % (label, g, " ".join(str(got[r]) for r in range(g))),
                       got == want, "closed form %s" % want)
    chk.finish()


if __name__ == "__main__":
    main()
