"""Parameters described with `dtype: f64`: a step in float64 throughout.

One description holds f64 parameters of every kind a step updates (a tall
and a wide Muon matrix, a 3-D expert stack, an embedding and a norm that
take AdamW; one Muon matrix on another schedule and scale by an override)
beside an f32 matrix. Their tensors are loaded from float64 .npy files
whose values float32 cannot hold, and muir-run takes 3 steps.

Checked against the float64 reference (muir_reference.py, the formulas of
the op descriptions), all relative Frobenius errors:
  f64 parameters: W3 - W0 (the change the optimizer computed) <= 1e-8, the
      requirement of a float64 step (measured 2e-16 .. 2e-15), and so far
      below float32's error that an f32 computation could not pass (the f32
      matrix beside them is at 1e-7);
  their state (momentum, exp_avg, exp_avg_sq) <= 1e-12;
  gradients unchanged, bitwise; every f64 tensor dumped as '<f8', the f32
      ones as '<f4';
  the f32 matrix: W3 - W0 <= 1e-5 (its own, float32 tolerance).
Then: 1 step, --save-state, --resume for 2 more gives the 3-step run
bitwise; NorMuon on f64 parameters (a matrix, a stack, and a GQA block's q
and k, clipped by MuonClip's QK-clip after each update) against the same
bounds (W3 - W0 <= 1e-8, momentum and second moment <= 1e-12); and seeded (nothing loaded) f64 tensors hold the values whose
float32 rounding a float32 tensor of that name gets.
"""
import os
import subprocess

import numpy as np

import muir_reference as ref
import muirtest as mt

STEPS = 3
TOL_F64 = 1e-8
TOL_STATE = 1e-12
TOL_F32 = 1e-5

MUON = dict(lr=0.02, beta=0.9, weight_decay=0.01, ns_steps=5,
            schedule="quintic")
ADAMW = dict(lr=0.001, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1)

DESCRIPTION = """name: f64ref
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, momentum: 0.9, weight_decay: 0.01, ns_steps: 5,
         schedule: quintic}
  adamw: {lr: 0.001, beta1: 0.9, beta2: 0.95, eps: 1.0e-8, weight_decay: 0.1}
  overrides:
    - {names: [wide], schedule: polar_express, ns_steps: 8, scale_mode: shape}
parameters:
  - {name: tall, shape: [96, 64], role: mlp, dtype: %(dt)s}
  - {name: wide, shape: [64, 96], role: attention, dtype: %(dt)s}
  - {name: stack, shape: [3, 32, 48], role: expert, dtype: %(dt)s}
  - {name: embed, shape: [50, 16], role: embedding, dtype: %(dt)s}
  - {name: norm, shape: [64], role: norm, dtype: %(dt)s}
  - {name: plain, shape: [32, 32], role: mlp}
"""

# name, shape, optimizer, reference settings beyond the globals
PARAMS = [
    ("tall", (96, 64), "muon", {}),
    ("wide", (64, 96), "muon",
     dict(schedule="polar_express", ns_steps=8, scale_mode="shape")),
    ("stack", (3, 32, 48), "muon", {}),
    ("embed", (50, 16), "adamw", {}),
    ("norm", (64,), "adamw", {}),
    ("plain", (32, 32), "muon", {}),
]


def state_names(name, opt):
    return [name + ".momentum"] if opt == "muon" else \
        [name + ".exp_avg", name + ".exp_avg_sq"]


def run(muir_run, yaml, workdir, *flags):
    cmd = [muir_run, yaml, "--quiet", "--no-probes"] + list(flags)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise mt.RunError("muir-run failed (exit %d): %s\n%s%s"
                          % (p.returncode, " ".join(cmd), p.stdout, p.stderr))


