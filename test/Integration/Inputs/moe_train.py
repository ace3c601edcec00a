"""An MoE training step compiled from a description (`training: {data:
teacher}`), run by muir-run at ep = 1, 2 and 4.

Two layers: l0 with Qwen-style softmax routing, l1 with DeepSeek-style
sigmoid routing over 4 expert groups (2 per token), normalised and scaled
by 2.5. Each learns to imitate a fixed random teacher layer on the same
synthetic tokens: the step runs the teacher's forward pass, the student's,
the loss (the mean over all tokens of half the squared error), the backward
pass, then Muon on the expert stacks and AdamW on the router.

Checked:
  - the gradients the step computes (dumped as <param>.grad after step 1)
    against an independent float64 reference: PyTorch autograd of the dense
    masked layers (every expert on every token), with the routing the
    reference selects itself: max |muir - ref| / max |ref| <= 1e-5
    (measured <= 1e-6);
  - the loss printed at step 1 against the reference's, within 1e-5;
  - ep = 2 and ep = 4 (tokens split over the ranks, experts split over the
    ranks) equal ep = 1 bitwise in every tensor after 3 steps: parameters,
    gradients, momentum and Adam moments;
  - with two replicas of the experts (moe_axes edp = 2, ep = 2), step 1's
    gradients equal ep = 1's within 1e-5 (sums over the replicas round
    differently: measured <= 1e-6);
  - l0 in capacity mode (capacity_factor 0.75, drops by position): step
    1's gradients against the reference dropping by the same rule; and
    by weight over blocks of 24 tokens (capacity_tokens: 24) at ep = 1,
    against the reference dropping per block, and at ep = 4 (24 tokens a
    rank) bitwise equal to ep = 1;
  - l1 with a shared expert (shared_experts: 1): step 1's gradients of
    its seven parameters at ep = 1 and ep = 4 within 1e-5;
  - over 6 steps the loss of both layers decreases at every step.
"""
import os

import numpy as np
import torch

import moe_reference
import muirtest as mt

torch.set_num_threads(1)

E, H, F, K, TOKENS = 8, 32, 48, 2, 96
LAYERS = {
    "l0": {"scoring": "softmax"},
    "l1": {"scoring": "sigmoid", "groups": 4, "groups_per_token": 2,
           "routed_scaling": 2.5},
}


