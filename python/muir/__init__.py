"""muir's step library from Python (ctypes over include/muir/Step.h).

    import muir
    step = muir.compile(open("model.json").read(), "model.json",
                        {"target": "cpu"})
    for a in step.arguments:
        if a.is_tensor:
            step.bind(a.index, address_of_my_float32_tensor(a))
    step.run(counter=1, hyper=None)        # every step; hyper: the lrs...
    step.close()

The library is `$MUIR_LIBRARY` if set, else
`$MUIR_BUILD_DIR/lib/libmuir_step.so` (MUIR_BUILD_DIR defaults to the
`build` folder next to this package's `python` folder). It is loaded on
first use with RTLD_GLOBAL (OpenMPI's plugins need libmpi's symbols global
when the library initialises MPI under mpirun).

A CPU step's temporaries live at planned offsets of one block of the
runtime's arena, whose pages stay resident between runs (no page faults
at the next run); the process's malloc is left as it is, so a PyTorch
process's own tensors are allocated as torch allocates them.
release_memory() gives the arena's idle pages back.

This module needs neither NumPy nor PyTorch; `muir.torch` is the PyTorch
optimizer and `muir.description` writes step descriptions.
"""
import collections
import ctypes
import os
import threading

__all__ = ["MuirError", "Argument", "Step", "compile", "open_step",
           "version", "nccl_unique_id", "library_path", "ROLES",
           "Optimizer", "OptimizerState", "optimizers", "Setting",
           "settings", "set_transport", "release_memory", "held_memory"]

# enum MuirArgumentRole, by value.
ROLES = ("param", "grad", "state", "data", "counter", "hyper")
_TENSOR_ROLES = frozenset(("param", "grad", "state", "data"))
# enum MuirArgumentDtype, by value.
_DTYPES = ("float32", "int64", "float64")


class MuirError(RuntimeError):
    """A failure reported by the step library (muir_step_last_error)."""


class _CArgument(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("role", ctypes.c_int32),
                ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("global_shape", ctypes.POINTER(ctypes.c_int64)),
                ("default_value", ctypes.c_double),
                ("hyper_index", ctypes.c_int32),
                ("updated", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


class _COptimizerInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("orthogonalises", ctypes.c_int32),
                ("step_count", ctypes.c_int32),
                ("num_state", ctypes.c_int32),
                ("state_suffixes", ctypes.POINTER(ctypes.c_char_p)),
                ("state_keys", ctypes.POINTER(ctypes.c_char_p)),
                ("state_rows", ctypes.POINTER(ctypes.c_int32)),
                ("num_hyper", ctypes.c_int32),
                ("hyper", ctypes.POINTER(ctypes.c_char_p)),
                ("num_settings", ctypes.c_int32),
                ("setting_keys", ctypes.POINTER(ctypes.c_char_p)),
                ("setting_defaults", ctypes.POINTER(ctypes.c_double)),
                ("setting_choices", ctypes.POINTER(ctypes.c_char_p)),
                ("setting_unset", ctypes.POINTER(ctypes.c_int32))]


class _CSettingInfo(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p),
                ("kind", ctypes.c_int32),
                ("low", ctypes.c_double),
                ("high", ctypes.c_double),
                ("low_included", ctypes.c_int32),
                ("high_included", ctypes.c_int32),
                ("num_choices", ctypes.c_int32),
                ("choices", ctypes.POINTER(ctypes.c_char_p))]


class _COptionInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("kind", ctypes.c_char_p),
                ("default_value", ctypes.c_char_p),
                ("num_choices", ctypes.c_int32),
                ("choices", ctypes.POINTER(ctypes.c_char_p)),
                ("user", ctypes.c_int32),
                ("help", ctypes.c_char_p)]


_lock = threading.Lock()
_lib = None


def _default_build_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), "build")


def library_path():
    """The path the library is (or would be) loaded from."""
    path = os.environ.get("MUIR_LIBRARY")
    if path:
        return path
    build = os.environ.get("MUIR_BUILD_DIR") or _default_build_dir()
    return os.path.join(build, "lib", "libmuir_step.so")


