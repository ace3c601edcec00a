"""The muir package's own API (ctypes over include/muir/Step.h), without
PyTorch: compile a description, list its arguments, bind NumPy arrays,
run with and without hyperparameters, errors as MuirError.
"""
import ctypes
import os
import re
import sys

import muir

assert "torch" not in sys.modules and "numpy" not in sys.modules, \
    "import muir imported %s" % [m for m in ("torch", "numpy")
                                 if m in sys.modules]
print("import muir: no torch, no numpy")

import numpy as np  # noqa: E402

import muir_reference as ref  # noqa: E402  (test/lib)

failed = []


def check(ok, what):
    if not ok:
        failed.append(what)
        print("FAIL: %s" % what)


print("version: %s" % muir.version())
# The optimizer registry, as docs/description.md lists each optimizer's
# state and run-time hyperparameters.
for name, o in muir.optimizers().items():
    print("optimizer %s%s%s: state %s; hyper %s" % (
        name, " orthogonalises" if o.orthogonalises else "",
        " counts steps" if o.step_count else "",
        ", ".join("%s=%s%s" % (st.suffix, st.key, " (rows)" if st.rows
                               else "") for st in o.state),
        ", ".join(o.hyper)))
# The settings' values, as docs/description.md's tables give them.
for key, st in muir.settings().items():
    if st.kind in ("real", "integer"):
        what = "%s%g, %g%s" % ("[" if st.low_included else "(", st.low,
                               st.high, "]" if st.high_included else ")")
    elif st.kind == "real_list":
        what = "numbers"
    else:
        what = ", ".join(st.choices)
    print("setting %s %s %s" % (key, st.kind, what))
# Each optimizer's description section: its keys and defaults.
for name, o in muir.optimizers().items():
    print("section optimizer.%s: %s" % (name, ", ".join(
        "%s=%s" % (k, v) for k, v in o.settings.items())))


