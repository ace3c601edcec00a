"""muir-run --load / --dump: file naming, loading, and exact continuation.

1. Naming. A module with a Muon parameter "layers/0/w", an AdamW parameter
   "layers/0/ln" and a top-level Muon parameter "head", run from seeded
   values (no --load): the dump must hold exactly one .npy per tensor at
   DIR/<name>.npy ('/' in a name is a subfolder) and nothing else (no
   temporaries), each float32, C-order, the tensor's shape. State tensors
   (.momentum, .exp_avg, .exp_avg_sq) start at zero, so after one step
   M = (1 - beta) G, exp_avg = (1 - beta1) g, exp_avg_sq = (1 - beta2) g^2
   (float32-rounded: rel. error <= 1e-6).
2. Loading from subfolders. Inputs written to DIR/layers/0/w.npy etc. are
   picked up (muir-run's "N loaded" count; gradients come back bitwise; the
   Muon step from the loaded values matches the float64 reference within
   the muon-reference bound); a partial load seeds the rest.
3. Continuation. A Muon-only module (the AdamW step counter restarts at 1
   in every muir-run, so AdamW state cannot continue exactly across runs):
   run 3 steps; run 2 steps, then --load that dump and run 1 step. Every
   tensor of the second must equal the first bitwise.
"""
import os
import re
import subprocess

import numpy as np

import muir_reference as ref
import muirtest as mt

TOL_DELTA = 1e-5     # as in muon-reference
TOL_STATE = 1e-6


def naming_module():
    m = mt.Module()
    t = m.step_arg()
    for name, shape in (("layers/0/w", (48, 32)), ("head", (16, 48))):
        w, g, mom = (m.arg(name + s, shape)
                     for s in ("", ".grad", ".momentum"))
        w1, m1 = m.muon_update(w, g, mom, shape, lr=0.02, weight_decay=0.1)
        m.result(w1, shape, updates=name)
        m.result(m1, shape, updates=name + ".momentum")
    shape = (32,)
    a = [m.arg("layers/0/ln" + s, shape)
         for s in ("", ".grad", ".exp_avg", ".exp_avg_sq")]
    res = m.adamw_update(a[0], a[1], a[2], a[3], t, shape, lr=1e-3)
    for r, s in zip(res, ("", ".exp_avg", ".exp_avg_sq")):
        m.result(r, shape, updates="layers/0/ln" + s)
    return m


def continuation_module():
    m = mt.Module()
    cases = [
        ("layers/0/attn/wq", (64, 64), dict(lr=0.02, weight_decay=0.1)),
        ("layers/1/mlp/up", (96, 48),
         dict(lr=0.02, momentum_kind=("enum", "momentum_kind", "accumulate"),
              nesterov=False)),
        ("experts/w", (3, 32, 48),
         dict(lr=0.01, scale_mode=("enum", "scale_mode", "shape"))),
    ]
    for name, shape, attrs in cases:
        w, g, mom = (m.arg(name + s, shape)
                     for s in ("", ".grad", ".momentum"))
        w1, m1 = m.muon_update(w, g, mom, shape, **attrs)
        m.result(w1, shape, updates=name)
        m.result(m1, shape, updates=name + ".momentum")
    return m


def list_files(d):
    out = set()
    for root, _, files in os.walk(d):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), d)
                    .replace(os.sep, "/"))
    return out


def npy_header(path):
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        if major == 1:
            return np.lib.format.read_array_header_1_0(f)
        return np.lib.format.read_array_header_2_0(f)


