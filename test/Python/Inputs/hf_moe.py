"""muir.torch.MoE.from_hf and muir.hf against Hugging Face transformers'
own MoE blocks (Qwen3-MoE, Mixtral, Qwen2-MoE, DeepSeek-V3), each built
by transformers from a small config made here (nothing downloaded,
seeded random weights, float32):

  * the drop-in (muir.hf.MoEBlock) and, where the family maps onto the
    layer alone, MoE.from_hf(block): the output and every gradient (input,
    router, experts, shared experts, Qwen2-MoE's shared expert gate)
    against the HF block's (experts_implementation "eager"; the output
    also against "grouped_mm" and "batched_mm", the other CPU ones);
  * the router logits transformers' output_router_logits records (a
    forward hook on the family's router module), from the drop-in;
  * to_hf / copy_to_hf and from_hf round trips, exact;
  * Mixtral's router jitter in training, as HF draws it;
  * replace_moe_blocks on tiny CausalLMs of each family: logits, loss, the
    aux loss (output_router_logits=True) and every parameter's gradient,
    replaced before any call or after transformers installed its hooks;
    restore_hf_blocks gives back the original state_dict exactly;
  * what is refused, by name.

Tolerance: every comparison is ||muir - hf||_F / ||hf||_F <= 1e-5. Both
sides compute in float32 (muir's products by OpenBLAS sgemm, HF's by
torch's; the orders of the sums differ): observed 1e-7 to 1e-6. The
routing must agree exactly (random Gaussian weights, no near-ties).
"""
import copy
import sys

import torch
import transformers

import muir.hf
import muir.torch as mt

from transformers import (DeepseekV3Config, MixtralConfig, Qwen2MoeConfig,
                          Qwen3MoeConfig)
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds3
from transformers.models.mixtral import modeling_mixtral as mix
from transformers.models.qwen2_moe import modeling_qwen2_moe as q2
from transformers.models.qwen3_moe import modeling_qwen3_moe as q3

transformers.logging.set_verbosity_error()
TOL = 1e-5
failures = []
worst = {}


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def close(what, a, b, family):
    e = rel(a, b)
    worst[family] = max(worst.get(family, 0.0), e)
    if e > TOL:
        failures.append("%s: %s rel err %.3g" % (family, what, e))
    return e <= TOL


def report(family, what, ok):
    print("%s: %s %s" % (family, what, ok))
    if not ok:
        failures.append("%s: %s" % (family, what))


H, I, T_SHAPE = 32, 24, (2, 37)

CONFIGS = {
    "qwen3_moe": lambda: Qwen3MoeConfig(
        hidden_size=H, moe_intermediate_size=I, num_experts=8,
        num_experts_per_tok=2, norm_topk_prob=True),
    "mixtral": lambda: MixtralConfig(
        hidden_size=H, intermediate_size=I, num_local_experts=8,
        num_experts_per_tok=2),
    "qwen2_moe": lambda: Qwen2MoeConfig(
        hidden_size=H, moe_intermediate_size=I, num_experts=8,
        num_experts_per_tok=3, norm_topk_prob=False,
        shared_expert_intermediate_size=40),
    "deepseek_v3": lambda: DeepseekV3Config(
        hidden_size=H, moe_intermediate_size=I, n_routed_experts=16,
        num_experts_per_tok=4, n_group=4, topk_group=2, n_shared_experts=2,
        routed_scaling_factor=2.5, norm_topk_prob=True),
}
BLOCKS = {"qwen3_moe": q3.Qwen3MoeSparseMoeBlock,
          "mixtral": mix.MixtralSparseMoeBlock,
          "qwen2_moe": q2.Qwen2MoeSparseMoeBlock,
          "deepseek_v3": ds3.DeepseekV3MoE}
ROUTERS = {"qwen3_moe": q3.Qwen3MoeTopKRouter,
           "mixtral": mix.MixtralTopKRouter,
           "qwen2_moe": q2.Qwen2MoeTopKRouter,
           "deepseek_v3": ds3.DeepseekV3TopkRouter}