def _import_static_llvm_users():
    """Imports triton (which torch imports for torch.compile and some of
    its optimizers) when it is installed, before the step library's
    libLLVM.so is loaded into the global scope: triton links LLVM
    statically, and its static initialisers, run after libLLVM.so is
    global, register LLVM's command-line options into libLLVM.so's
    registry and crash (SIGSEGV in llvm::cl::Option::addArgument, seen with
    torch 2.15's triton). Imported first, it keeps to its own copy. About
    0.2 s, once per process."""
    import importlib.util
    try:
        if importlib.util.find_spec("triton") is not None:
            import triton  # noqa: F401
    except Exception:  # a broken triton is torch's business, not muir's
        pass


def _load():
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if not os.path.exists(path):
            raise MuirError(
                "muir's step library is not at %s; build muir (the "
                "muir_step target) or set MUIR_BUILD_DIR to the build folder "
                "or MUIR_LIBRARY to the library" % path)
        _import_static_llvm_users()
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise MuirError("cannot load muir's step library %s: %s"
                            % (path, e)) from None
        P = ctypes.c_void_p
        sigs = {
            "muir_step_version": (ctypes.c_char_p, []),
            "muir_step_last_error": (ctypes.c_char_p, []),
            "muir_step_compile": (P, [ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.c_char_p, ctypes.c_char_p]),
            "muir_step_num_arguments": (ctypes.c_int32, [P]),
            "muir_step_argument": (ctypes.c_int, [P, ctypes.c_int32,
                                                  ctypes.POINTER(_CArgument)]),
            "muir_step_find": (ctypes.c_int32, [P, ctypes.c_char_p]),
            "muir_step_num_hyper": (ctypes.c_int32, [P]),
            "muir_step_rank": (ctypes.c_int32, [P]),
            "muir_step_world_size": (ctypes.c_int32, [P]),
            "muir_step_bind": (ctypes.c_int, [P, ctypes.c_int32, P]),
            "muir_step_run": (ctypes.c_int, [P, ctypes.c_int64,
                                             ctypes.POINTER(ctypes.c_double),
                                             ctypes.c_int32, P]),
            "muir_step_close": (None, [P]),
            "muir_step_release_memory": (ctypes.c_size_t, []),
            "muir_step_held_memory": (ctypes.c_size_t, []),
            "muir_num_optimizers": (ctypes.c_int32, []),
            "muir_num_settings": (ctypes.c_int32, []),
            "muir_setting_info": (ctypes.c_int,
                                  [ctypes.c_int32,
                                   ctypes.POINTER(_CSettingInfo)]),
            "muir_num_options": (ctypes.c_int32, []),
            "muir_option_info": (ctypes.c_int,
                                 [ctypes.c_int32,
                                  ctypes.POINTER(_COptionInfo)]),
            "muir_optimizer_info": (ctypes.c_int,
                                    [ctypes.c_int32,
                                     ctypes.POINTER(_COptimizerInfo)]),
            "muir_step_first_nonfinite": (
                ctypes.c_int, [P, ctypes.c_int32,
                               ctypes.POINTER(ctypes.c_int32),
                               ctypes.POINTER(ctypes.c_int64)]),
        }
        optional = {
            "muir_step_open": (P, [ctypes.c_char_p, ctypes.c_char_p]),
            "muir_step_nccl_unique_id": (ctypes.c_int, [ctypes.c_char_p]),
            "muir_step_set_transport": (ctypes.c_int,
                                        [_EXCHANGE, P, ctypes.c_int32,
                                         ctypes.c_int32]),
        }
        for name, (restype, argtypes) in list(sigs.items()) + \
                list(optional.items()):
            try:
                fn = getattr(lib, name)
            except AttributeError:
                if name in optional:
                    continue
                raise MuirError("%s does not export %s; is it muir's step "
                                "library, and up to date?" % (path, name)) \
                    from None
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = lib
        return lib


def _last_error(lib, what):
    msg = lib.muir_step_last_error()
    msg = msg.decode("utf-8", "replace") if msg else ""
    return MuirError(msg or "%s failed (the library left no message)" % what)


class OptimizerState(collections.namedtuple(
        "OptimizerState", ("suffix", "key", "rows"))):
    """A state tensor of an optimizer's parameter: the step's argument
    "<name><suffix>" (".momentum"), its key in a binding's per-parameter
    state ("momentum_buffer": muir.torch's optimizer.state[p]), and `rows`:
    one value per row of the matrix ([m], [E, m]) instead of the
    parameter's shape."""


