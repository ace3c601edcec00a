"""muir.torch.MoE's selection bias (e_score_correction_bias=True: the
description's selection_bias) against the float64 reference
(test/lib/moe_reference.py, written from the formulas): the bias changes
which experts a token takes (sigmoid scores, 4 groups of which 2 compete)
but not their weights, forward and backward; and the aux-loss-free update
(update_bias) against a float64 reference of its rule over several steps.

  torch_moe_bias.py route DIR    the routing, forward and backward; every
                                 stage muir-compile writes (DIR) runs
  torch_moe_bias.py update       update_bias over several steps, on 1 rank

Tolerance (as torch_moe.py's): max |muir - ref| / max |ref| <= 2e-5; the
choice of experts must agree exactly (random Gaussian tokens, no near-ties;
the biases are multiples of 1/16, exact in float32).
"""
import copy
import os
import subprocess
import sys

import numpy as np
import torch

import moe_reference
import muir
import muir.torch as mt

H, F, E, K = 32, 48, 8, 2
F64 = torch.float64
SETTINGS = dict(hidden=H, expert_size=F, experts=E, top_k=K,
                scoring="sigmoid", groups=4, groups_per_token=2,
                routed_scaling=2.5)
ATTRS = dict(scoring="sigmoid", groups=4, groups_per_token=2,
             routed_scaling=2.5)
BIAS = [0.25, -0.125, 0.0, 0.1875, -0.25, 0.0625, 0.125, -0.0625]
WEIGHTS = ("router", "gate_proj", "up_proj", "down_proj")
failures = []


def check(what, ok, detail=""):
    print("%s %s%s" % (what, "ok" if ok else "FAIL",
                       (" (%s)" % detail) if detail else ""))
    if not ok:
        failures.append(what)


def rel(got, want):
    scale = float(want.abs().max())
    return float((got.to(F64) - want).abs().max()) / scale


def compare(what, got, want, tol=2e-5):
    r = rel(got, want)
    check(what, r <= tol, "rel err %.1e" % r)


def make(**kw):
    torch.manual_seed(0)
    return mt.MoE(e_score_correction_bias=True, **dict(SETTINGS, **kw))


def data(T, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, H, generator=g), torch.randn(T, H, generator=g)


def reference(layer, x, dy, bias):
    """y, the weights' gradients of <y, dy>, and the chosen experts, in
    float64, with the selection bias `bias` (None: none)."""
    w = {n: getattr(layer, n).detach().to(F64).requires_grad_(True)
         for n in WEIGHTS}
    xr = x.to(F64).requires_grad_(True)
    attrs = dict(ATTRS, selection_bias=bias) if bias is not None else ATTRS
    y = moe_reference.layer(xr, w["router"], w["gate_proj"], w["up_proj"],
                            w["down_proj"], attrs, E, K)
    (y * dy.to(F64)).sum().backward()
    idx, _ = moe_reference.route(x.to(F64), w["router"].detach(), attrs, E,
                                 K)
    grads = {n: t.grad for n, t in w.items()}
    grads["x"] = xr.grad
    return y.detach(), grads, idx


def run(layer, x, dy, change_bias=None):
    """y and the gradients of layer's forward and backward; change_bias:
    the bias set between the two."""
    xm = x.clone().requires_grad_(True)
    y = layer(xm)
    if change_bias is not None:
        with torch.no_grad():
            layer.e_score_correction_bias.copy_(torch.tensor(change_bias))
    (y * dy).sum().backward()
    out = {"y": y.detach().clone(), "x": xm.grad.clone(),
           "tokens_per_expert": layer.tokens_per_expert.clone()}
    for n in WEIGHTS:
        out[n] = getattr(layer, n).grad.clone()
        getattr(layer, n).grad = None
    return out


def run_pass(step, inputs, tokens):
    """Runs a compiled layer pass on `inputs` (name -> tensor): its results
    (its other tensor arguments) by name."""
    outs = {a.name: torch.empty(a.shape, dtype=torch.int64
                                if a.dtype == "int64" else torch.float32)
            for a in step.arguments
            if a.is_tensor and a.name not in inputs}
    for name, t in list(inputs.items()) + list(outs.items()):
        step.bind(name, t.data_ptr())
    step.run(counter=tokens)
    return outs