def doc_sections():
    """docs/description.md's "## optimizer.<name>" tables: key -> the
    default column's text; "Its keys are `optimizer.X`'s `a`, ... (same
    ranges and defaults)" takes X's."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "..")
    with open(os.path.join(root, "docs", "description.md")) as f:
        text = f.read()
    sections = {}
    for part in re.split(r"^##+ ", text, flags=re.M)[1:]:
        title = part.split("\n", 1)[0].strip()
        if not title.startswith("optimizer."):
            continue
        keys = {}
        same = re.search(r"Its keys are `optimizer\.(\w+)`'s (.*?) \(same "
                         r"ranges and defaults\)", part, re.S)
        if same:
            for k in re.findall(r"`(\w+)`", same.group(2)):
                keys[k] = sections[same.group(1)][k]
        for line in part.split("\n"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)]
            if len(cells) >= 5 and re.fullmatch(r"`\w+`", cells[1]):
                keys[cells[1].strip("`")] = cells[3].strip("`")
        sections[title[len("optimizer."):]] = keys
    return sections


def same_default(doc, value):
    if value is None:
        return doc in ("off", "[]")
    if isinstance(value, bool):
        return doc == ("true" if value else "false")
    if isinstance(value, str):
        return doc == value
    try:
        return float(doc) == value
    except ValueError:
        return False


docs = doc_sections()
for name, o in muir.optimizers().items():
    doc = docs.get(name, {})
    wrong = sorted(set(doc) ^ set(o.settings)) + sorted(
        k for k in doc if k in o.settings
        and not same_default(doc[k], o.settings[k]))
    check(not wrong, "docs/description.md's optimizer.%s: %s differ"
          % (name, ", ".join(wrong)))
    print("docs optimizer.%s: %d keys, defaults as the registry's%s"
          % (name, len(doc), "" if not wrong else " NOT: " + ", ".join(wrong)))

# The options (muir.options(), include/muir/Driver/Options.def) and
# docs/step-library.md's table of them, row for row.
for name, o in muir.options().items():
    print("option %s %s %s%s%s" % (
        name, o.kind, o.default or "none",
        " (%s)" % ", ".join(o.choices) if o.choices else "",
        " keyword" if o.user else ""))


def options_table():
    rows = ["| option | values | default | muir.torch keyword | what |",
            "|---|---|---|---|---|"]
    for n, o in muir.options().items():
        kind = " \\| ".join("`%s`" % c for c in o.choices) if o.choices \
            else o.kind
        rows.append("| `%s` | %s | %s | %s | %s |" % (
            n, kind, "`%s`" % o.default if o.default else "none",
            "`%s`" % n.replace("-", "_") if o.user else "no", o.help))
    return rows


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "..", "docs", "step-library.md")) as f:
    text = f.read()
quoted = text.split("<!-- options table: muir.options() -->\n", 1)[-1] \
    .split("<!-- end of options table -->", 1)[0].rstrip("\n").split("\n")
differ = [r for r in options_table() if r not in quoted] + \
    [r for r in quoted if r not in options_table()]
check(not differ, "docs/step-library.md's options table differs from "
      "muir.options() (regenerate it): %s" % differ[:2])
print("docs options table: %d rows, as muir.options()%s"
      % (len(quoted) - 2, "" if not differ else " NOT"))

# docs/muir-compile.md's flag table gives each option's default as the
# library declares it.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "..", "docs", "muir-compile.md")) as f:
    text = f.read()
# The flags' table: the rows under "| option | default | meaning |".
table = re.search(r"^\| option \| default \| meaning \|\n(?:^\|.*\n)+",
                  text, re.M).group(0)
rows = re.findall(r"^\| `--([\w-]+)[^|]*(?:\\\|[^|]*)*\| ([^|]+) \|",
                  table, re.M)
documented = {name: default.strip().strip("`") for name, default in rows}
flagged = [n for n in muir.options() if n in documented]
wrong = [n for n in flagged
         if documented[n] != {"false": "off", "": "none"}.get(
             muir.options()[n].default, muir.options()[n].default)]
check(not wrong, "docs/muir-compile.md's defaults differ: %s" % wrong)
print("docs/muir-compile.md: %d options' defaults as muir.options()%s"
      % (len(flagged), "" if not wrong else " NOT: " + ", ".join(wrong)))

# muir.description's keyword defaults are the sections' too.
import inspect  # noqa: E402
import muir.description  # noqa: E402
sig = inspect.signature(muir.description.description).parameters
muon_, adamw_ = (muir.optimizers()[k].settings for k in ("muon", "adamw"))
expected = dict({k: muon_[k] for k in (
    "lr", "momentum", "nesterov", "weight_decay", "ns_steps", "schedule",
    "scale_mode", "scale_extra", "momentum_kind")},
    ns_eps=muon_["eps"], adamw_betas=(adamw_["beta1"], adamw_["beta2"]),
    adamw_eps=adamw_["eps"], adamw_weight_decay=adamw_["weight_decay"])
wrong = sorted(k for k, v in expected.items() if sig[k].default != v)
check(not wrong, "muir.description.description's defaults: %s differ"
      % ", ".join(wrong))
print("muir.description's defaults are the sections': %d keys%s"
      % (len(expected), "" if not wrong else " NOT: " + ", ".join(wrong)))

SOURCE = """\
name: api
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, momentum: 0.9, weight_decay: 0.1}
  adamw: {lr: 0.001, beta1: 0.8, beta2: 0.9, weight_decay: 0.2}
parameters:
  - {name: w, shape: [6, 4]}
  - {name: b, shape: [5], role: bias}
