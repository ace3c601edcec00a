"""muir's compiled Muon step as a PyTorch optimizer.

    import muir.torch
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000)
    for batch in data:
        loss = model(batch); loss.backward()
        opt.step(); opt.zero_grad(); sched.step()

Which parameters take Muon (muir.description.assign): 2-D ones (Muon),
3-D ones (Muon per matrix over dim 0: expert stacks [E, out, in]), unless
their name matches one of `adamw_patterns` (Python fnmatch globs on the
whole name; the default, muir.description.DEFAULT_ADAMW_PATTERNS, catches
embeddings and output heads); everything else takes AdamW. A tensor's
`_muir_optimizer` attribute ("muon" or "adamw") decides instead
(muir.torch.MoE's router says "adamw"). They form two
param groups, `optimizer.param_groups[0]` (Muon, "optimizer": "muon") and
`[1]` (AdamW, "optimizer": "adamw"), either possibly empty.

Hyperparameters. Each group's `lr` and `weight_decay` are read at every
step() and passed to the compiled step as arguments ("muon.lr",
"muon.weight_decay", "adamw.lr", "adamw.weight_decay"), so changing them by
hand or with torch.optim.lr_scheduler needs no recompile. The other
settings (Muon: momentum, nesterov, ns_steps, schedule, scale_mode,
scale_extra; AdamW: betas, eps) are compiled in: changing them in
param_groups is allowed and compiles (once) a step with the new values
(so OneCycleLR and CyclicLR need cycle_momentum=False).
The constructor and every step() check the values with the description
reader's ranges (lib/Import/Description.cpp): lr and weight_decay finite
in [0, inf), momentum and each of betas in [0, 1), eps and scale_extra in
(0, inf), nesterov True or False, ns_steps an integer >= 1 (its upper
limit is the reader's, at compile), schedule and scale_mode one of their
names; a bad one raises ParamGroupError (a
ValueError) naming the group, the key and the range, and nothing is
updated. The groups' keys are those above, "params" and "optimizer" (both
fixed when the optimizer is built), and the keys torch's lr schedulers
add (SCHEDULER_KEYS: initial_lr, max_lr, min_lr, base_momentum,
max_momentum, swa_lr; not read). Any other key (a typo such as
"weight_decy", a setting of the other optimizer), a removed one, or other
"params" raise ParamGroupError at the next step(), naming the key.

`adamw_lr=None` means the same lr as Muon, as Moonlight does: the default
spectral scale 0.2 * sqrt(max(m, n)) is chosen so that Muon's update RMS
matches AdamW's, and one learning rate (and schedule) serves both groups.
With scale_mode "shape" or "unit_rms" (Keller Jordan's convention, lr
around 0.02 for Muon) give AdamW its own lr (e.g. 3e-4).

step(): the parameters with a gradient take part (those without are
skipped, their state untouched, as torch optimizers do). Every one of them
and its gradient must be float32, contiguous, on the device of the step's
target (CPU tensors: target cpu; CUDA tensors: target cuda on their
device, run on the current stream, after the work queued there; the CUDA
path has not run on a GPU yet) and of the shape it had when the optimizer
was built;
otherwise step() raises ParameterError naming the parameter and updates
nothing. Before the step, as muir-run does, the gradients are checked for
NaN and infinities (check_finite=True; one sum per gradient and one read
of their total on the host, at memory speed; the elements are searched
only when the total is not finite): one raises NonFiniteGradientError (a
ParameterError) naming the parameter, the element and its value, and
nothing is updated: no parameter, no optimizer state, no step count
(catch it to skip the step, as torch.cuda.amp.GradScaler does).
check_finite=False (or `optimizer.check_finite = False`) turns the check
off. With several ranks every rank must hold the same gradients, so all
stop together.
The step updates the parameters' own storage (p.data_ptr() stays),
reading p.grad; muir's step is compiled once per set of taking-part
parameters (and compile-time settings) and kept, in memory and, for the
CPU target, on disk (cache_dir below). The state lives in
`optimizer.state[p]`: "momentum_buffer" (Muon), "exp_avg", "exp_avg_sq" and
"step" (an int, AdamW's 1-based count), so state_dict()/load_state_dict()
and torch.save checkpoints work and a resumed run equals the continuous one
bitwise.

Several ranks: under mpirun (OMPI_COMM_WORLD_SIZE), or on CUDA with
torch.distributed initialised, layout defaults to "dp=<world size>":
Newton-Schulz is shared out over the ranks (each matrix on one rank, the
results gathered) and every rank ends with the same parameters as one rank would, given the same
(already averaged) gradients on every rank. On the CPU target the ranks
are the job's MPI world, so launch with mpirun. On the CUDA target under
torchrun (torch.distributed initialised, no mpirun), rank 0 makes an NCCL
unique id (muir.nccl_unique_id) and torch.distributed broadcasts it, so
muir's communicator spans the job's ranks.
Expert stacks of a muir.torch.MoE with ep > 1 (marked `_muir_ep`) hold
this rank's experts only: the step declares them split over ep (the MoE
folding edp x ep of the same ranks) and each rank steps its own, per
expert, never shared out; they take Muon (an ep stack cannot take AdamW).

More keyword arguments (**more):
  ns_eps (1e-7), momentum_kind ("ema" | "accumulate"), coefficients (a flat
  list for schedule "custom"): the description's optimizer.muon settings;
  name: the description's name;
  cache_dir: where compiled CPU steps are kept between processes (muir's
  cache-dir option: a shared library per step, named by a hash of the
  description, the options, the build and the host CPU, loaded instead of
  compiling next time). Default $MUIR_CACHE_DIR, else
  $XDG_CACHE_HOME/muir, else ~/.cache/muir; None or "" (or
  MUIR_CACHE_DIR="") for none. The CUDA target compiles every time.
  options: a dict of compile options for muir.compile; and any of them by
  keyword with underscores: ns_mode, dp_assign, syrk, batch,
  fuse_syrk_all_reduce, syrk_chunk_rows, cuda_arch, cuda_bf16, cuda_graph,
  deterministic, probe_updates, machine, ns_form, ns_precision
  (include/muir/Step.h).
"""
import difflib
import math
import numbers
import os