def make_block(family, seed, impl="eager"):
    """A block made by transformers from the config, its weights drawn
    N(0, 0.2^2) (the experts are torch.empty until a model initialises
    them; the router is zero)."""
    config = CONFIGS[family]()
    config._experts_implementation = impl
    torch.manual_seed(seed)
    block = BLOCKS[family](config)
    for name, p in sorted(block.named_parameters()):
        with torch.no_grad():
            p.normal_(0.0, 0.2)
    return block


def hf_grads(block, family, size):
    """The block's gradients in muir's names and layout."""
    g = {"router": block.gate.weight.grad,
         "gate_proj": block.experts.gate_up_proj.grad[:, :size],
         "up_proj": block.experts.gate_up_proj.grad[:, size:],
         "down_proj": block.experts.down_proj.grad}
    if family == "deepseek_v3":
        sh = block.shared_experts
        g.update(shared_gate_proj=sh.gate_proj.weight.grad,
                 shared_up_proj=sh.up_proj.weight.grad,
                 shared_down_proj=sh.down_proj.weight.grad)
    if family == "qwen2_moe":
        sh = block.shared_expert
        g.update(shared_expert_gate_proj=sh.gate_proj.weight.grad,
                 shared_expert_up_proj=sh.up_proj.weight.grad,
                 shared_expert_down_proj=sh.down_proj.weight.grad,
                 shared_expert_gate=block.shared_expert_gate.weight.grad)
    return g


def muir_grads(mod, family):
    layer = mod.moe if isinstance(mod, muir.hf.MoEBlock) else mod
    g = {n: getattr(layer, n).grad for n in layer._weight_names}
    if family == "qwen2_moe":
        sh = mod.shared_expert
        g.update(shared_expert_gate_proj=sh.gate_proj.weight.grad,
                 shared_expert_up_proj=sh.up_proj.weight.grad,
                 shared_expert_down_proj=sh.down_proj.weight.grad,
                 shared_expert_gate=mod.shared_expert_gate.weight.grad)
    return g


def run(mod, x, dy):
    x = x.clone().requires_grad_(True)
    # A non-leaf input, as in a model (Mixtral's jitter is in place).
    y = mod(x.clone())
    (y * dy).sum().backward()
    return y, x.grad