def run_raw(muir_run, mlir, *flags):
    p = subprocess.run([muir_run, mlir] + list(flags), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise mt.RunError("muir-run %s failed (%d):\n%s%s"
                          % (" ".join(flags), p.returncode, p.stdout, p.stderr))
    return p.stdout


def loaded_count(stdout):
    mm = re.search(r"(\d+) loaded", stdout)
    return int(mm.group(1)) if mm else -1


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def main():
    args = mt.parse_args(__doc__)
    chk = mt.Checker()
    tmp = args.tmp

    # 1. Naming and zero-initialised state, from seeded values.
    m = naming_module()
    mlir = os.path.join(tmp, "naming.mlir")
    with open(mlir, "w") as f:
        f.write(m.text())
    d1 = os.path.join(tmp, "seeded")
    run_raw(args.muir_run, mlir, "--steps", "1", "--seed", "1", "--dump", d1,
            "--quiet")
    want = {n + ".npy" for n in m.shapes}
    got = list_files(d1)
    chk.expect("dump files", got == want,
               "%d files, missing %s, extra %s"
               % (len(got), sorted(want - got), sorted(got - want)))
    for sub in ("layers/0/w.momentum.npy", "layers/0/ln.exp_avg.npy",
                "layers/0/ln.exp_avg_sq.npy", "head.momentum.npy"):
        present = os.path.isfile(os.path.join(d1, sub))
        chk.expect("dump has " + sub, present,
                   "present" if present else "missing")
    fmt_ok, fmt_bad = True, []
    for name, shape in m.shapes.items():
        path = os.path.join(d1, name + ".npy")
        if not os.path.isfile(path):
            continue
        shp, fortran, dtype = npy_header(path)
        if tuple(shp) != shape or fortran or dtype != np.dtype("<f4"):
            fmt_ok = False
            fmt_bad.append("%s: shape %s fortran %s dtype %s"
                           % (name, shp, fortran, dtype))
    chk.expect("dump format float32 C-order shapes", fmt_ok, "; ".join(fmt_bad))
    dump = mt.read_dump(d1)
    if got == want:
        for name in ("layers/0/w", "head"):
            chk.check("zero-init %s.momentum" % name,
                      ref.rel_fro(dump[name + ".momentum"],
                                  0.05 * dump[name + ".grad"].astype(float)),
                      TOL_STATE)
        g = dump["layers/0/ln.grad"].astype(float)
        chk.check("zero-init layers/0/ln.exp_avg",
                  ref.rel_fro(dump["layers/0/ln.exp_avg"], 0.1 * g), TOL_STATE)
        chk.check("zero-init layers/0/ln.exp_avg_sq",
                  ref.rel_fro(dump["layers/0/ln.exp_avg_sq"], 0.001 * g * g),
                  TOL_STATE)

    # 2. Loading from subfolders (full and partial).
    rng = np.random.default_rng(9)
    inputs = {}
    for name, shape in m.shapes.items():
        if name.endswith(".grad"):
            inputs[name] = rng.standard_normal(shape)
        elif name.endswith((".momentum", ".exp_avg")):
            inputs[name] = 0.1 * rng.standard_normal(shape)
        elif name.endswith(".exp_avg_sq"):
            inputs[name] = 0.01 * rng.standard_normal(shape) ** 2
        else:
            inputs[name] = 0.02 * rng.standard_normal(shape)
        inputs[name] = inputs[name].astype(np.float32)
    din = os.path.join(tmp, "in")
    for name, arr in inputs.items():
        mt.write_npy(din, name, arr)
    d2 = os.path.join(tmp, "loaded")
    out = run_raw(args.muir_run, mlir, "--steps", "1", "--load", din,
                  "--dump", d2, "--no-probes")
    chk.expect("load all from subfolders",
               loaded_count(out) == len(inputs),
               "muir-run reports %d loaded of %d"
               % (loaded_count(out), len(inputs)))
    dump = mt.read_dump(d2)
    grads = sorted(n for n in inputs if n.endswith(".grad"))
    chk.expect("loaded grads come back bitwise",
               all(np.array_equal(bits(dump[n]), bits(inputs[n]))
                   for n in grads),
               "; ".join("%s %s" % (n, mt.compare_bits(dump[n], inputs[n]))
                         for n in grads))
    for name in ("layers/0/w", "head"):
        W1, M1 = ref.muon_update(inputs[name], inputs[name + ".grad"],
                                 inputs[name + ".momentum"], lr=0.02,
                                 weight_decay=0.1)
        W0 = inputs[name].astype(float)
        chk.check("loaded %s step" % name,
                  ref.rel_fro(dump[name] - W0, W1 - W0), TOL_DELTA)
        chk.check("loaded %s.momentum step" % name,
                  ref.rel_fro(dump[name + ".momentum"], M1), TOL_STATE)
    W1, m1, v1 = ref.adamw_update(*(inputs["layers/0/ln" + s] for s in
                                    ("", ".grad", ".exp_avg", ".exp_avg_sq")),
                                  step=1, lr=1e-3)
    W0 = inputs["layers/0/ln"].astype(float)
    chk.check("loaded layers/0/ln step",
              ref.rel_fro(dump["layers/0/ln"] - W0, W1 - W0), 3e-5)

    dpart = os.path.join(tmp, "partial-in")
    for name in ("layers/0/w", "layers/0/w.grad"):
        mt.write_npy(dpart, name, inputs[name])
    d3 = os.path.join(tmp, "partial")
    out = run_raw(args.muir_run, mlir, "--steps", "1", "--seed", "1",
                  "--load", dpart, "--dump", d3, "--no-probes")
    dump = mt.read_dump(d3)
    seeded = mt.read_dump(d1)
    chk.expect("partial load",
               loaded_count(out) == 2
               and np.array_equal(bits(dump["layers/0/w.grad"]),
                                  bits(inputs["layers/0/w.grad"]))
               and np.array_equal(bits(dump["head.grad"]),
                                  bits(seeded["head.grad"])),
               "%d loaded of 2; layers/0/w.grad against the loaded one %s; "
               "head.grad against the seeded one %s"
               % (loaded_count(out),
                  mt.compare_bits(dump["layers/0/w.grad"],
                                  inputs["layers/0/w.grad"]),
                  mt.compare_bits(dump["head.grad"], seeded["head.grad"])))

    # 3. 2 steps + 1 step == 3 steps, bitwise.
    c = continuation_module()
    mlir = os.path.join(tmp, "continue.mlir")
    with open(mlir, "w") as f:
        f.write(c.text())
    d_three, d_two, d_one = (os.path.join(tmp, s)
                             for s in ("three", "two", "two+one"))
    run_raw(args.muir_run, mlir, "--steps", "3", "--seed", "3",
            "--dump", d_three, "--quiet")
    run_raw(args.muir_run, mlir, "--steps", "2", "--seed", "3",
            "--dump", d_two, "--quiet")
    out = run_raw(args.muir_run, mlir, "--steps", "1", "--seed", "99",
                  "--load", d_two, "--dump", d_one, "--no-probes")
    chk.expect("resume loads every tensor",
               loaded_count(out) == len(c.shapes),
               "muir-run reports %d loaded, expected %d"
               % (loaded_count(out), len(c.shapes)))
    a, b = mt.read_dump(d_three), mt.read_dump(d_one)
    chk.expect("resume dump names", set(a) == set(b) == set(c.shapes),
               "3-step dump %s, 2+1 dump %s" % (sorted(a), sorted(b)))
    for name in sorted(c.shapes):
        if name not in a or name not in b:
            continue
        diff = np.count_nonzero(bits(a[name]) != bits(b[name]))
        chk.expect("2+1 == 3 steps bitwise: " + name, diff == 0,
                   "%d of %d elements differ, max |diff| %.3e"
                   % (diff, a[name].size,
                      np.abs(a[name].astype(float) - b[name]).max()))
    # The run did move the parameters (so the comparison means something).
    two = mt.read_dump(d_two)
    chk.expect("third step changes the parameters",
               all(not np.array_equal(two[n], a[n]) for n in c.shapes
                   if not n.endswith(".grad")),
               "a parameter or momentum did not change in step 3")
    chk.finish()


if __name__ == "__main__":
    main()