import torch

import muir
from muir import description as _description

from muir._moe import MoE, MoEInputError  # noqa: E402,F401

__all__ = ["Muon", "MoE", "MoEInputError", "ParameterError",
           "NonFiniteGradientError", "ParamGroupError", "SCHEDULER_KEYS"]

_OPTION_KEYS = ("ns_mode", "dp_assign", "syrk", "batch",
                "fuse_syrk_all_reduce", "syrk_chunk_rows", "cuda_arch",
                "cuda_bf16", "cuda_graph", "deterministic", "probe_updates",
                "machine", "ns_form", "ns_precision", "cache_dir")
_SUFFIXES = (".grad", ".momentum", ".exp_avg", ".exp_avg_sq")
_MUON_STATE = ("momentum_buffer",)
_ADAMW_STATE = ("exp_avg", "exp_avg_sq")
# The step's tensor argument suffix -> the key of optimizer.state[p].
_STATE_OF_SUFFIX = {".momentum": "momentum_buffer", ".exp_avg": "exp_avg",
                    ".exp_avg_sq": "exp_avg_sq"}


class ParameterError(ValueError):
    """A parameter (or its gradient or state) muir cannot run; `name` is
    the parameter's name. Raised before anything is updated."""

    def __init__(self, name, message):
        super().__init__("muir.torch.Muon: parameter '%s': %s"
                         % (name, message))
        self.name = name


class NonFiniteGradientError(ParameterError):
    """A gradient holding a NaN or an infinity (check_finite): `name` is
    the parameter's name, `element` the flat index of the first such
    element, `value` its value. Raised before anything is updated."""

    def __init__(self, name, element, numel, value):
        super().__init__(name, "its gradient holds %s at element %d (of "
                         "%d); stopped before the step, nothing updated "
                         "(check_finite=False turns this check off)"
                         % (_float_text(value), element, numel))
        self.element = element
        self.value = value


class ParamGroupError(ValueError):
    """A param_groups value out of range, a key the step does not read, or
    a structural key changed; `group` is the group's index and `key` the
    key (both None when the number of groups changed). Raised before
    anything is updated."""

    def __init__(self, group, kind, key, message):
        super().__init__("muir.torch.Muon: param_groups%s %s" % (
            "" if group is None else "[%d] (%s)" % (group, kind), message))
        self.group = group
        self.key = key


