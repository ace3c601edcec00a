"""What muir.torch's modules share: the step library's tables and value
checks, the group keys, the compiled steps' record, layouts and names."""
import math
import numbers
import os
import torch
import muir
from muir import _dist
from muir._errors import _float_text

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