"""
step = muir.compile(SOURCE, "api.yaml", {"target": "cpu", "batch": False})
print("rank %d world %d hyper %d" % (step.rank, step.world_size,
                                     step.num_hyper))
for a in step.arguments:
    if a.role == "hyper":
        print("argument %s hyper[%d] default %g" % (a.name, a.hyper_index,
                                                  a.default))
    elif a.role == "counter":
        print("argument %s counter" % a.name)
    else:
        print("argument %s %s %s%s" % (a.name, a.role,
                                       "x".join(map(str, a.shape)),
                                       " updated" if a.updated else ""))
check(step.find("w.momentum").role == "state", "find")
check(step.index("b.exp_avg_sq") == step.find("b.exp_avg_sq").index,
      "index")

rng = np.random.default_rng(0)
arrays = {}
for a in step.arguments:
    if a.is_tensor:
        x = rng.standard_normal(a.shape).astype(np.float32)
        if a.role == "state":
            x = np.abs(x) if a.name.endswith("exp_avg_sq") else x
        arrays[a.name] = x
        step.bind(a.name, x.ctypes.data)
start = {k: v.astype(np.float64) for k, v in arrays.items()}

# Step 1 with the description's values, step 2 with new ones.
hyper_names = step.hyper_names
step.run(1)
h = {"muon.lr": 0.05, "muon.weight_decay": 0.0, "muon.momentum": 0.8,
     "adamw.lr": 0.003, "adamw.weight_decay": 0.5, "adamw.beta1": 0.7,
     "adamw.beta2": 0.95, "adamw.eps": 1e-6}
values = [h[n] for n in hyper_names]
mid = {k: v.astype(np.float64) for k, v in arrays.items()}
step.run(2, values)

W1, M1 = ref.muon_update(start["w"], start["w.grad"], start["w.momentum"],
                         lr=0.02, beta=0.9, weight_decay=0.1)
W2, M2 = ref.muon_update(mid["w"], start["w.grad"], mid["w.momentum"],
                         lr=0.05, beta=0.8, weight_decay=0.0)
B1, m1, v1 = ref.adamw_update(start["b"], start["b.grad"], start["b.exp_avg"],
                              start["b.exp_avg_sq"], 1, lr=0.001, beta1=0.8,
                              beta2=0.9, weight_decay=0.2)
B2, m2, v2 = ref.adamw_update(mid["b"], start["b.grad"], mid["b.exp_avg"],
                              mid["b.exp_avg_sq"], 2, lr=0.003, beta1=0.7,
                              beta2=0.95, eps=1e-6, weight_decay=0.5)
for what, got, want in (("w step 1", mid["w"], W1), ("b step 1", mid["b"], B1),
                        ("w", arrays["w"], W2), ("w.momentum",
                                                 arrays["w.momentum"], M2),
                        ("b", arrays["b"], B2), ("b.exp_avg",
                                                 arrays["b.exp_avg"], m2),
                        ("b.exp_avg_sq", arrays["b.exp_avg_sq"], v2)):
    e = ref.rel_fro(got, want)
    check(e < 1e-5, "%s: relative error %.3g" % (what, e))
check(np.array_equal(arrays["w.grad"], start["w.grad"]), "w.grad changed")
print("two steps (defaults, then hyper %s) match the reference" %
      ", ".join("%s=%g" % (n, h[n]) for n in hyper_names))
check([a.dtype for a in step.arguments if a.role == "hyper"] ==
      ["float64"] * 8 and step.find("w").dtype == "float32" and
      step.find("step").dtype == "int64", "dtypes")

# Without values a run takes the defaults again, not the last ones: step 3
# with None is bitwise step 3 of a second step given the defaults.
import os  # noqa: E402
import tempfile  # noqa: E402

def three_steps(second_hyper, third_hyper, options=None, opened=None):
    s = opened or muir.compile(SOURCE, "api.yaml",
                               dict({"target": "cpu", "batch": False},
                                    **(options or {})))
    xs = {k: v.astype(np.float64).astype(np.float32).copy()
          for k, v in start.items()}
    for a in s.arguments:
        if a.is_tensor:
            s.bind(a.index, xs[a.name].ctypes.data)
    s.run(1)
    s.run(2, second_hyper)
    s.run(3, third_hyper)
    s.close()
    return xs

defaults = [dict((a.name, a.default) for a in step.arguments
                 if a.role == "hyper")[n] for n in hyper_names]
after_none = three_steps(values, None)
after_defaults = three_steps(values, defaults)
check(all(np.array_equal(after_none[k], after_defaults[k])
          for k in after_none), "run(None) after values: not the defaults")
print("run without values after values: the defaults")

# The cache: the library it writes opens without compiling (muir_step_open)
# and runs bitwise as the JIT.
cache = tempfile.mkdtemp(prefix="muir-api-cache-")
jit = three_steps(values, None)
cached = three_steps(values, None, {"cache-dir": cache})
files = [f for f in os.listdir(cache) if f.endswith(".so")]
check(len(files) == 1, "cache files: %s" % files)
opened = three_steps(values, None,
                     opened=muir.open_step(os.path.join(cache, files[0])))
check(all(np.array_equal(jit[k], cached[k]) and
          np.array_equal(jit[k], opened[k]) for k in jit),
      "cached or opened step differs from the JIT")
print("cached and opened steps: bitwise the JIT's")

# A cached step keeps its tensors' element types: an f64 parameter's
# gradient, opened from the cache, is float64, and the non-finite check
# reads it as doubles (finite values that a float32 reading of their bytes
# would take for NaN or infinities find nothing; a NaN is found where it
# is).
F64_SOURCE = """\
name: api64
grid: {axes: {dp: 1}}
parameters:
  - {name: w, shape: [64, 32], dtype: f64}
