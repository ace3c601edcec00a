"""muir.torch.MoE: a Mixture-of-Experts layer whose forward and backward
passes are muir's compiled MoE ops (see muir.torch.MoE's docstring)."""
import collections
import math
import numbers
import os

import torch

import muir
from muir import _dist
from muir._moe_ranks import (_EDP_GROUPS, _edp_group, _sum_over_ranks,
                             _world_rank, _world_size)
from muir._moe_records import held_rows

__all__ = ["MoE", "MoEInputError", "DEFAULT_MAX_COMPILED_BOUNDS"]

_SCORINGS = ("softmax", "sigmoid")
# The dtypes of the tokens and of the parameters a layer takes (it computes
# in float32).
_X_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_W_DTYPES = (torch.float32, torch.bfloat16)
_POLICIES = ("weight", "position")
# The expert products' precisions (MoE's `products`; None: autocast's).
_PRODUCTS = (None, "float32", "bfloat16")


class MoEInputError(ValueError):
    """A bad input to a muir.torch.MoE layer (names the layer)."""


# The expert stacks: dimension 0 is the layer's experts (a rank's block of
# them with ep > 1).
_STACKS = ("gate_proj", "up_proj", "down_proj")


def _rate(v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or \
            not math.isfinite(v) or v < 0:
        raise ValueError("muir.torch.MoE: bias_update_rate must be a finite "
                         "number >= 0, got %r" % (v,))
    return float(v)


def _int(v, key, lo):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError("muir.torch.MoE: %s must be an integer >= %d, got "
                         "%r" % (key, lo, v))
    return v


# The token bounds (size classes) whose compiled passes a layer keeps (the
# least recently used freed first): a training size and an evaluation size.
DEFAULT_MAX_COMPILED_BOUNDS = 2


def _bound_for(tokens):
    """The token bound (size class) of a call of `tokens` tokens when
    max_tokens is not given: the next power of two >= tokens, at least
    128."""
    b = 128
    while b < tokens:
        b *= 2
    return b


class _Pass:
    """One compiled pass (forward or backward) of a layer for one bound."""

    def __init__(self, step):
        self.step = step
        self.index = {a.name: a.index for a in step.arguments}
        self.shapes = {a.name: a.shape for a in step.arguments}

    def run(self, tensors, tokens, device):
        for name, t in tensors.items():
            self.step.bind(self.index[name], t.data_ptr())
        stream = None
        if device.type == "cuda":
            # The caller's current stream: after the work queued there.
            stream = torch.cuda.current_stream(device).cuda_stream
        self.step.run(counter=tokens, stream=stream)


class _MoEFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, layer, bf16, stack_scale, keep, x, *weights):
        # keep: the pass that also writes what the backward keeps (else
        # "forward-only", which writes y and the loads alone).
        y, saved, tokens_per_expert, bound, bias = layer._forward(
            x, weights, bf16=bf16, keep=keep)
        ctx.layer = layer
        ctx.bound = bound
        # Under DistributedDataParallel: the ep stacks' gradients scaled to
        # DDP's mean over the ranks (MoE._ddp_stack_scale).
        ctx.stack_scale = stack_scale
        # The backward's products take the forward's precision.
        ctx.bf16 = bf16
        # The backward routes again with the forward's bias (a copy: an
        # update_bias() between the two does not change the choice).
        ctx.bias = bias
        # recompute: only x and the weights are kept; the backward pass
        # ("recompute") computes the experts' products again (same bits:
        # the same ops on the same inputs) inside itself, where their
        # buffers die as soon as it is done with them.
        # (A forward that kept nothing is followed, if autograd ever runs
        # a backward of it, by the recompute pass, which needs nothing.)
        ctx.recompute = layer.recompute or not keep
        ctx.save_for_backward(x, *weights,
                              *(() if layer.recompute else saved))
        ctx.mark_non_differentiable(tokens_per_expert)
        return y, tokens_per_expert

    @staticmethod
    def backward(ctx, dy, _unused):
        layer = ctx.layer
        nw = len(layer._weight_names)
        tensors = ctx.saved_tensors
        x, weights, saved = tensors[0], tensors[1:1 + nw], tensors[1 + nw:]
        dx, grads = layer._backward(ctx.bound, dy, x, weights,
                                    None if ctx.recompute else saved,
                                    ctx.bias, ctx.bf16)
        if layer._edp_group is not None:
            # Each replica of this rank's experts summed its ep group's
            # tokens: the sum over every rank's.
            import torch.distributed as dist
            for n, g in zip(layer._weight_names, grads):
                if n in _STACKS:
                    dist.all_reduce(g, group=layer._edp_group)
        if ctx.stack_scale != 1.0:
            grads = [g.mul_(ctx.stack_scale) if n in _STACKS else g
                     for n, g in zip(layer._weight_names, grads)]
        return (None, None, None, None, dx) + tuple(grads)