def check_block(family):
    block = make_block(family, seed=1)
    torch.manual_seed(2)
    x = torch.randn(*T_SHAPE, H)
    dy = torch.randn(*T_SHAPE, H)
    # HF's router logits, recorded as capture_outputs records them: a
    # forward hook on the router module, output[0].
    recorded = {"hf": [], "muir": []}

    def recorder(key):
        return lambda m, a, out: recorded[key].append(out[0])
    hook = block.gate.register_forward_hook(recorder("hf"))
    y_hf, dx_hf = run(block, x, dy)
    hook.remove()
    g_hf = hf_grads(block, family, I)
    for impl in ("grouped_mm", "batched_mm"):
        other = make_block(family, seed=1, impl=impl)
        with torch.no_grad():
            y_other = other(x)
        report(family, "HF %s agrees with eager" % impl,
               rel(y_other, y_hf) <= TOL)

    # The drop-in (a copy of the block: it takes the block's router).
    dropin = muir.hf.MoEBlock(copy.deepcopy(block), name="blocks.0.mlp")
    for p in block.parameters():
        p.grad = None
    dropin.zero_grad()
    report(family, "drop-in's gate is HF's router class",
           isinstance(dropin.gate, ROUTERS[family]) and
           dropin.gate.weight is dropin.moe.router)
    hook = dropin.gate.register_forward_hook(recorder("muir"))
    y, dx = run(dropin, x, dy)
    hook.remove()
    print("%s: y rel err below 1e-5: %s" % (family,
                                            close("y", y, y_hf, family)))
    print("%s: dx rel err below 1e-5: %s" % (family,
                                             close("dx", dx, dx_hf, family)))
    g = muir_grads(dropin, family)
    names = sorted(g_hf)
    ok = all(close("d" + n, g[n], g_hf[n], family) for n in names)
    print("%s: gradients %s rel err below 1e-5: %s"
          % (family, ", ".join(names), ok))
    ok = len(recorded["muir"]) == 1 and \
        recorded["muir"][0].shape == recorded["hf"][0].shape and \
        recorded["muir"][0].dtype == recorded["hf"][0].dtype and \
        close("router_logits", recorded["muir"][0], recorded["hf"][0],
              family)
    print("%s: router_logits %s %s as HF's: %s"
          % (family, list(recorded["hf"][0].shape),
             str(recorded["hf"][0].dtype).replace("torch.", ""), ok))

    # MoE.from_hf on its own (the families the layer holds whole).
    if family != "qwen2_moe":
        layer = mt.MoE.from_hf(block, name="layer")
        print("%s: from_hf: %s" % (family, layer.extra_repr()))
        y2, dx2 = run(layer, x, dy)
        g2 = muir_grads(layer, family)
        ok = close("from_hf y", y2, y_hf, family) and \
            close("from_hf dx", dx2, dx_hf, family) and \
            all(close("from_hf d" + n, g2[n], g_hf[n], family)
                for n in names)
        print("%s: from_hf layer: y and every gradient rel err below 1e-5: "
              "%s" % (family, ok))
        # Round trips: the layer's weights into a block drawn otherwise,
        # then that block into a new layer, exactly.
        other = make_block(family, seed=7)
        layer.to_hf(other)
        same = all(torch.equal(a, b) for a, b in
                   zip(block.state_dict().values(),
                       other.state_dict().values()))
        back = mt.MoE.from_hf(other)
        same2 = all(torch.equal(getattr(layer, n), getattr(back, n))
                    for n in layer._weight_names)
        print("%s: to_hf then from_hf round trip exact: %s"
              % (family, same and same2))
        if not (same and same2):
            failures.append("%s round trip" % family)
    else:
        routed = mt.MoE.from_hf(block, routed_only=True)
        print("%s: from_hf(routed_only=True): %s"
              % (family, routed.extra_repr()))
    # The drop-in's weights back into a block (its own to_hf too).
    other = make_block(family, seed=7)
    muir.hf.copy_to_hf(dropin, other)
    rebuilt = dropin.to_hf()
    ref = copy.deepcopy(block).state_dict()
    same = all(torch.equal(ref[k], other.state_dict()[k]) and
               torch.equal(ref[k], rebuilt.state_dict()[k]) for k in ref)
    print("%s: drop-in copy_to_hf and to_hf exact: %s (%s)"
          % (family, same, type(rebuilt).__name__))
    if not same:
        failures.append("%s drop-in round trip" % family)
    # Any float dtype in, the same dtype out (computed in float32).
    with torch.no_grad():
        xb = x.to(torch.bfloat16)
        yb = dropin(xb)
        y32 = dropin(xb.float())
    report(family, "bfloat16 x: bfloat16 y, float32's rounded",
           yb.dtype == torch.bfloat16 and
           torch.equal(yb, y32.to(torch.bfloat16)))


def check_jitter():
    """Mixtral's router_jitter_noise in training: the drop-in draws and
    applies it as HF's block does (in place on its input)."""
    family = "mixtral"
    block = make_block(family, seed=3)
    block.jitter_noise = 0.05
    block.train()
    dropin = muir.hf.MoEBlock(copy.deepcopy(block))
    dropin.train()
    torch.manual_seed(4)
    x = torch.randn(*T_SHAPE, H)
    dy = torch.randn(*T_SHAPE, H)
    torch.manual_seed(5)
    y_hf, dx_hf = run(block, x, dy)
    torch.manual_seed(5)
    y, dx = run(dropin, x, dy)
    ok = close("jitter y", y, y_hf, family) and \
        close("jitter dx", dx, dx_hf, family)
    print("mixtral: router_jitter_noise 0.05 in training: y and dx rel err "
          "below 1e-5: %s" % ok)


