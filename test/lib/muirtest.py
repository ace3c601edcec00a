"""Helpers for muir's Python integration tests.

Builds small high-level muir modules, writes their input tensors as .npy
files, runs muir-run on them and reads the --dump directory back. Knows
nothing about the math: the reference lives in muir_reference.py.

Scripts under test/Integration/Inputs/ take

    --muir-run PATH   the muir-run binary (lit substitutes the bare word
                      `muir-run` in a RUN line with the built tool)
    --tmp DIR         scratch directory (lit's %t); wiped at start

and report through a Checker: one line per case, "FAIL ..." lines for
failures, exit status 1 if anything failed.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def parse_args(description=""):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--muir-run", dest="muir_run",
                   default=os.environ.get("MUIR_RUN") or shutil.which("muir-run"),
                   help="path to muir-run (default: $MUIR_RUN or PATH)")
    p.add_argument("--tmp", required=True, help="scratch directory (lit %%t)")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    if not args.muir_run or not os.path.isfile(args.muir_run):
        sys.exit("error: muir-run not found (got %r); pass --muir-run"
                 % args.muir_run)
    if os.path.exists(args.tmp):
        shutil.rmtree(args.tmp)
    os.makedirs(args.tmp)
    return args


# --------------------------------------------------------------------------
# Module text
# --------------------------------------------------------------------------

def ttype(shape):
    """MLIR tensor type for a float32 tensor of `shape`."""
    return "tensor<%sxf32>" % "x".join(str(int(d)) for d in shape)


def fmt_f64(v):
    """A float attribute literal that MLIR parses as f64 exactly."""
    r = repr(float(v))          # shortest round-trip form
    if "inf" in r or "nan" in r:
        raise ValueError("no MLIR literal for %r" % v)
    mant, e, exp = r.partition("e")
    if "." not in mant:         # MLIR wants 1.0 / 1.0e-06, not 1 / 1e-06
        mant += ".0"
    return mant + e + exp


class Module:
    """Accumulates the arguments, results and body of one entry function.

        m = Module()
        x = m.arg("x", (4, 4))                # returns the SSA name "%a0"
        y = m.value()                         # fresh SSA name
        m.op("%s = muir.newton_schulz %s steps(5) schedule(simple) : %s"
             % (y, x, ttype((4, 4))))
        m.result(y, (4, 4), updates="x")
        text = m.text()
    """

    def __init__(self, func_name="step"):
        self.func_name = func_name
        self.args = []      # (ssa, decl)
        self.results = []   # (ssa, type, updates)
        self.body = []
        self._n = 0
        self.shapes = {}    # tensor name -> shape

    def value(self):
        self._n += 1
        return "%%v%d" % self._n

    def arg(self, name, shape, role=None, split=None):
        """`split`, e.g. "ep:0": this rank holds its block of dimension 0
        over the group of axis ep (muir-run slices and gathers)."""
        ssa = "%%a%d" % len(self.args)
        attrs = 'muir.name = "%s"' % name
        if role:
            attrs += ', muir.role = #muir.role<%s>' % role
        if split:
            # "axis:dim" on @world, "grid.axis:dim" on another grid; axes
            # joined by "+" split the dimension over all of them.
            axes, dim = split.split(":")
            grid = "world"
            if "." in axes:
                grid, axes = axes.split(".")
            attrs += ', muir.split = [#muir.split<@%s, [%s], %s>]' % (
                grid, ", ".join('"%s"' % a for a in axes.split("+")), dim)
        self.args.append((ssa, "%s: %s {%s}" % (ssa, ttype(shape), attrs)))
        self.shapes[name] = tuple(shape)
        return ssa

    def step_arg(self):
        ssa = "%%a%d" % len(self.args)
        self.args.append((ssa, '%s: i64 {muir.role = #muir.role<step>}' % ssa))
        return ssa

    def op(self, line):
        self.body.append(line)

    def result(self, ssa, shape, updates):
        self.results.append((ssa, ttype(shape), updates))

    def text(self):
        args = ",\n    ".join(decl for _, decl in self.args)
        res = ",\n        ".join('%s {muir.updates = "%s"}' % (t, u)
                                 for _, t, u in self.results)
        lines = ["func.func @%s(\n    %s)\n    -> (%s) {"
                 % (self.func_name, args, res)]
        lines += ["  " + b for b in self.body]
        lines.append("  return %s : %s" % (
            ", ".join(s for s, _, _ in self.results),
            ", ".join(t for _, t, _ in self.results)))
        lines.append("}")
        return "\n".join(lines) + "\n"

    # Convenience emitters for the ops under test ---------------------------

    def newton_schulz(self, x, shape, steps, schedule="simple",
                      coefficients=None, eps=None, precision=None):
        y = self.value()
        coef = ""
        if coefficients is not None:
            coef = " coefficients([%s])" % ", ".join(fmt_f64(c)
                                                     for c in coefficients)
        items = []
        if eps is not None:
            items.append("eps = %s" % fmt_f64(eps))
        if precision is not None:
            items.append("precision = #muir.ns_precision<%s>" % precision)
        attrs = " {%s}" % ", ".join(items) if items else ""
        self.op("%s = muir.newton_schulz %s steps(%d) schedule(%s)%s%s : %s"
                % (y, x, steps, schedule, coef, attrs, ttype(shape)))
        return y

    def muon_update(self, w, g, m, shape, **attrs):
        w1, m1 = self.value(), self.value()
        self.op("%s, %s = muir.muon_update %s, %s, %s %s : %s"
                % (w1, m1, w, g, m, attr_dict(attrs), ttype(shape)))
        return w1, m1

    def adamw_update(self, w, g, m, v, step, shape, **attrs):
        w1, m1, v1 = self.value(), self.value(), self.value()
        self.op("%s, %s, %s = muir.adamw_update %s, %s, %s, %s step %s %s : %s"
                % (w1, m1, v1, w, g, m, v, step, attr_dict(attrs),
                   ttype(shape)))
        return w1, m1, v1


def attr_dict(attrs):
    """{lr = 0.02, nesterov = false, schedule = #muir<schedule quintic>, ...}

    Floats become f64 literals, bools true/false, enum attributes are passed
    as ("enum", mnemonic, value), lists of floats become array<f64: ...>.
    """
    parts = []
    for k, v in attrs.items():
        if isinstance(v, bool):
            s = "true" if v else "false"
        elif isinstance(v, tuple) and len(v) == 3 and v[0] == "enum":
            s = "#muir<%s %s>" % (v[1], v[2])
        elif isinstance(v, (list, np.ndarray)):
            s = "array<f64: %s>" % ", ".join(fmt_f64(c) for c in v)
        elif isinstance(v, int):
            s = "%d : i64" % v
        else:
            s = fmt_f64(v)
        parts.append("%s = %s" % (k, s))
    return "{" + ", ".join(parts) + "}"


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

def sibling_tool(muir_run, name):
    """The tool `name` from the same build as `muir_run` (or from PATH)."""
    if os.path.sep in muir_run:
        return os.path.join(os.path.dirname(muir_run), name)
    return name


def check_output(cmd):
    """stdout of `cmd`; on failure exits with a FAIL line, its stdout and
    stderr."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def comm_stats(text):
    """muir-run --comm-stats output as ({(rank, axes): bytes sent},
    {rank: flops})."""
    sent, flops = {}, {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("comm: rank"):
            sent[(int(f[2]), f[4])] = int(f[6])
        elif line.startswith("compute: rank"):
            flops[int(f[2])] = int(f[6])
    return sent, flops


def write_npy(directory, name, array):
    """Writes DIR/<name>.npy as float32 C-order (subfolders for '/')."""
    path = os.path.join(directory, name + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, np.ascontiguousarray(np.asarray(array, dtype=np.float32)))
    return path


# Muon settings under which every product and sum of one step is exact in
# float32 for integer-valued parameters and +-1 gradients whose Frobenius
# norm is a power of two: one Newton-Schulz step with coefficients
# (2, -1, 0.5), momentum that passes the gradient through, lr 2^-6.
EXACT_MUON = """  muon: {lr: 0.015625, momentum: 0, momentum_kind: accumulate,
         nesterov: false, ns_steps: 1, schedule: custom,
         coefficients: [2, -1, 0.5]}"""


def write_param_inputs(directory, shapes, kind, rng):
    """Writes DIR/<name>.npy and DIR/<name>.grad.npy for each name, shape
    of `shapes`: kind "exact" gives integer parameters in [-4, 4] and +-1
    gradients (for EXACT_MUON), "random" Gaussian ones (parameters * 0.02)."""
    os.makedirs(directory, exist_ok=True)
    for name, shape in shapes.items():
        if kind == "exact":
            p = rng.integers(-4, 5, shape).astype(np.float32)
            g = rng.choice([-1.0, 1.0], shape).astype(np.float32)
        else:
            p = (rng.standard_normal(shape) * 0.02).astype(np.float32)
            g = rng.standard_normal(shape).astype(np.float32)
        write_npy(directory, name, p)
        write_npy(directory, name + ".grad", g)


def read_dump(directory):
    """{name: float32 array} for every DIR/**/<name>.npy."""
    out = {}
    for root, _, files in os.walk(directory):
        for f in files:
            if not f.endswith(".npy"):
                continue
            full = os.path.join(root, f)
            name = os.path.relpath(full, directory)[:-len(".npy")]
            out[name.replace(os.sep, "/")] = np.load(full)
    return out


# --------------------------------------------------------------------------
# An MoE layer (moe_layer.py's test, bench/moe.py)
# --------------------------------------------------------------------------

def route_attr_text(attrs, k):
    parts = ["top_k = %d" % k]
    if attrs.get("scoring") == "sigmoid":
        parts.append("scoring = #muir<route_scoring sigmoid>")
    for flag in ("normalize", "softmax_after_topk"):
        if attrs.get(flag):
            parts.append(flag)
    for key in ("n_group", "topk_group"):
        if key in attrs:
            parts.append("%s = %d" % (key, attrs[key]))
    if "scaling" in attrs:
        parts.append("scaling = %s" % fmt_f64(attrs["scaling"]))
    return "{" + ", ".join(parts) + "}"


def grad_attr_text(attrs):
    parts = []
    if attrs.get("scoring") == "sigmoid":
        parts.append("scoring = #muir<route_scoring sigmoid>")
    for flag in ("normalize", "softmax_after_topk"):
        if attrs.get(flag):
            parts.append(flag)
    if "scaling" in attrs:
        parts.append("scaling = %s" % fmt_f64(attrs["scaling"]))
    return "{" + ", ".join(parts) + "}" if parts else ""


def capacity_keep(idx, w, e, factor, policy, group):
    """muir.capacity's rule, written independently: in each block of
    `group` tokens, expert x keeps at most ceil(factor * G * k / e) of its
    (token, slot) pairs, the highest weights (ties to the earlier token)
    for policy "weight", the earliest tokens for "position". Returns the
    [t, k] mask of kept pairs."""
    import math
    t, k = idx.shape
    c = int(math.ceil(factor * group * k / e))
    keep = np.zeros((t, k), bool)
    for start in range(0, t, group):
        for x in range(e):
            pairs = [(tok, j) for tok in range(start, start + group)
                     for j in range(k) if idx[tok, j] == x]
            if policy == "weight":
                pairs.sort(key=lambda p: -w[p])    # stable: token order
            for p in pairs[:c]:
                keep[p] = True
    return keep


def moe_layer_module(g, t, e, k, H, F, attrs):
    """An MoE layer's forward and backward for one rank of g (t tokens,
    e experts, top-k, hidden H, expert size F): route, dispatch, the SwiGLU
    experts, combine; then from the output gradient `dy` the gradients of
    x, the logits and the three expert stacks (see
    Integration/Inputs/moe_layer.py). `attrs`: the router's settings
    (scoring, normalize, softmax_after_topk, n_group, topk_group, scaling,
    bias) and, for capacity mode, capacity = {factor, policy, group}."""
    el = e // g
    bound = g * t * min(k, el)
    plan = 2 * bound + 4 * g
    m = Module()
    T = ttype
    sp = "ep:0"
    lg = m.arg("logits", (t, e), split=sp)
    bias = m.arg("bias", (e,)) if attrs.get("bias") else None
    x = m.arg("x", (t, H), split=sp)
    dy = m.arg("dy", (t, H), split=sp)
    wg = m.arg("w_gate", (el, F, H), split=sp)
    wu = m.arg("w_up", (el, F, H), split=sp)
    wd = m.arg("w_down", (el, H, F), split=sp)
    outs = {"y": (t, H), "dx": (t, H), "dlogits": (t, e),
            "dw_gate": (el, F, H), "dw_up": (el, F, H), "dw_down": (el, H, F)}
    for name, shape in outs.items():
        m.arg(name, shape, split=sp)
    v = m.value
    idx, w, cnt = v(), v(), v()
    m.op("%s, %s, %s = muir.route %s%s %s : (%s%s) -> (tensor<%dx%dxi64>, %s, "
         "tensor<%dxi64>)"
         % (idx, w, cnt, lg, " bias %s" % bias if bias else "",
            route_attr_text(attrs, k), T((t, e)),
            ", " + T((e,)) if bias else "", t, k, T((t, k)), e))
    it = "tensor<%dx%dxi64>" % (t, k)
    ct = "tensor<%dxi64>" % el
    pt = "tensor<%dxi64>" % plan
    grid = 'on @world axes = ["ep"] {num_experts = %d, layer = "moe"}' % e
    # Capacity mode: the kept routing feeds dispatch and combine; route_grad
    # keeps the routing it chose (dropped slots get a zero gradient).
    ridx, rw = idx, w
    cap = attrs.get("capacity")
    if cap:
        ridx, rw, kc = v(), v(), v()
        m.op("%s, %s, %s = muir.capacity %s, %s {num_experts = %d, "
             "capacity_factor = %s, policy = #muir<drop_policy %s>, "
             "group_tokens = %d} : (%s, %s) -> (%s, %s, tensor<%dxi64>)"
             % (ridx, rw, kc, idx, w, e, fmt_f64(cap["factor"]),
                cap["policy"], cap["group"], it, T((t, k)), it, T((t, k)),
                e))
    rows, counts, pl = v(), v(), v()
    m.op("%s, %s, %s = muir.dispatch %s, %s %s : (%s, %s) -> (%s, %s, %s)"
         % (rows, counts, pl, x, ridx, grid, T((t, H)), it, T((bound, H)), ct,
            pt))

    def gmm(a, wt, wshape, n, transpose_b=True):
        r = v()
        m.op("%s = muir.grouped_matmul %s, %s, %s%s : (%s, %s, %s) -> %s"
             % (r, a, wt, counts, " {transpose_b}" if transpose_b else "",
                T((bound, wshape[2] if transpose_b else wshape[1])),
                T(wshape), ct, T((bound, n))))
        return r

    gate = gmm(rows, wg, (el, F, H), F)
    up = gmm(rows, wu, (el, F, H), F)
    act = v()
    m.op("%s = muir.swiglu %s, %s : %s" % (act, gate, up, T((bound, F))))
    o = gmm(act, wd, (el, H, F), H)
    y = v()
    m.op("%s = muir.combine %s, %s, %s weights %s %s : (%s, %s, %s, %s) -> %s"
         % (y, o, ridx, pl, rw, grid, T((bound, H)), it, pt, T((t, k)),
            T((t, H))))
    # Backward.
    do, c2, p2 = v(), v(), v()
    m.op("%s, %s, %s = muir.dispatch %s, %s weights %s %s : (%s, %s, %s) -> "
         "(%s, %s, %s)" % (do, c2, p2, dy, ridx, rw, grid, T((t, H)), it,
                           T((t, k)), T((bound, H)), ct, pt))
    dw = v()
    m.op("%s = muir.combine_weights_grad %s, %s, %s, %s %s : (%s, %s, %s, %s)"
         " -> %s" % (dw, dy, o, ridx, pl, grid, T((t, H)), T((bound, H)), it,
                     pt, T((t, k))))

    def wgrad(a, d, shape):
        r = v()
        m.op("%s = muir.grouped_matmul_wgrad %s, %s, %s {transpose_b} : "
             "(%s, %s, %s) -> %s"
             % (r, a, d, counts, T((bound, shape[2])), T((bound, shape[1])),
                ct, T(shape)))
        return r

    dwd = wgrad(act, do, (el, H, F))
    da = gmm(do, wd, (el, H, F), F, transpose_b=False)
    dg, du = v(), v()
    m.op("%s, %s = muir.swiglu_grad %s, %s, %s : %s"
         % (dg, du, gate, up, da, T((bound, F))))
    dwg = wgrad(rows, dg, (el, F, H))
    dwu = wgrad(rows, du, (el, F, H))
    dr1 = gmm(dg, wg, (el, F, H), H, transpose_b=False)
    dr2 = gmm(du, wu, (el, F, H), H, transpose_b=False)
    dr = v()
    m.op("%s = muir.add %s, %s : %s" % (dr, dr1, dr2, T((bound, H))))
    dx = v()
    m.op("%s = muir.combine %s, %s, %s %s : (%s, %s, %s) -> %s"
         % (dx, dr, ridx, pl, grid, T((bound, H)), it, pt, T((t, H))))
    dl = v()
    m.op("%s = muir.route_grad %s, %s, %s %s : (%s, %s, %s) -> %s"
         % (dl, lg, idx, dw, grad_attr_text(attrs), T((t, e)), it, T((t, k)),
            T((t, e))))
    for ssa, name in ((y, "y"), (dx, "dx"), (dl, "dlogits"),
                      (dwg, "dw_gate"), (dwu, "dw_up"), (dwd, "dw_down")):
        m.result(ssa, outs[name], updates=name)
    return ('muir.grid @world axes = ["ep"] shape = [%d]\n' % g) + m.text()


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

class RunError(Exception):
    pass


def run_step(muir_run, path, *flags, env=None):
    """`muir-run PATH --quiet --no-probes FLAGS...` (with `env` added to the
    environment); raises RunError with the command and its output unless
    it exits 0."""
    cmd = [muir_run, path, "--quiet", "--no-probes"] + list(flags)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True,
                       env=dict(os.environ, **(env or {})))
    if p.returncode != 0:
        raise RunError("muir-run failed (exit %d): %s\n%s%s"
                       % (p.returncode, " ".join(cmd), p.stdout, p.stderr))


def run_muir(muir_run, module_text, workdir, inputs=None, steps=1, seed=0,
             load_dir=None, extra=("--quiet", "--no-probes")):
    """Writes the module and inputs under `workdir`, runs muir-run and
    returns {name: array} read from the dump directory (its stdout is kept
    in workdir/stdout.txt).

    `inputs` ({name: array}) are written to workdir/in and passed with
    --load (unless `load_dir` names another directory)."""
    if os.path.exists(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    mlir = os.path.join(workdir, "module.mlir")
    with open(mlir, "w") as f:
        f.write(module_text)
    cmd = [muir_run, mlir, "--steps", str(steps), "--seed", str(seed)]
    if inputs:
        if load_dir is not None:
            raise ValueError("pass either inputs or load_dir")
        load_dir = os.path.join(workdir, "in")
        for name, arr in inputs.items():
            write_npy(load_dir, name, arr)
    if load_dir is not None:
        cmd += ["--load", load_dir]
    dump = os.path.join(workdir, "out")
    cmd += ["--dump", dump]
    cmd += list(extra)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise RunError("muir-run failed (exit %d): %s\n--- stdout\n%s"
                       "--- stderr\n%s--- module (%s)\n%s"
                       % (p.returncode, " ".join(cmd), p.stdout, p.stderr,
                          mlir, module_text))
    with open(os.path.join(workdir, "stdout.txt"), "w") as f:
        f.write(p.stdout)
    return read_dump(dump)


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------

def compare_bits(a, b):
    """What a bitwise comparison of two arrays observed, for
    Checker.expect: "bitwise equal", or how many elements differ and by how
    much."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return "%s %s and %s %s" % (a.dtype, a.shape, b.dtype, b.shape)
    same = a.tobytes() == b.tobytes()
    if same:
        return "bitwise equal"
    rows_a = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
    rows_b = np.ascontiguousarray(b).view(np.uint8).reshape(b.size, -1)
    diff = int(np.count_nonzero((rows_a != rows_b).any(axis=1)))
    delta = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return "%d of %d elements differ, max |diff| %.3e" % (
        diff, a.size, np.nanmax(delta) if a.size else 0.0)


class Checker:
    """Collects per-case results; `finish()` exits 1 if any case failed."""

    def __init__(self):
        self.failures = []

    def check(self, label, value, bound, what="rel_err"):
        """Passes when value <= bound (NaN fails)."""
        ok = bool(np.isfinite(value)) and value <= bound
        if ok:
            print("%s ok (%s %.3e <= %.1e)" % (label, what, value, bound))
        else:
            msg = "%s: %s %.6e exceeds bound %.1e" % (label, what, value, bound)
            self.failures.append(msg)
            print("FAIL " + msg)
        sys.stdout.flush()
        return ok

    def expect(self, label, cond, got=""):
        """Passes when cond holds. `got` says what was observed (the values
        cond was decided on) and is printed either way, so that the output
        FileCheck sees, and a failure, show it."""
        shown = " (%s)" % got if got else ""
        if cond:
            print("%s ok%s" % (label, shown))
        else:
            msg = "%s: failed%s" % (label, shown)
            self.failures.append(msg)
            print("FAIL " + msg)
        sys.stdout.flush()
        return cond

    def finish(self):
        if self.failures:
            sys.stderr.write("%d check(s) failed:\n" % len(self.failures))
            for f in self.failures:
                sys.stderr.write("  " + f + "\n")
            sys.exit(1)
        print("ALL PASSED")


def processes(marker):
    """The pids (but this process's) whose command line holds `marker`:
    what is left of a run whose arguments name it."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def run_seeded_step(step, name="w"):
    """Binds every tensor argument of a compiled step (muir.compile) to
    arrays drawn from one fixed seed, runs one step and returns a copy of
    tensor `name` after it: two compiles of the same source give the same
    bits only if they run the same code."""
    rng = np.random.default_rng(7)
    arrays = {}
    for a in step.arguments:
        if a.is_tensor:
            arrays[a.name] = rng.standard_normal(a.shape).astype(np.float32)
            step.bind(a.name, arrays[a.name].ctypes.data)
    step.run(1)
    return arrays[name].copy()