"""
cache64 = tempfile.mkdtemp(prefix="muir-api-cache-")
muir.compile(F64_SOURCE, "api64.yaml",
             {"target": "cpu", "cache-dir": cache64}).close()
lib64 = [f for f in os.listdir(cache64) if f.endswith(".so")]
s64 = muir.open_step(os.path.join(cache64, lib64[0]))
g64 = np.frombuffer(np.full(64 * 32, 0x7fc00000, dtype=np.uint32).tobytes()
                    * 2, dtype=np.float64)[:64 * 32].copy()
check(np.isfinite(g64).all(), "float32 NaN patterns as doubles are finite")
held = []
for a in s64.arguments:
    if a.is_tensor:
        held.append(g64 if a.role == "grad" else np.zeros(a.shape))
        s64.bind(a.index, held[-1].ctypes.data)
clean = s64.first_nonfinite("grad")
g64[77] = np.nan
found = s64.first_nonfinite("grad")
check(s64.find("w.grad").dtype == "float64" and clean is None and
      found is not None and found[1] == 77,
      "cached f64 step: dtype %s, clean %s, NaN at %s"
      % (s64.find("w.grad").dtype, clean, found))
print("cached f64 step: w.grad %s, finite doubles pass, a NaN found at "
      "element %d" % (s64.find("w.grad").dtype, found[1] if found else -1))
s64.close()
import shutil  # noqa: E402
shutil.rmtree(cache64)

# Errors.
def expect(what, fn, exc=muir.MuirError):
    try:
        fn()
    except exc as e:
        print("%s: %s: %s" % (what, type(e).__name__,
                              str(e).splitlines()[0]))
    else:
        check(False, "%s: no error" % what)


expect("bad key", lambda: muir.compile(SOURCE.replace("momentum:", "momentm:"),
                                       "bad.yaml"))
expect("bad option", lambda: muir.compile(SOURCE, "api.yaml", "target=tpu"))
# The step library's option names are the tools' flags' names.
expect("old probes name", lambda: muir.compile(SOURCE, "api.yaml",
                                               "probes=true"))
expect("bad machine", lambda: muir.compile(SOURCE, "api.yaml",
                                           "machine=tpu"))
expect("bad precision", lambda: muir.compile(SOURCE, "api.yaml",
                                             "ns-precision=f16"))
expect("bad ns-mode", lambda: muir.compile(SOURCE, "api.yaml",
                                           "ns-mode=sideways"))
expect("bad dp-assign", lambda: muir.compile(SOURCE, "api.yaml",
                                             "dp-assign=sideways"))
expect("cuda-bf16 on the cpu", lambda: muir.compile(SOURCE, "api.yaml",
                                                    "cuda-bf16=true"))
expect("gram in bf16", lambda: muir.compile(
    SOURCE, "api.yaml", "ns-precision=bf16 ns-form=gram"))
# The tools' other rules (checkOptions): the same for the C API's items.
expect("fuse without syrk", lambda: muir.compile(
    SOURCE, "api.yaml", "syrk=false fuse-syrk-all-reduce=true"))
expect("chunks without fusing", lambda: muir.compile(
    SOURCE, "api.yaml", "fuse-syrk-all-reduce=false syrk-chunk-rows=64"))
expect("negative chunks", lambda: muir.compile(
    SOURCE, "api.yaml", "syrk-chunk-rows=-1"))
expect("cuda-arch on the cpu", lambda: muir.compile(
    SOURCE, "api.yaml", "cuda-arch=sm_90"))
# ns-precision=bf16 iterates in bf16: 3 steps of the Muon matrix differ from
# the f32 step's by about bf16's rounding, not f32's.
f32 = three_steps(values, None)
bf16 = three_steps(values, None, {"ns-precision": "bf16"})
w0 = start["w"].astype(np.float64)
rel = (np.linalg.norm(bf16["w"] - f32["w"]) /
       np.linalg.norm(f32["w"] - w0))
check(1e-4 < rel < 5e-2, "bf16 vs f32 W - W0: %.2e" % rel)
print("ns-precision=bf16: W - W0 within %.0e of f32's, beyond f32 rounding"
      % 5e-2)
with muir.compile(SOURCE, "api.yaml",
                  "machine=h200 probe-updates=true ns-form=gram") as named:
    print("named options accepted: %d arguments (%d without them)"
          % (len(named.arguments), len(step.arguments)))
# The runtime's settings are the process's: each run sets its own step's,
# so a step compiled later with others does not change how an earlier one
# runs (read back through the CPU runtime, which libmuir_step.so carries).
rt = muir._load()
rt.muirrt_deterministic.restype = ctypes.c_int32
with muir.compile(SOURCE, "api.yaml", {"deterministic": False}) as loose:
    zeros = {a.name: np.zeros(a.shape, np.float32)
             for a in loose.arguments if a.is_tensor}
    for name, x in zeros.items():
        loose.bind(name, x.ctypes.data)
    seen = []
    for which in (step, loose, step):
        which.run(1)
        seen.append(rt.muirrt_deterministic())
    print("deterministic setting at each run (step, loose, step): %s" % seen)
    check(seen == [1, 0, 1], "settings of another step leaked: %s" % seen)
expect("bad index", lambda: step.bind(999, arrays["w"].ctypes.data))
expect("bad name", lambda: step.bind("nope", arrays["w"].ctypes.data),
       KeyError)
expect("hyper count", lambda: step.run(3, [0.1]), ValueError)
# The runtime's pass over the bound gradients: the first NaN or infinity
# (argument, flat element), None when all are finite.
clean = step.first_nonfinite()
arrays["b.grad"][3] = np.inf
arrays["w.grad"][2, 1] = np.nan
first = step.first_nonfinite("grad")
check(clean is None and first == (step.index("w.grad"), 2 * 4 + 1),
      "first_nonfinite: %r then %r" % (clean, first))
arrays["w.grad"][2, 1] = 0.0
print("first non-finite: %r, then w.grad element %d, then b.grad element %d"
      % (clean, first[1], step.first_nonfinite()[1]))
expect("counter 0", lambda: step.run(0))
expect("open a non-step", lambda: muir.open_step(os.path.join(cache, "x.so")))
expect("option spaces", lambda: muir.compile(SOURCE, "api.yaml",
                                             {"target": "c pu"}), ValueError)
with muir.compile(SOURCE, "api.yaml") as other:
    pass
expect("closed", lambda: other.run(1))
step.close()
step.close()
print("closed twice")
# Hand-written IR without muir.role: a gradient by its ".grad", a state by
# any optimizer's state suffix (the registry's: NorMuon's ".variance" too),
# the rest parameters.
ROLES_IR = """
func.func @step(%w: tensor<4x8xf32> {muir.name = "w"},
                %g: tensor<4x8xf32> {muir.name = "w.grad"},
                %m: tensor<4x8xf32> {muir.name = "w.momentum"},
                %v: tensor<4xf32> {muir.name = "w.variance"})
    -> (tensor<4x8xf32> {muir.updates = "w"},
        tensor<4x8xf32> {muir.updates = "w.momentum"},
        tensor<4xf32> {muir.updates = "w.variance"}) {
  %w1, %m1, %v1 = muir.normuon_update %w, %g, %m, %v {lr = 0.02} : tensor<4x8xf32>, tensor<4xf32>
  return %w1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}
"""
with muir.compile(ROLES_IR, "roles.mlir", {"target": "cpu"}) as roles:
    print("hand-written roles: " + ", ".join(
        "%s %s" % (a.name, a.role) for a in roles.arguments))
import shutil  # noqa: E402
shutil.rmtree(cache)
if failed:
    print("python-api: %d FAILED" % len(failed))
    sys.exit(1)
print("python-api: PASS")