def check_bias():
    """DeepSeek-V3's e_score_correction_bias, nonzero: it changes which
    experts are chosen (not their weights); the drop-in and from_hf follow
    HF's block; the drop-in's layer and router hold one buffer, which the
    layer's update_bias() (aux-loss-free balancing) moves."""
    family = "deepseek_v3"
    block = make_block(family, seed=1)
    torch.manual_seed(8)
    with torch.no_grad():
        block.gate.e_score_correction_bias.normal_(0.0, 0.3)
    torch.manual_seed(2)
    x = torch.randn(*T_SHAPE, H)
    dy = torch.randn(*T_SHAPE, H)
    flat = x.reshape(-1, H)
    with torch.no_grad():
        chosen = block.gate(flat)[2].sort(-1).values
        unbiased = copy.deepcopy(block.gate)
        unbiased.e_score_correction_bias.zero_()
        moved = (unbiased(flat)[2].sort(-1).values != chosen).any(-1)
    print("deepseek_v3 bias: the bias changes the experts of %d of %d "
          "tokens" % (int(moved.sum()), flat.shape[0]))
    y_hf, dx_hf = run(block, x, dy)
    g_hf = hf_grads(block, family, I)
    dropin = muir.hf.MoEBlock(copy.deepcopy(block))
    layer = mt.MoE.from_hf(block)
    for p in block.parameters():
        p.grad = None
    results = []
    for what, mod in (("drop-in", dropin), ("from_hf", layer)):
        y, dx = run(mod, x, dy)
        g = muir_grads(mod, family)
        ok = close(what + " bias y", y, y_hf, family) and \
            close(what + " bias dx", dx, dx_hf, family) and \
            all(close(what + " bias d" + n, g[n], g_hf[n], family)
                for n in g_hf)
        results.append("%s %s" % (what, ok))
    print("deepseek_v3 bias: y and every gradient rel err below 1e-5: %s"
          % ", ".join(results))
    other = make_block(family, seed=7)
    layer.to_hf(other)
    report(family, "bias: to_hf copies the bias exactly",
           torch.equal(other.gate.e_score_correction_bias,
                       block.gate.e_score_correction_bias))
    shared = dropin.gate.e_score_correction_bias is \
        dropin.moe.e_score_correction_bias
    before = dropin.gate.e_score_correction_bias.clone()
    loads = dropin.moe.update_bias()
    step = dropin.gate.e_score_correction_bias - before
    want = 1e-3 * torch.sign(loads.double().mean() - loads.double())
    print("deepseek_v3 bias: drop-in's router and layer share the buffer "
          "%s; update_bias moves it by 1e-3 * sign(mean load - load): %s"
          % (shared, torch.allclose(step.double(), want, atol=1e-7)))
    if not shared:
        failures.append("bias buffer not shared")


# --------------------------------------------------------------------------
# whole models
# --------------------------------------------------------------------------

def model_config(family):
    common = dict(vocab_size=61, hidden_size=H, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=64, tie_word_embeddings=False)
    if family == "qwen3_moe":
        return Qwen3MoeConfig(head_dim=8, intermediate_size=48,
                              moe_intermediate_size=I, num_experts=8,
                              num_experts_per_tok=2, norm_topk_prob=True,
                              router_aux_loss_coef=0.1, **common)
    if family == "mixtral":
        return MixtralConfig(head_dim=8, intermediate_size=I,
                             num_local_experts=8, num_experts_per_tok=2,
                             router_aux_loss_coef=0.1, **common)
    if family == "qwen2_moe":
        return Qwen2MoeConfig(intermediate_size=48, moe_intermediate_size=I,
                              shared_expert_intermediate_size=40,
                              num_experts=8, num_experts_per_tok=2,
                              router_aux_loss_coef=0.1, **common)
    common["num_key_value_heads"] = 4     # MLA: one kv head per head
    return DeepseekV3Config(intermediate_size=48, moe_intermediate_size=I,
                            n_routed_experts=8, num_experts_per_tok=2,
                            n_group=2, topk_group=1, n_shared_experts=1,
                            first_k_dense_replace=1, kv_lora_rank=16,
                            q_lora_rank=None, qk_rope_head_dim=8,
                            qk_nope_head_dim=8, v_head_dim=8, **common)


