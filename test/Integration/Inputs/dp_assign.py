"""Newton-Schulz shared out over data-parallel ranks against one rank.

A step with Muon matrices of several shapes (wide, tall, square, an expert
stack), two FSDP matrices (split on dim 0 over dp) and an AdamW norm runs
for 2 steps on 1 rank and, compiled for dp=2 (2 ranks), dp=4, dp=2,tp=2 and
dp=4,ep=2 (4 ranks; the expert stack split over ep of the MoE folding
edp=2 x ep=2, NS per local expert), with `--dp-assign` greedy and
round-robin:
  - every tensor equals the single-rank result bitwise (each matrix is
    orthogonalised once, by its owner, from the same values);
  - no Newton-Schulz runs twice: the GEMM flops of the dp ranks (of one tp
    coordinate) add up to the single-rank flops exactly;
  - the bytes each rank sends, per step, on dp and on tp equal the closed
    forms below and the plan report's prediction:
      dp: lw[me] * 4 * (g - 1)                  layer-wise all_gatherv
          + (fs_total - fs[me]) * 4 + 8 (g - 1) FSDP shards to owners
          + fs[me] * 4 * (g - 1) + 8 (g - 1)    FSDP results back
      tp: sum over own tp-split matrices of held * 4 * (tp - 1)
    with lw[j] / fs[j] the local floats of the layer-wise / FSDP matrices
    dp rank j owns, and owners from this file's own balancing (largest
    m n min(m, n) first to the least-loaded rank; or round-robin).
Then, on integer-valued inputs with power-of-two coefficients (gradients of
+-1 entries whose Frobenius norm is a power of two, one NS step with
coefficients (2, -1, 0.5), momentum that passes the gradient through), the
distributed, resharded and duplicated modes on tp=2 (2 ranks) and dp=2,tp=2
(4 ranks), and layer-wise/FSDP on dp=2, equal one rank bitwise: every
product and sum is exact in fp32, so the Gram matrices summed over shards
cannot round differently.
"""
import json
import os
import sys

import numpy as np

import muirtest

args = muirtest.parse_args(__doc__)
tmp = args.tmp
compiler = muirtest.sibling_tool(args.muir_run, "muir-compile")

FSDP = "shard: [{kind: fsdp, axis: dp}]"
YAML = """name: dp
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, weight_decay: 0.1}
parameters:
  - {name: a, shape: [48, 32], role: attention}
  - {name: b, shape: [32, 64], role: mlp}
  - {name: c, shape: [64, 64], role: mlp}
  - {name: d, shape: [16, 48], role: attention}
  - {name: e, shape: [4, 16, 32], role: expert}
  - {name: f, shape: [64, 32], role: mlp, %s}
  - {name: h, shape: [32, 48], role: mlp, %s}
  - {name: norm, shape: [32], role: norm}
""" % (FSDP, FSDP)
SHAPES = {"a": (48, 32), "b": (32, 64), "c": (64, 64), "d": (16, 48),
          "e": (4, 16, 32), "f": (64, 32), "h": (32, 48), "norm": (32,)}
MUON = [n for n in SHAPES if n != "norm"]
STEPS = 2

ok = True


def fail(msg):
    global ok
    ok = False
    print("FAIL " + msg)


run = muirtest.check_output


def step(yaml, inp, ranks, out, extra):
    cmd = [args.muir_run, yaml, "--steps", str(STEPS), "--load", inp,
           "--dump", out, "--quiet", "--comm-stats"] + extra
    if ranks > 1:
        cmd += ["--ranks", str(ranks)]
    sent, flops = muirtest.comm_stats(run(cmd))
    return muirtest.read_dump(out), sent, flops