class Optimizer(collections.namedtuple(
        "Optimizer", ("name", "orthogonalises", "step_count", "state",
                      "hyper", "settings"))):
    """An optimizer a description can name (muir_optimizer_info): its
    name ("muon"), whether it orthogonalises (Muon's family: matrices and
    stacks), whether it reads the 1-based step counter, its state
    (OptimizerState, in the step's argument order), the fields of its
    run-time hyperparameters (the step's "<group>.<field>") and the keys of
    its description section, optimizer.<name>, in order, with their
    defaults: {"lr": 0.02, "nesterov": True, "schedule": "simple",
    "qk_clip": None, ...} (None: no default; their values: settings())."""


_optimizers = None


def optimizers():
    """The optimizers of the loaded step library's description reader, by
    name, in its order: {"muon": Optimizer(...), "adamw": ..., ...}. Loads
    the library on the first call."""
    global _optimizers
    if _optimizers is None:
        def make(c):
            text = lambda b: b.decode("utf-8")
            state = tuple(OptimizerState(text(c.state_suffixes[k]),
                                         text(c.state_keys[k]),
                                         bool(c.state_rows[k]))
                          for k in range(c.num_state))
            kinds = settings()
            defaults = collections.OrderedDict()
            for k in range(c.num_settings):
                key = text(c.setting_keys[k])
                kind = kinds[key].kind
                value = c.setting_defaults[k]
                if c.setting_unset[k]:
                    value = None
                elif kind == "choice":
                    value = text(c.setting_choices[k])
                elif kind == "boolean":
                    value = bool(value)
                elif kind == "integer":
                    value = int(value)
                defaults[key] = value
            return Optimizer(
                text(c.name), bool(c.orthogonalises), bool(c.step_count),
                state, tuple(text(c.hyper[k]) for k in range(c.num_hyper)),
                defaults)
        _optimizers = _read_table("optimizer", _COptimizerInfo, make)
    return _optimizers


def _read_table(what, struct, make):
    """A table of the library (muir_num_<what>s, muir_<what>_info) as an
    ordered dict of make(entry) by its first field."""
    lib = _load()
    found = collections.OrderedDict()
    for i in range(getattr(lib, "muir_num_%ss" % what)()):
        c = struct()
        if getattr(lib, "muir_%s_info" % what)(i, ctypes.byref(c)):
            raise _last_error(lib, "muir_%s_info" % what)
        entry = make(c)
        found[entry[0]] = entry
    return found


class Setting(collections.namedtuple(
        "Setting", ("key", "kind", "low", "high", "low_included",
                    "high_included", "choices"))):
    """An optimizer setting as the description reader checks it
    (muir_setting_info): `kind` "real" or "integer" (in [low, high], each
    end included or not), "boolean", "choice" (one of `choices`) or
    "real_list" (a list of numbers)."""


_SETTING_KINDS = ("real", "integer", "boolean", "choice", "real_list")
_settings = None


def settings():
    """The optimizer settings (keys of optimizer.muon, .normuon, .adamw and
    of overrides) by key, with the values the description reader takes:
    {"lr": Setting("lr", "real", 0.0, inf, True, False, ()), ...}. Loads
    the library on the first call."""
    global _settings
    if _settings is None:
        _settings = _read_table("setting", _CSettingInfo, lambda c: Setting(
            c.key.decode("utf-8"), _SETTING_KINDS[c.kind], c.low, c.high,
            bool(c.low_included), bool(c.high_included),
            tuple(c.choices[k].decode("utf-8")
                  for k in range(c.num_choices))))
    return _settings


class Option(collections.namedtuple(
        "Option", ("name", "kind", "default", "choices", "user", "help"))):
    """A compile or run option of compile()'s `options` (muir_option_info;
    the tools' --NAME flags): `kind` "boolean", "integer", "choice" (one
    of `choices`) or "string", its `default` as text, `user` whether a
    binding's user sets it (muir.torch's keywords) rather than the binding
    (nccl-rank), and its `help`."""


_options = None