CAUSAL = {"qwen3_moe": transformers.Qwen3MoeForCausalLM,
          "mixtral": transformers.MixtralForCausalLM,
          "qwen2_moe": transformers.Qwen2MoeForCausalLM,
          "deepseek_v3": transformers.DeepseekV3ForCausalLM}


def make_model(family):
    torch.manual_seed(11)
    model = CAUSAL[family](model_config(family))
    # DeepSeek-V3's init leaves the router weight as drawn; the experts
    # N(0, initializer_range): larger, so that routing is not flat.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "mlp" in n and "norm" not in n:
                p.normal_(0.0, 0.1)
        for n, b in model.named_buffers():
            if n.endswith("e_score_correction_bias"):
                b.normal_(0.0, 0.3)     # DeepSeek-V3's, nonzero
    return model.float()


def forward(model, ids, labels):
    model.zero_grad()
    out = model(input_ids=ids, labels=labels, output_router_logits=True)
    out.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()
             if p.grad is not None}
    return out, grads


def hf_names(grads, model):
    """Gradients of a replaced model in the HF model's names (the muir
    layer's stacks as gate_up_proj / down_proj)."""
    out = {}
    for n, g in grads.items():
        if ".mlp.moe." not in n:
            out[n] = g
            continue
        prefix, leaf = n.split(".mlp.moe.")
        prefix += ".mlp."
        if leaf == "router":
            out[prefix + "gate.weight"] = g
        elif leaf in ("gate_proj", "up_proj"):
            out.setdefault(prefix + "experts.gate_up_proj", {})[leaf] = g
        elif leaf == "down_proj":
            out[prefix + "experts.down_proj"] = g
        else:
            out[prefix + "shared_experts." + leaf[len("shared_"):] +
                ".weight"] = g
    for n, g in list(out.items()):
        if isinstance(g, dict):
            out[n] = torch.cat([g["gate_proj"], g["up_proj"]], dim=1)
    return out


def check_model(family):
    torch.manual_seed(12)
    ids = torch.randint(0, 61, (2, 24))
    labels = ids.clone()
    labels[:, :3] = -100
    model = make_model(family)
    pristine = copy.deepcopy(model.state_dict())
    ref, g_ref = forward(model, ids, labels)
    for when in ("before any call", "after HF's hooks"):
        if when == "before any call":
            m = make_model(family)
        else:
            m = copy.deepcopy(model)      # transformers' hooks installed
        paths = muir.hf.replace_moe_blocks(m)
        out, g = forward(m, ids, labels)
        g = hf_names(g, m)
        ok_logits = close("logits", out.logits, ref.logits, family)
        ok_loss = close("loss", out.loss, ref.loss, family)
        aux = ref.aux_loss
        if aux is not None:
            ok_aux = close("aux_loss", out.aux_loss, aux, family)
        else:
            ok_aux = out.aux_loss is None
        ok_rl = len(out.router_logits) == len(ref.router_logits) and all(
            close("router_logits", a, b, family)
            for a, b in zip(out.router_logits, ref.router_logits))
        ok_g = sorted(g) == sorted(g_ref) and all(
            close("d" + n, g[n], g_ref[n], family) for n in g_ref)
        print("%s model, replaced %s (%s): logits %s, loss %s, aux_loss %s, "
              "router_logits x%d %s, every gradient %s"
              % (family, when, ", ".join(paths), ok_logits, ok_loss,
                 "none" if aux is None else ok_aux,
                 len(ref.router_logits), ok_rl, ok_g))
    restored = muir.hf.restore_hf_blocks(m)
    state = m.state_dict()
    exact = sorted(state) == sorted(pristine) and all(
        torch.equal(state[k], pristine[k]) for k in pristine)
    print("%s model: restore_hf_blocks (%d) gives back the state_dict "
          "exactly: %s" % (family, len(restored), exact))
    if not exact:
        failures.append("%s restore" % family)
    out2, _ = forward(m, ids, labels)
    report(family, "restored model's loss is HF's",
           close("restored loss", out2.loss, ref.loss, family))


