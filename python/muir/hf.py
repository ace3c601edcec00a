"""muir.hf: Hugging Face transformers MoE blocks as muir.torch.MoE layers.

    import muir.hf
    layer = muir.torch.MoE.from_hf(model.model.layers[0].mlp)  # a layer
    layer.to_hf(block)                      # its weights back into a block
    muir.hf.replace_moe_blocks(model)       # every MoE block, in place
    muir.hf.restore_hf_blocks(model)        # and back (trained weights)

Families (transformers 5.x, whose experts are fused 3-D parameters
gate_up_proj [E, 2 I, H] and down_proj [E, H, I], the router a
[E, H] weight):

  qwen3_moe    Qwen3MoeSparseMoeBlock: softmax (float32) over the E
               logits, top-k, renormalised when norm_topk_prob:
               scoring="softmax", normalize=norm_topk_prob.
  mixtral      MixtralSparseMoeBlock: softmax, top-k, always renormalised
               (the same as a softmax over the k chosen logits):
               normalize=True. router_jitter_noise (training only) is
               applied by the drop-in (MoEBlock), as HF does.
  qwen2_moe    Qwen2MoeSparseMoeBlock: as qwen3_moe (norm_topk_prob
               defaults to False), plus a shared expert of its own size
               (shared_expert_intermediate_size) gated per token by
               sigmoid(shared_expert_gate(x)): muir's layer holds the
               routed part (shared_experts=0) and the drop-in computes
               the gated shared expert around it in PyTorch, with HF's own
               modules.
  deepseek_v3  DeepseekV3MoE: sigmoid scores; the experts chosen on the
               scores plus e_score_correction_bias, among the topk_group
               best of n_group groups (a group scored by the sum of its
               two best), weighted by their (unbiased) scores,
               renormalised when norm_topk_prob, times
               routed_scaling_factor: scoring="sigmoid",
               groups=n_group, groups_per_token=topk_group,
               routed_scaling=routed_scaling_factor; its shared experts
               (one MLP of n_shared_experts * moe_intermediate_size, no
               gate) are muir's shared_experts=n_shared_experts; its
               e_score_correction_bias is the layer's selection bias
               (muir.torch.MoE(e_score_correction_bias=True), the buffer
               of that name, copied by from_hf; in the drop-in one buffer
               with the router's, so that the layer's update_bias() and
               any update of the HF router's buffer both steer the
               routing).

The experts must be SwiGLU (hidden_act "silu"), without biases, in the
default fused layout (is_concatenated, not is_transposed). muir's layer
computes in float32 and keeps the block's dtype where it can: a bfloat16
block gives bfloat16 parameters (mixed-precision training, as
muir.torch.MoE takes them), any other a float32 one (float16 parameters
are not the layer's); the drop-in hands the layer its input in the
layer's dtype and returns the input's.

What an HF block's forward returns, and what the drop-in keeps: in 5.x
every one of these blocks returns the hidden states only ([B, S, H]);
the router logits ([B * S, E], float32 for DeepSeek-V3) reach
`output_router_logits` through forward hooks that transformers'
capture_outputs installs on the router module (OutputRecorder(<family's
router class>, index=0)), and the CausalLM's load_balancing_loss_func
(Qwen3-MoE, Mixtral, Qwen2-MoE; DeepSeek-V3 has none) takes their softmax
and top-k. So the drop-in keeps the block's own router module as its
`gate` (its class, its hooks, its buffers), whose weight becomes the muir
layer's router parameter (one tensor: the aux loss's gradient and the
layer's both reach it), and calls it when it has forward hooks, so that
the recorded logits and their gradient are HF's.

HF's experts implementations (transformers.integrations.moe; chosen by
config._experts_implementation, from_pretrained(...,
experts_implementation=...) or model.set_experts_implementation(...)):
"eager" (a loop over the experts hit), "batched_mm" (each (token, slot)
pair's expert matrices gathered, torch.bmm: memory T * k * I * H per
projection) and "grouped_mm" (pairs sorted by expert, torch._grouped_mm,
whose CPU kernel torch >= 2.9 has; a loop otherwise) run on the CPU;
"deepgemm" and "sonicmoe" (kernels hub) need CUDA. A PreTrainedModel
defaults to "grouped_mm"; a block built alone has None, which runs
"eager". The drop-in replaces the whole block, whichever is set.

Parameters move: after replace_moe_blocks the block's `experts` are gone
(their weights live in the muir layer, `<block>.moe.gate_proj`, ...);
build the optimizer after replacing. `<block>.gate.weight` is
`<block>.moe.router`. muir.torch.Muon gives the router AdamW (its mark),
the expert stacks Muon per expert.
"""
import copy
import sys