def owners(policy, g, shared):
    """Owner dp rank per shared Muon matrix."""
    w = {}
    for n in shared:
        s = SHAPES[n]
        batch = s[0] if len(s) == 3 else 1
        m, k = s[-2], s[-1]
        w[n] = 5 * batch * m * k * min(m, k)
    if policy == "round-robin":
        return {n: i % g for i, n in enumerate(shared)}
    load = [0] * g
    own = {}
    for n in sorted(shared, key=lambda n: -w[n]):  # stable: ties keep order
        j = min(range(g), key=lambda r: (load[r], r))
        own[n] = j
        load[j] += w[n]
    return own


def write_inputs(d, fn):
    os.makedirs(d, exist_ok=True)
    for name, shape in SHAPES.items():
        p, g = fn(name, shape)
        muirtest.write_npy(d, name, p)
        muirtest.write_npy(d, name + ".grad", g)


rng = np.random.default_rng(11)
inp = os.path.join(tmp, "in")
write_inputs(inp, lambda n, s: (
    (rng.standard_normal(s) * 0.02).astype(np.float32),
    rng.standard_normal(s).astype(np.float32)))
desc = os.path.join(tmp, "step.yaml")
with open(desc, "w") as f:
    f.write(YAML)

one, _, flops1 = step(desc, inp, 1, os.path.join(tmp, "one"), [])
for layout, ranks, policy in [("dp=2", 2, "greedy"), ("dp=4", 4, "greedy"),
                              ("dp=4", 4, "round-robin"),
                              ("dp=2,tp=2", 4, "greedy"),
                              ("dp=4,ep=2", 4, "greedy")]:
    tag = "%s %s" % (layout, policy)
    yaml = os.path.join(tmp, layout.replace(",", "_") + ".yaml")
    run([compiler, desc, "--layout", layout, "--emit=description", "--quiet",
         "-o", yaml])
    tp = 2 if "tp=2" in layout else 1
    g = ranks // tp
    got, sent, flops = step(yaml, inp, ranks,
                            os.path.join(tmp, tag.replace(" ", "-")
                                         .replace(",", "_").replace("=", "")),
                            ["--dp-assign", policy, "--ns-mode",
                             "duplicated"])
    differ = [n for n in SHAPES if not np.array_equal(one[n], got[n])]
    for name in differ:
        fail("%s %s: not bitwise equal to one rank" % (tag, name))
    if not differ:
        print("%s: %d tensors bitwise equal to one rank" % (tag, len(SHAPES)))

    # No NS twice: the dp ranks of tp coordinate 0 do the single rank's
    # work (duplicated tp: every tp rank runs the whole NS of its owned
    # matrices, so one tp coordinate is one full copy).
    total = sum(flops[r] for r in range(0, ranks, tp))
    if "ep=2" in layout:
        # The expert stack runs per local expert on every rank: edp = 2
        # copies of each expert's NS in the world (its replicas follow the
        # MoE folding), so one extra copy of its flops: per step the Gram
        # matrix and A A as SYRK (r (r + 1) c and r (r + 1) r), B X as GEMM.
        r, c = 16, 32
        total -= STEPS * 4 * 5 * (r * (r + 1) * c + r * (r + 1) * r
                                  + 2 * r * r * c)
    if total != flops1[0]:
        fail("%s: dp ranks ran %d GEMM flops, one rank %d" %
             (tag, total, flops1[0]))
    else:
        print("%s: GEMM flops over dp = one rank's (%d)" % (tag, total))

    # Closed forms, per step.
    own = owners(policy, g, [n for n in MUON
                             if not (n == "e" and "ep=2" in layout)])
    # Which matrices the layout split over tp, read from the compiled
    # description (one parameter per line).
    tp_split = set()
    with open(yaml) as f:
        for line in f:
            if "name:" in line and "kind: tp_" in line:
                tp_split.add(line.split('name: "')[1].split('"')[0])
    lw, fs = [0] * g, [0] * g
    want_tp = [0] * g
    for n in MUON:
        if n == "e" and "ep=2" in layout:
            continue  # on the MoE folding: per local expert, not shared
        numel = int(np.prod(SHAPES[n]))
        fsdp = n in ("f", "h")
        local = numel // (tp if n in tp_split else 1) // (g if fsdp else 1)
        (fs if fsdp else lw)[own[n]] += local
        if n in tp_split:
            held = local * (g if fsdp else 1)
            want_tp[own[n]] += held * 4 * (tp - 1)
    report = json.loads(run([compiler, yaml, "--emit=none", "--quiet",
                             "--dp-assign", policy, "--ns-mode",
                             "duplicated", "--report=-"]))
    bytes_ok = True
    for r in range(ranks):
        me = r // tp
        want = {"dp": lw[me] * 4 * (g - 1)
                + (sum(fs) - fs[me]) * 4 + 8 * (g - 1)
                + fs[me] * 4 * (g - 1) + 8 * (g - 1),
                "tp": want_tp[me]}
        for axis in (["dp", "tp"] if tp > 1 else ["dp"]):
            have = sent.get((r, axis), 0)
            predicted = STEPS * report["ranks"][r]["collective_bytes"][axis]
            if have != STEPS * want[axis] or predicted != have:
                bytes_ok = False
                fail("%s rank %d: sent %d bytes on %s, closed form %d, plan "
                     "report %d" % (tag, r, have, axis, STEPS * want[axis],
                                    predicted))
    if bytes_ok:
        print("%s: bytes on dp%s = closed form = plan report" %
              (tag, " and tp" if tp > 1 else ""))
    dp = report["dp_assignment"]
    if dp["owners"] != own:
        fail("%s: report owners %s, expected %s" % (tag, dp["owners"], own))
    if dp["greedy"]["max"] > dp["round_robin"]["max"]:
        fail("%s: greedy max load above round-robin's" % tag)
    print("%s: max/mean load greedy %.3f, round-robin %.3f" %
          (tag, dp["greedy"]["max_over_mean"],
           dp["round_robin"]["max_over_mean"]))