def route_main(stages):
    layer = make()
    with torch.no_grad():
        layer.e_score_correction_bias.copy_(torch.tensor(BIAS))
    T = 53
    x, dy = data(T, 1)
    y_ref, g_ref, idx = reference(layer, x, dy, BIAS)
    _, _, idx0 = reference(layer, x, dy, None)
    moved = sum(set(a.tolist()) != set(b.tolist())
                for a, b in zip(idx, idx0))
    check("the bias moves tokens to other experts", moved > 0,
          "%d of %d tokens" % (moved, T))
    got = run(layer, x, dy)
    want = torch.bincount(idx.reshape(-1), minlength=E)
    check("tokens_per_expert: the biased choice",
          torch.equal(got["tokens_per_expert"], want),
          "%s" % got["tokens_per_expert"].tolist())
    check("tokens_per_expert: not the unbiased choice",
          not torch.equal(got["tokens_per_expert"],
                          torch.bincount(idx0.reshape(-1), minlength=E)))
    compare("y", got["y"], y_ref)
    # The weights are the unbiased scores: with the biased ones instead
    # y is far off.
    w = {n: getattr(layer, n).detach().to(F64) for n in WEIGHTS}
    s = torch.sigmoid(x.to(F64) @ w["router"].T) + torch.tensor(BIAS, dtype=F64)
    wb = s.gather(1, idx)
    wb = wb / wb.sum(1, keepdim=True) * 2.5
    gt = torch.einsum("th,efh->tef", x.to(F64), w["gate_proj"])
    u = torch.einsum("th,efh->tef", x.to(F64), w["up_proj"])
    out = torch.einsum("tef,ehf->teh", torch.nn.functional.silu(gt) * u,
                       w["down_proj"])
    y_biased = (torch.zeros(T, E, dtype=F64).scatter(1, idx, wb)[:, :, None]
                * out).sum(1)
    r = rel(y_biased, got["y"].to(F64))
    check("weights unbiased (y with the biased scores as weights is off)",
          r > 1e-2, "rel err %.1e" % r)
    for n in ("x",) + WEIGHTS:
        compare("d%s" % n, got[n], g_ref[n])
    check("no gradient for the bias",
          layer.e_score_correction_bias.grad is None and
          "e_score_correction_bias" not in dict(layer.named_parameters()))
    check("the bias unchanged by forward and backward",
          torch.equal(layer.e_score_correction_bias, torch.tensor(BIAS)))
    # The backward routes with the forward's bias, whatever the bias is
    # when it runs.
    later = run(layer, x, dy, change_bias=[0.0] * E)
    check("backward with the forward's bias", all(
        torch.equal(later[n], got[n]) for n in ("x",) + WEIGHTS))
    # A zero bias is no bias, bitwise.
    plain = mt.MoE(**SETTINGS)
    plain.load_state_dict({n: getattr(layer, n) for n in WEIGHTS})
    with torch.no_grad():
        layer.e_score_correction_bias.zero_()
    zero, none = run(layer, x, dy), run(plain, x, dy)
    check("zero bias bitwise no bias",
          all(torch.equal(zero[n], none[n]) for n in none))
    check("state_dict holds e_score_correction_bias",
          list(layer.state_dict()) ==
          list(WEIGHTS) + ["e_score_correction_bias"])

    # Every stage muir-compile writes runs: the high, planned and exec IR
    # of both passes, compiled again, give the description's bits.
    with torch.no_grad():
        layer.e_score_correction_bias.copy_(torch.tensor(BIAS))
    bound = 128
    path = os.path.join(stages, "layer.yaml")
    with open(path, "w") as f:
        f.write(layer.description(bound))
    tool = os.path.join(os.environ["MUIR_BUILD_DIR"], "bin", "muir-compile")
    xb = torch.zeros(bound, H)
    xb[:T] = x
    dyb = torch.zeros(bound, H)
    dyb[:T] = dy
    inputs = {n: getattr(layer, n).detach() for n in WEIGHTS}
    inputs.update(x=xb, selection_bias=layer.e_score_correction_bias)
    for which in ("forward", "backward"):
        opts = {"layer": "layer", "layer-pass": which}
        want = run_pass(muir.compile(layer.description(bound), "layer.yaml",
                                     opts), inputs, T)
        if which == "forward":
            compare("stages: forward y", want["y"][:T], y_ref)
        else:
            compare("stages: backward dx", want["dx"][:T], g_ref["x"])
        for stage in ("high", "planned", "exec"):
            ir = os.path.join(stages, "%s.%s.mlir" % (which, stage))
            subprocess.run([tool, path, "--layer", "layer", "--emit=" + stage,
                            "-o", ir] +
                           (["--layer-pass=backward"] if which == "backward"
                            else []), check=True)
            with open(ir) as f:
                got = run_pass(muir.compile(f.read(), ir), inputs, T)
            check("stages: %s from %s IR bitwise" % (which, stage),
                  all(torch.equal(got[n], want[n]) for n in want))
        # The backward takes what the forward saved.
        if which == "forward":
            inputs.update({n: t for n, t in want.items()
                           if n.startswith("saved.")})
            inputs["dy"] = dyb