def options():
    """The step library's compile and run options by name, in the order it
    declares them: {"ns-mode": Option("ns-mode", "choice", "auto", (...),
    True, "..."), ...}. Loads the library on the first call."""
    global _options
    if _options is None:
        text = lambda b: b.decode("utf-8")
        _options = _read_table("option", _COptionInfo, lambda c: Option(
            text(c.name), text(c.kind), text(c.default_value),
            tuple(text(c.choices[k]) for k in range(c.num_choices)),
            bool(c.user), text(c.help)))
    return _options


def version():
    """The version of the loaded step library (muir_step_version), as a
    str: "muir " and the project's version from CMakeLists.txt, e.g.
    "muir 0.1.0": the release, not the git commit or the build. Loads the
    library (library_path()) on the first call; raises MuirError when it
    cannot be loaded."""
    v = _load().muir_step_version()
    return v.decode("utf-8", "replace") if v else ""


def nccl_unique_id():
    """A new NCCL unique id as 256 hex digits (muir_step_nccl_unique_id),
    for the CUDA target on several ranks: rank 0 makes it, the job hands it
    to every rank, and each compiles with the options
    {"nccl-id": id, "nccl-rank": r, "nccl-world": n}."""
    lib = _load()
    fn = getattr(lib, "muir_step_nccl_unique_id", None)
    if fn is None:
        raise MuirError("%s has no muir_step_nccl_unique_id" % library_path())
    buf = ctypes.create_string_buffer(257)
    if fn(buf) != 0:
        raise _last_error(lib, "muir_step_nccl_unique_id")
    return buf.value.decode("ascii")


# MuirExchangeFn (include/muir/Step.h).
_EXCHANGE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_int64))
# The registered transport's C function (kept alive while registered).
_transport = None


def set_transport(exchange, rank, size):
    """Moves the bytes of the collectives of every CPU step this process
    runs through `exchange` instead of MPI (muir_step_set_transport): a
    job whose ranks are not an MPI world, e.g. torch.distributed's under
    torchrun (muir.torch does this for you). exchange(send, send_bytes,
    recv, recv_bytes) is one all-to-all of bytes over `size` ranks, this
    one `rank`, which every rank calls at the same point: send_bytes[j]
    bytes from address `send` go to rank j, recv_bytes[j] bytes from rank
    j land at address `recv`, both contiguous in rank order (lists of
    ints). An exception it raises ends the run with its message (the
    other ranks cannot go on). Call before the first step with several
    devices is compiled or opened, on every rank; exchange=None removes
    it."""
    global _transport
    lib = _load()
    fn = getattr(lib, "muir_step_set_transport", None)
    if fn is None:
        raise MuirError("%s has no muir_step_set_transport" % library_path())
    if exchange is None:
        if fn(ctypes.cast(None, _EXCHANGE), None, 0, 1) != 0:
            raise _last_error(lib, "muir_step_set_transport")
        _transport = None
        return

    def call(context, send, send_bytes, recv, recv_bytes):
        try:
            exchange(send or 0, send_bytes[:size], recv or 0,
                     recv_bytes[:size])
            return 0
        except BaseException as e:  # noqa: B902 (nothing may escape to C)
            import sys
            sys.stderr.write("muir: rank %d: the transport's exchange "
                             "failed: %s: %s\n" % (rank, type(e).__name__, e))
            sys.stderr.flush()
            return 1
    c = _EXCHANGE(call)
    if fn(c, None, rank, size) != 0:
        raise _last_error(lib, "muir_step_set_transport")
    _transport = c


def _format_options(options):
    if options is None:
        return ""
    if isinstance(options, str):
        return options
    items = []
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        key, value = str(key), str(value)
        for part, what in ((key, "name"), (value, "value")):
            if not part or any(c.isspace() for c in part) or \
                    (what == "name" and "=" in part):
                raise ValueError("bad compile option %s %r (options are "
                                 "name=value items without spaces)"
                                 % (what, part))
        items.append("%s=%s" % (key, value))
    return " ".join(items)