import torch
import torch.nn.functional as F

from muir import _moe
from muir import _moe_records

__all__ = ["MoEBlock", "from_hf", "copy_to_hf", "replace_moe_blocks",
           "restore_hf_blocks", "family", "FAMILIES"]

# The block classes, by family: (module under transformers.models, class).
FAMILIES = {
    "qwen3_moe": ("qwen3_moe.modeling_qwen3_moe", "Qwen3MoeSparseMoeBlock"),
    "mixtral": ("mixtral.modeling_mixtral", "MixtralSparseMoeBlock"),
    "qwen2_moe": ("qwen2_moe.modeling_qwen2_moe", "Qwen2MoeSparseMoeBlock"),
    "deepseek_v3": ("deepseek_v3.modeling_deepseek_v3", "DeepseekV3MoE"),
}

# muir.torch.MoE's switch for DeepSeek-V3's e_score_correction_bias (a
# buffer of that name, added to the scores for selection only), when the
# layer has one.
_BIAS = "e_score_correction_bias"

# The keyword arguments from_hf passes on to muir.torch.MoE: the routing
# and the sizes come from the block.
_PASSED = ("name", "max_tokens", "max_compiled_bounds", "check_finite",
           "options", "ep", "capacity_factor", "drop_policy",
           "bias_update_rate")

_classes = None


def _block_classes():
    """{class: family} of the families this transformers has."""
    global _classes
    if _classes is None:
        import importlib
        _classes = {}
        for fam, (mod, cls) in FAMILIES.items():
            try:
                m = importlib.import_module("transformers.models." + mod)
            except ImportError:
                continue
            if hasattr(m, cls):
                _classes[getattr(m, cls)] = fam
    return _classes


def family(block):
    """The family of a transformers MoE block ("qwen3_moe", "mixtral",
    "qwen2_moe", "deepseek_v3"; subclasses too), or None for any other
    module. Imports nothing when transformers is not imported."""
    if not isinstance(block, torch.nn.Module) or \
            "transformers" not in sys.modules:
        return None
    for cls, fam in _block_classes().items():
        if isinstance(block, cls):
            return fam
    return None


def _who(block):
    return type(block).__name__


def _check_experts(block):
    """Refuses experts muir's layer cannot compute (biases, another
    layout, an activation other than SiLU)."""
    ex = block.experts
    for attr, want in (("has_bias", False), ("has_gate", True),
                       ("is_transposed", False), ("is_concatenated", True),
                       ("has_post_expert_norm", False)):
        if getattr(ex, attr, want) != want:
            raise ValueError("muir.hf: %s's experts have %s=%r; muir's layer "
                             "computes SwiGLU experts without biases in the "
                             "fused gate_up_proj [E, 2 I, H] layout"
                             % (_who(block), attr, getattr(ex, attr)))
    probe = torch.linspace(-4, 4, 17)
    if not torch.allclose(ex.act_fn(probe), F.silu(probe), rtol=1e-6,
                          atol=1e-7):
        raise ValueError("muir.hf: %s's experts use %s, not SiLU; muir's "
                         "layer computes SwiGLU experts (hidden_act "
                         "\"silu\")" % (_who(block), type(ex.act_fn).__name__))