def description(ep, edp=1, capacity=None, shared=False):
    grid = "{dp: 1}" if ep == 1 else "{ep: %d}" % ep
    if edp > 1:
        grid = "{dp: %d}\n  moe_axes: {edp: %d, ep: %d}" % (ep * edp, edp, ep)
    lines = ["name: train-test", "grid:", "  axes: %s" % grid,
             "training: {data: teacher}",
             "optimizer:",
             "  muon: {lr: 0.05, momentum: 0.9, nesterov: true, "
             "ns_steps: 5, schedule: quintic}",
             "  adamw: {lr: 1.0e-3, weight_decay: 0}",
             "parameters:"]
    for l in LAYERS:
        lines += [
            "  - {name: %s.router, shape: [%d, %d], role: router}" % (l, E, H),
            "  - {name: %s.experts.gate_proj, shape: [%d, %d, %d], "
            "role: expert}" % (l, E, F, H),
            "  - {name: %s.experts.up_proj, shape: [%d, %d, %d], "
            "role: expert}" % (l, E, F, H),
            "  - {name: %s.experts.down_proj, shape: [%d, %d, %d], "
            "role: expert}" % (l, E, H, F)]
    if shared:
        lines += [
            "  - {name: l1.shared_experts.gate_proj, shape: [%d, %d], "
            "role: mlp}" % (F, H),
            "  - {name: l1.shared_experts.up_proj, shape: [%d, %d], "
            "role: mlp}" % (F, H),
            "  - {name: l1.shared_experts.down_proj, shape: [%d, %d], "
            "role: mlp}" % (H, F)]
    lines.append("moe:")
    for l, a in LAYERS.items():
        if shared and l == "l1":
            a = dict(a, shared_experts=1)
        if capacity and l == "l0":
            a = dict(a, capacity_factor=capacity[0], drop_policy=capacity[1])
            if len(capacity) > 2:
                a["capacity_tokens"] = capacity[2]
        extra = "".join(", %s: %s" % (k, v) for k, v in a.items())
        lines.append("  - {name: %s, experts: %d, top_k: %d, hidden: %d, "
                     "expert_size: %d, tokens_per_rank: %d%s}"
                     % (l, E, K, H, F, TOKENS // (ep * edp), extra))
    return "\n".join(lines) + "\n"


def inputs(rng):
    t = {}
    for l in LAYERS:
        t[l + ".router"] = 0.3 * rng.standard_normal((E, H)) / np.sqrt(H)
        for p in ("gate_proj", "up_proj"):
            t["%s.experts.%s" % (l, p)] = \
                0.5 * rng.standard_normal((E, F, H)) / np.sqrt(H)
            t["%s.teacher.%s" % (l, p)] = \
                rng.standard_normal((E, F, H)) / np.sqrt(H)
        t[l + ".experts.down_proj"] = \
            0.5 * rng.standard_normal((E, H, F)) / np.sqrt(F)
        t[l + ".teacher.down_proj"] = rng.standard_normal((E, H, F)) / np.sqrt(F)
        t[l + ".teacher.router"] = rng.standard_normal((E, H)) / np.sqrt(H)
        t[l + ".data.tokens"] = rng.standard_normal((TOKENS, H))
    t["l1.shared_experts.gate_proj"] = 0.5 * rng.standard_normal((F, H)) / \
        np.sqrt(H)
    t["l1.shared_experts.up_proj"] = 0.5 * rng.standard_normal((F, H)) / \
        np.sqrt(H)
    t["l1.shared_experts.down_proj"] = 0.5 * rng.standard_normal((H, F)) / \
        np.sqrt(F)
    return {n: a.astype(np.float32) for n, a in t.items()}


def reference(inp, capacity=None, shared=False):
    """{<param>.grad: array} and {layer: loss} of step 1, in float64
    (`capacity`: (factor, policy) on l0; `shared`: l1's shared expert)."""
    layers = {l: dict(a, capacity=capacity if l == "l0" else None)
              for l, a in LAYERS.items()}
    return moe_reference.step1(inp, layers, E, K,
                               shared=("l1",) if shared else ())


losses_of = moe_reference.losses_of


def rel_err(got, want, names):
    """The largest over `names` of max |got - want| / max |want|."""
    return max(np.abs(got[n] - want[n]).max() / np.abs(want[n]).max()
               for n in names)


def bitwise(chk, label, want, got):
    """Every tensor of `want` bitwise in `got`, and no other (`label` takes
    the count)."""
    differ = sorted(n for n in want if not np.array_equal(want[n], got.get(n)))
    chk.expect(label % len(want), not differ and len(got) == len(want),
               "differ: %s" % differ)


def run(args, ep, inp, steps, name, edp=1, capacity=None, shared=False,
        extra=()):
    work = os.path.join(args.tmp, name)
    os.makedirs(work, exist_ok=True)
    desc = os.path.join(work, "train.yaml")
    with open(desc, "w") as f:
        f.write(description(ep, edp, capacity, shared))
    load = os.path.join(work, "in")
    for n, a in inp.items():
        mt.write_npy(load, n, a)
    dump = os.path.join(work, "out")
    cmd = [args.muir_run, desc, "--steps", str(steps), "--load", load,
           "--dump", dump, "--no-probes", *extra]
    if ep * edp > 1:
        cmd += ["--ranks", str(ep * edp)]
    text = mt.check_output(cmd)
    return mt.read_dump(dump), losses_of(text)


def main():
    args = mt.parse_args(__doc__)
    rng = np.random.default_rng(17)
    chk = mt.Checker()
    inp = inputs(rng)
    ref, ref_loss = reference(inp)
    one, loss1 = run(args, 1, inp, 1, "grads")
    for n, want in ref.items():
        err = np.abs(one[n] - want).max() / np.abs(want).max()
        chk.check("step 1 gradient %s vs float64" % n, err, 1e-5)
    for l in LAYERS:
        err = abs(loss1[l][0] - ref_loss[l]) / ref_loss[l]
        chk.check("step 1 loss %s %.6f vs float64 %.6f"
                  % (l, loss1[l][0], ref_loss[l]), err, 1e-5)
    base, _ = run(args, 1, inp, 3, "ep1")
    for ep in (2, 4):
        out, _ = run(args, ep, inp, 3, "ep%d" % ep)
        bitwise(chk, "ep %d: all %%d tensors after 3 steps bitwise equal to "
                "ep 1" % ep, base, out)
    # Two replicas of the experts (edp = 2) beside ep = 2: each rank sees a
    # quarter of the tokens, the replicas' gradients are summed (in another
    # order than one rank's sum, so within rounding, not bitwise).
    four, _ = run(args, 2, inp, 1, "edp2", edp=2)
    err = rel_err(four, one, ref)
    chk.check("edp 2 x ep 2: step 1 gradients vs ep 1", err, 1e-5)
    # The same layout in the layout-invariant mode: the two replicas of each
    # ep stack split its experts between them, and each expert's products
    # take every rank's tokens that chose it (the experts renumbered, edp
    # coming before ep in the grid), so nothing is summed over the
    # replicas: step 1 against float64, and bitwise one rank's in the mode.
    li = ["--deterministic=layout-invariant"]
    spread, _ = run(args, 2, inp, 1, "edp2-li", edp=2, extra=li)
    err = rel_err(spread, ref, ref)
    chk.check("edp 2 x ep 2, layout-invariant: step 1 gradients vs float64",
              err, 1e-5)
    alone, _ = run(args, 1, inp, 1, "ep1-li", extra=li)
    bitwise(chk, "edp 2 x ep 2, layout-invariant: all %d tensors after step 1 "
            "bitwise equal to one rank's", alone, spread)
    # Capacity mode on l0 (capacity_factor 0.75, drops by position over the
    # rank's tokens): step 1's gradients against the reference's own drops.
    cap = (0.75, "position")
    cref, _ = reference(inp, cap)
    capped, _ = run(args, 1, inp, 1, "capacity", capacity=cap)
    l0 = [n for n in cref if n.startswith("l0.")]
    err, moved = rel_err(capped, cref, l0), rel_err(cref, ref, l0)
    chk.check("l0 with capacity_factor 0.75 by position: step 1 gradients "
              "vs float64 (the drops move them by %.2f)" % moved, err, 1e-5)
    # The check above tells dropping from not dropping only if the drops
    # move the gradients far more than its bound.
    chk.expect("l0 capacity drops move the step 1 gradients by %.2f, over "
               "100 times the bound" % moved, moved > 100 * 1e-5,
               "moved %.3e" % moved)
    # Capacity counted over blocks of 24 tokens (capacity_tokens): the
    # reference drops per block; the blocks must move the gradients away
    # from drops over all 96 tokens. At ep = 4 each rank holds one block,
    # so the drops, and every tensor, are ep = 1's.
    blocks = (1.0, "weight", 24)
    bref, _ = reference(inp, blocks)
    wref, _ = reference(inp, blocks[:2])
    capped, _ = run(args, 1, inp, 1, "blocks", capacity=blocks)
    err, moved = rel_err(capped, bref, l0), rel_err(bref, wref, l0)
    chk.check("l0 with capacity_factor 1.0 by weight over blocks of 24 "
              "tokens: step 1 gradients vs float64", err, 1e-5)
    chk.expect("l0 capacity over blocks of 24 tokens moves the step 1 "
               "gradients by %.2f from capacity over all 96, over 100 times "
               "the bound" % moved, moved > 100 * 1e-5, "moved %.3e" % moved)
    out, _ = run(args, 4, inp, 1, "blocks-ep4", capacity=blocks)
    bitwise(chk, "l0 with capacity over blocks of 24 tokens, ep 4: all %d "
            "tensors after step 1 bitwise equal to ep 1", capped, out)
    # A shared expert beside l1's routed ones (every token, summed into the
    # output): step 1's gradients of all seven of l1's parameters at ep = 1,
    # and at ep = 4, where its products run over each rank's tokens and its
    # gradients are summed over the ranks (within rounding).
    sref, _ = reference(inp, shared=True)
    for ep in (1, 4):
        out, _ = run(args, ep, inp, 1, "shared-ep%d" % ep, shared=True)
        names = [n for n in sref if n.startswith("l1.")]
        err = rel_err(out, sref, names)
        chk.check("l1 with a shared expert, ep %d: step 1 gradients of its "
                  "%d parameters vs float64" % (ep, len(names)), err, 1e-5)
    # The same in the layout-invariant mode, on one rank and on edp 2 x
    # ep 2: the shared expert runs on every token of the folding on every
    # rank (this rank's rows kept), so its gradients are whole on each rank
    # and nothing is summed: against float64, and bitwise one rank's.
    li = ["--deterministic=layout-invariant"]
    alone, _ = run(args, 1, inp, 1, "shared-li-ep1", shared=True, extra=li)
    spread, _ = run(args, 2, inp, 1, "shared-li-edp2", edp=2, shared=True,
                    extra=li)
    names = [n for n in sref if n.startswith("l1.")]
    err = rel_err(spread, sref, names)
    chk.check("l1 with a shared expert, edp 2 x ep 2, layout-invariant: step "
              "1 gradients of its %d parameters vs float64" % len(names),
              err, 1e-5)
    bitwise(chk, "l1 with a shared expert, edp 2 x ep 2, layout-invariant: "
            "all %d tensors after step 1 bitwise equal to one rank's", alone,
            spread)
    _, losses = run(args, 1, inp, 6, "six")
    for l in LAYERS:
        seq = losses[l]
        chk.expect("%s: loss decreases every step over 6 steps (%s)"
                   % (l, " ".join("%.4f" % v for v in seq)),
                   len(seq) == 6 and all(b < a for a, b in zip(seq, seq[1:])))
    chk.finish()


if __name__ == "__main__":
    main()