class MoE(torch.nn.Module):
    """A Mixture-of-Experts layer (routing, SwiGLU experts, combine) whose
    forward and backward passes run muir's compiled MoE ops.

        layer = muir.torch.MoE(hidden=1024, expert_size=512, experts=16,
                               top_k=2)
        y = layer(x)                    # x [..., hidden] -> y [..., hidden]

    Semantics (docs/description.md, "MoE layers"): per token, scores over
    all experts (softmax of the router's logits, or sigmoid; with
    groups > 1 only the experts of the groups_per_token best groups, a
    group scored by the sum of its two best, compete), the top_k experts
    (ties to the lower index), their scores as weights, renormalised over
    the chosen k when `normalize` (for softmax: a softmax over the chosen
    logits, Qwen3-MoE's and Mixtral's router), times routed_scaling; y is
    the weighted sum of the chosen experts' down(silu(gate x) * up x), plus
    the shared experts' SwiGLU MLP (shared_experts * expert_size wide) on
    every token. capacity_factor (None: dropless) keeps at most
    ceil(capacity_factor * T * top_k / experts) pairs per expert over the
    call's T tokens, by weight (drop_policy "weight", ties to the earlier
    token) or by position; a dropped pair adds nothing and its weight is
    not renormalised.

    Parameters (PyTorch Linear layouts): router [experts, hidden] (marked
    to take AdamW under muir.torch.Muon; the expert stacks take Muon per
    expert);
    gate_proj, up_proj [local experts, expert_size, hidden]; down_proj
    [local experts, hidden, expert_size]; with shared experts also
    shared_gate_proj, shared_up_proj [S * expert_size, hidden] and
    shared_down_proj [hidden, S * expert_size]. Initialised as nn.Linear
    initialises its weight (uniform in +-1/sqrt(fan in)).

    Tokens: x [..., hidden] on the CPU, or on the CUDA device that holds
    the parameters (the CUDA target, on the current stream; that path has
    not run on a GPU yet). Non-contiguous x is copied.
    Precision: the layer computes in float32 (routing in double per token,
    docs/description.md). x may be float32, bfloat16 or float16, and the
    parameters float32 or bfloat16 (mixed-precision training): x and the
    parameters are read as float32 (exactly: a bfloat16 or float16 value
    is a float32 one), y is rounded once to x's dtype, or under
    torch.autocast to the autocast dtype (as an nn.Linear there returns
    it), and the gradients once to their tensors' dtypes.
    products (None): the precision of the routed experts' eight grouped
    products (three forward, five backward). "float32": exact float32
    operands, so a bfloat16 y is the float32 layer's y to within half a
    bfloat16 ulp. "bfloat16": each operand (the dispatched rows, the
    expert weights, the activations and their gradients) rounded to
    bfloat16 to nearest even, the products exact and accumulated in
    float32 and kept float32: the numerics of an nn.Linear's product
    under torch.autocast(bfloat16), about 3 to 4 times the float32 rate
    on a CPU with AMX or AVX512-BF16 (bench/README.md). None: "bfloat16"
    on the CPU under torch.autocast(bfloat16), or when x and the expert
    stacks are all bfloat16 (a bfloat16 model), else "float32" (float16
    autocast keeps float32 products: bfloat16 operands would be coarser
    than its float16 ones). The router, the shared experts, the SwiGLU and
    the combine stay float32 in every mode. The CUDA target has no
    bfloat16 products yet ("bfloat16" there is refused when compiled).
    The layer is compiled for a bound of tokens per call and runs any T up
    to it: the rows past T are padding that routes nowhere, and a call's
    work and memory scale with the bound. With `max_tokens` the bound is
    max_tokens, for every call. Otherwise each call runs on its size
    class, T rounded up to a power of two (at least 128), compiled the
    first time that class comes: a small batch after a large one runs on
    a small bound. The passes of the `max_compiled_bounds` (default
    DEFAULT_MAX_COMPILED_BOUNDS = 2: a training size and an evaluation
    size) most recently used classes are kept, the others freed
    (`layer.compiled_bounds()` lists those held, `layer.bound` is the last
    call's, `layer.close()` frees them all); a backward whose forward's
    class was freed compiles it again. T = 0 gives an empty y and zero
    gradients.
    `layer.tokens_per_expert` (int64 [experts]) holds the last forward's
    routed (token, slot) pairs per expert, before capacity drops.

    aux_loss_coef (None: off): forward returns (y, aux_loss) with the
    Switch load-balancing loss aux_loss_coef * experts * sum_e f_e * P_e,
    f_e = tokens_per_expert[e] / (T * top_k) and P_e the mean over tokens
    of expert e's score (softmax, or sigmoid scores normalised per token),
    computed in PyTorch from the router so that autograd gives the router
    its gradient.

    e_score_correction_bias (False): with True the layer holds a float32
    buffer e_score_correction_bias [experts] (zeros; in state_dict under
    that name, as DeepSeek-V3's router in transformers holds it; no
    parameter: it takes no gradient), whole on every rank also with
    ep > 1, which is added to the scores to choose the experts (groups
    included) and not to their weights (docs/description.md,
    selection_bias). Aux-loss-free load balancing (DeepSeek-V3;
    Megatron-Core's moe_router_enable_expert_bias, torchtitan's): forwards
    in training mode with grad enabled add their tokens_per_expert (before
    capacity drops) to `layer.tokens_per_expert_since_update` (a forward
    that torch.utils.checkpoint runs again counts again); after each
    optimizer.step() every rank calls `layer.update_bias()`, which sums
    those counts over the job's ranks (under mpirun over MPI, else over
    torch.distributed when it is initialised) into the loads L, adds
    bias_update_rate (default 1e-3) * sign(mean(L) - L_e) to each
    e_score_correction_bias[e] (the sign from integers, the sum in float64
    rounded once to the buffer's dtype), zeroes the counts and returns L.
    So the biases are the same bits on every rank and every ep layout
    given the same tokens.

    Expert parallel (ep > 1, a job of ep ranks: mpirun's, or under
    torchrun torch.distributed's group, process_group=G or device_mesh=M,
    else the default group): rank r holds
    experts [r * E / ep, (r + 1) * E / ep) (gate_proj, up_proj and
    down_proj have the local count), each rank passes its own tokens, and
    dispatch and combine exchange them over MPI or the group (gloo: one
    all_to_all_single of bytes per exchange, the same bits); y, dx and the experts'
    gradients are bitwise those of one rank given every rank's tokens in
    rank order (an expert's gradient sums over every token routed to it,
    from any rank); the router's and the shared experts' gradients are
    from the rank's own tokens (average them over the ranks, as DDP does
    for replicated parameters). Every rank runs the same bound: max_tokens
    when given, else each call's size class of the largest token count of
    any rank (the ranks exchange their counts first: one small all-gather
    per forward over MPI). muir.torch.Muon steps the expert stacks (marked
    `_muir_ep`) per expert on their own rank, never shared out.
    On a job of more ranks than ep (a multiple: the MoE folding edp x ep,
    ep the inner axis, as a DeviceMesh ("edp", "ep") lays them out) rank
    r holds block r % ep, the edp = ranks / ep replicas of each block
    exchange tokens within their ep group and sum their stacks' gradients
    over torch.distributed (a group per block, made at construction; also
    under mpirun, where torch.distributed must be initialised), so the
    gradients are again sums over every rank's tokens
    (test/Python/torch-torchrun.test: ep=2 on 4 ranks inside DDP).

    DistributedDataParallel: call muir.torch.prepare_ddp(model) before
    DistributedDataParallel(model) (after the experts are loaded). DDP
    then leaves the ep stacks alone (it would broadcast rank 0's experts
    over the others' and average different experts' gradients) and the
    loads update_bias() sums (it would broadcast rank 0's), and the layer
    divides the ep stacks' gradients by the ranks inside DDP's forward, so
    that every gradient is, as DDP's averaged ones are, that of the mean
    of the ranks' losses (test/Python/torch-moe-ddp.test: 2 and 4 ranks
    against one process on all the tokens). A layer that DDP would reduce
    or broadcast refuses its first forward, naming prepare_ddp.

    Checkpoints: state_dict() holds the rank's experts and records which
    (its metadata's "muir_experts": [lo, hi, experts]);
    muir.torch.full_state_dict(layer or model) gathers the stacks whole over
    torch.distributed. load_state_dict takes, on any ep, this rank's rows of
    a stack that holds them (a whole stack: full_state_dict's, one rank's,
    or a hand-made dict; or the part of a rank of a smaller ep) and refuses
    one that does not (another rank's part), naming the stack. The
    record is checked first (three integers, 0 <= lo < hi <= experts, and
    the stack's rows hi - lo): a damaged or edited one is refused, naming
    the layer, and nothing of that stack loads.

    Copies: the compiled passes are a cache of handles into muir's
    library, not state: copy.deepcopy, pickle, torch.save and
    torch.optim.swa_utils.AveragedModel copy the layer (also after a
    forward) without them, and the copy compiles its own when it runs
    (bitwise the original's results); its parameters keep their marks for
    muir.torch.Muon.

    recompute (False): activation recompute. The forward (its pass
    "forward-only", which writes y and the loads alone, as an inference
    call under torch.no_grad does) keeps only x, the weights and the
    routing's inputs for the backward, whose own pass
    (layer-pass "recompute") computes the experts' products again
    (saved.gate, saved.up, saved.out: R x (2 expert_size + hidden) floats,
    R the routed rows) and frees each as soon as it is used, dispatching
    the tokens a second time for the stacks' gradients: a layer's saved
    activations between its forward and backward drop from those to x
    alone, and its backward's peak by the same, for the forward's three
    grouped products and a dispatch of time (bench/README.md). The
    results are bitwise those without it
    (test/Python/torch-moe-recompute.test).

    check_finite (True): a NaN or infinity in x raises MoEInputError
    before anything runs. options: compile options for muir.compile;
    "cache-dir" as muir.torch.Muon's cache_dir (compiled CPU passes are
    kept on disk and loaded by the next process: by default
    muir.cache_dir(), $MUIR_CACHE_DIR or ~/.cache/muir; None or "" for
    none).
    """

    def __init__(self, hidden, expert_size, experts, top_k, *,
                 scoring="softmax", shared_experts=0, routed_scaling=1.0,
                 normalize=True, groups=1, groups_per_token=1,
                 capacity_factor=None, drop_policy="weight", ep=1,
                 aux_loss_coef=None, max_tokens=None,
                 max_compiled_bounds=DEFAULT_MAX_COMPILED_BOUNDS,
                 check_finite=True, name="moe", options=None,
                 e_score_correction_bias=False, bias_update_rate=1e-3,
                 recompute=False, products=None, process_group=None,
                 device_mesh=None):
        super().__init__()
        self.hidden = _int(hidden, "hidden", 1)
        self.expert_size = _int(expert_size, "expert_size", 1)
        self.experts = _int(experts, "experts", 1)
        self.top_k = _int(top_k, "top_k", 1)
        self.shared_experts = _int(shared_experts, "shared_experts", 0)
        self.groups = _int(groups, "groups", 1)
        self.groups_per_token = _int(groups_per_token, "groups_per_token", 1)
        self.ep = _int(ep, "ep", 1)
        if scoring not in _SCORINGS:
            raise ValueError("muir.torch.MoE: scoring must be one of %s, "
                             "got %r" % (", ".join(_SCORINGS), scoring))
        if drop_policy not in _POLICIES:
            raise ValueError("muir.torch.MoE: drop_policy must be one of "
                             "%s, got %r" % (", ".join(_POLICIES),
                                             drop_policy))
        if self.top_k > self.experts:
            raise ValueError("muir.torch.MoE: top_k (%d) is greater than "
                             "experts (%d)" % (self.top_k, self.experts))
        if self.experts % self.groups or \
                self.groups_per_token > self.groups or \
                self.top_k > self.groups_per_token * (self.experts //
                                                      self.groups):
            raise ValueError("muir.torch.MoE: groups (%d) must divide "
                             "experts (%d), groups_per_token (%d) be at most "
                             "groups, and top_k (%d) at most the experts of "
                             "groups_per_token groups"
                             % (self.groups, self.experts,
                                self.groups_per_token, self.top_k))
        if self.experts % self.ep:
            raise ValueError("muir.torch.MoE: experts (%d) do not divide "
                             "over ep=%d" % (self.experts, self.ep))
        # The ranks: mpirun's, or torch.distributed's group (torchrun),
        # joined for an expert-parallel layer or a group given; an ep=1
        # layer's passes run on whatever the process joined.
        if self.ep > 1 or process_group is not None or \
                device_mesh is not None:
            _dist.join("muir.torch.MoE", process_group, device_mesh)
        names = tuple(getattr(device_mesh, "mesh_dim_names", None) or ())
        if "ep" in names and (device_mesh.size(names.index("ep")) != self.ep
                              or names.index("ep") != len(names) - 1):
            raise ValueError(
                "muir.torch.MoE: device_mesh %s of dims %s: its \"ep\" dim "
                "must be the last (the inner axis of the folding edp x ep) "
                "and of the layer's ep=%d" % (tuple(device_mesh.mesh.shape),
                                              names, self.ep))
        world = _world_size()
        if self.ep > 1 and (world < self.ep or world % self.ep):
            launched = os.environ.get("WORLD_SIZE")
            other = "" if world > 1 or not launched else (
                "; this process was started by torchrun or another env:// "
                "launcher (WORLD_SIZE=%s): call "
                "torch.distributed.init_process_group first (or pass "
                "process_group=)" % launched)
            raise ValueError("muir.torch.MoE: ep=%d needs a job of a "
                             "multiple of %d ranks (torchrun or mpirun); this "
                             "one has %d%s" % (self.ep, self.ep, world, other))
        # ep < ranks: the MoE folding edp x ep (ep the inner axis: rank r
        # holds expert block r % ep); the replicas of a block (edp) sum
        # their stacks' gradients over torch.distributed.
        self._edp_group = _edp_group(self.ep, world) \
            if 1 < self.ep < world else None
        for key, v in (("routed_scaling", routed_scaling),
                       ("capacity_factor", capacity_factor),
                       ("aux_loss_coef", aux_loss_coef)):
            if v is None and key != "routed_scaling":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                    not math.isfinite(v) or \
                    (v <= 0 if key != "aux_loss_coef" else v < 0):
                raise ValueError("muir.torch.MoE: %s must be a finite "
                                 "number %s, got %r"
                                 % (key, "> 0" if key != "aux_loss_coef"
                                    else ">= 0", v))
        if not isinstance(normalize, bool):
            raise ValueError("muir.torch.MoE: normalize must be True or "
                             "False, got %r" % (normalize,))
        if not isinstance(e_score_correction_bias, bool):
            raise ValueError("muir.torch.MoE: e_score_correction_bias must "
                             "be True or False, got %r"
                             % (e_score_correction_bias,))
        self.bias_update_rate = _rate(bias_update_rate)
        self.scoring = scoring
        self.routed_scaling = float(routed_scaling)
        self.normalize = normalize
        self.capacity_factor = capacity_factor
        self.drop_policy = drop_policy
        self.aux_loss_coef = aux_loss_coef
        self.max_tokens = None if max_tokens is None else \
            _int(max_tokens, "max_tokens", 1)
        self._max_bounds = _int(max_compiled_bounds, "max_compiled_bounds",
                                1)
        self.check_finite = bool(check_finite)
        if not isinstance(recompute, bool):
            raise ValueError("muir.torch.MoE: recompute must be True or "
                             "False, got %r" % (recompute,))
        self.recompute = recompute
        if products not in _PRODUCTS:
            raise ValueError("muir.torch.MoE: products must be None, "
                             "'float32' or 'bfloat16', got %r" % (products,))
        self.products = products
        self.name = str(name)
        self.options = dict(options or {})
        el = self.experts // self.ep
        h, f = self.hidden, self.expert_size
        P = torch.nn.Parameter

        def linear(*shape):
            w = torch.empty(*shape)
            bound = 1.0 / math.sqrt(shape[-1])
            torch.nn.init.uniform_(w, -bound, bound)
            return P(w)
        self.router = linear(self.experts, h)
        self.gate_proj = linear(el, f, h)
        self.up_proj = linear(el, f, h)
        self.down_proj = linear(el, h, f)
        self._weight_names = ["router", "gate_proj", "up_proj", "down_proj"]
        # Rank r of ep holds experts [r * el, (r + 1) * el): state_dict
        # records the rows (its metadata's "muir_experts"), and
        # load_state_dict takes this rank's rows of any state that holds
        # them (a whole stack: muir.torch.full_state_dict).
        self._ep_rank = _world_rank() % self.ep if self.ep > 1 else 0
        self._mark_parameters()
        if self.shared_experts:
            sf = self.shared_experts * f
            self.shared_gate_proj = linear(sf, h)
            self.shared_up_proj = linear(sf, h)
            self.shared_down_proj = linear(h, sf)
            self._weight_names += ["shared_gate_proj", "shared_up_proj",
                                   "shared_down_proj"]
        self.tokens_per_expert = torch.zeros(self.experts, dtype=torch.int64)
        # The selection bias (None: none) and the loads counted since its
        # last update (not saved: a checkpoint is taken between updates).
        self.register_buffer("e_score_correction_bias",
                             torch.zeros(self.experts)
                             if e_score_correction_bias else None)
        self.register_buffer("tokens_per_expert_since_update",
                             torch.zeros(self.experts, dtype=torch.int64)
                             if e_score_correction_bias else None,
                             persistent=False)
        # (bound, (pass, bf16)[, device]) -> _Pass (pass: "forward",
        # "forward-only", "backward" or "recompute"), and the size
        # classes held, (bound[, device]), least recently used first.
        self._passes = {}
        self._classes = collections.OrderedDict()
        self._bound = self.max_tokens

    def _mark_parameters(self):
        """Marks the parameters for muir.torch.Muon: the router takes AdamW
        (the experts Muon, per expert); the expert stacks hold experts
        _rows() (and with ep > 1, Muon steps them per expert on this rank
        only). Marked again on a copy: copy.deepcopy of a Parameter drops
        its Python attributes (torch 2.9 still does; pickle keeps them)."""
        self.router._muir_optimizer = "adamw"
        for n in _STACKS:
            p = getattr(self, n)
            p._muir_experts = self.experts
            p._muir_ep_rank = self._ep_rank
            if self.ep > 1:
                p._muir_ep = self.ep

    def _rows(self):
        """The experts this layer's stacks hold: (lo, hi, experts)."""
        el = self.experts // self.ep
        return (self._ep_rank * el, (self._ep_rank + 1) * el, self.experts)

    # -- copies -----------------------------------------------------------
    def __getstate__(self):
        # The compiled passes are handles into muir's library (ctypes
        # pointers): a cache, which a copy (copy.deepcopy, pickle,
        # torch.save, swa_utils.AveragedModel) compiles again when it runs.
        state = self.__dict__.copy()
        state["_passes"] = {}
        state["_classes"] = collections.OrderedDict()
        # A process group is the process's: a copy takes this process's.
        state["_edp_group"] = None
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        # Pickled by an older muir.torch: the rank was kept on the stacks
        # only, the passes of every bound.
        if "_ep_rank" not in state:
            self._ep_rank = _world_rank() % self.ep if self.ep > 1 else 0
        # The edp group this process made for the layer's folding.
        world = _world_size()
        self._edp_group = _EDP_GROUPS.get((self.ep, world)) \
            if 1 < self.ep < world else None
        if "_classes" not in state:
            self._classes = collections.OrderedDict()
            self._max_bounds = DEFAULT_MAX_COMPILED_BOUNDS
        if "recompute" not in state:
            self.recompute = False
        if "products" not in state:
            self.products = None
        if "e_score_correction_bias" not in self._buffers:
            self._buffers["e_score_correction_bias"] = None
            self._buffers["tokens_per_expert_since_update"] = None
            self._non_persistent_buffers_set.add(
                "tokens_per_expert_since_update")
            self.bias_update_rate = 1e-3
        self._mark_parameters()

    # -- state ------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta.setdefault(prefix[:-1], {})["muir_experts"] = list(
                self._rows())

    def _load_from_state_dict(self, state_dict, prefix, local_metadata,
                              strict, missing_keys, unexpected_keys,
                              error_msgs):
        # torch hands each module its own copy of the dict: this rank's
        # rows replace a stack that holds more.
        saved = local_metadata.get("muir_experts")
        refused = []
        for n in _STACKS:
            key = prefix + n
            if key not in state_dict:
                continue
            rows, why = held_rows(state_dict[key], saved, self._rows(), key)
            if why is not None:
                error_msgs.append("muir.torch.MoE %r: %s" % (self.name, why))
                del state_dict[key]
                refused.append(key)
            else:
                state_dict[key] = rows
        super()._load_from_state_dict(state_dict, prefix, local_metadata,
                                      strict, missing_keys, unexpected_keys,
                                      error_msgs)
        # Reported above, not again as missing.
        missing_keys[:] = [k for k in missing_keys if k not in refused]

    # -- compiling --------------------------------------------------------
    def description(self, bound=None, bf16=False):
        """The description (YAML text) the layer compiles from (`bf16`:
        its experts' products on bfloat16 operands)."""
        bound = bound or self._bound or 128
        world = _world_size()
        # With ep, the experts' folding of the job's ranks (muir.torch.Muon
        # steps the expert stacks on the same grid).
        grid = "{dp: %d}" % world
        if self.ep > 1:
            grid += "\n  moe_axes: {edp: %d, ep: %d}" % (world // self.ep,
                                                         self.ep)
        entry = ("{name: %s, experts: %d, top_k: %d, scoring: %s, "
                 "shared_experts: %d, groups: %d, groups_per_token: %d, "
                 "hidden: %d, expert_size: %d, tokens_per_rank: %d, "
                 "routed_scaling: %r, normalize: %s"
                 % ("layer", self.experts, self.top_k, self.scoring,
                    self.shared_experts, self.groups, self.groups_per_token,
                    self.hidden, self.expert_size, bound,
                    self.routed_scaling,
                    "true" if self.normalize else "false"))
        if self.capacity_factor is not None:
            entry += ", capacity_factor: %r, drop_policy: %s" % (
                float(self.capacity_factor), self.drop_policy)
        if self.e_score_correction_bias is not None:
            entry += ", selection_bias: true"
        if bf16:
            entry += ", expert_products: bf16"
        return ("name: moe-layer\ngrid:\n  axes: %s\nmoe:\n  - %s}\n"
                % (grid, entry))

    @property
    def max_compiled_bounds(self):
        """How many token bounds (size classes) keep their compiled passes
        (the least recently used is freed first; DEFAULT_MAX_COMPILED_BOUNDS
        by default)."""
        return self._max_bounds

    @max_compiled_bounds.setter
    def max_compiled_bounds(self, value):
        self._max_bounds = _int(value, "max_compiled_bounds", 1)
        self._evict()

    @property
    def bound(self):
        """The token bound of the last call (max_tokens when given; None
        before the first call)."""
        return self._bound

    def compiled_bounds(self):
        """The token bounds whose compiled passes are held, least recently
        used first."""
        return [c[0] for c in self._classes]

    def prepare(self, tokens=None, products="float32", device="cpu"):
        """Compiles (or loads from the cache) the forward and backward
        passes a training call of `tokens` tokens (default max_tokens, else 128)
        with `products` ("float32" or "bfloat16") on `device` will run, so
        that the first call does not; returns the token bound. (A training
        script times its steps, or a benchmark its memory, without the
        one-time compile and the libraries it loads.)"""
        if products not in _PRODUCTS[1:]:
            raise ValueError("muir.torch.MoE.prepare: products must be "
                             "'float32' or 'bfloat16', got %r" % (products,))
        device = torch.device(device)
        bound = self._bound_of(tokens or self.max_tokens or 128)
        passes = ("forward-only", "recompute") if self.recompute else \
            ("forward", "backward")
        for which in passes:
            self._pass(bound, which, device, products == "bfloat16")
        return bound

    def close(self):
        """Frees the compiled passes (they are compiled again when
        needed)."""
        for p in self._passes.values():
            p.step.close()
        self._passes.clear()
        self._classes.clear()

    def _evict(self, keep=None):
        """Frees the passes of the least recently used size classes beyond
        max_compiled_bounds (not `keep`, the class of the running call)."""
        for c in list(self._classes):
            if len(self._classes) <= self._max_bounds:
                break
            if c == keep:
                continue
            del self._classes[c]
            for key in [k for k in self._passes
                        if (k[0],) + k[2:] == c]:
                self._passes.pop(key).step.close()

    def _pass(self, bound, which, device, bf16=False):
        key = (bound, (which, bf16)) if device.type == "cpu" else \
            (bound, (which, bf16), device.type, device.index)
        size_class = (bound,) + key[2:]
        self._classes[size_class] = None
        self._classes.move_to_end(size_class)
        self._evict(keep=size_class)
        p = self._passes.get(key)
        if p is None:
            opts = {"target": "cpu"}
            if device.type == "cuda":
                opts = {"target": "cuda", "cuda-device": device.index or 0}
            opts.update(self.options)
            # CPU passes are kept on disk as optimizer steps are (a pass
            # per layer shape and bound, loaded instead of compiled by the
            # next process): options {"cache-dir": DIR}, None or "" for
            # none, by default muir.cache_dir()'s.
            cache = muir.cache_dir(opts.pop("cache-dir", muir.DEFAULT))
            if cache and opts["target"] == "cpu":
                opts["cache-dir"] = cache
            opts["layer"] = "layer"
            opts["layer-pass"] = which
            try:
                step = muir.compile(self.description(bound, bf16),
                                    "%s.yaml" % self.name, opts)
            except muir.MuirError as e:
                raise muir.MuirError("muir.torch.MoE %r: %s"
                                     % (self.name, e)) from None
            p = self._passes[key] = _Pass(step)
        return p

    def _bound_of(self, tokens):
        if self.max_tokens is not None:
            if tokens > self.max_tokens:
                raise MoEInputError(
                    "muir.torch.MoE %r: %d tokens, more than max_tokens "
                    "(%d)" % (self.name, tokens, self.max_tokens))
            return self.max_tokens
        # The call's size class: a small call after a large one runs on a
        # small bound (the passes' work and memory scale with the bound).
        # With ep > 1 every rank runs the same bound: the class of the
        # largest call of any rank.
        if self.ep > 1:
            mine = torch.zeros(_world_size(), dtype=torch.int64)
            mine[_world_rank()] = tokens
            tokens = int(_sum_over_ranks(mine, self.ep).max())
        self._bound = _bound_for(tokens)
        return self._bound

    # -- the passes -------------------------------------------------------
    def _weights(self):
        return [getattr(self, n) for n in self._weight_names]

    def _check(self, x):
        who = "muir.torch.MoE %r" % self.name
        if not isinstance(x, torch.Tensor):
            raise MoEInputError("%s: expected a tensor, got %s"
                                % (who, type(x).__name__))
        device = self.router.device
        if x.device.type not in ("cpu", "cuda") or x.device != device:
            raise MoEInputError("%s: x is on %s, the layer's parameters on "
                                "%s; give x on %s" % (who, x.device, device,
                                                      device))
        if x.dtype not in _X_DTYPES:
            raise MoEInputError("%s: x has dtype %s; expected float32, "
                                "bfloat16 or float16"
                                % (who, str(x.dtype).replace("torch.", "")))
        if x.dim() < 1 or x.shape[-1] != self.hidden:
            raise MoEInputError("%s: x has shape %s; expected [..., %d] "
                                "(hidden)" % (who, list(x.shape),
                                              self.hidden))
        for n, w in zip(self._weight_names, self._weights()):
            if w.device != device or w.dtype not in _W_DTYPES or \
                    not w.is_contiguous():
                raise MoEInputError("%s: parameter %s must be contiguous "
                                    "float32 or bfloat16 on %s (the "
                                    "router's device)" % (who, n, device))
        if self.check_finite and x.numel() and \
                not bool(torch.isfinite(x).all()):
            bad = (~torch.isfinite(x)).nonzero()[0].tolist()
            raise MoEInputError("%s: x has a non-finite value %r at %s "
                                "(check_finite)"
                                % (who, x[tuple(bad)].item(), bad))
        bias = self.e_score_correction_bias
        if bias is not None:
            if bias.device != device or not bias.is_floating_point() or \
                    tuple(bias.shape) != (self.experts,):
                raise MoEInputError(
                    "%s: e_score_correction_bias must be a floating-point "
                    "[%d] (experts) on %s, got %s %s on %s"
                    % (who, self.experts, device,
                       str(bias.dtype).replace("torch.", ""),
                       list(bias.shape), bias.device))
            if self.check_finite and not bool(torch.isfinite(bias).all()):
                bad = int((~torch.isfinite(bias)).nonzero()[0])
                raise MoEInputError("%s: e_score_correction_bias has a "
                                    "non-finite value %r at [%d] "
                                    "(check_finite)"
                                    % (who, bias[bad].item(), bad))

    def _padded(self, t, bound):
        """t [T, H] as a contiguous [bound, H] buffer (zero rows after T)."""
        if t.shape[0] == bound and t.is_contiguous():
            return t
        buf = torch.zeros(bound, t.shape[1], dtype=t.dtype, device=t.device)
        buf[:t.shape[0]] = t
        return buf

    def _forward(self, x, weights, bias=None, bound=None, bf16=False,
                 keep=True):
        """One forward pass; `bias` and `bound`: those of the forward a
        recomputing backward repeats (default: the layer's now); `bf16`:
        the experts' products round their operands to bfloat16; `keep`:
        the pass that also writes what the backward keeps (saved.*), else
        "forward-only" (saved is [])."""
        tokens = x.shape[0]
        bound = bound or self._bound_of(tokens)
        p = self._pass(bound, "forward" if keep else "forward-only",
                       x.device, bf16)
        xb = self._padded(x.detach(), bound)
        out = {n: torch.empty(p.shapes[n],
                              dtype=torch.int64 if n == "tokens_per_expert"
                              else torch.float32, device=x.device)
               for n in p.shapes if n == "y" or n == "tokens_per_expert" or
               n.startswith("saved.")}
        tensors = dict(out)
        tensors["x"] = xb
        for n, w in zip(self._weight_names, weights):
            tensors[n] = w.detach()
        if bias is None and self.e_score_correction_bias is not None:
            # float32, and a copy, which the backward routes with too.
            bias = self.e_score_correction_bias.detach().to(
                torch.float32, copy=True).contiguous()
        if bias is not None:
            tensors["selection_bias"] = bias
        p.run(tensors, tokens, x.device)
        saved = [out[n] for n in sorted(k for k in out
                                        if k.startswith("saved."))]
        return (out["y"][:tokens], saved, out["tokens_per_expert"], bound,
                bias)

    def _backward(self, bound, dy, x, weights, saved, bias=None,
                  bf16=False):
        """dx and the weights' gradients; `saved` the forward's kept
        products, or None for the recompute pass, which computes them."""
        tokens = x.shape[0]
        p = self._pass(bound, "backward" if saved is not None else
                       "recompute", x.device, bf16)
        tensors = {"dy": self._padded(dy.contiguous(), bound),
                   "x": self._padded(x, bound)}
        for n, w in zip(self._weight_names, weights):
            tensors[n] = w.detach()
        for n, t in zip(sorted(k for k in p.shapes if k.startswith("saved.")),
                        saved or ()):
            tensors[n] = t
        if bias is not None:
            tensors["selection_bias"] = bias
        outs = {n: torch.empty(p.shapes[n], device=x.device) for n in p.shapes
                if n == "dx" or n.endswith(".grad")}
        tensors.update(outs)
        p.run(tensors, tokens, x.device)
        return outs["dx"][:tokens], [outs[n + ".grad"]
                                     for n in self._weight_names]

    def _bf16_products(self, x):
        """Whether this call's expert products take bfloat16 operands
        (`products`; None: under torch.autocast(bfloat16), or with x and
        the expert stacks all bfloat16, as an nn.Linear there would; on
        the CPU)."""
        if self.products is not None:
            return self.products == "bfloat16"
        kind = x.device.type
        if kind != "cpu":
            return False
        if torch.is_autocast_enabled(kind):
            return torch.get_autocast_dtype(kind) == torch.bfloat16
        return x.dtype == torch.bfloat16 and all(
            getattr(self, n).dtype == torch.bfloat16 for n in _STACKS)

    def _ddp_stack_scale(self):
        """The factor on the ep stacks' gradients: 1, or under
        DistributedDataParallel (a forward DDP runs) 1 / its ranks, so that
        they are, as DDP's averaged ones are, the gradients of the mean of
        the ranks' losses (muir's dispatch sums every rank's tokens into
        each expert's gradient). Refuses a DDP that would all-reduce and
        broadcast what differs per rank: the stacks of an ep > 1 layer,
        the loads update_bias() sums over the ranks (prepare_ddp says DDP
        to leave them)."""
        # prepare_ddp marked the layer: DDP's convention always, also where
        # DDP runs its Python reducer (compiled autograd), which leaves its
        # active module unset.
        ranks = _world_size()
        prepared = 1.0 / ranks if self.ep > 1 and \
            getattr(self, "_muir_ddp", False) else 1.0
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
            ddp = DDP._get_active_ddp_module()
        except (ImportError, AttributeError):
            return prepared
        if ddp is None:
            return prepared
        ignored = ddp.parameters_to_ignore
        mine = {id(getattr(self, n)) for n in _STACKS} if self.ep > 1 \
            else set()
        counts = self.tokens_per_expert_since_update
        held = [n for n, p in ddp.module.named_parameters()
                if id(p) in mine and n not in ignored]
        if counts is not None and ddp.broadcast_buffers:
            held += [n for n, b in ddp.module.named_buffers()
                     if b is counts and n not in ignored]
        if held:
            raise MoEInputError(
                "muir.torch.MoE %r (ep=%d): DistributedDataParallel "
                "all-reduces or broadcasts %s, which differ per rank (its "
                "wrap has already broadcast rank 0's): call "
                "muir.torch.prepare_ddp(model) before "
                "DistributedDataParallel(model), after the layer's "
                "experts are loaded" % (self.name, self.ep, ", ".join(held)))
        if self.ep == 1:
            return 1.0
        import torch.distributed as dist
        if dist.get_world_size(ddp.process_group) != ranks:
            raise MoEInputError(
                "muir.torch.MoE %r (ep=%d): DistributedDataParallel runs "
                "over %d ranks; an ep layer's job must be DDP's ranks (%d)"
                % (self.name, self.ep,
                   dist.get_world_size(ddp.process_group), ranks))
        return 1.0 / ranks

    def forward(self, x):
        self._check(x)
        if self._edp_group is None and 1 < self.ep < _world_size():
            # A copy loaded in a process that had not made the groups yet
            # (every rank runs the forward: new_group is collective).
            self._edp_group = _edp_group(self.ep, _world_size())
        shape = x.shape
        kind = x.device.type
        # The dtype an nn.Linear would return here: autocast's, else x's.
        out = torch.get_autocast_dtype(kind) \
            if torch.is_autocast_enabled(kind) else x.dtype
        bf16 = self._bf16_products(x)
        # float32 inside (casts that autograd differentiates: the
        # gradients come back rounded to x's and the parameters' dtypes).
        with torch.autocast(kind, enabled=False):
            x2 = x.reshape(-1, self.hidden).float()
            if not x2.is_contiguous():
                x2 = x2.contiguous()
            weights = [w.float() for w in self._weights()]
            # What the backward keeps, only where one will run and read
            # it: under recompute, or where nothing needs a gradient
            # (torch.no_grad, a frozen layer and x), the "forward-only"
            # pass writes y and the loads alone.
            keep = not self.recompute and torch.is_grad_enabled() and any(
                t.requires_grad for t in [x2] + weights)
            y, tpe = _MoEFunction.apply(self, bf16, self._ddp_stack_scale(),
                                        keep, x2, *weights)
            self.tokens_per_expert = tpe
            # The loads update_bias() balances: training passes only (not
            # evaluation, nor a forward run again under no_grad).
            counts = self.tokens_per_expert_since_update
            if counts is not None and self.training and \
                    torch.is_grad_enabled():
                counts += tpe
            y = y.reshape(shape).to(out)
            if self.aux_loss_coef is None:
                return y
            return y, self._aux_loss(x2, tpe, weights[0])

    def _aux_loss(self, x2, tpe, router):
        tokens = x2.shape[0]
        if tokens == 0:
            return router.sum() * 0.0
        logits = x2 @ router.t()
        if self.scoring == "softmax":
            scores = logits.softmax(-1)
        else:
            s = logits.sigmoid()
            scores = s / s.sum(-1, keepdim=True)
        f = tpe.to(torch.float32) / float(tokens * self.top_k)
        return self.aux_loss_coef * self.experts * (f * scores.mean(0)).sum()

    def update_bias(self):
        """Aux-loss-free load balancing, to call on every rank after each
        optimizer.step(): the loads L [experts] (tokens_per_expert_since_update
        summed over the job's ranks), then e_score_correction_bias[e] +=
        bias_update_rate * sign(mean(L) - L_e), the counts zeroed. Returns
        L (int64, on the CPU). See the class docstring."""
        if self.e_score_correction_bias is None:
            raise ValueError("muir.torch.MoE %r: update_bias() needs a "
                             "layer made with e_score_correction_bias=True"
                             % self.name)
        rate = _rate(self.bias_update_rate)
        counts = self.tokens_per_expert_since_update
        load = _sum_over_ranks(counts.detach().cpu(), self.ep)
        # sign(mean(L) - L_e) = sign(sum(L) - experts * L_e): exact.
        sign = torch.sign(load.sum() - self.experts * load)
        bias = self.e_score_correction_bias
        with torch.no_grad():
            new = bias.detach().cpu().double() + rate * sign.double()
            bias.copy_(new)
            counts.zero_()
        return load

    def extra_repr(self):
        return ("hidden=%d, expert_size=%d, experts=%d, top_k=%d, "
                "scoring=%s, shared_experts=%d, ep=%d%s"
                % (self.hidden, self.expert_size, self.experts, self.top_k,
                   self.scoring, self.shared_experts, self.ep,
                   ", e_score_correction_bias=True"
                   if self.e_score_correction_bias is not None else ""))

    # -- Hugging Face transformers (muir.hf) ------------------------------
    @classmethod
    def from_hf(cls, block, **options):
        """A layer with the routing and a copy of the weights of a
        transformers MoE block (Qwen3-MoE, Mixtral, DeepSeek-V3; Qwen2-MoE
        with routed_only=True): muir.hf.from_hf, whose docstring says how
        each family maps. muir.hf.MoEBlock(block) is the drop-in module
        and muir.hf.replace_moe_blocks(model) replaces a model's blocks."""
        from muir import hf
        return hf.from_hf(block, cls=cls, **options)

    def to_hf(self, block):
        """Writes this layer's weights into the transformers MoE block
        `block` (the inverse of from_hf; muir.hf.copy_to_hf). Returns
        `block`."""
        from muir import hf
        return hf.copy_to_hf(self, block)