def _float_text(v):
    return "nan" if v != v else "inf" if v == math.inf else \
        "-inf" if v == -math.inf else repr(v)


_INF = math.inf
# The description reader's ranges (lib/Import/Description.cpp):
# key -> (low, low included, high, high included).
_RANGES = {"lr": (0.0, True, _INF, False),
           "weight_decay": (0.0, True, _INF, False),
           "momentum": (0.0, True, 1.0, False),
           "scale_extra": (0.0, False, _INF, False),
           "eps": (0.0, False, _INF, False),
           "betas": (0.0, True, 1.0, False)}
_CHOICES = {"schedule": ("simple", "quintic", "polar_express", "custom"),
            "scale_mode": ("spectral", "shape", "unit_rms")}
# What the step reads of each group: at every step() (the compiled step's
# hyperparameter arguments), and when it compiles.
_RUN_TIME_KEYS = ("lr", "weight_decay")
_COMPILED_KEYS = {"muon": ("momentum", "nesterov", "ns_steps", "schedule",
                           "scale_mode", "scale_extra"),
                  "adamw": ("betas", "eps")}
_STRUCTURAL_KEYS = ("params", "optimizer")
# The keys torch.optim.lr_scheduler (LRScheduler, OneCycleLR, CyclicLR)
# and swa_utils.SWALR add to param groups: allowed, not read.
SCHEDULER_KEYS = frozenset(("initial_lr", "max_lr", "min_lr",
                            "base_momentum", "max_momentum", "swa_lr"))


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
    lo, lo_in, hi, hi_in = _RANGES[key]
    return x is not None and math.isfinite(x) and \
        (x >= lo if lo_in else x > lo) and (x <= hi if hi_in else x < hi)


def _is_bool(v):
    return isinstance(v, bool) or (type(v).__module__ == "numpy" and
                                   type(v).__name__ == "bool_")


def _value_problem(key, v):
    """Why v is not a valid value of the group key `key` (None if it is)."""
    if key in _RANGES and key != "betas":
        if not _in_range(_real(v), key):
            return "expected a finite value in %s" % _range_text(
                *_RANGES[key])
    elif key == "betas":
        try:
            pair = tuple(v)
        except TypeError:
            pair = None
        if pair is None or isinstance(v, (str, bytes)) or len(pair) != 2 \
                or not all(_in_range(_real(b), key) for b in pair):
            return "expected (beta1, beta2), two finite values in %s" % \
                _range_text(*_RANGES[key])
    elif key == "nesterov":
        if not _is_bool(v):
            return "expected True or False"
    elif key == "ns_steps":
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or \
                v < 1:
            return "expected an integer >= 1"
    elif key in _CHOICES:
        if v not in _CHOICES[key]:
            return "expected one of: %s" % ", ".join(_CHOICES[key])
    return None


def _value_text(v):
    return _float_text(v) if isinstance(v, float) else repr(v)


_DEFAULT = object()


def _cache_dir(value):
    """Where compiled CPU steps are kept (muir's cache-dir option): the
    given folder; None, False or "" for none; by default $MUIR_CACHE_DIR
    (empty: none), else $XDG_CACHE_HOME/muir, else ~/.cache/muir."""
    if value is _DEFAULT:
        value = os.environ.get("MUIR_CACHE_DIR")
        if value is None:
            base = os.environ.get("XDG_CACHE_HOME") or \
                os.path.join(os.path.expanduser("~"), ".cache")
            value = os.path.join(base, "muir")
    if not value:
        return None
    value = os.fspath(value)
    if any(c.isspace() for c in value):
        raise ValueError("cache_dir %r: muir's options cannot hold spaces"
                         % value)
    return value


def _world_size(target):
    """The job's ranks: mpirun's world; on CUDA also torch.distributed's
    (NCCL joins those ranks); else 1 (a CPU step's ranks are MPI's)."""
    size = os.environ.get("OMPI_COMM_WORLD_SIZE")
    if size:
        return int(size)
    if target == "cuda":
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                return dist.get_world_size()
        except Exception:
            pass
    return 1