def main():
    args = mt.parse_args(__doc__)
    chk = mt.Checker()
    rng = np.random.default_rng(5)
    yaml = os.path.join(args.tmp, "f64.yaml")
    with open(yaml, "w") as f:
        f.write(DESCRIPTION % {"dt": "f64"})

    inputs = {}
    load = os.path.join(args.tmp, "in")
    os.makedirs(load)
    for name, shape, opt, _ in PARAMS:
        dtype = np.float32 if name == "plain" else np.float64
        inputs[name] = (0.02 * rng.standard_normal(shape)).astype(dtype)
        inputs[name + ".grad"] = rng.standard_normal(shape).astype(dtype)
        if opt == "muon":
            inputs[name + ".momentum"] = (
                0.5 * rng.standard_normal(shape)).astype(dtype)
        else:
            inputs[name + ".exp_avg"] = (
                0.1 * rng.standard_normal(shape)).astype(dtype)
            inputs[name + ".exp_avg_sq"] = (
                0.01 * rng.random(shape)).astype(dtype)
        for k in [name, name + ".grad"] + state_names(name, opt):
            np.save(os.path.join(load, k + ".npy"), inputs[k])

    out_dir = os.path.join(args.tmp, "out")
    run(args.muir_run, yaml, args.tmp, "--steps", str(STEPS), "--load", load,
        "--dump", out_dir)
    out = mt.read_dump(out_dir)

    for name, shape, opt, extra in PARAMS:
        f64 = name != "plain"
        label = "%s %s %s" % (name, "x".join(map(str, shape)),
                              "f64" if f64 else "f32")
        want = np.float64 if f64 else np.float32
        names = [name, name + ".grad"] + state_names(name, opt)
        chk.expect(label + " dumped as " + np.dtype(want).str,
                   all(out[k].dtype == want for k in names),
                   ", ".join(out[k].dtype.str for k in names))
        W0 = inputs[name].astype(np.float64)
        G = inputs[name + ".grad"].astype(np.float64)
        if opt == "muon":
            W, M = W0, inputs[name + ".momentum"].astype(np.float64)
            for _ in range(STEPS):
                W, M = ref.muon_update(W, G, M, **dict(MUON, **extra))
            states = [M]
        else:
            W = W0
            m = inputs[name + ".exp_avg"].astype(np.float64)
            v = inputs[name + ".exp_avg_sq"].astype(np.float64)
            for t in range(1, STEPS + 1):
                W, m, v = ref.adamw_update(W, G, m, v, t, **ADAMW)
            states = [m, v]
        got = out[name].astype(np.float64)
        chk.check(label + " delta", ref.rel_fro(got - W0, W - W0),
                  TOL_F64 if f64 else TOL_F32)
        if f64:
            for k, s in zip(state_names(name, opt), states):
                chk.check(label + " " + k.split(".", 1)[1],
                          ref.rel_fro(out[k], s), TOL_STATE)
        chk.expect(label + " grad unchanged",
                   np.array_equal(out[name + ".grad"], inputs[name + ".grad"]),
                   mt.compare_bits(out[name + ".grad"],
                                   inputs[name + ".grad"]))

    # Resume: 1 step, saved; 2 more from the state; the 3-step run bitwise.
    state = os.path.join(args.tmp, "state")
    run(args.muir_run, yaml, args.tmp, "--steps", "1", "--load", load,
        "--save-state", state)
    resumed_dir = os.path.join(args.tmp, "resumed")
    run(args.muir_run, yaml, args.tmp, "--steps", "2", "--resume", state,
        "--dump", resumed_dir)
    resumed = mt.read_dump(resumed_dir)
    differ = [k for k in out if out[k].tobytes() != resumed[k].tobytes() or
              out[k].dtype != resumed[k].dtype]
    chk.expect("1 step, saved, 2 resumed: the 3-step run bitwise",
               not differ, "differ: " + ", ".join(differ) if differ
               else "%d tensors equal" % len(out))

    # Seeded values: an f64 tensor holds what an f32 one gets, unrounded.
    yaml32 = os.path.join(args.tmp, "f32.yaml")
    with open(yaml32, "w") as f:
        f.write(DESCRIPTION % {"dt": "f32"})
    seeded = {}
    for tag, y in (("f64", yaml), ("f32", yaml32)):
        d = os.path.join(args.tmp, "seeded-" + tag)
        run(args.muir_run, y, args.tmp, "--steps", "1", "--seed", "7",
            "--dump", d)
        seeded[tag] = mt.read_dump(d)
    grads = [n + ".grad" for n, _, _, _ in PARAMS if n != "plain"]
    same = all(seeded["f64"][g].dtype == np.float64 and
               np.array_equal(seeded["f64"][g].astype(np.float32),
                              seeded["f32"][g]) for g in grads)
    wider = all(np.any(seeded["f64"][g] !=
                       seeded["f64"][g].astype(np.float32)) for g in grads)
    chk.expect("seeded f64 gradients round to the f32 run's, bitwise",
               same and wider,
               "%d gradients, %s" % (len(grads),
                                     "wider than f32" if wider
                                     else "NOT wider than f32"))
    normuon_clip(args, chk, rng)
    chk.finish()


