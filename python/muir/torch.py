"""muir's compiled Muon step as a PyTorch optimizer (and NorMuon's:
muir.torch.NorMuon, the same optimizer with NorMuon's row normalisation;
see its documentation).

    import muir.torch
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000)
    for batch in data:
        loss = model(batch); loss.backward()
        opt.step(); opt.zero_grad(); sched.step()

Parameters, as torch.optim takes them: `model.parameters()` (plain
tensors, named "param0", "param1", ... by their place), `model.named_
parameters()` (or a Module, or a dict of name -> tensor), or a list of
group dicts {"params": [...], "use_muon": bool, "lr": ..., ...} whose
"params" are tensors or (name, tensor) pairs. Names need not be unique:
as torch.optim does, it takes two modules' named_parameters() that both
hold "weight" (in one list, in two groups, or added later). Names appear
in errors, are matched by adamw_patterns and, where every name is unique
and none can be taken for another's gradient or state, are the compiled
step's argument names (otherwise the parameters' places, "p0", "p1", ...,
are); a name two parameters share cannot pick an attention block's q or k
(give the tensor).

Which parameters take Muon. In a group with "use_muon": True, all of
them (2-D matrices, 3-D stacks [E, out, in] per matrix, 4-D convolution
weights [out, in, kh, kw] as the matrix [out, in*kh*kw], as Keller
Jordan's Muon does); with False, AdamW. Otherwise (plain or named
parameters, or a group without use_muon) each is assigned
(muir.description.assign): 2-D, 3-D and 4-D ones take Muon unless their
name matches one of `adamw_patterns` (Python fnmatch globs on the whole
name; the default, muir.description.DEFAULT_ADAMW_PATTERNS, catches
embeddings and output heads); everything else takes AdamW. A tensor's
`_muir_optimizer` attribute ("muon" or "adamw") decides instead
(muir.torch.MoE's router says "adamw"). Plain or named parameters form
two param groups, `optimizer.param_groups[0]` (Muon, "use_muon": True) and
`[1]` (AdamW, "use_muon": False), either possibly empty; a list of group
dicts gives one group each, in order (a group without use_muon holds
"use_muon": None, and both kinds). add_param_group adds a group at any
time; its parameters take part from the next step() on.

Group keys. A group of Muon parameters reads lr, weight_decay, momentum,
nesterov, ns_steps, schedule, scale_mode and scale_extra; of AdamW
parameters lr, weight_decay, betas and eps; a mixed group all of them.
Keys a group leaves out take the constructor's values (a use_muon=False
group: adamw_lr, adamw_weight_decay, adamw_betas, adamw_eps).

Hyperparameters at run time. lr, weight_decay, momentum (Muon), betas
and eps (AdamW) are read from each group at every step() and passed to
the compiled step as arguments ("overrides.<k>.lr", ".momentum",
".beta1", ...: one override of the step's description per group), so
changing them by hand or with torch.optim.lr_scheduler never compiles:
OneCycleLR and CyclicLR with cycle_momentum=True cycle Muon's momentum
(the "momentum" those schedulers write to an AdamW-only group is not
read). Only the structural settings (nesterov, ns_steps, schedule,
scale_mode, scale_extra, and the set of parameters taking part) compile
a step, once per distinct value.
The constructor and every step() check the values with the description
reader's ranges (lib/Import/Description.cpp): lr and weight_decay finite
in [0, inf), momentum and each of betas in [0, 1), eps and scale_extra in
(0, inf), nesterov True or False, ns_steps an integer >= 1 (its upper
limit is the reader's, at compile), schedule and scale_mode one of their
names; a bad one raises ParamGroupError (a ValueError) naming the group,
the key and the range, and nothing is updated. The groups' keys are
those above, "params" and "use_muon" (both fixed when the group is
added), and the keys torch's lr schedulers add (SCHEDULER_KEYS:
initial_lr, max_lr, min_lr, base_momentum, max_momentum, swa_lr; not
read). Any other key (a typo such as "weight_decy", a setting of the other
optimizer), a removed one, or other "params" raise ParamGroupError at the
next step(), naming the key.

`adamw_lr=None` means the same lr as Muon, as Moonlight does: the default
spectral scale 0.2 * sqrt(max(m, n)) is chosen so that Muon's update RMS
matches AdamW's, and one learning rate (and schedule) serves both groups.
With scale_mode "shape" or "unit_rms" (Keller Jordan's convention, lr
around 0.02 for Muon) give AdamW its own lr (e.g. 3e-4).

step(): the parameters with a gradient take part (those without are
skipped, their state untouched, as torch optimizers do). The compiled step
holds every parameter that has taken part in some step (its members, per
device): one without a gradient now is skipped by its run-time flag (the
description's optimizer.mask, "<name>.take" = 0), bit for bit, without
compiling; each AdamW parameter counts its own steps ("<name>.step"). A
parameter taking part for the first time (one added by add_param_group, or
frozen until now) compiles the step once more; one that never has a
gradient costs nothing. A skipped member's arguments are bound to its
state (read and written back unchanged): its element-wise passes and its
Newton-Schulz still run, so skipping saves no time. Every one of them
must be float32, bfloat16 or float64, the dtype it had when the
optimizer was built (its gradient of its dtype, or float32 for a bfloat16
one), on the device of the step's
target (CPU tensors: target cpu; CUDA tensors: target cuda on their
device, run on the current stream, after the work queued there; the CUDA
path has not run on a GPU yet) and of the shape it had when the optimizer
was built;
otherwise step() raises ParameterError naming the parameter and updates
nothing. A non-contiguous gradient (a channels_last one, a view) is read
through a contiguous copy; a non-contiguous parameter is updated in a
contiguous copy written back into it. A bfloat16 parameter is updated as
mixed-precision training expects: its optimizer state is float32, the
step's maths float32 on the parameter's value (a float32 copy of it and
of its gradient), and the result rounded once to bfloat16 (to nearest,
ties to even) when it is written back: within one bfloat16 ulp of the
float64 step. A float64 parameter is computed in float64 throughout, its
state float64 (a reference for the float32 steps: within 1e-8 of the
float64 step's formulas), on the CPU target and one rank. Before the
step, as muir-run does, the gradients are checked for NaN and infinities
(check_finite=True; one sum per gradient and one read of their total on
the host, at memory speed; the elements are searched only when the total
is not finite): one raises NonFiniteGradientError (a
ParameterError) naming the parameter, the element and its value, and
nothing is updated: no parameter, no optimizer state, no step count
(catch it to skip the step, as torch.amp.GradScaler does).
check_finite=False (or `optimizer.check_finite = False`) turns the check
off. With several ranks every rank must hold the same gradients, so all
stop together.
check_replicas=True (or `optimizer.check_replicas = True`; off by default)
checks before the step that every rank holds the same gradients: the
hash of each gradient (the sum of its elements' bit patterns, exact) is
all-reduced as a maximum and a minimum over torch.distributed (which must
be initialised), two collectives of one int64 per tensor; a difference
raises ParameterError naming the parameter, and nothing is updated (a
missing gradient all-reduce would otherwise desynchronise the ranks).
The step updates the parameters' own storage (p.data_ptr() stays),
reading p.grad; muir's step is compiled once per set of members (and
structural settings) and kept, in memory (at most
max_compiled_steps, default DEFAULT_MAX_COMPILED_STEPS = 8: the least
recently used is freed first; `optimizer.compiled_steps()` lists those
held) and, for the CPU target, on disk (cache_dir below). The state lives in
`optimizer.state[p]`: "momentum_buffer" (Muon), "exp_avg", "exp_avg_sq" and
"step" (an int, AdamW's 1-based count), so state_dict()/load_state_dict()
and torch.save checkpoints work (with any number of groups) and a resumed
run equals the continuous one bitwise (load_state_dict keeps a bfloat16
parameter's state float32, where torch.optim's would cast it to
bfloat16), also on another number of ranks
(the state is whole on every rank: saved on 2 ranks, it continues on 1,
and the other way round). An expert stack of a muir.torch.MoE with ep > 1
and its state hold this rank's experts; state_dict() records which
("muir_experts"), and muir.torch.full_state_dict(optimizer) (and
full_state_dict(model) for the model) gathers them whole over
torch.distributed, a state that loads on any ep: load_state_dict keeps
each rank's experts' rows of any state that holds them (a whole one, or
the part of a rank that held more experts) and refuses one that does not
(another rank's part), naming the parameter, as it refuses a record
that is not [lo, hi, experts] with integers 0 <= lo < hi <= experts.
load_state_dict refuses, with
a ValueError naming the group or the parameter, a state made for other
groups (their count, sizes, use_muon) or other shapes, before loading
anything. copy.deepcopy (and
pickling) copies the optimizer with its parameters and state; the copy
compiles its own steps.

Several ranks: under mpirun (OMPI_COMM_WORLD_SIZE), or with
torch.distributed initialised (torchrun), layout defaults to "dp=<world
size>": Newton-Schulz is shared out over the ranks (each matrix on one
rank, the results gathered) and every rank ends with the same parameters
as one rank would, given the same (already averaged) gradients on every
rank. On the CPU target the ranks are mpirun's MPI world, else
torch.distributed's group: process_group=G or device_mesh=M (a 1-D mesh,
or one holding every rank) as keywords, else the default group (when its
backend moves CPU tensors: gloo); the compiled steps' collectives then run
over it (one all_to_all_single of bytes per exchange), with the bits of the
same layout under mpirun (docs/design.md, "Transports";
test/Python/torch-torchrun.test). Every rank of the group must step the
same parameters (as after DDP's all-reduce); layout="dp=1" keeps each
rank's step its own. A process's steps (and its MoE layers') run over one
group. process_group and device_mesh are for the CPU target; on the CUDA
target under
torchrun (torch.distributed initialised, no mpirun), rank 0 makes an NCCL
unique id (muir.nccl_unique_id) and torch.distributed broadcasts it, so
muir's communicator spans the job's ranks.
Expert stacks of a muir.torch.MoE with ep > 1 (marked `_muir_ep`) hold
this rank's experts only: the step declares them split over ep (the MoE
folding edp x ep of the same ranks) and each rank steps its own, per
expert, never shared out; they take Muon (an ep stack cannot take AdamW).
Checkpoints that load on another number of ranks: full_state_dict, above.

FSDP2 and DTensor parameters (torch.distributed.fsdp.fully_shard, or
any DTensor on a 1-D mesh of the group's ranks in order; HSDP's 2-D mesh
of replicas x shards). A matrix held as Shard(0) (its rows split evenly
over the ranks) is declared split over dp (`shard {kind: fsdp, axis:
dp}`): each matrix is orthogonalised whole on one owner rank (matrices
assigned to the ranks by cost, as muir-distribute does), never per shard
and never twice, its blocks sent back into the shards; a Replicate() one
is a whole matrix as above. Under HSDP each replica group steps over its
shard dim's group (the optimizer joins it when no group is given).
AdamW parameters are element-wise: each rank updates its own shard (any
split). The state tensors are DTensors of the parameter's placement, so
state_dict() is what torch.distributed.checkpoint (DCP) saves and
get_optimizer_state_dict / set_optimizer_state_dict reshard to another
number of ranks; load_state_dict also takes whole (plain) state tensors,
keeping this rank's rows, and full_state_dict gathers them whole. A
matrix whose split dim the ranks do not divide, a Partial placement, one
split over two mesh dims, tensor-parallel and FSDP2 splits in one
optimizer, a mesh of more than two dims and one other than the step's
ranks are refused, naming the
parameter (test/Python/torch-fsdp.test). muir.torch.get_state_dict and
set_state_dict are torch.distributed.checkpoint.state_dict's, with the
expert stacks of muir.torch.MoE(ep > 1) layers (and their state) as
DTensors over the expert-parallel ranks, so that DCP saves every expert
once and loads them on any ep (examples/torch/train_fsdp.py).

MuonClip (Kimi K2's QK-clip): qk_clip=tau with attention=[{"name": ...,
"q": ..., "k": ..., "heads": H, "kv_heads": G}, ...] (q and k: parameters
of this optimizer, as tensors or by name; float32, bfloat16 or float64
matrices of H * d and G * d_k rows; kv_heads defaults to heads) clips each
block's query and key projections after their update, and step() then takes
max_logits={name: tensor [H]}: the largest pre-softmax logit of each
query head in this step's forward (with several ranks, the maximum over
all of them: every rank passes the same values). With
gamma_h = min(1, tau / max_logits_h), the rows of query head h are
multiplied by sqrt(gamma_h), those of kv head g by the square root of the
smallest gamma_h of its H / G query heads; the optimizer state is not
changed (docs/description.md, "MuonClip"). A block whose q and k have no
gradient now needs no max_logits (they are skipped); a missing, unknown,
misshapen or non-finite entry raises ValueError and nothing is updated.
Either optimizer (Muon, NorMuon) updates q and k first. On the CUDA
target the clip is generated kernels, not yet run on a GPU.

Keyword-only arguments:
  ns_eps (None: 1e-7), momentum_kind (None: "ema"; or "accumulate"),
  coefficients (a flat list for schedule "custom"): the description's
  optimizer.muon settings;
  name: the description's name;
  cache_dir: where compiled CPU steps are kept between processes (muir's
  cache-dir option: a shared library per step, named by a hash of the
  description, the options, the build and the host CPU, loaded instead of
  compiling next time). Default $MUIR_CACHE_DIR, else
  $XDG_CACHE_HOME/muir, else ~/.cache/muir; None or "" (or
  MUIR_CACHE_DIR="") for none (muir.cache_dir(); muir.torch.MoE keeps its
  layers' passes there too). The CUDA target compiles every time.
  options: a dict of compile options for muir.compile;
  ns_mode, ns_form, ns_precision, dp_assign, deterministic, syrk, batch,
  fuse_syrk_all_reduce, machine, syrk_chunk_rows, probe_updates, cuda_arch,
  cuda_bf16, cuda_graph: the step library's options a user sets
  (muir.options(), docs/step-library.md's table), None for the library's
  default.
"""
import collections
import difflib
import inspect
import math
import numbers
import operator
import os