def _settings(block, fam):
    """muir.torch.MoE's arguments for the block's routed experts (and, for
    DeepSeek-V3, its shared experts)."""
    gate, ex = block.gate, block.experts
    experts, hidden = gate.weight.shape
    size = ex.down_proj.shape[2]
    if tuple(ex.gate_up_proj.shape) != (experts, 2 * size, hidden) or \
            tuple(ex.down_proj.shape) != (experts, hidden, size):
        raise ValueError("muir.hf: %s's experts have gate_up_proj %s and "
                         "down_proj %s for a router of %d experts x %d; "
                         "expected [E, 2 I, H] and [E, H, I]"
                         % (_who(block), list(ex.gate_up_proj.shape),
                            list(ex.down_proj.shape), experts, hidden))
    s = dict(hidden=hidden, expert_size=size, experts=experts,
             top_k=gate.top_k)
    if fam in ("qwen3_moe", "qwen2_moe"):
        s.update(scoring="softmax", normalize=bool(gate.norm_topk_prob))
    elif fam == "mixtral":
        s.update(scoring="softmax", normalize=True)
    elif fam == "deepseek_v3":
        sf = block.shared_experts.gate_proj.weight.shape[0]
        if sf % size:
            raise ValueError("muir.hf: %s's shared experts are %d wide, not "
                             "a multiple of moe_intermediate_size %d"
                             % (_who(block), sf, size))
        s.update(scoring="sigmoid", normalize=bool(gate.norm_topk_prob),
                 groups=gate.num_group or 1,
                 groups_per_token=gate.topk_group or 1,
                 routed_scaling=float(gate.routed_scaling_factor),
                 shared_experts=sf // size)
    return s


def _takes_bias(cls):
    """Whether muir.torch.MoE (or `cls`) holds a selection bias."""
    import inspect
    return _BIAS in inspect.signature(cls.__init__).parameters


def _check_bias(gate, who, layer_cls):
    """Refuses a nonzero bias for a layer class without one."""
    bias = getattr(gate, _BIAS, None)
    if bias is None or _takes_bias(layer_cls):
        return
    if bool((bias != 0).any()):
        raise NotImplementedError(
            "muir.hf: %s has a nonzero e_score_correction_bias (DeepSeek-V3's "
            "selection bias), which this muir.torch.MoE does not take; a "
            "block whose bias is zero converts" % who)


def _rows(layer):
    lo, hi, _ = _moe_records.expert_rows(layer.gate_proj)
    return lo, hi


def from_hf(block, routed_only=False, cls=None, **options):
    """A muir.torch.MoE with the routing of a transformers MoE block and a
    copy of its weights (see the module's docstring for the families).
    muir.torch.MoE.from_hf(block, **options) calls it.

    options: muir.torch.MoE's name, max_tokens, max_compiled_bounds,
    check_finite, options, ep (rank r takes its rows of the experts),
    capacity_factor and drop_policy (HF's blocks are dropless), and for
    DeepSeek-V3 bias_update_rate. The routing and the sizes come from the
    block. The layer's parameters hold the block's values exactly:
    bfloat16 for a bfloat16 block, else float32.

    A Qwen2-MoE block's gated shared expert is no part of muir's layer:
    from_hf refuses such a block unless routed_only=True (the layer then
    computes the routed experts only); MoEBlock(block) is the drop-in with
    the gated shared expert. Mixtral's router_jitter_noise is the
    drop-in's too."""
    cls = cls or _moe.MoE
    fam = family(block)
    if fam is None:
        raise TypeError("muir.hf: %s is not a transformers MoE block of a "
                        "family muir converts (%s)"
                        % (_who(block), ", ".join(
                            c for _, c in FAMILIES.values())))
    if fam == "qwen2_moe" and not routed_only:
        raise ValueError("muir.hf: a Qwen2-MoE block's shared expert is "
                         "gated per token (sigmoid(shared_expert_gate(x))) "
                         "and has its own size, which muir.torch.MoE does "
                         "not hold: use muir.hf.MoEBlock(block), the "
                         "drop-in that computes it around the layer, or "
                         "from_hf(block, routed_only=True) for the routed "
                         "experts alone")
    bad = sorted(set(options) - set(_PASSED))
    if bad:
        raise TypeError("muir.hf.from_hf: unexpected keyword arguments %s "
                        "(the routing and the sizes come from the block; "
                        "accepted: %s)" % (", ".join(bad), ", ".join(_PASSED)))
    _check_experts(block)
    s = _settings(block, fam)
    if routed_only:
        s.pop("shared_experts", None)
    if fam == "deepseek_v3":
        if _takes_bias(cls):
            s[_BIAS] = True
        else:
            _check_bias(block.gate, _who(block), cls)
    s.update(options)
    layer = cls(**s)
    device = block.gate.weight.device
    if device.type != "cpu":
        layer = layer.to(device)
    _copy_in(layer, block, fam)
    if block.experts.gate_up_proj.dtype == torch.bfloat16:
        # The values were copied exactly into float32; the parameters
        # (not the selection bias, a float32 buffer) take the block's dtype.
        for p in layer.parameters():
            p.data = p.data.to(torch.bfloat16)
    return layer


@torch.no_grad()
def _copy_in(layer, block, fam):
    ex, size = block.experts, layer.expert_size
    lo, hi = _rows(layer)
    layer.router.copy_(block.gate.weight)
    layer.gate_proj.copy_(ex.gate_up_proj[lo:hi, :size])
    layer.up_proj.copy_(ex.gate_up_proj[lo:hi, size:])
    layer.down_proj.copy_(ex.down_proj[lo:hi])
    if layer.shared_experts:
        sh = block.shared_experts
        layer.shared_gate_proj.copy_(sh.gate_proj.weight)
        layer.shared_up_proj.copy_(sh.up_proj.weight)
        layer.shared_down_proj.copy_(sh.down_proj.weight)
    if getattr(layer, _BIAS, None) is not None:
        getattr(layer, _BIAS).copy_(getattr(block.gate, _BIAS))


@torch.no_grad()
def copy_to_hf(src, block):
    """Writes the weights of `src` (a muir.torch.MoE, or a MoEBlock) into
    the transformers block `block` of the same family and sizes: the
    inverse of from_hf (exact: the same float32 values; cast to the
    block's dtype). MoE.to_hf(block) calls it. With ep > 1 a rank writes
    its own experts' rows (muir.torch.full_state_dict gathers the whole
    stacks). Returns `block`."""
    fam = family(block)
    if fam is None:
        raise TypeError("muir.hf.copy_to_hf: %s is not a transformers MoE "
                        "block muir converts" % _who(block))
    dropin = src if isinstance(src, MoEBlock) else None
    layer = dropin.moe if dropin is not None else src
    if not isinstance(layer, _moe.MoE):
        raise TypeError("muir.hf.copy_to_hf: expected a muir.torch.MoE or a "
                        "muir.hf.MoEBlock, got %s" % type(src).__name__)
    s = _settings(block, fam)
    shared = s.get("shared_experts", 0)
    mine = dict(hidden=layer.hidden, expert_size=layer.expert_size,
                experts=layer.experts, top_k=layer.top_k)
    theirs = {k: s[k] for k in mine}
    if mine != theirs or layer.shared_experts != shared:
        raise ValueError("muir.hf.copy_to_hf: the layer (%s, shared_experts "
                         "%d) does not fit %s (%s, shared_experts %d)"
                         % (mine, layer.shared_experts, _who(block), theirs,
                            shared))
    if fam == "qwen2_moe" and dropin is None:
        raise ValueError("muir.hf.copy_to_hf: a Qwen2-MoE block's gated "
                         "shared expert is not in a muir.torch.MoE; copy "
                         "from the MoEBlock (or copy the routed part with "
                         "copy_to_hf(layer, block, ...) on a block whose "
                         "shared expert you set yourself)")
    ex, size = block.experts, layer.expert_size
    lo, hi = _rows(layer)
    if block.gate.weight is not layer.router:
        block.gate.weight.copy_(layer.router)
    ex.gate_up_proj[lo:hi, :size].copy_(layer.gate_proj)
    ex.gate_up_proj[lo:hi, size:].copy_(layer.up_proj)
    ex.down_proj[lo:hi].copy_(layer.down_proj)
    if shared:
        sh = block.shared_experts
        sh.gate_proj.weight.copy_(layer.shared_gate_proj)
        sh.up_proj.weight.copy_(layer.shared_up_proj)
        sh.down_proj.weight.copy_(layer.shared_down_proj)
    if fam == "qwen2_moe":
        for n in ("shared_expert", "shared_expert_gate"):
            mine, theirs = getattr(dropin, n), getattr(block, n)
            if mine is not theirs:
                theirs.load_state_dict(mine.state_dict())
    bias = getattr(block.gate, _BIAS, None)
    mine = getattr(layer, _BIAS, None)
    if mine is None and dropin is not None:
        mine = getattr(dropin.gate, _BIAS, None)
    if bias is not None and mine is not None and mine is not bias:
        bias.copy_(mine)
    return block


class MoEBlock(torch.nn.Module):
    """The drop-in for a transformers MoE block: the same forward
    signature and result (hidden_states [B, S, H] -> [B, S, H]) computed by
    a muir.torch.MoE (`self.moe`, from_hf of the block), with the block's
    own router module as `self.gate` (its weight is the layer's router;
    called, for output_router_logits' hooks, when it has forward hooks),
    and for Qwen2-MoE the block's `shared_expert` and `shared_expert_gate`
    computed in PyTorch: y = moe(x) + sigmoid(shared_expert_gate(x)) *
    shared_expert(x). Mixtral's router_jitter_noise is applied in
    training as HF does (in place on the input, then routed and computed
    on the jittered input).

    The block's router module becomes the drop-in's (with the layer's
    router as its weight): use the drop-in instead of the block, not
    beside it. The block's experts are not kept (from_hf copied them).
    to_hf() makes a block of the original class with the current
    weights.

    options: as from_hf's (name defaults to "moe")."""

    def __init__(self, block, **options):
        super().__init__()
        fam = family(block)
        if fam is None:
            raise TypeError("muir.hf.MoEBlock: %s is not a transformers MoE "
                            "block muir converts" % _who(block))
        self.family = fam
        self.hf_class = type(block)
        self.hf_dtype = block.experts.gate_up_proj.dtype
        self.config = getattr(block.experts, "config", None)
        # Qwen2-MoE's gated shared expert is computed here, around the
        # layer; DeepSeek-V3's shared experts are the layer's.
        self.moe = from_hf(block, routed_only=fam == "qwen2_moe", **options)
        self.gate = block.gate
        self.gate.weight = self.moe.router
        if getattr(self.moe, _BIAS, None) is not None:
            # One buffer: the layer's update_bias() and any update of the
            # router's e_score_correction_bias are both the routing's.
            setattr(self.moe, _BIAS, getattr(self.gate, _BIAS))
        self.jitter_noise = float(getattr(block, "jitter_noise", 0.0) or 0.0)
        if fam == "qwen2_moe":
            self.shared_expert = block.shared_expert
            self.shared_expert_gate = block.shared_expert_gate

    def _check_bias(self):
        if self.family == "deepseek_v3":
            _check_bias(self.gate, self.hf_class.__name__, type(self.moe))

    def forward(self, hidden_states):
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(
                1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        self._check_bias()
        shape, dtype = hidden_states.shape, hidden_states.dtype
        x = hidden_states.reshape(-1, shape[-1])
        # In the layer's dtype (bfloat16 for a bfloat16 block, the router's
        # and Qwen2-MoE's shared expert's too), else float32.
        if dtype != self.moe.router.dtype:
            x = x.to(self.moe.router.dtype)
        if self.gate._forward_hooks or self.gate._forward_pre_hooks:
            # output_router_logits: transformers records the router
            # module's logits (and load_balancing_loss_func differentiates
            # them) by forward hooks on it.
            self.gate(x)
        y = self.moe(x)
        if self.family == "qwen2_moe":
            y = y + torch.sigmoid(self.shared_expert_gate(x)) * \
                self.shared_expert(x)
        return y.reshape(shape).to(dtype)

    def to_hf(self):
        """A block of the original class holding a copy of this drop-in's
        current weights, in the block's original dtype. Its router (and
        Qwen2-MoE's shared expert and gate) are copies of this drop-in's
        modules, so they keep the forward hooks transformers installed for
        output_router_logits."""
        if self.config is None:
            raise ValueError("muir.hf.MoEBlock.to_hf: the block's config was "
                             "not kept (its experts had none)")
        with torch.device(self.moe.router.device):
            block = self.hf_class(self.config)
        gate = copy.deepcopy(self.gate)
        gate.weight = torch.nn.Parameter(self.moe.router.detach().clone())
        block.gate = gate
        if self.family == "qwen2_moe":
            block.shared_expert = copy.deepcopy(self.shared_expert)
            block.shared_expert_gate = copy.deepcopy(self.shared_expert_gate)
        block.to(torch.float32)
        copy_to_hf(self, block)
        return block.to(self.hf_dtype)

    def extra_repr(self):
        return "family=%s" % self.family


def _children(model):
    for parent in model.modules():
        for name, child in parent.named_children():
            yield parent, name, child


def replace_moe_blocks(model, **options):
    """Replaces every MoE block of a transformers model (of the families
    of from_hf) in place by a MoEBlock, named by its path; returns the
    paths replaced. The model's forward, output_router_logits and
    load_balancing_loss_func keep working (see the module's docstring).
    options: as from_hf's; each layer's name is its path. Raises
    ValueError when the model holds no such block."""
    paths = {id(m): n for n, m in model.named_modules()}
    todo = [(parent, name, child) for parent, name, child in
            _children(model) if family(child) is not None]
    if not todo:
        raise ValueError("muir.hf.replace_moe_blocks: %s holds no MoE block "
                         "of a family muir converts (%s)"
                         % (type(model).__name__, ", ".join(
                             c for _, c in FAMILIES.values())))
    done = []
    for parent, name, child in todo:
        path = paths[id(child)]
        opts = dict(options)
        opts.setdefault("name", path)
        setattr(parent, name, MoEBlock(child, **opts))
        done.append(path)
    return done


def restore_hf_blocks(model):
    """Replaces every MoEBlock of a model in place by a transformers block
    of its original class with its current weights (MoEBlock.to_hf), e.g.
    to save_pretrained a model trained with muir's layers; returns the
    paths replaced."""
    paths = {id(m): n for n, m in model.named_modules()}
    todo = [(parent, name, child) for parent, name, child in
            _children(model) if isinstance(child, MoEBlock)]
    done = []
    for parent, name, child in todo:
        setattr(parent, name, child.to_hf())
        done.append(paths[id(child)])
    return done