# --------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------

def refused(what, fn, exc):
    try:
        fn()
    except exc as e:
        print("refused %s: %s: %s" % (what, type(e).__name__, e))
        return
    failures.append("not refused: " + what)
    print("refused %s: NOT REFUSED" % what)


def check_refusals():
    refused("a Linear", lambda: mt.MoE.from_hf(torch.nn.Linear(2, 2)),
            TypeError)
    refused("qwen2_moe without routed_only",
            lambda: mt.MoE.from_hf(make_block("qwen2_moe", 1)), ValueError)
    refused("a routing keyword",
            lambda: mt.MoE.from_hf(make_block("qwen3_moe", 1), top_k=3),
            TypeError)
    cfg = CONFIGS["qwen3_moe"]()
    cfg.hidden_act = "gelu"
    cfg._experts_implementation = "eager"
    refused("gelu experts",
            lambda: mt.MoE.from_hf(q3.Qwen3MoeSparseMoeBlock(cfg)),
            ValueError)
    layer = mt.MoE.from_hf(make_block("qwen3_moe", 1))
    refused("a layer into a block of another size",
            lambda: layer.to_hf(make_block("deepseek_v3", 1)), ValueError)
    refused("a model without MoE blocks",
            lambda: muir.hf.replace_moe_blocks(torch.nn.Sequential(
                torch.nn.Linear(2, 2))), ValueError)


def check_bf16(family):
    """A bfloat16 block (a model loaded in bfloat16): the drop-in's
    parameters are bfloat16 (the block's values), its output and input
    gradient bfloat16, and they and the experts' gradients are the float32
    block's on the same values to within bfloat16 rounding (2^-8 relative:
    muir computes in float32 and rounds once); to_hf gives the values back
    exactly."""
    half = make_block(family, 5).to(torch.bfloat16)
    ref = copy.deepcopy(half).float()
    drop = muir.hf.MoEBlock(copy.deepcopy(half))
    report(family, "bfloat16 block: drop-in parameters bfloat16",
           all(p.dtype == torch.bfloat16 for p in drop.moe.parameters()))
    torch.manual_seed(6)
    x = torch.randn(*T_SHAPE, H).to(torch.bfloat16)
    dy = torch.randn(*T_SHAPE, H)
    xb, xr = x.clone().requires_grad_(True), x.float().requires_grad_(True)
    y = drop(xb)
    (y.float() * dy).sum().backward()
    (ref(xr) * dy).sum().backward()
    g = ref.experts.gate_up_proj.grad
    errs = [rel(y.float(), ref(x.float())), rel(xb.grad.float(), xr.grad),
            rel(drop.moe.gate_proj.grad.float(), g[:, :I]),
            rel(drop.moe.down_proj.grad.float(), ref.experts.down_proj.grad)]
    report(family, "bfloat16 block: y and dx bfloat16, y, dx and the "
           "experts' gradients within 2^-8 of the float32 block's",
           y.dtype == xb.grad.dtype == torch.bfloat16 and
           max(errs) <= 2.0 ** -8)
    back = drop.to_hf()
    report(family, "bfloat16 block: to_hf gives its values back exactly",
           all(torch.equal(a, b) for a, b in zip(back.state_dict().values(),
                                                 half.state_dict().values())))


for fam in ("qwen3_moe", "mixtral", "qwen2_moe", "deepseek_v3"):
    check_block(fam)
check_jitter()
check_bias()
for fam in ("qwen3_moe", "deepseek_v3"):
    check_bf16(fam)
for fam in ("qwen3_moe", "mixtral", "qwen2_moe", "deepseek_v3"):
    check_model(fam)
check_refusals()
for fam, e in sorted(worst.items()):
    print("max rel err %s: %.2e" % (fam, e), file=sys.stderr)
if failures:
    for f in failures:
        print("FAIL", f)
    sys.exit(1)
print("hf-moe: PASS")