class Argument:
    """One argument of a compiled step (see MuirStepArgument)."""
    __slots__ = ("index", "name", "role", "shape", "global_shape", "default",
                 "hyper_index", "updated", "dtype")

    def __init__(self, index, name, role, shape, global_shape, default,
                 hyper_index, updated, dtype="float32"):
        self.index = index
        self.name = name
        self.role = role
        self.shape = shape
        self.global_shape = global_shape
        self.default = default
        self.hyper_index = hyper_index
        self.updated = updated
        self.dtype = dtype     # "float32" (tensors), "int64", "float64"

    @property
    def is_tensor(self):
        return self.role in _TENSOR_ROLES

    @property
    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        if self.role == "hyper":
            return "Argument(%d, %r, hyper[%d], default=%r)" % (
                self.index, self.name, self.hyper_index, self.default)
        if self.role == "counter":
            return "Argument(%d, %r, counter)" % (self.index, self.name)
        return "Argument(%d, %r, %s, shape=%s%s%s)" % (
            self.index, self.name, self.role, self.shape,
            "" if self.global_shape == self.shape
            else ", global_shape=%s" % (self.global_shape,),
            ", updated" if self.updated else "")


class Step:
    """A compiled optimizer step (muir_step_compile). Use muir.compile."""

    def __init__(self, handle, lib):
        self._handle = handle
        self._lib = lib
        args = []
        for i in range(lib.muir_step_num_arguments(handle)):
            c = _CArgument()
            if lib.muir_step_argument(handle, i, ctypes.byref(c)) != 0:
                err = _last_error(lib, "muir_step_argument")
                lib.muir_step_close(handle)
                self._handle = None
                raise err
            role = ROLES[c.role] if 0 <= c.role < len(ROLES) else str(c.role)
            shape = tuple(c.shape[d] for d in range(c.rank)) \
                if c.rank > 0 and c.shape else ()
            gshape = tuple(c.global_shape[d] for d in range(c.rank)) \
                if c.rank > 0 and c.global_shape else shape
            args.append(Argument(i, c.name.decode("utf-8", "replace"), role,
                                 shape, gshape, c.default_value,
                                 c.hyper_index if role == "hyper" else -1,
                                 bool(c.updated),
                                 _DTYPES[c.dtype] if 0 <= c.dtype < 3
                                 else str(c.dtype)))
        self.arguments = args
        self._by_name = {a.name: a for a in args}
        self.num_hyper = lib.muir_step_num_hyper(handle)
        self.rank = lib.muir_step_rank(handle)
        self.world_size = lib.muir_step_world_size(handle)
        self._hyper_buf = (ctypes.c_double * max(self.num_hyper, 1))()
        hyper = sorted((a for a in args if a.role == "hyper"),
                       key=lambda a: a.hyper_index)
        self.hyper_names = [a.name for a in hyper]
        self.hyper_defaults = [a.default for a in hyper]

    # -- lifetime -------------------------------------------------------
    def close(self):
        """Frees the step (idempotent)."""
        h, self._handle = getattr(self, "_handle", None), None
        if h is not None:
            self._lib.muir_step_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _h(self):
        if self._handle is None:
            raise MuirError("the step is closed")
        return self._handle

    # -- arguments ------------------------------------------------------
    def find(self, name):
        """The Argument named `name`, or None."""
        return self._by_name.get(name)

    def index(self, name):
        """The index of the argument named `name` (KeyError if none)."""
        i = self._lib.muir_step_find(self._h(), name.encode("utf-8"))
        if i < 0:
            raise KeyError("the step has no argument named %r" % name)
        return i

    def bind(self, which, address):
        """Binds tensor argument `which` (index or name) to the caller's
        memory at `address` (an int: a host pointer on the CPU target, a
        device pointer on the CUDA target), used in place at every run."""
        i = which if isinstance(which, int) else self.index(which)
        if self._lib.muir_step_bind(self._h(), i,
                                    ctypes.c_void_p(int(address))) != 0:
            raise _last_error(self._lib, "muir_step_bind")

    @property
    def hyper_buffer(self):
        """The step's own ctypes array of num_hyper doubles (at least one),
        in hyper_index order: fill it and pass it to run() as `hyper`."""
        return self._hyper_buf

    def first_nonfinite(self, role="grad"):
        """(argument index, flat element) of the first NaN or infinity in
        the bound tensors of `role` ("grad" by default), or None when all
        are finite. CPU target (host memory) only."""
        index, element = ctypes.c_int32(-1), ctypes.c_int64(-1)
        if self._lib.muir_step_first_nonfinite(
                self._h(), ROLES.index(role), ctypes.byref(index),
                ctypes.byref(element)) != 0:
            raise _last_error(self._lib, "muir_step_first_nonfinite")
        return None if index.value < 0 else (index.value, element.value)

    def run(self, counter=1, hyper=None, stream=None):
        """Runs one step. `counter` is the 1-based step number (AdamW's
        bias correction); `hyper` num_hyper floats in hyper_index order
        (None: the description's values); `stream` a cudaStream_t as an int
        for the CUDA target (None: the runtime's). `hyper` may be the
        step's own `hyper_buffer`, filled by the caller: then nothing is
        copied."""
        h = self._h()
        if hyper is None:
            buf, n = None, 0
        else:
            if hyper is not self._hyper_buf and len(hyper) != self.num_hyper:
                raise ValueError("the step takes %d hyperparameters (%s), "
                                 "got %d" % (self.num_hyper,
                                             ", ".join(self.hyper_names),
                                             len(hyper)))
            buf = self._hyper_buf
            if hyper is not buf:
                for k, v in enumerate(hyper):
                    buf[k] = float(v)
            n = self.num_hyper
        s = ctypes.c_void_p(int(stream)) if stream else None
        if self._lib.muir_step_run(h, int(counter), buf, n, s) != 0:
            raise _last_error(self._lib, "muir_step_run")

    def __repr__(self):
        return "<muir.Step %d arguments, %d hyper, rank %d of %d>" % (
            len(self.arguments), self.num_hyper, self.rank, self.world_size)