import torch

import muir
from muir import description as _description

from muir import _dist
from muir import _moe
from muir._moe import MoE, MoEInputError, prepare_ddp  # noqa: E402,F401
from muir._errors import (  # noqa: F401
    NonFiniteGradientError, ParamGroupError, ParameterError, _float_text)
from muir._dtensor import (
    _as_placed, _dtensor_split, _is_dtensor, _local, _mesh_group, _parts,
    _rows_of, _shard_dim, _state_placements)
from muir._checkpoint import (  # noqa: F401
    full_state_dict, get_state_dict, set_state_dict)

__all__ = ["Muon", "NorMuon", "MoE", "MoEInputError", "prepare_ddp",
           "full_state_dict", "get_state_dict", "set_state_dict",
           "ParameterError",
           "NonFiniteGradientError", "ParamGroupError", "SCHEDULER_KEYS",
           "DEFAULT_MAX_COMPILED_STEPS"]

# The parameter dtypes a step updates (bfloat16 through a float32 copy;
# float64 in float64 throughout).
_DTYPES = (torch.float32, torch.bfloat16, torch.float64)
_TABLES = None
def _tables():
    """What the step library's optimizer registry (muir.optimizers(), the
    description reader's) says of the state, once: `state`, each
    optimizer's state keys (optimizer.state[p]'s) in its arguments' order;
    `rows`, the keys of one value per row (NorMuon's variance: [out],
    [E, out]); `of_suffix`, the step's argument suffix -> key; `kinds`,
    what a compiled step's tensor argument binds (0 the parameter, 1 its
    gradient, 2.. a state key, kinds[2:]) and `kind_of`, its inverse;
    `suffixes`, the names' endings that could clash with a parameter's
    name."""
    global _TABLES
    if _TABLES is None:
        registry = muir.optimizers()
        of_suffix = {}
        for o in registry.values():
            for st in o.state:
                if of_suffix.setdefault(st.suffix, st.key) != st.key:
                    raise muir.MuirError(
                        "muir.torch: the step library names the state %s "
                        "both %r and %r" % (st.suffix, of_suffix[st.suffix],
                                            st.key))
        keys = list(dict.fromkeys(of_suffix.values()))
        _TABLES = {
            "state": {name: tuple(st.key for st in o.state)
                      for name, o in registry.items()},
            "rows": frozenset(st.key for o in registry.values()
                              for st in o.state if st.rows),
            "of_suffix": of_suffix,
            "kinds": (None, None) + tuple(keys),
            "kind_of": dict({"param": 0, "grad": 1},
                            **{k: 2 + i for i, k in enumerate(keys)}),
            "suffixes": (".grad",) + tuple(of_suffix)}
    return _TABLES


def _first(item):
    return item[0]


_INF = math.inf
_CHECKS = None


def _checks():
    """The description reader's checks of the group keys, from the step
    library (muir.settings(), declared once in lib/Import): `ranges`, key
    -> (low, low included, high, high included) of the real-valued keys
    (betas: each of the two, AdamW's beta1's), and `choices`, key -> the
    names of those that take one of them."""
    global _CHECKS
    if _CHECKS is None:
        specs = muir.settings()
        ranges = {}
        for key, spec in (("lr", "lr"), ("weight_decay", "weight_decay"),
                          ("momentum", "momentum"),
                          ("scale_extra", "scale_extra"), ("eps", "eps"),
                          ("betas", "beta1"), ("beta2", "beta2"),
                          ("eps2", "eps2")):
            st = specs[spec]
            ranges[key] = (st.low, st.low_included, st.high,
                           st.high_included)
        _CHECKS = {"ranges": ranges,
                   "choices": {k: specs[k].choices
                               for k in ("schedule", "scale_mode")}}
    return _CHECKS
# What the step reads of each group, by the optimizer its parameters take:
# at every step() (the compiled step's run-time arguments: _run_time_keys,
# from the library's registry), and when it compiles (a new value compiles
# a new step; which of an optimizer's section keys a group may set).
_COMPILED_KEYS = {"muon": ("nesterov", "ns_steps", "schedule", "scale_mode",
                           "scale_extra"),
                  "adamw": ()}
_STRUCTURAL_KEYS = ("params", "use_muon")
# The keys torch.optim.lr_scheduler (LRScheduler, OneCycleLR, CyclicLR)
# and swa_utils.SWALR add to param groups: allowed, not read (a
# scheduler's momentum cycling writes "momentum", which Muon's parameters
# read; in a group of AdamW parameters only, it is not read).
SCHEDULER_KEYS = frozenset(("initial_lr", "max_lr", "min_lr",
                            "base_momentum", "max_momentum", "swa_lr"))
# The step's run-time argument "overrides.<k>.<field>" -> the group key it
# reads (and the element of betas).
_HYPER_FIELDS = {"lr": ("lr", None), "weight_decay": ("weight_decay", None),
                 "momentum": ("momentum", None), "beta1": ("betas", 0),
                 "beta2": ("betas", 1), "eps": ("eps", None)}
_run_time = {}


def _step_option_names():
    """The step library's options a user sets by keyword (muir.options()'s
    user options but cache-dir, which is its own keyword), in its order:
    Muon's signature names each ("ns-mode" as ns_mode)."""
    return [name for name, option in muir.options().items()
            if option.user and name != "cache-dir"]


def _run_time_keys(optimizer):
    """The group keys a step reads at every step() for parameters that
    `optimizer` ("muon", "normuon", "adamw") steps: its run-time
    hyperparameters (muir.optimizers()[optimizer].hyper, the library's
    registry) as the group keys they are read from (_HYPER_FIELDS; a field
    without one is a KeyError here, not a silently unread setting)."""
    if optimizer not in _run_time:
        keys = []
        for field in muir.optimizers()[optimizer].hyper:
            key = _HYPER_FIELDS[field][0]
            if key not in keys:
                keys.append(key)
        _run_time[optimizer] = tuple(keys)
    return _run_time[optimizer]


# Compiled steps kept in memory (least recently used evicted first).
DEFAULT_MAX_COMPILED_STEPS = 8


def _kinds(use_muon):
    """The optimizers a group's parameters take: use_muon True, False or
    None (each parameter by its shape and name)."""
    return ("muon",) if use_muon is True else ("adamw",) \
        if use_muon is False else ("muon", "adamw")


def _group_keys(use_muon, compiled=_COMPILED_KEYS):
    """(run-time keys, compiled keys) a group reads (`compiled`: the
    optimizer class's compiled keys by kind)."""
    run, comp = [], []
    for kind in _kinds(use_muon):
        run += [k for k in _run_time_keys(kind) if k not in run]
        comp += [k for k in compiled[kind] if k not in comp]
    return tuple(run), tuple(comp)


def _range_text(lo, lo_in, hi, hi_in):
    return "%s%s, %s%s" % ("[" if lo_in else "(", _num(lo),
                           "inf" if hi == _INF else _num(hi),
                           "]" if hi_in and hi != _INF else ")")


def _num(x):
    return "%d" % x if x == int(x) else repr(x)


def _real(v):
    """v as a float, or None when it is not a number (bools and strings
    are not)."""
    if isinstance(v, (bool, str, bytes)) or v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError, RuntimeError):
        return None


def _in_range(x, key):
    lo, lo_in, hi, hi_in = _checks()["ranges"][key]
    return x is not None and math.isfinite(x) and \
        (x >= lo if lo_in else x > lo) and (x <= hi if hi_in else x < hi)


def _is_bool(v):
    return isinstance(v, bool) or (type(v).__module__ == "numpy" and
                                   type(v).__name__ == "bool_")


def _value_problem(key, v):
    """Why v is not a valid value of the group key `key` (None if it is)."""
    ranges, choices = _checks()["ranges"], _checks()["choices"]
    if key in ranges and key != "betas":
        if not _in_range(_real(v), key):
            return "expected a finite value in %s" % _range_text(
                *ranges[key])
    elif key == "betas":
        try:
            pair = tuple(v)
        except TypeError:
            pair = None
        if pair is None or isinstance(v, (str, bytes)) or len(pair) != 2 \
                or not all(_in_range(_real(b), key) for b in pair):
            return "expected (beta1, beta2), two finite values in %s" % \
                _range_text(*ranges[key])
    elif key == "nesterov":
        if not _is_bool(v):
            return "expected True or False"
    elif key == "ns_steps":
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or \
                v < 1:
            return "expected an integer >= 1"
    elif key in choices:
        if v not in choices[key]:
            return "expected one of: %s" % ", ".join(choices[key])
    return None


def _value_text(v):
    return _float_text(v) if isinstance(v, float) else repr(v)


def _world_size(target, group=(None, None)):
    """The job's ranks: mpirun's world; on CUDA also torch.distributed's
    (NCCL joins those ranks); on the CPU torch.distributed's group, `group`
    (process_group, device_mesh) or the default one, which the CPU steps'
    collectives then run over (muir._dist); else 1."""
    size = os.environ.get("OMPI_COMM_WORLD_SIZE")
    if size:
        return int(size)
    if target != "cuda":
        return _dist.join("muir.torch.Muon", *group)[1]
    if target == "cuda":
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                return dist.get_world_size()
        except Exception:
            pass
    return 1


def _parse_layout(layout, target="cpu", group=(None, None)):
    if layout is None:
        return _world_size(target, group)
    if isinstance(layout, int) and not isinstance(layout, bool):
        devices = layout
    else:
        text = str(layout).replace(" ", "")
        if not text.startswith("dp=") or not text[3:].isdigit():
            raise ValueError("layout %r: muir.torch.Muon takes whole "
                             "(unsharded) tensors, so the layout is "
                             "\"dp=N\"" % (layout,))
        devices = int(text[3:])
    if devices < 1:
        raise ValueError("layout %r: expected dp >= 1" % (layout,))
    return devices


class _Compiled:
    """One compiled step (over a set of member parameters, each of which
    takes part in a run or is skipped by its take flag) and how to feed
    it."""
    __slots__ = ("step", "binds", "bound", "hyper", "takes", "counts",
                 "members", "params", "inputs", "states", "all_take",
                 "logits", "logits_bound")

    def __init__(self, step, binds, hyper, takes, counts, members, params):
        self.step = step
        # [(arg index, parameter index, kind: 0 param, 1 grad, 2.. state
        # (_tables()["kinds"]))]
        self.binds = binds
        self.bound = [None] * len(binds)
        # (slot in bound, arg index, parameter index, kind or state key)
        self.inputs = [(k, a, i, kind)
                       for k, (a, i, kind) in enumerate(binds) if kind < 2]
        kinds = _tables()["kinds"]
        self.states = [(k, a, i, kinds[kind])
                       for k, (a, i, kind) in enumerate(binds) if kind >= 2]
        # [(hyper index, (group index, key, element of betas or None))]
        self.hyper = hyper
        # The take flags: (first hyper index, parameter indices in order),
        # one consecutive run; each AdamW member's own step count:
        # [(hyper index, parameter index)].
        self.takes = takes
        self.counts = counts
        self.members = members      # parameter indices, sorted
        self.params = params        # the parameters it updates, in order
        self.all_take = True        # the flags in the buffer are all 1
        # MuonClip: [(arg index, block name, heads)], and the tensors
        # bound to them at the last run (kept alive while bound).
        self.logits = []
        self.logits_bound = {}