def reference_update(bias, load, rate):
    """The rule in float64: bias + rate * sign(mean(load) - load)."""
    load = np.asarray(load, dtype=np.float64)
    return bias + rate * np.sign(load.mean() - load)


def update_main():
    # Several steps of two micro-batches each; the loads and the bias
    # against the float64 reference, whose routing takes its own bias.
    for rate, exact in ((2.0 ** -5, True), (1e-3, False)):
        layer = make(bias_update_rate=rate) if rate != 1e-3 else make()
        ref_bias = np.zeros(E)
        ok_loads, worst, moved = True, 0.0, False
        w = {n: getattr(layer, n).detach().to(F64) for n in WEIGHTS}
        for step in range(6):
            xs = [data(T, 100 * step + m) for m, T in enumerate((37, 58))]
            want = np.zeros(E, dtype=np.int64)
            for x, dy in xs:
                run(layer, x, dy)
                idx, _ = moe_reference.route(
                    x.to(F64), w["router"],
                    dict(ATTRS, selection_bias=ref_bias), E, K)
                want += np.bincount(idx.reshape(-1).numpy(), minlength=E)
                if step > 0 and not moved:
                    idx0, _ = moe_reference.route(x.to(F64), w["router"],
                                                  ATTRS, E, K)
                    moved = not torch.equal(idx, idx0)
            # Evaluation and no-grad forwards do not count.
            layer.eval()
            layer(xs[0][0])
            layer.train()
            with torch.no_grad():
                layer(xs[0][0])
            load = layer.update_bias()
            ok_loads &= load.dtype == torch.int64 and \
                load.tolist() == want.tolist()
            ref_bias = reference_update(ref_bias, want, rate)
            got = layer.e_score_correction_bias.to(F64).numpy()
            worst = max(worst, float(np.abs(got - ref_bias).max()))
            ok_loads &= layer.tokens_per_expert_since_update.tolist() == \
                [0] * E
        check("rate %g: loads of 6 steps = the reference's" % rate,
              ok_loads)
        check("rate %g: the bias steers the routing" % rate, moved)
        if exact:
            # k / 32: exact in float32 as in float64.
            check("rate %g: bias bitwise the float64 rule's" % rate,
                  worst == 0.0, "%s" % layer.e_score_correction_bias
                  .tolist())
        else:
            check("rate %g: bias within float32 rounding of the float64 "
                  "rule's" % rate, worst <= 1e-8, "max err %.1e" % worst)

    # Saved and copied with the layer; not a parameter.
    layer = make()
    with torch.no_grad():
        layer.e_score_correction_bias.copy_(torch.tensor(BIAS))
    other = make()
    other.load_state_dict(layer.state_dict())
    check("load_state_dict restores the bias",
          torch.equal(other.e_score_correction_bias, torch.tensor(BIAS)))
    check("deepcopy keeps the bias", torch.equal(
        copy.deepcopy(layer).e_score_correction_bias, torch.tensor(BIAS)))
    check("counts not in state_dict",
          "tokens_per_expert_since_update" not in layer.state_dict())

    # Refusals.
    def refused(what, fn):
        try:
            fn()
        except (ValueError, mt.MoEInputError) as e:
            print("refused %s: %s" % (what, e))
            return
        check("refused %s" % what, False, "no error")
    refused("update without bias", lambda: mt.MoE(**SETTINGS).update_bias())
    refused("bias keyword", lambda: mt.MoE(e_score_correction_bias="yes",
                                           **SETTINGS))
    refused("rate", lambda: mt.MoE(e_score_correction_bias=True,
                                   bias_update_rate=-1, **SETTINGS))
    with torch.no_grad():
        layer.e_score_correction_bias[3] = float("nan")
    refused("nan bias", lambda: layer(torch.zeros(4, H)))


if __name__ == "__main__":
    if sys.argv[1] == "route":
        route_main(sys.argv[2])
    else:
        update_main()
    if failures:
        print("torch-moe-bias: FAIL (%s)" % ", ".join(failures))
        sys.exit(1)
    print("torch-moe-bias: PASS")
