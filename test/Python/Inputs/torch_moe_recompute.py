"""muir.torch.MoE(recompute=True): the forward (layer-pass "forward-only", no
saved products written) keeps only x and the weights for the backward (counted by torch.autograd.graph.saved_tensors_hooks: the
bytes autograd holds between the two), the backward is one pass of its own
(layer-pass "recompute": the forward's products computed again inside it,
no second forward), and every output and gradient is bitwise the layer's
without recompute; also with the selection bias (the backward routes with the
forward's bias, even after update_bias() moved it), shared experts,
capacity drops, and under torch.utils.checkpoint; and an inference call
(torch.no_grad) runs forward-only too, bitwise the training forward's y.
"""
import copy

import torch

import muir.torch as mt
import torchtest

torch.manual_seed(0)
failures = torchtest.Failures("torch-moe-recompute", verbose=True)


def check(what, ok):
    failures.check(ok, what)


H, I, E, K, T = 48, 32, 8, 2, 150


def saved_bytes(fn):
    """fn()'s result and the bytes of the storages autograd keeps for the
    backward (a view of x and x itself are one)."""
    held = {}

    def pack(t):
        s = t.untyped_storage()
        held[s.data_ptr()] = s.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(held.values())


def run(layer, x, dy, between=None):
    x = x.clone().requires_grad_(True)
    layer.zero_grad()
    y, held = saved_bytes(lambda: layer(x))
    if between:
        between(layer)
    (y * dy).sum().backward()
    return [y.detach(), x.grad] + [p.grad.clone()
                                  for p in layer.parameters()], held


cases = [("plain", dict()),
         ("shared experts + capacity", dict(shared_experts=1,
                                            capacity_factor=1.0)),
         ("sigmoid, groups, selection bias", dict(
             scoring="sigmoid", groups=4, groups_per_token=2,
             e_score_correction_bias=True))]
for name, kw in cases:
    base = mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K, **kw)
    if base.e_score_correction_bias is not None:
        with torch.no_grad():
            base.e_score_correction_bias.copy_(torch.randn(E) * 0.1)
    again = copy.deepcopy(base)
    again.recompute = True
    x, dy = torch.randn(T, H), torch.randn(T, H)
    move = None
    if "bias" in name:
        # update_bias() between the forward and the backward: the
        # backward routes with the forward's bias either way.
        def move(layer):
            with torch.no_grad():
                layer.e_score_correction_bias.add_(1.0)
    want, held = run(base, x, dy, move)
    forwards = []
    forward = again._forward
    again._forward = lambda *a, **k: forwards.append(1) or forward(*a, **k)
    got, held_r = run(again, x, dy, move)
    passes = sorted(k[1][0] for k in again._passes)
    check("%s: one forward, then the recompute pass (%d forward, passes %s)"
          % (name, len(forwards), ", ".join(passes)),
          len(forwards) == 1 and passes == ["forward-only", "recompute"])
    fwd_only = [p for k, p in again._passes.items()
                if k[1][0] == "forward-only"][0]
    check("%s: the forward-only pass writes y and the loads alone (%s)"
          % (name, ", ".join(sorted(n for n in fwd_only.shapes
                                    if n not in ("x", "tokens")
                                    and n not in base._weight_names
                                    and n != "selection_bias"))),
          not any(n.startswith("saved.") for n in fwd_only.shapes))
    check("%s: outputs and gradients bitwise without recompute's" % name,
          all(torch.equal(a, b) for a, b in zip(got, want)))
    x_w = (T * H + sum(p.numel() for p in base.parameters())) * 4
    check("%s: autograd holds x and the weights only (%d bytes; %d without "
          "recompute)" % (name, held_r, held), held_r <= x_w < held)

# Inference (torch.no_grad) without recompute: the forward-only pass,
# bitwise the training forward's y.
layer = mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K)
x = torch.randn(T, H)
y_train = layer(x.clone().requires_grad_(True)).detach()
with torch.no_grad():
    y_infer = layer(x)
check("no_grad without recompute: passes %s, y bitwise the training "
      "forward's" % ", ".join(sorted(k[1][0] for k in layer._passes)),
      sorted(k[1][0] for k in layer._passes) == ["forward", "forward-only"]
      and torch.equal(y_train, y_infer))

# Under torch.utils.checkpoint (which runs the forward again itself).
layer = mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K, recompute=True)
x, dy = torch.randn(T, H), torch.randn(T, H)
want, _ = run(layer, x, dy)
xc = x.clone().requires_grad_(True)
layer.zero_grad()
y = torch.utils.checkpoint.checkpoint(layer, xc, use_reentrant=False)
(y * dy).sum().backward()
check("torch.utils.checkpoint around a recompute layer: bitwise",
      torch.equal(y.detach(), want[0]) and torch.equal(xc.grad, want[1]))
try:
    mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K, recompute="yes")
except ValueError as e:
    print("refused: %s" % e)
failures.finish()