class _Default:
    """The value of a keyword that was not given (cache_dir=muir.DEFAULT:
    $MUIR_CACHE_DIR, else the user's cache folder), apart from None (no
    cache)."""

    def __repr__(self):
        return "muir.DEFAULT"


DEFAULT = _Default()


def release_memory():
    """Gives the pages of the CPU steps' arena that no running step uses
    back to the system (between runs: all of them) and returns their
    bytes; the next run touches them again (a page fault per page). The
    arena keeps its pages between runs so that a step's temporaries are
    warm (as a caching allocator keeps its blocks)."""
    return _load().muir_step_release_memory()


def held_memory():
    """The bytes the CPU steps' arena holds resident: about the largest
    set of temporaries a step of this process has had live at once."""
    return _load().muir_step_held_memory()


def cache_dir(value=DEFAULT):
    """Where compiled CPU steps are kept between processes (the cache-dir
    option): the given folder; None, False or "" for none; by default
    (DEFAULT) $MUIR_CACHE_DIR (empty: none), else $XDG_CACHE_HOME/muir,
    else ~/.cache/muir. muir.torch's optimizers and MoE layers use it."""
    if value is DEFAULT:
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


def compile(source, filename="step.yaml", options=None):
    """Compiles a description (YAML or JSON, by `filename`'s extension
    .yaml/.yml/.json) or muir IR into a Step. `options`: None, a string of
    "name=value" items, or a dict ({"target": "cpu", "ns-mode": "auto",
    "cache-dir": DIR}; booleans become true/false; None values are left
    out); the names are those of muir_step_compile (include/muir/Step.h).
    Raises MuirError with the library's message on failure."""
    lib = _load()
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    opts = _format_options(options)
    h = lib.muir_step_compile(data, len(data), filename.encode("utf-8"),
                              opts.encode("utf-8"))
    if not h:
        raise _last_error(lib, "muir_step_compile")
    return Step(h, lib)


def open_step(path, options=None):
    """Opens a step compiled ahead of time (a muir-step-<hash>.so that the
    cache-dir option wrote; muir_step_open). `options` as for compile (only
    deterministic and the NCCL ones apply)."""
    lib = _load()
    if not hasattr(lib, "muir_step_open") or \
            lib.muir_step_open.restype is not ctypes.c_void_p:
        raise MuirError("%s has no muir_step_open" % library_path())
    h = lib.muir_step_open(os.fsencode(path),
                           _format_options(options).encode("utf-8"))
    if not h:
        raise _last_error(lib, "muir_step_open")
    return Step(h, lib)