def _parse_layout(layout, target="cpu"):
    if layout is None:
        return _world_size(target)
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
    """One compiled step and how to feed it."""
    __slots__ = ("step", "binds", "bound", "hyper", "hyper_buf")

    def __init__(self, step, binds, hyper):
        self.step = step
        self.binds = binds          # [(arg index, param, kind)]
        self.bound = [None] * len(binds)
        self.hyper = hyper          # [(group index, key) or default float]
        self.hyper_buf = [0.0] * len(hyper)


class Muon(torch.optim.Optimizer):
    """Muon (with AdamW for the parameters Muon does not take) run by muir's
    compiled step. See the module's documentation."""

    def __init__(self, named_parameters, lr, momentum=0.95, nesterov=True,
                 weight_decay=0.0, ns_steps=5, schedule="simple",
                 scale_mode="spectral", scale_extra=0.2, adamw_lr=None,
                 adamw_betas=(0.9, 0.95), adamw_eps=1e-8,
                 adamw_weight_decay=0.0, layout=None, target=None,
                 adamw_patterns=_description.DEFAULT_ADAMW_PATTERNS,
                 check_finite=True, **more):
        options = dict(more.pop("options", None) or {})
        for key in _OPTION_KEYS:
            if key in more:
                options[key.replace("_", "-")] = more.pop(key)
        self._cache_dir = _cache_dir(options.pop("cache-dir", _DEFAULT))
        extra = {"ns_eps": more.pop("ns_eps", 1e-7),
                 "momentum_kind": more.pop("momentum_kind", "ema"),
                 "coefficients": more.pop("coefficients", None)}
        self._name = more.pop("name", "muir_torch")
        if more:
            raise TypeError("muir.torch.Muon got unexpected keyword "
                            "arguments: %s" % ", ".join(sorted(more)))
        if target not in (None, "cpu", "cuda"):
            raise ValueError("target %r: expected 'cpu', 'cuda' or None "
                             "(from the parameters' device)" % (target,))
        adamw_lr_keyword = "lr" if adamw_lr is None else "adamw_lr"
        if adamw_lr is None:
            adamw_lr = lr
        group_values = (
            ("muon", dict(lr=lr, weight_decay=weight_decay,
                          momentum=momentum, nesterov=nesterov,
                          ns_steps=ns_steps, schedule=schedule,
                          scale_mode=scale_mode, scale_extra=scale_extra),
             {}),
            ("adamw", dict(lr=adamw_lr, weight_decay=adamw_weight_decay,
                           betas=adamw_betas, eps=adamw_eps),
             {"lr": adamw_lr_keyword, "weight_decay": "adamw_weight_decay",
              "betas": "adamw_betas", "eps": "adamw_eps"}))
        for index, (kind, values, keywords) in enumerate(group_values):
            for key, v in values.items():
                self._check_value(index, kind, key, v,
                                  keywords.get(key, key))
        if not _in_range(_real(extra["ns_eps"]), "eps"):
            raise ValueError("muir.torch.Muon: ns_eps %s; expected a finite "
                             "value in %s" % (_value_text(extra["ns_eps"]),
                                              _range_text(*_RANGES["eps"])))
        if extra["momentum_kind"] not in ("ema", "accumulate"):
            raise ValueError("muir.torch.Muon: momentum_kind %r; expected "
                             "one of: ema, accumulate"
                             % (extra["momentum_kind"],))

        if isinstance(named_parameters, torch.nn.Module):
            named_parameters = named_parameters.named_parameters()
        elif isinstance(named_parameters, dict):
            named_parameters = named_parameters.items()
        pairs = list(named_parameters)
        if not pairs:
            raise ValueError("muir.torch.Muon got an empty parameter list")
        groups = {"muon": [], "adamw": []}
        info = {}
        seen_names = set()
        for item in pairs:
            if not (isinstance(item, (tuple, list)) and len(item) == 2
                    and isinstance(item[1], torch.Tensor)):
                raise TypeError("muir.torch.Muon takes named parameters: "
                                "(name, tensor) pairs such as "
                                "model.named_parameters(), got %r"
                                % (type(item).__name__,))
            name, p = str(item[0]), item[1]
            if not name:
                raise ValueError("a parameter has an empty name")
            if name in seen_names:
                raise ValueError("parameter name '%s' given twice" % name)
            if p in info:
                raise ValueError("parameter '%s' is the same tensor as '%s'"
                                 % (name, info[p]["name"]))
            seen_names.add(name)
            shape = tuple(p.shape)
            opt = _description.assign(name, shape, adamw_patterns)[0]
            # A parameter may say which optimizer it takes (muir.torch.MoE's
            # router: AdamW).
            marked = getattr(p, "_muir_optimizer", None)
            if marked in ("muon", "adamw") and \
                    (marked == "adamw" or len(shape) in (2, 3)):
                opt = marked
            # An expert stack of a muir.torch.MoE with ep > 1: this rank's
            # experts, split over ep in the step (never shared out).
            ep = int(getattr(p, "_muir_ep", 1) or 1)
            if ep > 1 and (opt != "muon" or len(shape) != 3):
                raise ValueError("parameter '%s' is an expert-parallel stack "
                                 "(ep=%d) and takes Muon per expert; it "
                                 "cannot take AdamW" % (name, ep))
            info[p] = {"name": name, "shape": shape, "optimizer": opt,
                       "index": len(info), "ep": ep}
            groups[opt].append(p)

        # Names as the step's arguments: the parameters' own, unless one
        # could be taken for another's gradient or state (or the counter).
        def clash(n):
            return n == "step" or any(
                n.endswith(s) and n[:-len(s)] in seen_names
                for s in _SUFFIXES)
        use_index = any(clash(n) for n in seen_names)
        for p, d in info.items():
            d["desc_name"] = "p%d" % d["index"] if use_index else d["name"]

        eps = sorted({d["ep"] for d in info.values()} - {1})
        if len(eps) > 1:
            raise ValueError("expert-parallel stacks of different ep (%s); "
                             "the ranks of a process run one grid"
                             % ", ".join(map(str, eps)))
        self._ep = eps[0] if eps else 1
        self._info = info
        self._target = target
        self._layout = layout
        # An explicit layout is checked now; the default one (the job's
        # world size) is read at the first step.
        self._devices = None if layout is None else _parse_layout(layout)
        self._options = options
        self._extra = extra
        self._cache = {}
        self._nccl = None
        self._initial = {"muon": (float(lr), float(weight_decay)),
                         "adamw": (float(adamw_lr),
                                   float(adamw_weight_decay))}
        self.check_finite = check_finite
        self._ready = False
        defaults = dict(lr=lr, weight_decay=weight_decay)
        super().__init__([
            dict(params=groups["muon"], optimizer="muon", lr=lr,
                 weight_decay=weight_decay, momentum=momentum,
                 nesterov=nesterov, ns_steps=ns_steps, schedule=schedule,
                 scale_mode=scale_mode, scale_extra=scale_extra),
            dict(params=groups["adamw"], optimizer="adamw", lr=adamw_lr,
                 weight_decay=adamw_weight_decay,
                 betas=tuple(adamw_betas), eps=adamw_eps),
        ], defaults)
        # The groups as built: their optimizer and their tensors (fixed).
        self._group_kinds = tuple(g["optimizer"] for g in self.param_groups)
        self._group_params = [list(g["params"]) for g in self.param_groups]
        self._ready = True

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

    def add_param_group(self, param_group):
        if getattr(self, "_ready", False):
            raise NotImplementedError(
                "muir.torch.Muon has its two groups (Muon, AdamW); give all "
                "parameters to the constructor")
        super().add_param_group(param_group)

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
        """param_groups as the step reads them: the two groups as built
        (their optimizer and tensors), no key the step does not read
        (other than the lr schedulers'), none missing, every value in
        range. Raises ParamGroupError naming the group and the key."""
        groups = self.param_groups
        if len(groups) != len(self._group_kinds):
            raise ParamGroupError(
                None, None, None,
                "has %d groups; muir.torch.Muon has its %d (%s), fixed "
                "when it was built" % (len(groups), len(self._group_kinds),
                                       ", ".join(self._group_kinds)))
        for index, (group, kind, want) in enumerate(
                zip(groups, self._group_kinds, self._group_params)):
            got = group.get("optimizer")
            if got != kind:
                raise ParamGroupError(
                    index, kind, "optimizer",
                    "has optimizer %r, but the group was built as %r; "
                    "which optimizer a parameter takes is fixed when "
                    "muir.torch.Muon is built (adamw_patterns)"
                    % (got, kind))
            params = group.get("params")
            if not isinstance(params, list) or len(params) != len(want) or \
                    any(a is not b for a, b in zip(params, want)):
                raise ParamGroupError(
                    index, kind, "params",
                    "has other 'params' than the %d tensors it was built "
                    "with; muir.torch.Muon's parameters are fixed when it "
                    "is built (give them all to the constructor)"
                    % len(want))
            read = _RUN_TIME_KEYS + _COMPILED_KEYS[kind]
            known = read + _STRUCTURAL_KEYS
            unread = sorted(str(k) for k in group
                            if k not in known and k not in SCHEDULER_KEYS)
            missing = [k for k in read if k not in group]
            if unread or missing:
                key = (unread or missing)[0]
                if unread:
                    what = "has %s, %s the step does not read" % (
                        ", ".join("'%s'" % k for k in unread),
                        "a key" if len(unread) == 1 else "keys")
                    other = [o for o in _COMPILED_KEYS
                             if o != kind and key in _COMPILED_KEYS[o]]
                    hint = difflib.get_close_matches(
                        key, read + tuple(sorted(SCHEDULER_KEYS)), 1)
                    if other:
                        what += " (a setting of the %s group)" % other[0]
                    elif hint:
                        what += " (did you mean '%s'?)" % hint[0]
                else:
                    what = "has no '%s'" % key
                raise ParamGroupError(
                    index, kind, key,
                    "%s; the step reads %s at every step() and %s when it "
                    "compiles (a new value compiles a new step); "
                    "torch's lr schedulers may add %s" % (
                        what, " and ".join(_RUN_TIME_KEYS),
                        ", ".join(_COMPILED_KEYS[kind]),
                        ", ".join(sorted(SCHEDULER_KEYS))))
            for key in read:
                self._check_value(index, kind, key, group[key])

    def _check_finite_grads(self, params):
        """NonFiniteGradientError for the first parameter whose gradient
        holds a NaN or an infinity. One sum per gradient, one read of
        their total: a NaN or an infinity makes a sum non-finite (a large
        finite gradient can too, by overflow: then its elements are
        searched and none is found)."""
        sums = torch.stack([p.grad.sum() for p in params])
        if math.isfinite(float(sums.sum())):
            return
        for p, total in zip(params, sums.tolist()):
            if math.isfinite(total):
                continue
            flat = p.grad.view(-1)
            bad = torch.nonzero(~torch.isfinite(flat))
            if bad.numel():
                element = int(bad[0, 0])
                raise NonFiniteGradientError(
                    self._info[p]["name"], element, flat.numel(),
                    float(flat[element]))

    # ------------------------------------------------------------------
    def _groups(self):
        """(muon group index, adamw group index) of param_groups."""
        g = {grp.get("optimizer"): i for i, grp in
             enumerate(self.param_groups)}
        return g.get("muon", 0), g.get("adamw", 1)

    def _settings(self):
        """The compile-time settings now in param_groups."""
        mi, ai = self._groups()
        m, a = self.param_groups[mi], self.param_groups[ai]
        return (float(m["momentum"]), bool(m["nesterov"]), int(m["ns_steps"]),
                str(m["schedule"]), str(m["scale_mode"]),
                float(m["scale_extra"]), float(a["betas"][0]),
                float(a["betas"][1]), float(a["eps"]))

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
        d = self._info[p]
        name = d["name"]
        if tuple(p.shape) != d["shape"]:
            raise ParameterError(name, "has shape %s, but it was %s when "
                                 "the optimizer was built (muir's step is "
                                 "compiled for that shape)"
                                 % (tuple(p.shape), d["shape"]))
        if p.dtype != torch.float32:
            raise ParameterError(name, "is %s; muir updates float32 "
                                 "parameters" % p.dtype)
        if not p.is_contiguous():
            raise ParameterError(name, "is not contiguous (strides %s); "
                                 "muir updates the parameter's memory in "
                                 "place as a row-major array"
                                 % (tuple(p.stride()),))
        g = p.grad
        if g.is_sparse:
            raise ParameterError(name, "has a sparse gradient; muir needs a "
                                 "dense one")
        if g.dtype != torch.float32:
            raise ParameterError(name, "has a %s gradient; muir reads "
                                 "float32 gradients" % g.dtype)
        if tuple(g.shape) != d["shape"]:
            raise ParameterError(name, "has a gradient of shape %s, not %s"
                                 % (tuple(g.shape), d["shape"]))
        if g.device != device:
            raise ParameterError(name, "has its gradient on %s, not %s"
                                 % (g.device, device))
        if not g.is_contiguous():
            raise ParameterError(name, "has a non-contiguous gradient "
                                 "(strides %s)" % (tuple(g.stride()),))
        state = self.state.get(p)
        if state:
            keys = _MUON_STATE if d["optimizer"] == "muon" else _ADAMW_STATE
            for key in keys:
                t = state.get(key)
                if not isinstance(t, torch.Tensor):
                    raise ParameterError(name, "has optimizer state without "
                                         "'%s' (state keys: %s)"
                                         % (key, ", ".join(sorted(state))))
                if tuple(t.shape) != d["shape"]:
                    raise ParameterError(name, "has state '%s' of shape %s, "
                                         "not %s" % (key, tuple(t.shape),
                                                     d["shape"]))
            if d["optimizer"] == "adamw" and "step" not in state:
                raise ParameterError(name, "has AdamW state without 'step'")

    def _prepare_state(self, p, device):
        """Creates p's state, or makes loaded state float32, contiguous and
        on p's device (our tensors, so replacing them is allowed)."""
        d = self._info[p]
        state = self.state[p]
        keys = _MUON_STATE if d["optimizer"] == "muon" else _ADAMW_STATE
        if not state:
            for key in keys:
                state[key] = torch.zeros(d["shape"], dtype=torch.float32,
                                         device=device)
            if d["optimizer"] == "adamw":
                state["step"] = 0
            return
        for key in keys:
            t = state[key]
            if t.dtype != torch.float32 or t.device != device or \
                    not t.is_contiguous():
                state[key] = t.to(device=device,
                                  dtype=torch.float32).contiguous()

    def _count(self, p):
        state = self.state.get(p)
        if not state or "step" not in state:
            return 0
        s = state["step"]
        return int(s.item()) if isinstance(s, torch.Tensor) else int(s)

    def _compile(self, params, target, settings, device):
        key = (tuple(self._info[p]["index"] for p in params), target,
               device.index, settings)
        c = self._cache.get(key)
        if c is not None:
            return c
        if self._devices is None:
            self._devices = _parse_layout(self._layout, target)
        mi, ai = self._groups()
        text = self._describe(params, settings)
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
        by_desc = {self._info[p]["desc_name"]: p for p in params}
        binds, hyper = [], [None] * step.num_hyper
        group_of = {"muon": mi, "adamw": ai}
        for a in step.arguments:
            if a.role == "hyper":
                group, _, field = a.name.partition(".")
                if group in group_of and field in ("lr", "weight_decay"):
                    hyper[a.hyper_index] = (group_of[group], field)
                else:
                    hyper[a.hyper_index] = float(a.default)
                continue
            if a.role == "counter":
                continue
            p, kind = by_desc.get(a.name), None
            if p is not None:
                kind = "param"
            elif a.name.endswith(".grad") and a.name[:-5] in by_desc:
                p, kind = by_desc[a.name[:-5]], "grad"
            else:
                for suffix, state_key in _STATE_OF_SUFFIX.items():
                    base = a.name[:-len(suffix)]
                    if a.name.endswith(suffix) and base in by_desc:
                        p, kind = by_desc[base], state_key
                        break
            if p is None:
                step.close()
                raise muir.MuirError("muir.torch.Muon: the compiled step "
                                     "has an argument '%s' (%s) it cannot "
                                     "bind" % (a.name, a.role))
            if a.shape != self._info[p]["shape"] and \
                    not (a.shape == (1,) and self._info[p]["shape"] == ()):
                step.close()
                raise muir.MuirError(
                    "muir.torch.Muon: the step's '%s' has shape %s on rank "
                    "%d, not the tensor's %s (muir.torch binds whole "
                    "tensors)" % (a.name, a.shape, step.rank,
                                  self._info[p]["shape"]))
            binds.append((a.index, p, kind))
        c = _Compiled(step, binds, hyper)
        self._cache[key] = c
        return c

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

    def _run(self, c, counter, stream):
        step = c.step
        state = self.state
        bound = c.bound
        for k, (index, p, kind) in enumerate(c.binds):
            if kind == "param":
                addr = p.data_ptr()
            elif kind == "grad":
                addr = p.grad.data_ptr()
            else:
                addr = state[p][kind].data_ptr()
            if bound[k] != addr:
                step.bind(index, addr)
                bound[k] = addr
        buf = c.hyper_buf
        groups = self.param_groups
        for k, h in enumerate(c.hyper):
            buf[k] = h if isinstance(h, float) else float(groups[h[0]][h[1]])
        step.run(counter, buf if buf else None, stream)

    @torch.no_grad()
    def step(self, closure=None):
        """One optimizer step over the parameters that have a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        info = self._info
        # Everything that can fail, before anything is changed.
        self._check_groups()
        params = sorted((p for group in self.param_groups
                         for p in group["params"]
                         if p.grad is not None and p.numel() > 0),
                        key=lambda p: info[p]["index"])
        if not params:
            return loss
        target, device = self._step_target(params)
        for p in params:
            self._check(p, device)
        if self._check_finite:
            self._check_finite_grads(params)
        settings = self._settings()
        muon = [p for p in params if info[p]["optimizer"] == "muon"]
        counts = {}
        for p in params:
            if info[p]["optimizer"] == "adamw":
                counts.setdefault(self._count(p), []).append(p)
        # One step per AdamW step count (usually one): the compiled step
        # takes one counter. Muon's parameters ride with the first.
        batches = []
        for n, (count, adamw) in enumerate(sorted(counts.items())):
            batch = (muon if n == 0 else []) + adamw
            batches.append((sorted(batch, key=lambda p: info[p]["index"]),
                            count + 1))
        if not batches:
            batches.append((muon, 1))
        compiled = [(self._compile(batch, target, settings, device), counter,
                     batch)
                    for batch, counter in batches]
        for p in params:
            self._prepare_state(p, device)
        stream = None
        if device.type == "cuda":
            stream = torch.cuda.current_stream(device).cuda_stream
            with torch.cuda.device(device):
                for c, counter, _ in compiled:
                    self._run(c, counter, stream)
        else:
            for c, counter, _ in compiled:
                self._run(c, counter, stream)
        for c, counter, batch in compiled:
            for p in batch:
                if info[p]["optimizer"] == "adamw":
                    self.state[p]["step"] = counter
        return loss

    def close(self):
        """Frees the compiled steps (they are compiled again if needed)."""
        for c in self._cache.values():
            c.step.close()
        self._cache.clear()

    @property
    def compiled_steps(self):
        """The muir.Step objects compiled so far."""
        return [c.step for c in self._cache.values()]

    def _describe(self, params, settings):
        (momentum, nesterov, ns_steps, schedule, scale_mode, scale_extra,
         beta1, beta2, eps) = settings
        (lr, wd), (alr, awd) = self._initial["muon"], self._initial["adamw"]
        info = self._info
        # lr and weight decay are the step's arguments, passed from
        # param_groups at every run; the description holds the
        # constructor's values as their defaults, so that the text (and the
        # on-disk cache's hash of it) does not change with the schedule.
        return _description.describe(
            [(info[p]["desc_name"], info[p]["shape"], info[p]["optimizer"],
              info[p]["ep"] > 1)
             for p in params],
            name=self._name, ep=self._ep,
            devices=self._devices or _parse_layout(self._layout),
            lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=wd,
            ns_steps=ns_steps, schedule=schedule, scale_mode=scale_mode,
            scale_extra=scale_extra, ns_eps=self._extra["ns_eps"],
            momentum_kind=self._extra["momentum_kind"],
            coefficients=self._extra["coefficients"],
            adamw_lr=alr, adamw_betas=(beta1, beta2), adamw_eps=eps,
            adamw_weight_decay=awd)

    def description(self, params=None):
        """The JSON description step() compiles for `params` (default: all
        parameters, in order), with the present settings."""
        params = list(self._info) if params is None else list(params)
        return self._describe(params, self._settings())