def _named_items(params, where):
    """[(name or None, tensor)] of a params value: a tensor, a Module, a
    dict of name -> tensor, or an iterable of tensors or (name, tensor)
    pairs."""
    if isinstance(params, torch.Tensor):
        return [(None, params)]
    if isinstance(params, torch.nn.Module):
        return list(params.named_parameters())
    if isinstance(params, dict):
        return [(str(k), v) for k, v in params.items()]
    items = []
    for item in params:
        if isinstance(item, torch.Tensor):
            items.append((None, item))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and \
                isinstance(item[1], torch.Tensor):
            items.append((str(item[0]), item[1]))
        else:
            raise TypeError("muir.torch.Muon: %s holds %r; expected tensors "
                            "or (name, tensor) pairs such as "
                            "model.named_parameters()"
                            % (where, type(item).__name__))
    return items


class Muon(torch.optim.Optimizer):
    """Muon (with AdamW for the parameters Muon does not take) run by muir's
    compiled step. See the module's documentation."""

    # The optimizer of the matrices (muir.optimizers()' name).
    _matrix_optimizer = "muon"
    # NorMuon's settings (beta2, eps2); None: Muon.
    _normuon = None

    @property
    def _compiled_keys(self):
        """What the groups compile on: for the matrices, those of Muon's
        keys that the matrices' optimizer's section has (NorMuon has no
        scale_mode)."""
        section = muir.optimizers()[self._matrix_optimizer].settings
        return dict(_COMPILED_KEYS, muon=tuple(
            k for k in _COMPILED_KEYS["muon"] if k in section))

    def __init__(self, params, lr=0.02, momentum=0.95, nesterov=True,
                 weight_decay=0.0, ns_steps=5, schedule="simple",
                 scale_mode="spectral", scale_extra=0.2, adamw_lr=None,
                 adamw_betas=(0.9, 0.95), adamw_eps=1e-8,
                 adamw_weight_decay=0.0, layout=None, target=None,
                 adamw_patterns=_description.DEFAULT_ADAMW_PATTERNS,
                 check_finite=True, check_replicas=False,
                 max_compiled_steps=DEFAULT_MAX_COMPILED_STEPS,
                 qk_clip=None, attention=None, process_group=None,
                 device_mesh=None, *, ns_eps=None, momentum_kind=None,
                 coefficients=None, name="muir_torch", cache_dir=muir.DEFAULT,
                 options=None, ns_mode=None, ns_form=None, ns_precision=None,
                 dp_assign=None, deterministic=None, syrk=None, batch=None,
                 fuse_syrk_all_reduce=None, machine=None,
                 syrk_chunk_rows=None, probe_updates=None, cuda_arch=None,
                 cuda_bf16=None, cuda_graph=None):
        options = dict(options or {})
        # The step library's options a user sets (muir.options()), each a
        # keyword of the signature (None: not given, the library's
        # default); test/Python/torch-errors.test checks that the two lists
        # agree.
        arguments = locals()
        for option_name in _step_option_names():
            value = arguments[option_name.replace("-", "_")]
            if value is not None:
                options[option_name] = value
        if cache_dir is not muir.DEFAULT:
            options["cache-dir"] = cache_dir
        self._cache_dir = muir.cache_dir(options.pop("cache-dir", muir.DEFAULT))
        # Muon's keys that are not the signature's: the section's
        # defaults (muir.optimizers()).
        section = muir.optimizers()[self._matrix_optimizer].settings
        extra = {"ns_eps": section["eps"] if ns_eps is None else ns_eps,
                 "momentum_kind": (section["momentum_kind"]
                                   if momentum_kind is None
                                   else momentum_kind),
                 "coefficients": coefficients}
        self._name = name
        if target not in (None, "cpu", "cuda"):
            raise ValueError("target %r: expected 'cpu', 'cuda' or None "
                             "(from the parameters' device)" % (target,))
        adamw_lr_keyword = "lr" if adamw_lr is None else "adamw_lr"
        if adamw_lr is None:
            adamw_lr = lr
        # The values a group gets for the keys it does not give: Muon's
        # (also a mixed group's lr and weight_decay) and AdamW's.
        self._group_defaults = {
            "muon": dict(lr=lr, weight_decay=weight_decay,
                         momentum=momentum, nesterov=nesterov,
                         ns_steps=ns_steps, schedule=schedule,
                         scale_mode=scale_mode, scale_extra=scale_extra),
            "adamw": dict(lr=adamw_lr, weight_decay=adamw_weight_decay,
                          betas=adamw_betas, eps=adamw_eps)}
        keywords = {"lr": adamw_lr_keyword,
                    "weight_decay": "adamw_weight_decay",
                    "betas": "adamw_betas", "eps": "adamw_eps"}
        for index, kind in enumerate(("muon", "adamw")):
            for key, v in self._group_defaults[kind].items():
                self._check_value(index, kind, key, v,
                                  keywords.get(key, key) if kind == "adamw"
                                  else key)
        self._group_defaults["adamw"]["betas"] = tuple(adamw_betas)
        # Only the keys the matrices' groups read (NorMuon has no
        # scale_mode).
        muon_keys = (_run_time_keys(self._matrix_optimizer) +
                     self._compiled_keys["muon"])
        self._group_defaults["muon"] = {
            k: v for k, v in self._group_defaults["muon"].items()
            if k in muon_keys}
        if not _in_range(_real(extra["ns_eps"]), "eps"):
            raise ValueError("muir.torch.Muon: ns_eps %s; expected a finite "
                             "value in %s" % (_value_text(extra["ns_eps"]),
                                              _range_text(*_checks()["ranges"]["eps"])))
        if extra["momentum_kind"] not in ("ema", "accumulate"):
            raise ValueError("muir.torch.Muon: momentum_kind %r; expected "
                             "one of: ema, accumulate"
                             % (extra["momentum_kind"],))

        # The groups as given: a list of dicts, or parameters (plain or
        # named), which form two groups (Muon's, AdamW's).
        if isinstance(params, (torch.Tensor, torch.nn.Module, dict)):
            given = [params]
        else:
            given = list(params)
        if not given:
            raise ValueError("muir.torch.Muon got an empty parameter list")
        self._adamw_patterns = tuple(adamw_patterns)
        self._info = {}
        self._records = {}           # parameter index -> (tensor, record)
        self._empty = []             # DTensors with no part on this rank
        self._any_sharded = False    # some DTensor split over the ranks
        self._last_device = None     # (target, device) of the last step
        self._members = {}           # (target, device) -> member indices
        self._names = collections.Counter()   # name -> how many hold it
        self._group_params = []      # each group's tensors (fixed)
        self._group_records = []     # their _info entries, in that order
        self._group_use_muon = []    # each group's use_muon
        self._group_checked = []     # its keys and values last checked
        self._group_initial = []     # its run-time values when added
        self._target = target
        self._layout = layout
        # The torch.distributed group the CPU steps run over (torchrun):
        # process_group= or device_mesh=, else the default group.
        self._group = (process_group, device_mesh)
        # An explicit layout is checked now; the default one (the job's
        # world size) is read at the first step.
        self._devices = None if layout is None else _parse_layout(layout)
        self._options = options
        self._extra = extra
        self._cache = collections.OrderedDict()
        self._last_compiled = None   # (members, target, structure, _Compiled)
        self._nccl = None
        self._use_index = False
        self._preset_index = {}
        self._ep = 1
        self.check_finite = check_finite
        self.check_replicas = check_replicas
        self.max_compiled_steps = max_compiled_steps
        if isinstance(given[0], dict):
            groups = given
            if not all(isinstance(g, dict) for g in groups):
                raise TypeError("muir.torch.Muon: a list of param groups "
                                "holds dicts only")
        else:
            items = _named_items(given if len(given) > 1 or
                                 not isinstance(given[0], (torch.nn.Module,
                                                           dict))
                                 else given[0], "params")
            # Unnamed tensors are named by their place in the list.
            # Unnamed tensors are named by their place in the list, and
            # the step takes the tensors in that order.
            split = {"muon": [], "adamw": []}
            for n, (name, p) in enumerate(items):
                name = "param%d" % n if name is None else name
                split[self._assign(name, p, None)].append((name, p))
                self._preset_index[p] = n
            groups = [dict(params=split["muon"], use_muon=True),
                      dict(params=split["adamw"], use_muon=False)]
        # torch.optim.lr_scheduler's momentum cycling (OneCycleLR,
        # CyclicLR with cycle_momentum=True) needs "momentum" here.
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum)
        super().__init__(groups, defaults)
        self._set_attention(qk_clip, attention)
        self._infer_group()
        # A group given for CPU parameters is joined now (a copy made
        # before the first step then runs over it too).
        if self._group != (None, None) and target != "cuda" and all(
                p.device.type == "cpu" for g in self.param_groups
                for p in g["params"]):
            _world_size("cpu", self._group)

    def _infer_group(self):
        """FSDP2 / HSDP parameters sharded over some of the ranks (HSDP's
        shard dim): without a group given, the step runs over that dim's
        group."""
        if self._group == (None, None) and any(
                d["split"] for d in self._info.values()):
            shard_group = _mesh_group([(d["name"], p)
                                       for p, d in self._info.items()
                                       if d["split"]])
            if shard_group is not None:
                self._group = (shard_group, None)

    @classmethod
    def like_torch(cls, params, lr=1e-3, weight_decay=0.1, momentum=0.95,
                   nesterov=True, ns_coefficients=(3.4445, -4.7750, 2.0315),
                   eps=1e-7, ns_steps=5, adjust_lr_fn=None, **more):
        """muir.torch.Muon with torch.optim.Muon's signature, defaults and
        conventions (torch >= 2.9): the same updates of the 2-D parameters
        (tests: Python/torch-optim-muon.test, within 1e-5 of torch's step
        with its Newton-Schulz in float32; torch's own runs it in bfloat16,
        which moves its updates by about 1e-2 relative). The mapping:

            torch.optim.Muon              muir.torch.Muon
            lr, weight_decay, momentum,   the same (weight decay decoupled:
            nesterov                      W *= 1 - lr * weight_decay)
            adjust_lr_fn None/"original"  scale_mode="shape"
                                          (sqrt(max(1, out / in)))
            adjust_lr_fn "match_rms_      scale_mode="spectral",
              adamw"                      scale_extra=0.2
                                          (0.2 * sqrt(max(out, in)))
            adjust_lr_fn "spectral_       scale_mode="unit_rms"
              unclamped" (torch 2.15)     (sqrt(out / in))
            ns_coefficients (a, b, c)     schedule="simple" for the default
                                          triple, else schedule="custom",
                                          coefficients=[a, b, c]
            eps                           ns_eps (torch divides by
                                          max(|X|, eps), muir by |X| + eps)
            ns_steps                      ns_steps

        torch's momentum is muir's "ema" (B = mu B + (1 - mu) G; Nesterov
        (1 - mu) G + mu B). torch.optim.Muon takes 2-D parameters only;
        here every parameter of `params` takes Muon (use_muon=True) unless
        it is given in a group with use_muon False. More keywords go to
        muir.torch.Muon (layout, cache_dir, ...)."""
        if adjust_lr_fn not in (None, "original", "match_rms_adamw",
                                "spectral_unclamped"):
            raise ValueError("muir.torch.Muon.like_torch: adjust_lr_fn %r; "
                             "expected None, 'original', 'match_rms_adamw' "
                             "or 'spectral_unclamped' (torch.optim.Muon's)"
                             % (adjust_lr_fn,))
        coefficients = [float(c) for c in ns_coefficients]
        if len(coefficients) != 3:
            raise ValueError("muir.torch.Muon.like_torch: ns_coefficients "
                             "must be one (a, b, c) triple, got %r"
                             % (ns_coefficients,))
        if coefficients == [3.4445, -4.7750, 2.0315]:
            more.setdefault("schedule", "simple")
        else:
            more.setdefault("schedule", "custom")
            more.setdefault("coefficients", coefficients)
        if adjust_lr_fn == "match_rms_adamw":
            more.setdefault("scale_mode", "spectral")
            more.setdefault("scale_extra", 0.2)
        elif adjust_lr_fn == "spectral_unclamped":
            more.setdefault("scale_mode", "unit_rms")
        else:
            more.setdefault("scale_mode", "shape")
        if isinstance(params, (torch.Tensor, torch.nn.Module, dict)):
            params = [params]
        given = list(params)
        if given and not isinstance(given[0], dict):
            items = _named_items(given if len(given) > 1 or not isinstance(
                given[0], (torch.nn.Module, dict)) else given[0], "params")
            given = [dict(params=[(("param%d" % n) if name is None else name,
                                   p) for n, (name, p) in enumerate(items)],
                          use_muon=True)]
        else:
            given = [dict(g, use_muon=g.get("use_muon", True)) for g in given]
        return cls(given, lr=lr, weight_decay=weight_decay,
                   momentum=momentum, nesterov=nesterov, ns_steps=ns_steps,
                   ns_eps=eps, momentum_kind="ema", **more)

    # ------------------------------------------------------------------
    @property
    def check_finite(self):
        """Whether step() checks the gradients for NaN and infinities
        first (the constructor's check_finite, True by default)."""
        return self._check_finite

    @check_finite.setter
    def check_finite(self, value):
        if not _is_bool(value):
            raise ValueError("muir.torch.Muon: check_finite %r; expected "
                             "True or False" % (value,))
        self._check_finite = bool(value)

    @property
    def check_replicas(self):
        """Whether step() first checks that every rank holds the same
        gradients (one hash per gradient, all-reduced; False by default)."""
        return self._check_replicas

    @check_replicas.setter
    def check_replicas(self, value):
        if not _is_bool(value):
            raise ValueError("muir.torch.Muon: check_replicas %r; expected "
                             "True or False" % (value,))
        self._check_replicas = bool(value)

    @property
    def max_compiled_steps(self):
        """How many compiled steps are kept in memory (the least recently
        used is freed first; DEFAULT_MAX_COMPILED_STEPS by default)."""
        return self._max_compiled

    @max_compiled_steps.setter
    def max_compiled_steps(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or value < 1:
            raise ValueError("muir.torch.Muon: max_compiled_steps %r; "
                             "expected an integer >= 1" % (value,))
        self._max_compiled = int(value)
        self._evict()

    # ------------------------------------------------------------------
    def _assign(self, name, p, use_muon):
        """The optimizer `p` takes: use_muon (True, False) decides, else
        the tensor's `_muir_optimizer` mark, else muir.description.assign
        (4-D weights as the matrix [out, in*kh*kw])."""
        shape = tuple(p.shape)
        matrix = shape if len(shape) != 4 else \
            (shape[0], shape[1] * shape[2] * shape[3])
        if use_muon is True:
            if len(shape) not in (2, 3, 4):
                raise ValueError("muir.torch.Muon: parameter '%s' of shape %s "
                                 "is in a group with use_muon=True, but Muon "
                                 "takes matrices (2-D, 3-D stacks, 4-D "
                                 "convolution weights)" % (name, shape))
            return "muon"
        if use_muon is False:
            return "adamw"
        opt = _description.assign(name, matrix, self._adamw_patterns)[0]
        marked = getattr(p, "_muir_optimizer", None)
        if marked in ("muon", "adamw") and \
                (marked == "adamw" or len(shape) in (2, 3, 4)):
            opt = marked
        return opt

    def add_param_group(self, param_group):
        """Adds a group (a dict with "params" and any of the group keys; a
        "use_muon" of True or False puts all its parameters on Muon or
        AdamW, else each is assigned by shape and name). Its parameters
        take part from the next step() on."""
        if not isinstance(param_group, dict):
            raise TypeError("muir.torch.Muon: a param group is a dict, got %r"
                            % type(param_group).__name__)
        group = dict(param_group)
        index = len(self.param_groups)
        if "params" not in group:
            raise ValueError("muir.torch.Muon: param group %d has no "
                             "'params'" % index)
        use_muon = group.get("use_muon")
        if use_muon is not None and not _is_bool(use_muon):
            raise ParamGroupError(index, "group", "use_muon",
                                  "has use_muon %r; expected True, False or "
                                  "None" % (use_muon,))
        use_muon = None if use_muon is None else bool(use_muon)
        group["use_muon"] = use_muon
        items = _named_items(group["params"], "param group %d" % index)
        kinds = _kinds(use_muon)
        kind = kinds[0] if len(kinds) == 1 else "mixed"
        # Keys it does not give: the constructor's (AdamW's for use_muon
        # False, Muon's lr and weight_decay for a mixed group).
        for k in reversed(kinds):
            for key, v in self._group_defaults[k].items():
                group.setdefault(key, v)
        run, comp = _group_keys(use_muon, self._compiled_keys)
        for key in run + comp:
            self._check_value(index, kind, key, group[key])
        # The tensors: named, assigned, checked, before anything is kept.
        # Names need not be unique (two modules' named_parameters() both
        # hold "weight", as torch.optim allows): where a name is a key (the
        # compiled step's arguments) _name_arguments keeps keys unique.
        added = []
        for n, (name, p) in enumerate(items):
            if name is None:
                name = "param%d" % (len(self._info) + len(added))
            if not name:
                raise ValueError("a parameter has an empty name")
            if p in self._info or any(p is q for _, q, _ in added):
                other = self._info[p]["name"] if p in self._info else \
                    next(m for m, q, _ in added if q is p)
                raise ValueError("parameter '%s' is the same tensor as '%s'"
                                 % (name, other))
            opt = self._assign(name, p, use_muon)
            # An expert stack of a muir.torch.MoE with ep > 1: this rank's
            # experts, split over ep in the step (never shared out).
            ep = int(getattr(p, "_muir_ep", 1) or 1)
            if ep > 1 and (opt != "muon" or p.dim() != 3):
                raise ValueError("parameter '%s' is an expert-parallel stack "
                                 "(ep=%d) and takes Muon per expert; it "
                                 "cannot take AdamW" % (name, ep))
            if ep > 1 and self._ep not in (1, ep):
                raise ValueError("expert-parallel stacks of different ep "
                                 "(%d, %d); the ranks of a process run one "
                                 "grid" % (self._ep, ep))
            added.append((name, p, (opt, ep)))
        group["params"] = [p for _, p, _ in added]
        super().add_param_group(group)
        for name, p, (opt, ep) in added:
            shape = tuple(p.shape)
            # A DTensor (FSDP2): the step binds this rank's part.
            split, local = _dtensor_split(name, p, opt) \
                if _is_dtensor(p) else (None, shape)
            desc = local if len(local) != 4 or opt != "muon" else \
                (local[0], local[1] * local[2] * local[3])
            # The dtype the step computes in: float64 for a float64
            # parameter, float32 for the others (bfloat16 through a copy).
            wide = p.dtype is torch.float64
            tables = _tables()
            keys = tables["state"][
                "adamw" if opt != "muon" else self._matrix_optimizer]
            # Each state tensor's shape: the parameter's, or one value per
            # row of the step's matrix (NorMuon's variance).
            sizes = {k: torch.Size(desc[:-1] if k in tables["rows"]
                                   else local)
                     for k in keys}
            # The whole state tensors' shapes (a DTensor's state: its
            # global shape).
            whole = {k: torch.Size(shape[:1] if len(shape) == 4 else
                                   shape[:-1]) if k in tables["rows"]
                     else torch.Size(shape) for k in keys}
            self._info[p] = {"name": name, "shape": shape, "desc_shape": desc,
                             "size": torch.Size(local), "numel": p.numel(),
                             # A DTensor with no part on this rank (FSDP2's
                             # last ranks of a short tensor): not in the
                             # step, its (empty) state kept as the others'.
                             "empty": _is_dtensor(p) and not math.prod(local),
                             "dtensor": _is_dtensor(p), "split": split,
                             # Its ranks hold different parts.
                             "sharded": _is_dtensor(p) and
                             _shard_dim(p) is not None,
                             "whole_sizes": whole,
                             "dtype": torch.float64 if wide else torch.float32,
                             "optimizer": opt,
                             "state_keys": keys, "state_sizes": sizes,
                             "index": self._preset_index.pop(
                                 p, len(self._info)),
                             "ep": ep, "group": index, "seen": None}
            d = self._info[p]
            if d["empty"]:
                self._empty.append(p)
            self._any_sharded |= d["sharded"]
            self._records[d["index"]] = (p, d)
            self._names[name] += 1
            if ep > 1:
                self._ep = ep
        self._group_params.append(list(group["params"]))
        self._group_records.append([self._info[p] for p in group["params"]])
        self._group_use_muon.append(use_muon)
        self._group_checked.append(None)
        self._group_initial.append({k: group[k] for k in run})
        self._name_arguments()

    def _name_arguments(self):
        """Names as the step's arguments, which must be unique: the
        parameters' own, unless two parameters share a name or one could
        be taken for another's gradient or state (or the counter); then
        every parameter's place, "p<index>"."""
        names = self._names

        def clash(n):
            return n == "step" or any(
                n.endswith(s) and n[:-len(s)] in names
                for s in _tables()["suffixes"])
        self._use_index = any(count > 1 for count in names.values()) or \
            any(clash(n) for n in names)
        for d in self._info.values():
            d["desc_name"] = "p%d" % d["index"] if self._use_index \
                else d["name"]

    def _set_attention(self, qk_clip, attention):
        """MuonClip's blocks: [(name, q, k, heads, kv_heads)] with q and k
        parameters of this optimizer (given as tensors or by name), and
        its threshold tau; checked as the description reader does."""
        self._attention, self._qk_clip = [], None
        self._step_logits = {}
        if attention is None and qk_clip is None:
            return
        where = "muir.torch.Muon"
        if attention is None or qk_clip is None:
            raise ValueError("%s: MuonClip needs both qk_clip (tau) and "
                             "attention (the blocks it clips)" % where)
        if isinstance(qk_clip, bool) or not _in_range(_real(qk_clip), "eps"):
            raise ValueError("%s: qk_clip %s; expected a finite value in "
                             "(0, inf)" % (where, _value_text(qk_clip)))
        by_name = {d["name"]: p for p, d in self._info.items()
                   if self._names[d["name"]] == 1}
        taken, names = {}, set()
        for n, block in enumerate(attention):
            if not isinstance(block, dict):
                raise TypeError("%s: attention[%d] is %r; expected a dict "
                                "{name, q, k, heads, kv_heads}"
                                % (where, n, type(block).__name__))
            unknown = sorted(set(block) - {"name", "q", "k", "heads",
                                           "kv_heads"})
            missing = [key for key in ("name", "q", "k", "heads")
                       if key not in block]
            if unknown or missing:
                raise ValueError("%s: attention[%d] %s" % (
                    where, n, "has unknown keys %s" % ", ".join(unknown)
                    if unknown else "needs %s" % ", ".join(missing)))
            name = block["name"]
            if not isinstance(name, str) or not name or "/" in name or \
                    name in names:
                raise ValueError("%s: attention[%d] has name %r; expected "
                                 "a new non-empty name without '/'"
                                 % (where, n, name))
            names.add(name)
            heads = block["heads"]
            kv = block.get("kv_heads", heads)
            for key, v in (("heads", heads), ("kv_heads", kv)):
                if isinstance(v, bool) or \
                        not isinstance(v, numbers.Integral) or v < 1:
                    raise ValueError("%s: attention block '%s': %s %r; "
                                     "expected an integer >= 1"
                                     % (where, name, key, v))
            if heads % kv:
                raise ValueError("%s: attention block '%s': heads (%d) is "
                                 "not a multiple of kv_heads (%d)"
                                 % (where, name, heads, kv))
            pair = []
            for role, rows in (("q", heads), ("k", kv)):
                t = block[role]
                p = by_name.get(t) if isinstance(t, str) else \
                    t if isinstance(t, torch.Tensor) and t in self._info \
                    else None
                if p is None and isinstance(t, str) and self._names[t] > 1:
                    raise ValueError("%s: attention block '%s': %s %r names "
                                     "%d parameters of this optimizer; give "
                                     "the tensor" % (where, name, role, t,
                                                     self._names[t]))
                if p is None:
                    raise ValueError("%s: attention block '%s': %s %s is "
                                     "no parameter of this optimizer"
                                     % (where, name, role,
                                        repr(t) if isinstance(t, str)
                                        else "(a tensor)"))
                d = self._info[p]
                if len(d["shape"]) != 2 or d["shape"][0] % rows:
                    raise ValueError(
                        "%s: attention block '%s': %s '%s' of shape %s; "
                        "expected a matrix whose rows are %d heads"
                        % (where, name, role, d["name"], d["shape"], rows))
                if p in taken:
                    raise ValueError("%s: attention block '%s': parameter "
                                     "'%s' is clipped by block '%s' already"
                                     % (where, name, d["name"], taken[p]))
                taken[p] = name
                pair.append(p)
            self._attention.append((name, pair[0], pair[1], int(heads),
                                    int(kv)))
        self._qk_clip = float(qk_clip)

    def _check_logits(self, max_logits):
        """step()'s max_logits ({block name: tensor [heads]}), checked and
        kept as float32 contiguous tensors for the run (nothing is changed
        on an error); a block whose q and k have no gradient now needs
        none."""
        where = "muir.torch.Muon.step"
        if not self._attention:
            if max_logits is not None:
                raise ValueError("%s: max_logits given, but the optimizer "
                                 "has no attention blocks (attention=[...], "
                                 "qk_clip=tau)" % where)
            return
        if max_logits is None:
            max_logits = {}
        if not isinstance(max_logits, dict):
            raise TypeError("%s: max_logits is %r; expected a dict of "
                            "block name -> tensor [heads]"
                            % (where, type(max_logits).__name__))
        known = {b[0]: b for b in self._attention}
        unknown = sorted(set(max_logits) - set(known), key=str)
        if unknown:
            raise ValueError("%s: max_logits names %s, which is no "
                             "attention block (blocks: %s)"
                             % (where, ", ".join(map(repr, unknown)),
                                ", ".join(sorted(known))))
        kept = {}
        for name, q, k, heads, kv in self._attention:
            t = max_logits.get(name)
            if t is None:
                if q.grad is not None or k.grad is not None:
                    raise ValueError(
                        "%s: max_logits has no entry for attention block "
                        "'%s', whose q and k take part in this step (pass "
                        "max_logits={'%s': the largest pre-softmax logit "
                        "of each of its %d query heads})"
                        % (where, name, name, heads))
                continue
            if not isinstance(t, torch.Tensor) or \
                    tuple(t.shape) != (heads,) or t.is_complex() or \
                    t.dtype is torch.bool:
                raise ValueError("%s: max_logits['%s'] must be a real "
                                 "tensor of shape (%d,) (one value per "
                                 "query head), got %s"
                                 % (where, name, heads,
                                    "%s %s" % (t.dtype, tuple(t.shape))
                                    if isinstance(t, torch.Tensor) else
                                    type(t).__name__))
            t = t.detach().to(torch.float32).contiguous()
            bad = (~torch.isfinite(t)).nonzero()
            if len(bad):
                h = int(bad[0][0])
                raise ValueError("%s: max_logits['%s'] holds %s at head %d"
                                 % (where, name, float(t[h]), h))
            kept[name] = t
        self._step_logits = kept

    # ------------------------------------------------------------------
    @staticmethod
    def _check_value(index, kind, key, value, keyword=None):
        """Raises ParamGroupError if `value` is not a valid value of `key`
        (the description reader's ranges); `keyword`: the constructor's
        keyword it came from."""
        why = _value_problem(key, value)
        if why is not None:
            raise ParamGroupError(index, kind, key, "has %s %s%s; %s" % (
                key, _value_text(value),
                " (keyword %s)" % keyword if keyword and keyword != key
                else "", why))

    def _check_groups(self):
        """param_groups as the step reads them: the groups as added (their
        use_muon and tensors), no key the step does not read (other than
        the lr schedulers'), none missing, every value in range. Raises
        ParamGroupError naming the group and the key."""
        groups = self.param_groups
        if len(groups) != len(self._group_params):
            raise ParamGroupError(
                None, None, None,
                "has %d groups, but muir.torch.Muon was given %d; add groups "
                "with add_param_group" % (len(groups),
                                          len(self._group_params)))
        for index, (group, use_muon, want) in enumerate(
                zip(groups, self._group_use_muon, self._group_params)):
            kinds = _kinds(use_muon)
            kind = kinds[0] if len(kinds) == 1 else "mixed"
            got = group.get("use_muon", muir.DEFAULT)
            same = got is use_muon or (use_muon is not None and
                                       _is_bool(got) and
                                       bool(got) == use_muon)
            if not same:
                got = "no use_muon" if got is muir.DEFAULT else \
                    "use_muon %r" % (got,)
                raise ParamGroupError(
                    index, kind, "use_muon",
                    "has %s, but the group was added with use_muon %r; "
                    "which optimizer a parameter takes is fixed when its "
                    "group is added" % (got, use_muon))
            params = group.get("params")
            if not isinstance(params, list) or len(params) != len(want) or \
                    not all(map(operator.is_, params, want)):
                raise ParamGroupError(
                    index, kind, "params",
                    "has other 'params' than the %d tensors it was added "
                    "with; a group's parameters are fixed when it is added "
                    "(add_param_group adds more)" % len(want))
            # The keys and values checked last time, unchanged: valid.
            checked = self._group_checked[index]
            if checked is not None and group.keys() == checked[0] and \
                    tuple(map(group.get, checked[1])) == checked[2]:
                continue
            run, comp = _group_keys(use_muon, self._compiled_keys)
            read = run + comp
            known = read + _STRUCTURAL_KEYS
            # A scheduler's momentum cycling writes "momentum" to AdamW's
            # groups too (not read there).
            tolerated = SCHEDULER_KEYS if "muon" in kinds else \
                SCHEDULER_KEYS | {"momentum"}
            unread = sorted(str(k) for k in group
                            if k not in known and k not in tolerated)
            missing = [k for k in read if k not in group]
            if unread or missing:
                key = (unread or missing)[0]
                if unread:
                    what = "has %s, %s the step does not read" % (
                        ", ".join("'%s'" % k for k in unread),
                        "a key" if len(unread) == 1 else "keys")
                    other = [o for o in ("muon", "adamw") if o not in kinds
                             and key in _run_time_keys(o) + _COMPILED_KEYS[o]]
                    hint = difflib.get_close_matches(
                        key, read + tuple(sorted(SCHEDULER_KEYS)), 1)
                    if other:
                        what += " (a setting of %s)" % (
                            "Muon" if other[0] == "muon" else "AdamW")
                    elif hint:
                        what += " (did you mean '%s'?)" % hint[0]
                else:
                    what = "has no '%s'" % key
                raise ParamGroupError(
                    index, kind, key,
                    "%s; the step reads %s at every step()%s; "
                    "torch's lr schedulers may add %s" % (
                        what, ", ".join(run),
                        " and %s when it compiles (a new value compiles a "
                        "new step)" % ", ".join(comp) if comp else "",
                        ", ".join(sorted(SCHEDULER_KEYS))))
            for key in read:
                self._check_value(index, kind, key, group[key])
            # (betas as a tuple: a list compares equal to it.)
            self._group_checked[index] = (
                set(group), read, tuple(
                    tuple(group[k]) if k == "betas" else group[k]
                    for k in read))

    def _check_finite_grads(self, c, work, target):
        """NonFiniteGradientError for the first parameter whose gradient
        holds a NaN or an infinity. The CPU target: one pass over the bound
        gradients in muir's runtime (memory speed, one call). CUDA: one sum
        per gradient, one read of their total (a NaN or an infinity makes a
        sum non-finite; a large finite gradient can too, by overflow: then
        its elements are searched and none is found)."""
        if target == "cpu":
            found = c.step.first_nonfinite("grad")
            if found is None:
                return
            index, element = found
            i = next(i for k, i, kind in c.binds
                     if k == index and kind == 1)
            if i in work:
                g = work[i][1].reshape(-1)
                raise NonFiniteGradientError(work[i][3]["name"], element,
                                             g.numel(), float(g[element]))
            # A skipped member's stand-in (its state): search the
            # gradients themselves.
        grads = [w[1] for w in work.values()]
        sums = torch.stack([g.sum() for g in grads])
        if math.isfinite(float(sums.sum())):
            return
        for w, total in zip(work.values(), sums.tolist()):
            if math.isfinite(total):
                continue
            flat = w[1].reshape(-1)
            bad = torch.nonzero(~torch.isfinite(flat))
            if bad.numel():
                element = int(bad[0, 0])
                raise NonFiniteGradientError(
                    w[3]["name"], element, flat.numel(), float(flat[element]))

    def _agrees_finite(self):
        """Whether the ranks agree on the non-finite check at every step
        (some parameter is sharded over them: the same answer on every
        rank, empty parts included)."""
        if not self._check_finite or not self._any_sharded:
            return False
        import torch.distributed as dist
        return _dist.group() is not None or dist.is_initialized()

    def _agree_finite(self, index):
        """The largest `index` of the ranks' (one MAX all-reduce)."""
        import torch.distributed as dist
        flag = torch.tensor([index], dtype=torch.int64)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=_dist.group())
        return int(flag)

    def _check_finite_sharded(self, c, work, target):
        """_check_finite_grads, and where parameters are sharded over the
        ranks (FSDP2, tensor parallel: a non-finite value lies in one
        rank's part), every rank raises when one finds one (one MAX
        all-reduce of a flag), before any exchange of the step."""
        if not self._agrees_finite():
            return self._check_finite_grads(c, work, target)
        found = None
        try:
            self._check_finite_grads(c, work, target)
        except NonFiniteGradientError as e:
            found = e
        # The parameter's index + 1 (the same on every rank), 0: none.
        index = 0 if found is None else 1 + next(
            (i for i, w in work.items() if w[3]["name"] == found.name), -1)
        flag = self._agree_finite(index)
        if found is not None:
            raise found
        if flag:
            raise ParameterError(
                self._records[int(flag) - 1][1]["name"], "its gradient holds "
                "a NaN or an infinity in another rank's part; stopped before "
                "the step on every rank, nothing updated (check_finite=False "
                "turns this check off)")

    def _check_replica_grads(self, params, grads):
        """ParameterError naming the first parameter whose gradient differs
        between ranks: each gradient's hash (the sum of its elements' bit
        patterns as int64, exact and independent of the order of the sum)
        is all-reduced as a maximum and a minimum over torch.distributed's
        ranks, which agree only where every rank holds the same bits
        (parameters sharded over the ranks, FSDP2's, are not passed)."""
        if not params:
            return
        world = _world_size(self._target or params[0].device.type,
                            self._group)
        if world == 1:
            return
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                "muir.torch.Muon: check_replicas on %d ranks needs "
                "torch.distributed initialised (gloo or nccl): the hashes "
                "of the gradients are all-reduced over it" % world)
        hashes = torch.stack([g.reshape(-1).view(torch.int32).sum(
            dtype=torch.int64) for g in grads])
        group = _dist.group()
        if dist.get_backend(group) == "gloo" and hashes.device.type != "cpu":
            hashes = hashes.cpu()
        high, low = hashes.clone(), hashes.clone()
        dist.all_reduce(high, op=dist.ReduceOp.MAX, group=group)
        dist.all_reduce(low, op=dist.ReduceOp.MIN, group=group)
        differ = torch.nonzero(high != low)
        if differ.numel():
            p = params[int(differ[0, 0])]
            raise ParameterError(
                self._info[p]["name"], "its gradient differs between the "
                "ranks (check_replicas: the hashes of rank %d's and of "
                "another rank's differ); all-reduce the gradients before "
                "step(); stopped before the step, nothing updated"
                % dist.get_rank())

    # ------------------------------------------------------------------
    def _structure(self, index):
        """A group's compiled settings now in param_groups."""
        group = self.param_groups[index]
        return tuple((k, group[k]) for k in
                     _group_keys(self._group_use_muon[index],
                                 self._compiled_keys)[1])

    def _step_target(self, params):
        """The target and the torch device of the taking-part parameters."""
        first = params[0]
        device = first.device
        for p in params:
            dev = p.device
            name = self._info[p]["name"]
            if dev.type not in ("cpu", "cuda"):
                raise ParameterError(name, "is on device '%s'; muir runs "
                                     "CPU tensors (target cpu) and CUDA "
                                     "tensors (target cuda)" % dev)
            want = self._target or device.type
            if dev.type != want:
                raise ParameterError(
                    name, "is on device '%s' but the step runs on the %s "
                    "target%s" % (dev, want, "" if self._target else
                                  " (of '%s', on %s)" %
                                  (self._info[first]["name"], device)))
            if dev != device and dev.type == "cuda":
                raise ParameterError(name, "is on %s but '%s' is on %s; one "
                                     "step runs on one GPU" % (
                                         dev, self._info[first]["name"],
                                         device))
        return self._target or device.type, device

    def _check(self, p, device):
        """p's gradient as the step reads it (contiguous: a copy of a
        non-contiguous one), after checking p, its gradient and state."""
        d = self._info[p]
        name = d["name"]
        if tuple(p.shape) != d["shape"]:
            raise ParameterError(name, "has shape %s, but it was %s when "
                                 "the optimizer was built (muir's step is "
                                 "compiled for that shape)"
                                 % (tuple(p.shape), d["shape"]))
        if d["dtensor"]:
            if not _is_dtensor(p) or not _is_dtensor(p.grad) or \
                    tuple(p.grad.placements) != tuple(p.placements) or \
                    p.grad.device_mesh != p.device_mesh:
                raise ParameterError(
                    name, "was a DTensor when the optimizer was built; it "
                    "and its gradient must be DTensors of the same mesh "
                    "and placements (%s)" % (tuple(p.placements),))
            if tuple(p._local_tensor.shape) != tuple(d["size"]):
                raise ParameterError(
                    name, "holds a part of shape %s on this rank, but it "
                    "was %s when the optimizer was built"
                    % (tuple(p._local_tensor.shape), tuple(d["size"])))
        elif _is_dtensor(p) or _is_dtensor(p.grad):
            raise ParameterError(name, "%s a DTensor, but it was a plain "
                                 "tensor when the optimizer was built"
                                 % ("is" if _is_dtensor(p) else
                                    "has a gradient that is"))
        g = _parts(p, d)[1]
        if p.dtype not in _DTYPES:
            raise ParameterError(name, "is %s; muir updates float32, "
                                 "bfloat16 and float64 parameters" % p.dtype)
        wide = d["dtype"] is torch.float64
        if wide != (p.dtype is torch.float64):
            raise ParameterError(name, "is %s, but it was %s when the "
                                 "optimizer was built (muir's step is "
                                 "compiled for that dtype)"
                                 % (p.dtype, "torch.float64" if wide else
                                    "float32 or bfloat16"))
        if g.is_sparse:
            raise ParameterError(name, "has a sparse gradient; muir needs a "
                                 "dense one")
        if g.dtype is not d["dtype"] and g.dtype is not p.dtype:
            raise ParameterError(name, "has a %s gradient; muir reads "
                                 "float32 gradients (or bfloat16 ones of a "
                                 "bfloat16 parameter, float64 ones of a "
                                 "float64 parameter)" % g.dtype)
        if tuple(g.shape) != tuple(d["size"]):
            raise ParameterError(name, "has a gradient of shape %s, not %s"
                                 % (tuple(g.shape), tuple(d["size"])))
        if g.device != device:
            raise ParameterError(name, "has its gradient on %s, not %s"
                                 % (g.device, device))
        state = self.state.get(p)
        if state:
            for key in d["state_keys"]:
                t = state.get(key)
                if not isinstance(t, torch.Tensor):
                    raise ParameterError(name, "has optimizer state without "
                                         "'%s' (state keys: %s)"
                                         % (key, ", ".join(sorted(state))))
                t = _local(t)
                if t.shape != d["state_sizes"][key]:
                    raise ParameterError(name, "has state '%s' of shape %s, "
                                         "not %s" % (key, tuple(t.shape),
                                                     tuple(d["state_sizes"]
                                                           [key])))
            if d["optimizer"] == "adamw" and "step" not in state:
                raise ParameterError(name, "has AdamW state without 'step'")
        return g if g.is_contiguous() else g.contiguous()

    def _prepare_state(self, p, d, device):
        """Creates p's state, or makes loaded state float32 (float64 for
        a float64 parameter), contiguous and on p's device (our tensors, so
        replacing them is allowed)."""
        state = self.state[p]
        dtype = d["dtype"]
        if not state:
            for key in d["state_keys"]:
                t = torch.zeros(d["state_sizes"][key], dtype=dtype,
                                device=device)
                # A DTensor's state: a DTensor placed as it (what DCP
                # saves and reshards).
                state[key] = _as_placed(p, t, d["whole_sizes"][key]) \
                    if d["dtensor"] else t
            if d["optimizer"] == "adamw":
                state["step"] = 0
            return
        for key in d["state_keys"]:
            t = state[key]
            local = _local(t)
            if local.dtype != dtype or local.device != device or \
                    not local.is_contiguous() or \
                    d["dtensor"] != _is_dtensor(t):
                local = local.to(device=device, dtype=dtype).contiguous()
                state[key] = _as_placed(p, local, d["whole_sizes"][key]) \
                    if d["dtensor"] else local

    def _compile(self, members, groups, target, device):
        """The compiled step of the parameters of indices `members` (a
        sorted tuple; `groups` the indices of their groups), from the cache
        or compiled now."""
        records = self._records
        structure = tuple(self._structure(g) for g in groups)
        last = self._last_compiled
        # The step of the last call, again (the usual case): no key hashed.
        if last is not None and last[0] is members and \
                last[1] == (target, device.index) and last[2] == structure:
            return last[3]
        key = (members, target, device.index, structure)
        c = self._cache.get(key)
        if c is not None:
            self._cache.move_to_end(key)
            self._last_compiled = (members, key[1:3], structure, c)
            return c
        info = self._info
        params = [records[i][0] for i in members]
        if self._devices is None:
            self._devices = _parse_layout(self._layout, target, self._group)
        if target == "cpu" and self._devices > 1:
            # An explicit layout under torchrun: the group's ranks too.
            _world_size(target, self._group)
        self._check_meshes(params, target)
        text, override_groups = self._describe(params)
        options = dict(self._options)
        options["target"] = target
        if target == "cpu":
            # cuda_bf16 is for the CUDA steps of a mixed set (the CPU step
            # iterates in bf16 with ns_precision="bf16").
            options.pop("cuda-bf16", None)
        if target == "cpu" and self._cache_dir:
            # Where the cache cannot keep the step (no C compiler to link
            # it, a folder it cannot write), the library runs it through
            # its JIT.
            options["cache-dir"] = self._cache_dir
        if target == "cuda" and device.index is not None:
            options["cuda-device"] = device.index
        options.update(self._nccl_options(target))
        step = muir.compile(text, self._name + ".json", options)
        by_desc = {info[p]["desc_name"]: p for p in params}
        binds, hyper, takes, counts = [], [], [], []
        logits = []
        tables = _tables()
        blocks = {b[0] + ".max_logits": b for b in self._attention}
        buf = step.hyper_buffer
        for a in step.arguments:
            if a.role == "data" and a.name in blocks:
                logits.append((a.index, blocks[a.name][0],
                               blocks[a.name][3]))
                continue
            if a.role == "hyper":
                head, _, field = a.name.rpartition(".")
                buf[a.hyper_index] = float(a.default)
                if field in ("take", "step") and head in by_desc:
                    i = info[by_desc[head]]["index"]
                    (takes if field == "take" else counts).append(
                        (a.hyper_index, i))
                    continue
                where = _HYPER_FIELDS.get(field)
                k = head[len("overrides."):] if head.startswith(
                    "overrides.") else ""
                if where and k.isdigit() and int(k) < len(override_groups):
                    hyper.append((a.hyper_index,
                                  (override_groups[int(k)],) + where))
                continue
            if a.role == "counter":
                continue
            p, kind = by_desc.get(a.name), None
            if p is not None:
                kind = "param"
            elif a.name.endswith(".grad") and a.name[:-5] in by_desc:
                p, kind = by_desc[a.name[:-5]], "grad"
            else:
                for suffix, state_key in tables["of_suffix"].items():
                    base = a.name[:-len(suffix)]
                    if a.name.endswith(suffix) and base in by_desc:
                        p, kind = by_desc[base], state_key
                        break
            if p is None:
                step.close()
                raise muir.MuirError("muir.torch.Muon: the compiled step "
                                     "has an argument '%s' (%s) it cannot "
                                     "bind" % (a.name, a.role))
            want = info[p]["desc_shape"]
            if kind in tables["rows"]:
                want = want[:-1]
            if a.shape != want and not (a.shape == (1,) and want == ()):
                step.close()
                raise muir.MuirError(
                    "muir.torch.Muon: the step's '%s' has shape %s on rank "
                    "%d, not the tensor's %s (muir.torch binds whole "
                    "tensors)" % (a.name, a.shape, step.rank, want))
            binds.append((a.index, info[p]["index"],
                          tables["kind_of"][kind]))
        # The flags, one per member, are one run of hyperparameters
        # (lib/Import/BuildIR.cpp).
        takes.sort()
        first = takes[0][0] if takes else 0
        if [t for t, _ in takes] != list(range(first, first + len(takes))) \
                or sorted(i for _, i in takes) != list(members):
            step.close()
            raise muir.MuirError("muir.torch.Muon: the compiled step's take "
                                 "flags are not one run, one per parameter")
        c = _Compiled(step, binds, hyper, (first, [i for _, i in takes]),
                      counts, members, list(params))
        c.logits = logits
        self._cache[key] = c
        self._last_compiled = (members, key[1:3], structure, c)
        return c

    def _check_meshes(self, params, target):
        """ValueError unless every DTensor parameter split over dp lies on
        a mesh of the step's ranks in their order (its part on this rank
        is the dp rank's block the step declares)."""
        rank = _dist.ranks()[0]
        for p in params:
            d = self._info[p]
            if not d["split"]:
                continue
            if target != "cpu":
                # The CUDA steps' ranks are NCCL's world, not the mesh
                # dim's group; never run on a GPU yet.
                raise ParameterError(
                    d["name"], "is a DTensor split over ranks on the %s "
                    "target; muir.torch steps split DTensors on the CPU "
                    "target only (for now)" % target)
            mesh, k = p.device_mesh, _shard_dim(p)
            if mesh.size(k) != self._devices or \
                    mesh.get_local_rank(k) != rank:
                raise ParameterError(
                    d["name"], "is sharded over %d ranks (this rank at %d) "
                    "but the optimizer's step runs over %d rank(s) (this "
                    "one at %d); give the optimizer the mesh dim's group "
                    "(process_group=) or shard over the job's ranks in "
                    "order"
                    % (mesh.size(k), mesh.get_local_rank(k), self._devices,
                       rank))

    def _evict(self, keep=()):
        """Frees the least recently used compiled steps beyond
        max_compiled_steps (not those in `keep`)."""
        cache = getattr(self, "_cache", None)
        if cache is None:
            return
        for key in list(cache):
            if len(cache) <= self._max_compiled:
                break
            if any(cache[key] is c for c in keep):
                continue
            c = cache.pop(key)
            if self._last_compiled is not None and \
                    self._last_compiled[3] is c:
                self._last_compiled = None
            c.step.close()

    def _nccl_options(self, target):
        """CUDA on several ranks without mpirun (torchrun): rank 0 makes an
        NCCL unique id, torch.distributed hands it to every rank. Made once
        and kept for every step compiled later."""
        if target != "cuda" or self._devices == 1 or \
                os.environ.get("OMPI_COMM_WORLD_SIZE") or \
                any(k.startswith("nccl") for k in self._options):
            return {}
        if getattr(self, "_nccl", None) is None:
            import torch.distributed as dist
            if not (dist.is_available() and dist.is_initialized()):
                return {}
            rank, world = dist.get_rank(), dist.get_world_size()
            box = [muir.nccl_unique_id() if rank == 0 else None]
            dist.broadcast_object_list(box, src=0)
            self._nccl = {"nccl-id": box[0], "nccl-rank": rank,
                          "nccl-world": world}
        return self._nccl

    def _fast_checks(self, plan):
        """The target and device of the taking-part parameters, after the
        checks of every parameter and its gradient (dtype, shape, device,
        layout); the full checks, which name what is wrong, only when the
        quick ones fail."""
        device = plan[0][1].device
        f64, bf16, strided = torch.float64, torch.bfloat16, torch.strided
        for _, p, d in plan:
            if d["dtensor"]:
                # Checked in full (placements, local shapes).
                break
            g = p.grad
            dtype = d["dtype"]
            if (p.dtype is not dtype and (dtype is f64 or
                                          p.dtype is not bf16)) or \
                    (g.dtype is not dtype and g.dtype is not p.dtype) or \
                    p.shape != d["size"] or g.shape != d["size"] or \
                    p.device != device or g.device != device or \
                    g.layout is not strided:
                break
        else:
            if device.type in ("cpu", "cuda") and \
                    self._target in (None, device.type):
                return self._target or device.type, device
        params = [p for _, p, _ in plan]
        target, device = self._step_target(params)
        for p in params:
            self._check(p, device)
        return target, device

    def _check_state(self, p, d, st, device):
        """ParameterError if p's state misses a tensor or holds one of
        another shape; True when a tensor needs converting (dtype, device,
        layout) before the step."""
        convert = False
        for key in d["state_keys"]:
            t = st.get(key)
            if not isinstance(t, torch.Tensor):
                raise ParameterError(d["name"], "has optimizer state without "
                                     "'%s' (state keys: %s)"
                                     % (key, ", ".join(sorted(st))))
            if d["dtensor"] != _is_dtensor(t):
                raise ParameterError(
                    d["name"], "has state '%s' that is %s; the state of %s "
                    "parameter is %s" % (
                        key, "a DTensor" if _is_dtensor(t) else
                        "a plain tensor", "a DTensor" if d["dtensor"] else
                        "a plain", "placed as it (load_state_dict places a "
                        "whole one)" if d["dtensor"] else "plain"))
            t = _local(t)
            if t.shape != d["state_sizes"][key]:
                raise ParameterError(d["name"], "has state '%s' of shape %s, "
                                     "not %s" % (key, tuple(t.shape),
                                                 tuple(d["state_sizes"][key])))
            if t.dtype is not d["dtype"] or t.device != device or \
                    not t.is_contiguous():
                convert = True
        if d["optimizer"] == "adamw" and "step" not in st:
            raise ParameterError(d["name"], "has AdamW state without 'step'")
        return convert

    @staticmethod
    def _bind_inputs(c, work, skipped):
        """Binds c's parameters and gradients to the tensors in `work`
        (rebinding only what moved: by address, since `p.data = ...` moves
        a parameter's storage, not the tensor); a skipped member's to its
        stand-in (`skipped`)."""
        step, bound = c.step, c.bound
        for k, index, i, kind in c.inputs:
            w = work.get(i)
            addr = (w[kind] if w is not None else skipped[i]).data_ptr()
            if bound[k] != addr:
                step.bind(index, addr)
                bound[k] = addr

    def _bind_logits(self, c, device):
        """Binds c's max_logits arguments to step()'s tensors (on the
        step's device), or zeros for a block that takes no part now (its
        q and k are skipped: their clip leaves them as they are)."""
        given = self._step_logits
        for index, name, heads in c.logits:
            t = given.get(name)
            t = torch.zeros(heads, dtype=torch.float32, device=device) \
                if t is None else t.to(device)
            c.step.bind(index, t.data_ptr())
            c.logits_bound[index] = t

    @staticmethod
    def _bind_state(c, work, skipped):
        """Binds c's state arguments (rebinding only a new tensor: state
        tensors are the optimizer's own, replaced, never moved)."""
        step, bound = c.step, c.bound
        for k, index, i, key in c.states:
            w = work.get(i)
            t = w[4][key] if w is not None else skipped[i]
            if bound[k] is not t:
                step.bind(index, _local(t).data_ptr())
                bound[k] = t

    def _stand_in(self, i, device):
        """What a skipped member's arguments are all bound to: its first
        state tensor (the step reads it and writes back the same bits,
        under every argument), or zeros when it has none usable."""
        p, d = self._records[i]
        st = self.state.get(p)
        t = _local(st.get(d["state_keys"][0])) if st else None
        if isinstance(t, torch.Tensor) and t.dtype is d["dtype"] and \
                t.device == device and t.is_contiguous() and \
                t.shape == d["size"]:
            return t
        return torch.zeros(d["size"], dtype=d["dtype"], device=device)

    def _run(self, c, work, skipped, counts, stream):
        """Runs c with the groups' run-time values, the take flags (the
        members in `work` take part) and the AdamW members' counts."""
        buf = c.step.hyper_buffer
        groups = self.param_groups
        for k, h in c.hyper:
            if h[2] is None:
                buf[k] = float(groups[h[0]][h[1]])
            else:
                buf[k] = float(groups[h[0]][h[1]][h[2]])
        first, members = c.takes
        if skipped:
            buf[first:first + len(members)] = [
                0.0 if i in skipped else 1.0 for i in members]
            c.all_take = False
        elif not c.all_take:
            buf[first:first + len(members)] = [1.0] * len(members)
            c.all_take = True
        for k, i in c.counts:
            buf[k] = counts.get(i, 0.0)
        c.step.run(1, buf, stream)

    @torch.no_grad()
    def step(self, closure=None, max_logits=None):
        """One optimizer step over the parameters that have a gradient.
        With attention blocks (MuonClip), `max_logits` maps each block's
        name to the largest pre-softmax logit of each of its query heads
        in this step's forward (a tensor [heads])."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # Everything that can fail, before anything is changed.
        self._check_groups()
        self._check_logits(max_logits)
        steady = self._steady_work()
        if steady is not None:
            work, target, device = steady
            if not work:
                self._step_empty(device)
                if self._agrees_finite() and any(
                        p.grad is not None for p in self._empty):
                    # A rank whose parts are all empty: the others' check.
                    self._agree_finite(0)
                return loss
            self._finish_step(work, target, device, (), (), ())
            return loss
        plan = [(d["index"], p, d)
                for group, records in zip(self.param_groups,
                                          self._group_records)
                for p, d in zip(group["params"], records)
                if p.grad is not None and d["numel"] and not d["empty"]]
        if not plan:
            self._step_empty(torch.device("cpu"))
            if self._agrees_finite() and any(
                    p.grad is not None for p in self._empty):
                # A rank whose parts are all empty: the others' check.
                self._agree_finite(0)
            return loss
        plan.sort(key=_first)
        target, device = self._fast_checks(plan)
        # What the step reads and writes, by parameter index: the
        # parameter's own memory (a contiguous copy, written back, for a
        # non-contiguous one), the contiguous gradient, the parameter, its
        # record and its state (None before its first step).
        state = self.state
        work, convert, fresh, copies = {}, [], [], []
        for i, p, d in plan:
            # The parameter's and gradient's tensors on this rank (a
            # DTensor's local parts), p the parameter (its state's key).
            t, g = _parts(p, d)
            st = state.get(p) or None
            if st is not None:
                # The tensors checked at the last step need no new check.
                seen = d["seen"]
                if seen is None or seen[0] is not st or not all(
                        map(operator.is_, map(st.get, d["state_keys"]),
                            seen[1])):
                    d["seen"] = None
                    fresh.append(i)
                    if self._check_state(p, d, st, device):
                        convert.append(i)
            else:
                fresh.append(i)
            # The step's dtype: float32, float64 for a float64 parameter.
            dtype = d["dtype"]
            if t.dtype is dtype and t.is_contiguous():
                w = t
            else:
                # A row-major copy, written back (rounded once to bfloat16
                # for a bfloat16 parameter).
                w = torch.empty(d["size"], dtype=dtype, device=device)
                w.copy_(t)
                copies.append(i)
            if g.dtype is not dtype or not g.is_contiguous():
                g = torch.empty(d["size"], dtype=dtype,
                                device=device).copy_(g)
            work[i] = (w, g, p, d, st)
        self._finish_step(work, target, device, convert, fresh, copies)
        self._last_device = (target, device)
        return loss

    def _step_empty(self, device):
        """DTensors without a part on this rank (FSDP2's last ranks of a
        short tensor) step as the other ranks' parts do: their (empty)
        state made, their AdamW counts kept."""
        state = self.state
        for p in self._empty:
            d = self._info[p]
            if p.grad is None:
                continue
            if not state.get(p):
                self._prepare_state(p, d, device)
            if d["optimizer"] == "adamw":
                n = state[p]["step"]
                state[p]["step"] = (int(n.item()) if isinstance(
                    n, torch.Tensor) else int(n)) + 1

    def _steady_work(self):
        """The step's work (as step() builds it) in one pass when every
        parameter with a gradient is as at the last step: float32 and
        contiguous (with its gradient) on the last step's device, of its
        shape, its state the tensors checked then; None otherwise (the
        general path checks and converts)."""
        last = self._last_device
        if last is None:
            return None
        target, device = last
        cpu = device.type == "cpu"
        strided, is_ = torch.strided, operator.is_
        state = self.state
        work = {}
        for group, records in zip(self.param_groups, self._group_records):
            for p, d in zip(group["params"], records):
                if p.grad is None or not d["numel"] or d["empty"]:
                    continue
                if d["dtensor"]:
                    # Its mesh and placements were checked in full at the
                    # first step; a gradient placed otherwise has another
                    # local shape (below) or is not a DTensor.
                    if not _is_dtensor(p.grad):
                        return None
                    t, g = _parts(p, d)
                else:
                    t, g = p, p.grad
                size, dtype = d["size"], d["dtype"]
                if t.dtype is not dtype or g.dtype is not dtype or \
                        t.shape != size or g.shape != size or \
                        g.layout is not strided or not t.is_contiguous() or \
                        not g.is_contiguous():
                    return None
                if cpu:
                    if not (t.is_cpu and g.is_cpu):
                        return None
                elif t.device != device or g.device != device:
                    return None
                st = state.get(p)
                seen = d["seen"]
                if seen is None or seen[0] is not st or not all(
                        map(is_, map(st.get, d["state_keys"]), seen[1])):
                    return None
                work[d["index"]] = (t, g, p, d, st)
        return work, target, device

    def _finish_step(self, work, target, device, convert, fresh, copies):
        """The rest of step() over `work` (parameter index -> (the
        float32 tensor updated, the gradient read, the parameter, its
        record, its state or None)): the compiled step of the members,
        the checks of the gradients, the state made, the run, copies
        written back, counts kept."""
        state = self.state
        # One compiled step over the members: every parameter that has
        # taken part on this device; those without a gradient now are
        # skipped by their take flag (no new compile), their state left.
        key = (target, device)
        members, member_set, groups = self._members.get(
            key, ((), frozenset(), ()))
        if not member_set.issuperset(work):
            member_set = member_set.union(work)
            members = tuple(sorted(member_set))
            groups = tuple(sorted({self._records[i][1]["group"]
                                   for i in members}))
            self._members[key] = (members, member_set, groups)
        c = self._compile(members, groups, target, device)
        skipped = {}
        if len(work) != len(members):
            for i in members:
                if i not in work:
                    skipped[i] = self._stand_in(i, device)
        # The parameters and gradients are bound first: the CPU target's
        # non-finite check reads the bound gradients, before any state is
        # made.
        self._bind_inputs(c, work, skipped)
        self._bind_logits(c, device)
        if self._check_finite:
            self._check_finite_sharded(c, work, target)
        if self._check_replicas:
            whole = [w for w in work.values() if not w[3]["sharded"]]
            self._check_replica_grads([w[2] for w in whole],
                                      [w[1] for w in whole])
        counts = {}
        for i, w in work.items():
            p, d, st = w[2], w[3], w[4]
            if st is None or i in convert:
                self._prepare_state(p, d, device)
                st = state[p]
                work[i] = w[:4] + (st,)
            if d["optimizer"] == "adamw":
                n = st["step"]
                n = int(n.item()) if isinstance(n, torch.Tensor) else int(n)
                counts[i] = float(n + 1)
        self._step_empty(device)
        stream = None
        if device.type == "cuda":
            stream = torch.cuda.current_stream(device).cuda_stream
            with torch.cuda.device(device):
                self._bind_state(c, work, skipped)
                self._run(c, work, skipped, counts, stream)
        else:
            self._bind_state(c, work, skipped)
            self._run(c, work, skipped, counts, stream)
        for i in copies:
            w = work[i]
            _local(w[2]).copy_(w[0])
        for i in fresh:
            w = work[i]
            st = w[4]
            w[3]["seen"] = (st, tuple(map(st.get, w[3]["state_keys"])))
        for i, n in counts.items():
            work[i][4]["step"] = int(n)
        self._evict(keep=[c])

    def close(self):
        """Frees the compiled steps (they are compiled again if needed)."""
        for c in self._cache.values():
            c.step.close()
        self._cache.clear()
        self._last_compiled = None

    def compiled_steps(self):
        """The compiled steps held in memory (muir.Step objects), least
        recently used first; at most max_compiled_steps."""
        return [c.step for c in self._cache.values()]

    # ------------------------------------------------------------------
    def load_state_dict(self, state_dict):
        """torch.optim's load_state_dict, after checking that the state
        was made for these groups: as many groups, as many parameters in
        each, the same use_muon, and state tensors of each parameter's
        shape. A mismatch raises ValueError naming the group or the
        parameter; nothing is loaded. The state tensors keep their
        precision: they are converted once to the dtype the step keeps
        them in (float32, float64 for a float64 parameter), not to the
        parameter's dtype as torch.optim does (a bfloat16 parameter's
        float32 momentum stays float32, and the resumed run equals the
        continuous one bitwise)."""
        groups = state_dict.get("param_groups") \
            if isinstance(state_dict, dict) else None
        if not isinstance(groups, list) or \
                not isinstance(state_dict.get("state"), dict):
            raise ValueError("muir.torch.Muon.load_state_dict: expected a "
                             "state_dict() (a dict with 'state' and "
                             "'param_groups')")
        if len(groups) != len(self.param_groups):
            raise ValueError(
                "muir.torch.Muon.load_state_dict: the state has %d param "
                "groups, this optimizer %d" % (len(groups),
                                               len(self.param_groups)))
        ids = {}
        state_dict = dict(state_dict)
        experts = state_dict.pop("muir_experts", None)
        if experts is None:
            experts = {}
        elif not isinstance(experts, dict):
            raise ValueError("muir.torch.Muon.load_state_dict: the state's "
                             "\"muir_experts\" is %s; expected a dict of "
                             "parameter index -> [lo, hi, experts] (the "
                             "state_dict is damaged or was edited)"
                             % type(experts).__name__)
        state_dict["state"] = dict(state_dict["state"])
        for index, (saved, mine) in enumerate(zip(groups,
                                                  self.param_groups)):
            if len(saved.get("params", ())) != len(mine["params"]):
                raise ValueError(
                    "muir.torch.Muon.load_state_dict: param group %d holds "
                    "%d parameters in the state, %d here"
                    % (index, len(saved.get("params", ())),
                       len(mine["params"])))
            if saved.get("use_muon", mine["use_muon"]) != mine["use_muon"]:
                raise ValueError(
                    "muir.torch.Muon.load_state_dict: param group %d has "
                    "use_muon %r in the state, %r here"
                    % (index, saved.get("use_muon"), mine["use_muon"]))
            for i, p in zip(saved["params"], mine["params"]):
                ids[i] = p
        for i, record in experts.items():
            if _moe.saved_rows(record) is None:
                raise ValueError("muir.torch.Muon.load_state_dict: " +
                                 _moe.bad_record(record, "the state of %s" % (
                                     "parameter '%s'" % self._info[ids[i]]
                                     ["name"] if i in ids else
                                     "parameter %r" % (i,))))
        for i, entry in state_dict["state"].items():
            p = ids.get(i)
            if p is None:
                raise ValueError("muir.torch.Muon.load_state_dict: the state "
                                 "holds parameter %r, which no group lists"
                                 % (i,))
            d = self._info[p]
            want = _moe.expert_rows(p)
            if want is not None:
                # An expert stack's state: this rank's experts' rows of a
                # state that holds them.
                entry = dict(entry)
                for key in d["state_keys"]:
                    rows, why = _moe.held_rows(
                        entry.get(key), experts.get(i), want,
                        "parameter '%s''s state '%s'" % (d["name"], key))
                    if why is not None:
                        raise ValueError("muir.torch.Muon.load_state_dict: "
                                         + why)
                    entry[key] = rows
                state_dict["state"][i] = entry
            for key in d["state_keys"]:
                t = entry.get(key)
                if not isinstance(t, torch.Tensor):
                    raise ValueError(
                        "muir.torch.Muon.load_state_dict: parameter '%s' "
                        "(%s) has no '%s' in the state (it holds %s)"
                        % (d["name"], "Muon" if d["optimizer"] == "muon"
                           else "AdamW", key, ", ".join(sorted(entry))))
                # A DTensor parameter's state: whole (a DTensor, or a plain
                # tensor of which this rank keeps its part).
                if t.shape != (d["whole_sizes"] if d["dtensor"] else
                               d["state_sizes"])[key]:
                    raise ValueError(
                        "muir.torch.Muon.load_state_dict: parameter '%s' "
                        "has state '%s' of shape %s, but the parameter is "
                        "%s%s" % (d["name"], key, tuple(t.shape), d["shape"],
                                  "" if key not in _tables()["rows"] else
                                  " (its %s: one value per row, %s)"
                                  % (key, tuple(d["state_sizes"][key]))))
        # torch's load_state_dict casts every floating state tensor to its
        # parameter's dtype: a bfloat16 parameter's float32 state would be
        # rounded to bfloat16, and the resumed run leave the continuous
        # one. The state tensors are set here instead, converted once to
        # the dtype the step keeps them in (float32; float64 for a float64
        # parameter), which is the saved dtype of any state this optimizer
        # made; torch loads the rest (AdamW's step counts, the groups).
        tensors = []
        for i, entry in state_dict["state"].items():
            p = ids[i]
            keys = [k for k in self._info[p]["state_keys"] if k in entry]
            if keys:
                entry = dict(entry)
                tensors += [(p, k, entry.pop(k)) for k in keys]
                state_dict["state"][i] = entry
        super().load_state_dict(state_dict)
        for p, key, t in tensors:
            d = self._info[p]
            if d["dtensor"]:
                # This rank's part, placed as the parameter.
                if _is_dtensor(t) and t.device_mesh == p.device_mesh and \
                        list(t.placements) == _state_placements(p, t):
                    t = t._local_tensor
                else:
                    t = _rows_of(p, t)
                local = t.to(device=p.device, dtype=d["dtype"],
                             copy=True).contiguous()
                self.state[p][key] = _as_placed(p, local,
                                                d["whole_sizes"][key])
                continue
            if _is_dtensor(t):
                t = t.full_tensor()
            self.state[p][key] = t.to(device=p.device, dtype=d["dtype"],
                                      copy=True).contiguous()
        # torch puts the groups' values back, params aside.
        for group, use_muon in zip(self.param_groups, self._group_use_muon):
            group["use_muon"] = use_muon

    def state_dict(self):
        """torch.optim's state_dict, and for each expert stack's state the
        experts it holds ("muir_experts": index -> [lo, hi, experts]), so
        that load_state_dict takes a rank's rows of it and refuses another
        rank's part (muir.torch.full_state_dict gathers them whole)."""
        sd = super().state_dict()
        experts = {}
        for i, p in enumerate(p for g in self.param_groups
                              for p in g["params"]):
            rows = _moe.expert_rows(p)
            if rows is not None and i in sd["state"]:
                experts[i] = list(rows)
        if experts:
            sd["muir_experts"] = experts
        return sd

    def __getstate__(self):
        # Compiled steps are handles into muir's library: a copy compiles
        # its own.
        state = dict(self.__dict__)
        state["_cache"] = collections.OrderedDict()
        state["_last_compiled"] = None
        state["_nccl"] = None
        # A process group is the process's: a copy runs over the group
        # this process joined.
        state["_group"] = (None, None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._infer_group()

    # ------------------------------------------------------------------
    def _describe(self, params):
        """The description's text for `params`, and the group of each
        override it writes (override k: the parameters of that group)."""
        info = self._info
        m, a = self._group_defaults["muon"], self._group_defaults["adamw"]
        by_group = {}
        for p in params:
            by_group.setdefault(info[p]["group"], []).append(p)
        overrides, override_groups = [], []
        for index, members in sorted(by_group.items()):
            use_muon = self._group_use_muon[index]
            # The run-time values are the step's arguments, passed from
            # param_groups at every run; the description holds the values
            # the group was added with as their defaults, so that the text
            # (and the on-disk cache's hash of it) does not change with a
            # schedule.
            o = {"names": [info[p]["desc_name"] for p in members]}
            initial = self._group_initial[index]
            o["lr"] = float(initial["lr"])
            o["weight_decay"] = float(initial["weight_decay"])
            if "momentum" in initial:
                o["momentum"] = float(initial["momentum"])
            if "betas" in initial:
                o["beta1"] = float(initial["betas"][0])
                o["beta2"] = float(initial["betas"][1])
                o["eps"] = float(initial["eps"])
            for key, v in self._structure(index):
                o[key] = bool(v) if key == "nesterov" else \
                    int(v) if key == "ns_steps" else \
                    float(v) if key == "scale_extra" else str(v)
            overrides.append(o)
            override_groups.append(index)
        # The grid's axis: "tp" where DTensor tensor parallel splits
        # matrices, else "dp" (FSDP2 and whole matrices).
        axes = {info[p]["split"]["axis"]: info[p]["name"]
                for p in params if info[p]["split"]}
        if len(axes) > 1:
            raise ParameterError(
                axes["tp"], "is split over a tensor-parallel mesh dim (\"tp\") "
                "but '%s' over another (FSDP2); one optimizer steps "
                "parameters split over one mesh dim" % axes["dp"])
        text = _description.describe(
            [(info[p]["desc_name"], info[p]["desc_shape"],
              info[p]["optimizer"], info[p]["split"] or info[p]["ep"] > 1,
              "f64" if info[p]["dtype"] is torch.float64 else None)
             for p in params],
            name=self._name, ep=self._ep,
            devices=self._devices or _parse_layout(
                self._layout, self._target or params[0].device.type,
                self._group),
            lr=float(m["lr"]), momentum=float(m["momentum"]),
            nesterov=bool(m["nesterov"]),
            weight_decay=float(m["weight_decay"]),
            ns_steps=int(m["ns_steps"]), schedule=str(m["schedule"]),
            scale_mode=str(m.get("scale_mode", "spectral")),
            scale_extra=float(m["scale_extra"]),
            normuon=self._normuon,
            ns_eps=self._extra["ns_eps"],
            momentum_kind=self._extra["momentum_kind"],
            coefficients=self._extra["coefficients"],
            adamw_lr=float(a["lr"]), adamw_betas=tuple(a["betas"]),
            adamw_eps=float(a["eps"]),
            adamw_weight_decay=float(a["weight_decay"]),
            overrides=overrides, mask=True,
            grid_axis=next(iter(axes), "dp"), **self._clip_blocks(params))
        return text, override_groups

    def _clip_blocks(self, params):
        """The description's MuonClip settings for the step of `params`:
        the attention blocks among them (q and k together) and tau."""
        ids = {id(p) for p in params}
        blocks = []
        for name, q, k, heads, kv in self._attention:
            if (id(q) in ids) != (id(k) in ids):
                raise ValueError(
                    "muir.torch.Muon: attention block '%s': q '%s' and k "
                    "'%s' must take part together (one of them has had no "
                    "gradient yet, or they are on different devices)"
                    % (name, self._info[q]["name"], self._info[k]["name"]))
            if id(q) in ids:
                blocks.append({"name": name,
                               "q": self._info[q]["desc_name"],
                               "k": self._info[k]["desc_name"],
                               "heads": heads, "kv_heads": kv})
        if not blocks:
            return {}
        return {"qk_clip": self._qk_clip, "attention": blocks}

    def description(self, params=None):
        """The JSON description step() compiles for `params` (default: all
        parameters, in order), with the present settings."""
        params = list(self._info) if params is None else list(params)
        return self._describe(params)[0]


class NorMuon(Muon):
    """NorMuon: Muon whose orthogonalised update is normalised row by row
    with a running second moment, then scaled to the update RMS
    scale_extra (0.2: AdamW's), as the description's optimizer.normuon
    (docs/description.md) and muir.normuon_update define it:

        v <- beta2 * v + (1 - beta2) * mean over columns of O * O
        P  = O / (sqrt(v) + eps2);  P <- P * scale_extra * sqrt(m n) / |P|_F
        W <- W * (1 - lr * weight_decay) - lr * P

    with O Muon's Newton-Schulz output. Everything else is muir.torch.Muon's
    (the parameters that do not take it take AdamW, param groups, run-time
    lr / weight_decay / momentum, masks, state_dict, several ranks); the
    state of a NorMuon parameter is "momentum_buffer" and "variance" (one
    value per row: [out], [E, out] for a stack, [out] for a convolution
    weight). beta2 and eps2 are the optimizer's, fixed. It has no
    scale_mode. A float64 parameter is computed in float64 throughout, as
    Muon's. On the CUDA target the row statistics are generated kernels,
    not yet run on a GPU."""

    _matrix_optimizer = "normuon"

    def __init__(self, params, lr=0.02, momentum=0.95, nesterov=True,
                 weight_decay=0.0, ns_steps=5, schedule="simple",
                 scale_extra=0.2, beta2=0.95, eps2=1e-8, **muon_keywords):
        if "scale_mode" in muon_keywords:
            raise TypeError("muir.torch.NorMuon has no scale_mode (its "
                            "update RMS is scale_extra)")
        for key, v in (("beta2", beta2), ("eps2", eps2)):
            if isinstance(v, bool) or not _in_range(_real(v), key):
                raise ValueError("muir.torch.NorMuon: %s %s; expected a "
                                 "finite value in %s"
                                 % (key, _value_text(v), _range_text(
                                     *_checks()["ranges"][key])))
        self._normuon = {"beta2": float(beta2), "eps2": float(eps2)}
        super().__init__(params, lr=lr, momentum=momentum, nesterov=nesterov,
                         weight_decay=weight_decay, ns_steps=ns_steps,
                         schedule=schedule, scale_extra=scale_extra,
                         **muon_keywords)


def _normuon_signature():
    """NorMuon's own arguments, then Muon's other keywords (but scale_mode)
    as keyword-only: what help() and inspect show for the keywords NorMuon
    passes on to Muon."""
    own = inspect.signature(NorMuon.__init__).parameters
    muon = inspect.signature(Muon.__init__).parameters
    kept = [p for p in own.values() if p.kind != p.VAR_KEYWORD]
    kept += [p.replace(kind=p.KEYWORD_ONLY) for name, p in muon.items()
             if name not in own and name != "scale_mode"]
    return inspect.Signature(kept)


NorMuon.__init__.__signature__ = _normuon_signature()
