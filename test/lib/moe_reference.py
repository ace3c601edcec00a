"""Float64 references of muir's trained MoE layers (PyTorch autograd on the
CPU), shared by moe_train.py (the CPU backend) and cuda_moe.py (the CUDA
backend).

A layer is the dense masked form: every expert's SwiGLU on every token,
combined with the routing weights of the experts the reference selects
itself (softmax or sigmoid scores; with groups, the groups_per_token
groups of the largest top-2 sums; top_k by score, ties to the lower
expert; sigmoid weights normalised; scaled by routed_scaling; capacity
drops by muirtest.capacity_keep's rule). The loss is half the squared
error against the teacher layer's output, summed over the features and
averaged over the tokens, as muir's `training: {data: teacher}` computes it.
"""
import numpy as np
import torch

import muirtest as mt


def route(x, router, attrs, experts, top_k):
    """The routing of tokens x [T, H] in float64: the chosen experts idx
    [T, K] and their weights w [T, K] (autograd through the scores). With
    attrs["selection_bias"] (a sequence of E numbers) the experts and groups
    are chosen by score + bias, and the weights are the unbiased scores."""
    logits = x @ router.T
    sig = attrs.get("scoring", "softmax") == "sigmoid"
    s = torch.sigmoid(logits) if sig else torch.softmax(logits, dim=1)
    sel = s.detach().numpy()
    bias = attrs.get("selection_bias")
    if bias is not None:
        sel = sel + np.asarray(bias, dtype=np.float64)[None, :]
    groups = attrs.get("groups", 1)
    if groups > 1:
        t = sel.shape[0]
        g = sel.reshape(t, groups, experts // groups)
        score = -np.sort(-g, axis=2)[:, :, :2].sum(2)
        keep = np.argsort(-score, axis=1,
                          kind="stable")[:, :attrs["groups_per_token"]]
        mask = np.full((t, groups), -np.inf)
        np.put_along_axis(mask, keep, 0.0, axis=1)
        sel = (g + mask[:, :, None]).reshape(t, experts)
    idx = torch.tensor(np.argsort(-sel, axis=1, kind="stable")[:, :top_k])
    w = torch.gather(s, 1, idx)
    if sig:
        w = w / w.sum(1, keepdim=True)
    return idx, w * attrs.get("routed_scaling", 1.0)


def layer(x, router, gate, up, down, attrs, experts, top_k, capacity=None):
    """The layer's output for tokens x [T, H] in float64. `attrs`: scoring,
    groups, groups_per_token, routed_scaling, selection_bias (route);
    `capacity`: (factor, policy) over all T tokens, (factor, policy, G) over
    each block of G tokens, or None."""
    idx, w = route(x, router, attrs, experts, top_k)
    if capacity:
        keep = mt.capacity_keep(idx.numpy(), w.detach().numpy(), experts,
                                capacity[0], capacity[1],
                                capacity[2] if len(capacity) > 2
                                else x.shape[0])
        w = w * torch.tensor(keep, dtype=torch.float64)
    mask = torch.zeros(x.shape[0], experts, dtype=torch.float64).scatter(
        1, idx, w)
    gt = torch.einsum("th,efh->tef", x, gate)
    u = torch.einsum("th,efh->tef", x, up)
    out = torch.einsum("tef,ehf->teh", torch.nn.functional.silu(gt) * u, down)
    return (mask[:, :, None] * out).sum(1)


def step1(values, layers, experts, top_k, shared=()):
    """({<param>.grad: array}, {layer: loss}) of a step's first forward and
    backward pass, in float64, from the step's inputs `values` (the
    parameters, `<layer>.data.tokens` and `<layer>.teacher.*`). `layers`:
    {name: attrs, with an optional "capacity": (factor, policy)};
    `shared`: the layers that have one shared expert."""
    grads, losses = {}, {}

    def d(n, g=False):
        return torch.tensor(np.asarray(values[n], np.float64),
                            requires_grad=g)
    for l, attrs in layers.items():
        x = d(l + ".data.tokens")
        cap = attrs.get("capacity")
        target = layer(x, d(l + ".teacher.router"),
                       d(l + ".teacher.gate_proj"), d(l + ".teacher.up_proj"),
                       d(l + ".teacher.down_proj"), attrs, experts, top_k,
                       cap).detach()
        names = [l + ".router", l + ".experts.gate_proj",
                 l + ".experts.up_proj", l + ".experts.down_proj"]
        if l in shared:
            names += [l + ".shared_experts.gate_proj",
                      l + ".shared_experts.up_proj",
                      l + ".shared_experts.down_proj"]
        params = [d(n, True) for n in names]
        y = layer(x, *params[:4], attrs, experts, top_k, cap)
        if len(params) > 4:   # the shared expert, on every token
            sg, su, sd = params[4:]
            y = y + (torch.nn.functional.silu(x @ sg.T) * (x @ su.T)) @ sd.T
        loss = 0.5 * ((y - target) ** 2).sum() / x.shape[0]
        loss.backward()
        losses[l] = loss.item()
        for n, p in zip(names, params):
            grads[n + ".grad"] = p.grad.numpy()
    return grads, losses


def losses_of(text):
    """{layer: [loss at step 1, 2, ...]} from muir-run's (or the step
    runner's) output lines `  loss <layer> <value>`."""
    import re
    out = {}
    for m in re.finditer(r"^  loss (\S+) (\S+)$", text, re.M):
        out.setdefault(m.group(1), []).append(float(m.group(2)))
    return out
