"""muir.torch.Muon (the optimizer: its constructor, its compiled steps
and step()) and muir.torch.NorMuon."""
import collections
import inspect
import operator
import torch
import muir
from muir import description as _description
from muir._errors import ParameterError
from muir._dtensor import _as_placed, _is_dtensor, _local, _parts
from muir.torch._common import (
    DEFAULT_MAX_COMPILED_STEPS,
    _COMPILED_KEYS,
    _DTYPES,
    _checks,
    _first,
    _in_range,
    _is_bool,
    _named_items,
    _parse_layout,
    _range_text,
    _real,
    _run_time_keys,
    _step_option_names,
    _value_text,
    _world_size)
from muir.torch._groups import _Groups
from muir.torch._qkclip import _QkClip
from muir.torch._distributed import _Distributed
from muir.torch._state import _StateDict
from muir.torch._steps import _CompiledSteps


class Muon(_Groups, _QkClip, _Distributed, _StateDict, _CompiledSteps,
           torch.optim.Optimizer):
    r"""Muon, the orthogonalised momentum optimizer, for the matrices of
    `params` (AdamW for the rest), run by muir as one compiled step.

    For each matrix W with gradient G (a 3-D stack [E, out, in] per
    matrix, a 4-D convolution weight as the matrix [out, in*kh*kw]):

        M <- momentum * M + (1 - momentum) * G       (momentum_kind "ema")
             momentum * M + G                        ("accumulate")
        U  = (1 - momentum) * G + momentum * M       (nesterov, "ema")
             G + momentum * M                        (nesterov, "accumulate")
             M                                       (nesterov=False)
        X  = U / (|U|_F + ns_eps)
        X <- a X + (b A + c A A) X,  A = X X^T       (ns_steps steps, (a, b, c)
                                                      of `schedule`; a tall X
                                                      iterates on X^T X)
        W <- W * (1 - lr * weight_decay) - lr * s * X

    with s by scale_mode for an out x in matrix: "spectral" scale_extra *
    sqrt(max(out, in)), "shape" sqrt(max(1, out / in)), "unit_rms"
    sqrt(out / in). The other parameters take AdamW (decoupled weight
    decay) with the adamw_* settings. The module's documentation says
    which parameters take which, the group keys, the run-time
    hyperparameters, distribution and checkpoints; like_torch() takes
    torch.optim.Muon's arguments.

    Args:
        params (iterable): parameters, named parameters, a Module, a dict
            of name -> tensor, or param group dicts ("use_muon" decides
            the optimizer; otherwise muir.description.assign).
        lr (float): Muon's learning rate (default 0.02).
        momentum (float): the momentum coefficient (default 0.95).
        nesterov (bool): the Nesterov-style update (default True).
        weight_decay (float): Muon's decoupled weight decay (default 0).
        ns_steps (int): Newton-Schulz steps (default 5).
        schedule (str): the steps' coefficients: "simple", "quintic",
            "polar_express", "deepseekv4", "cubic5" or "custom"
            (with `coefficients`) (default "simple").
        scale_mode (str): "spectral", "shape" or "unit_rms" (default
            "spectral").
        scale_extra (float): the spectral scale's factor (default 0.2,
            AdamW's update RMS).
        adamw_lr, adamw_betas, adamw_eps, adamw_weight_decay: AdamW's
            settings for the other parameters (adamw_lr None: lr).
        layout (str): the ranks' layout, e.g. "dp=2" or "dp=2,tp=2"
            (default: dp over the job's ranks: mpirun's, or
            torch.distributed's world; one rank alone).
        target (str): "cpu" or "cuda" (default: the parameters' device).
        adamw_patterns (tuple): fnmatch globs of names that take AdamW.
        check_finite (bool): refuse non-finite gradients before a step
            (default True).
        check_replicas (bool): check that replicated gradients agree
            (default False).
        max_compiled_steps (int): compiled steps kept in memory.
        qk_clip (float), attention (list): MuonClip's threshold and the
            attention blocks it clips.
        process_group, device_mesh: the torch.distributed group, or the
            mesh (a 1-D one, or one holding every rank, as HSDP's), the
            step's collectives run over.

    Keyword-only: ns_eps (1e-7), momentum_kind ("ema" or "accumulate"),
    coefficients, name, cache_dir, options, and the step library's user
    options (ns_mode, ns_form, ns_precision, dp_assign, deterministic,
    syrk, batch, fuse_syrk_all_reduce, machine, syrk_chunk_rows,
    probe_updates, cuda_arch, cuda_bf16, cuda_graph: muir.options())."""

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

    # ------------------------------------------------------------------
    # ------------------------------------------------------------------
    # ------------------------------------------------------------------
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

    # ------------------------------------------------------------------
    # ------------------------------------------------------------------


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