# Exact construction: distributed mode bitwise on dp=2,tp=2.
EXACT = """name: exact
grid: {axes: {dp: 1}}
optimizer:
%s
parameters:
  - {name: a, shape: [16, 16], role: attention}
  - {name: b, shape: [8, 32], role: mlp}
  - {name: c, shape: [32, 8], role: mlp}
  - {name: f, shape: [32, 32], role: mlp, %s}
""" % (muirtest.EXACT_MUON, FSDP)
SHAPES = {"a": (16, 16), "b": (8, 32), "c": (32, 8), "f": (32, 32)}
exact_in = os.path.join(tmp, "exact-in")
write_inputs(exact_in, lambda n, s: (
    rng.integers(-4, 5, s).astype(np.float32),
    rng.choice([-1.0, 1.0], s).astype(np.float32)))
desc = os.path.join(tmp, "exact.yaml")
with open(desc, "w") as f:
    f.write(EXACT)
one, _, _ = step(desc, exact_in, 1, os.path.join(tmp, "exact-one"), [])
for layout, ranks in [("tp=2", 2), ("dp=2", 2), ("dp=2,tp=2", 4)]:
    yaml = os.path.join(tmp, "exact-%s.yaml" % layout.replace(",", "_"))
    run([compiler, desc, "--layout", layout, "--emit=description",
         "--quiet", "-o", yaml])
    for mode in ["distributed", "resharded", "duplicated"]:
        if "tp" not in layout and mode != "duplicated":
            continue  # nothing split over tp: the modes do not apply
        got, _, _ = step(yaml, exact_in, ranks,
                         os.path.join(tmp, "exact-%s-%s" % (
                             layout.replace(",", "_"), mode)),
                         ["--ns-mode", mode])
        differ = [n for n in SHAPES if not np.array_equal(one[n], got[n])]
        for name in differ:
            d = np.abs(one[name] - got[name]).max()
            fail("exact %s %s %s: differs from one rank by up to %g" %
                 (layout, mode, name, d))
        if not differ:
            print("exact %s %s: bitwise equal to one rank" % (layout, mode))

print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