# NorMuon and MuonClip's QK-clip on f64 parameters: a matrix and a stack,
# and a GQA block (4 query heads, 2 kv heads) whose q and k take NorMuon
# and then the clip; heads 0 and 2 over tau, 1 and 3 under it (the logits
# are float32, as the step's input always is).
NORMUON_DESCRIPTION = """name: f64normuon
grid: {axes: {dp: 1}}
optimizer:
  normuon: {lr: 0.02, momentum: 0.9, weight_decay: 0.01, beta2: 0.9,
            eps2: 1.0e-8}
  muon: {qk_clip: 50}
attention:
  - {name: gqa, q: gqa.q, k: gqa.k, heads: 4, kv_heads: 2}
parameters:
  - {name: tall, shape: [96, 64], role: mlp, dtype: f64}
  - {name: stack, shape: [3, 32, 40], role: expert, dtype: f64}
  - {name: gqa.q, shape: [32, 16], role: attention, dtype: f64}
  - {name: gqa.k, shape: [16, 16], role: attention, dtype: f64}
"""
NORMUON = dict(lr=0.02, beta=0.9, weight_decay=0.01, beta2=0.9, eps2=1e-8)
NORMUON_PARAMS = {"tall": (96, 64), "stack": (3, 32, 40),
                  "gqa.q": (32, 16), "gqa.k": (16, 16)}
LOGITS = [60.0, 10.0, 200.0, 49.0]


def normuon_clip(args, chk, rng):
    """STEPS NorMuon steps (the clip after each on q and k) in float64
    against the reference: W - W0 <= 1e-8, momentum and v <= 1e-12."""
    yaml = os.path.join(args.tmp, "f64normuon.yaml")
    with open(yaml, "w") as f:
        f.write(NORMUON_DESCRIPTION)
    load = os.path.join(args.tmp, "in-normuon")
    os.makedirs(load)
    inputs = {}
    for name, shape in NORMUON_PARAMS.items():
        inputs[name] = 0.02 * rng.standard_normal(shape)
        inputs[name + ".grad"] = rng.standard_normal(shape)
        inputs[name + ".momentum"] = 0.5 * rng.standard_normal(shape)
        inputs[name + ".variance"] = 0.01 + 0.02 * rng.random(shape[:-1])
    for k, a in inputs.items():
        np.save(os.path.join(load, k + ".npy"), a)
    np.save(os.path.join(load, "gqa.max_logits.npy"),
            np.array(LOGITS, np.float32))
    out_dir = os.path.join(args.tmp, "out-normuon")
    run(args.muir_run, yaml, args.tmp, "--steps", str(STEPS), "--load", load,
        "--dump", out_dir)
    out = mt.read_dump(out_dir)

    want = ref.normuon_clip_steps(inputs, NORMUON_PARAMS, STEPS, NORMUON,
                                  ("gqa.q", "gqa.k", LOGITS, 50.0, 4, 2))
    for name, shape in NORMUON_PARAMS.items():
        label = "normuon %s %s f64%s" % (name, "x".join(map(str, shape)),
                                         ", clipped" if "gqa" in name else "")
        names = [name, name + ".momentum", name + ".variance"]
        chk.expect(label + " dumped as <f8",
                   all(out[k].dtype == np.float64 for k in names),
                   ", ".join(out[k].dtype.str for k in names))
        W, M, v = want[name]
        chk.check(label + " delta",
                  ref.rel_fro(out[name] - inputs[name], W - inputs[name]),
                  TOL_F64)
        chk.check(label + " momentum", ref.rel_fro(out[name + ".momentum"], M),
                  TOL_STATE)
        chk.check(label + " variance", ref.rel_fro(out[name + ".variance"], v),
                  TOL_STATE)


if __name__ == "__main__":
    main()
