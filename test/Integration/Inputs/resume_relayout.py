"""A state saved on one layout resumes on another (issue 41, item 1).

`muir-run --save-state DIR` writes every tensor whole, in its global shape,
however the run split it; the manifest records the step's IR without its
layout (the grids, and the arguments' shards, splits and foldings). So a
state saved on dp=2,ep=2 (2 ranks: the expert stack split over ep)
resumes on another layout of the same description: dp=1 (1 rank), dp=4,
ep=4 (4 ranks), tp=2 (the Muon matrix split on its rows, 2 ranks) and
FSDP over dp=2 (the matrix's rows sharded, its owner orthogonalising).

Each is checked against the continuous run on the new layout: 1 step on
dp=2,ep=2, saved, 1 resumed on L2, against 2 steps on L2 from the same
inputs. They differ only by the first step's rounding on the other layout:
every tensor within 1e-6 of the second step's change (parameters) or of
its value (optimizer state; measured: 0, bitwise, on all four), the AdamW
step counter continued (restarting it at 1, as --load from the state
does, moves the AdamW parameters by 0.36 of the second step's change).

A trained MoE step (two layers against a teacher, `tokens: 96` a layer
over every rank) is identified by its step built for one device, since
its step as built is per rank (its local expert stacks and tokens, its
collectives over the layout's axes). With --deterministic=layout-invariant,
saved after 1 step on dp=2;moe:ep=2 and resumed for 1 more on dp=1,
dp=4,ep=2 (edp=2) and tp=2, every tensor is bitwise the continuous run's
(on one rank: the mode gives every layout the same bits); so is a state
saved on dp=4,ep=2 (each expert stack's part written by the first of its
two replicas: a state is written by every rank, its parts, streamed) and
resumed on dp=1. In the default mode: resumed on dp=1, bitwise the
continuous run there (no sum of that step depends on the layout: each
expert's rows are its tokens on any ep); resumed on dp=4,ep=2, where the
replicas' expert gradients are
summed in that layout's order and the second step's gradients are
computed from parameters that carry the first step's rounding on the
other layout: within 1e-5 of the second step's change (measured 6.9e-6,
in an expert stack; a step whose gradients are given, above, stays within
1e-6).

Refused, naming what differs: a state of another description (the
embedding [40, 8]: each of its tensors named with both shapes), one of
another learning rate on another layout, and a damaged one (a bit of the
expert stack's momentum flipped) on another layout, naming the tensor.
"""
import os
import shutil
import subprocess

import numpy as np

import muirtest as mt

LAYOUTS = {
    # name: (grid, ranks, shard of w, shard of e)
    "dp=2,ep=2": ("{axes: {dp: 2}, moe_axes: {ep: 2}}", 2, "",
                  ", shard: {kind: expert, axis: ep}"),
    "dp=1": ("{axes: {dp: 1}}", 1, "", ""),
    "dp=4,ep=4": ("{axes: {dp: 4}, moe_axes: {ep: 4}}", 4, "",
                  ", shard: {kind: expert, axis: ep}"),
    "tp=2": ("{axes: {tp: 2}}", 2, ", shard: {kind: tp_row, axis: tp}", ""),
    "fsdp=2": ("{axes: {dp: 2}}", 2, ", shard: {kind: fsdp, axis: dp}", ""),
}
SHAPES = {"w": (64, 48), "e": (4, 32, 24), "embed": (40, 16), "norm": (48,)}
STATE = {"w": ["momentum"], "e": ["momentum"],
         "embed": ["exp_avg", "exp_avg_sq"], "norm": ["exp_avg", "exp_avg_sq"]}


def description(layout, lr=0.02, embed=(40, 16)):
    grid, _, wshard, eshard = LAYOUTS[layout]
    return """name: relayout
grid: %s
optimizer:
  muon: {lr: %s, momentum: 0.9, weight_decay: 0.01}
  adamw: {lr: 0.001, beta1: 0.9, beta2: 0.95}
parameters:
  - {name: w, shape: [64, 48], role: mlp%s}
  - {name: e, shape: [4, 32, 24], role: expert%s}
  - {name: embed, shape: [%d, %d], role: embedding}
  - {name: norm, shape: [48], role: norm}
""" % (grid, lr, wshard, eshard, embed[0], embed[1])


MOE = """name: relayout-moe
grid: {axes: {dp: 1}}
training: {data: teacher}
optimizer:
  muon: {lr: 0.05, momentum: 0.9, nesterov: true, ns_steps: 5}
  adamw: {lr: 1.0e-3, weight_decay: 0}
parameters:
%s
moe:
%s
"""


def trained(args, chk, tmp):
    """The trained MoE step saved on dp=2;moe:ep=2, resumed on three other
    layouts, in both deterministic modes."""
    params, layers = [], []
    for l in ("l0", "l1"):
        params += [
            "  - {name: %s.router, shape: [8, 32], role: router}" % l,
            "  - {name: %s.experts.gate_proj, shape: [8, 48, 32], "
            "role: expert}" % l,
            "  - {name: %s.experts.up_proj, shape: [8, 48, 32], "
            "role: expert}" % l,
            "  - {name: %s.experts.down_proj, shape: [8, 32, 48], "
            "role: expert}" % l]
        layers.append("  - {name: %s, experts: 8, top_k: 2, hidden: 32, "
                      "expert_size: 48, tokens: 96}" % l)
    base = os.path.join(tmp, "moe.yaml")
    with open(base, "w") as f:
        f.write(MOE % ("\n".join(params), "\n".join(layers)))
    compiler = os.path.join(os.path.dirname(args.muir_run), "muir-compile")
    ranks = {"dp=2;moe:ep=2": 2, "dp=1": 1, "dp=4,ep=2": 4, "tp=2": 2}
    paths = {}
    for layout in ranks:
        paths[layout] = os.path.join(tmp, "moe-%s.yaml" % layout)
        mt.check_output([compiler, base, "--layout", layout,
                         "--emit=description", "--quiet", "-o",
                         paths[layout]])

    def run(layout, mode, *flags):
        mt.run_step(args.muir_run, paths[layout], "--ranks",
                    str(ranks[layout]), "--deterministic=" + mode, *flags)

    # Layout-invariant: every layout gives one layout's bits (checked by
    # layout-invariant.test), so each resumed run is checked against the
    # continuous run on one rank.
    mode = "layout-invariant"
    saved = os.path.join(tmp, "moe-saved-li")
    run("dp=2;moe:ep=2", mode, "--steps", "1", "--save-state", saved)
    continuous = os.path.join(tmp, "moe-cont-li")
    run("dp=1", mode, "--steps", "2", "--dump", continuous)
    c = mt.read_dump(continuous)
    for layout in ("dp=1", "dp=4,ep=2", "tp=2"):
        resumed = os.path.join(tmp, "moe-resumed-li-" + layout)
        run(layout, mode, "--steps", "1", "--resume", saved, "--dump",
            resumed)
        r = mt.read_dump(resumed)
        differ = sorted(k for k in c if not np.array_equal(r.get(k), c[k]))
        chk.expect("trained MoE, layout-invariant: saved on dp=2;moe:ep=2, "
                   "resumed on %s: all %d tensors bitwise the continuous "
                   "run's" % (layout, len(c)),
                   not differ and len(r) == len(c), "differ: %s" % differ)
    # Saved on dp=4,ep=2, where each expert stack is held by two replicas
    # (edp) and only the first writes its part: resumed on one rank.
    saved4 = os.path.join(tmp, "moe-saved-li-edp")
    run("dp=4,ep=2", mode, "--steps", "1", "--save-state", saved4)
    resumed = os.path.join(tmp, "moe-resumed-li-from-edp")
    run("dp=1", mode, "--steps", "1", "--resume", saved4, "--dump", resumed)
    r = mt.read_dump(resumed)
    differ = sorted(k for k in c if not np.array_equal(r.get(k), c[k]))
    chk.expect("trained MoE, layout-invariant: saved on dp=4,ep=2, resumed "
               "on dp=1: all %d tensors bitwise the continuous run's"
               % len(c), not differ and len(r) == len(c),
               "differ: %s" % differ)
    # The default mode against the continuous run on the new layout: on
    # dp=1, where no sum depends on the layout (the expert stacks' rows are
    # each expert's tokens on any ep), and on dp=4,ep=2, whose replicas'
    # expert gradients are summed in that layout's order.
    mode = "true"
    saved = os.path.join(tmp, "moe-saved")
    run("dp=2;moe:ep=2", mode, "--steps", "1", "--save-state", saved)
    after1 = mt.read_dump(saved)
    for layout, bound in (("dp=1", 1e-6), ("dp=4,ep=2", 1e-5)):
        resumed = os.path.join(tmp, "moe-resumed-" + layout)
        run(layout, mode, "--steps", "1", "--resume", saved, "--dump",
            resumed)
        continuous = os.path.join(tmp, "moe-cont-" + layout)
        run(layout, mode, "--steps", "2", "--dump", continuous)
        r, c = mt.read_dump(resumed), mt.read_dump(continuous)
        # Parameters against the second step's change; their state and
        # gradients against their value; the layers' tokens and teachers
        # (inputs no step changes) exactly.
        worst, what = -1.0, ""
        for k in after1:
            state = k.endswith((".grad", ".momentum", ".exp_avg",
                                ".exp_avg_sq"))
            ref = np.linalg.norm(
                (c[k] if state else c[k] - after1[k]).astype(np.float64))
            diff = np.linalg.norm(r[k].astype(np.float64) - c[k])
            err = float(diff / ref) if ref > 0 else (
                0.0 if diff == 0 else float("inf"))
            if err > worst:
                worst, what = err, k
        chk.check("trained MoE, default mode: saved on dp=2;moe:ep=2, "
                  "resumed on %s: the continuous run (worst %s)"
                  % (layout, what), worst, bound)


def main():
    args = mt.parse_args(__doc__)
    tmp = args.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    chk = mt.Checker()
    rng = np.random.default_rng(41)
    load = os.path.join(tmp, "in")
    for name, shape in SHAPES.items():
        mt.write_npy(load, name, 0.02 * rng.standard_normal(shape))
        mt.write_npy(load, name + ".grad", rng.standard_normal(shape))
        for s in STATE[name]:
            v = rng.standard_normal(shape)
            mt.write_npy(load, name + "." + s,
                         0.01 * v * v if s == "exp_avg_sq" else 0.1 * v)

    def yaml(layout, **kw):
        path = os.path.join(tmp, "%s-%d.yaml" % (layout, len(kw)))
        with open(path, "w") as f:
            f.write(description(layout, **kw))
        return path

    def run(layout, *flags, **kw):
        mt.run_step(args.muir_run, yaml(layout, **kw), "--ranks",
                    str(LAYOUTS[layout][1]), *flags)

    saved = os.path.join(tmp, "saved")
    run("dp=2,ep=2", "--steps", "1", "--load", load, "--save-state", saved)
    after1 = mt.read_dump(saved)
    for layout in ["dp=1", "dp=4,ep=4", "tp=2", "fsdp=2"]:
        resumed = os.path.join(tmp, "resumed-" + layout)
        run(layout, "--steps", "1", "--resume", saved, "--dump", resumed)
        continuous = os.path.join(tmp, "continuous-" + layout)
        run(layout, "--steps", "2", "--load", load, "--dump", continuous)
        r, c = mt.read_dump(resumed), mt.read_dump(continuous)
        worst, what = -1.0, ""
        for name in SHAPES:
            for k in [name] + [name + "." + s for s in STATE[name]]:
                ref = c[k] - after1[k] if k == name else c[k]
                err = float(np.linalg.norm(r[k].astype(np.float64) - c[k]) /
                            np.linalg.norm(ref.astype(np.float64)))
                if err > worst:
                    worst, what = err, k
        chk.check("saved on dp=2,ep=2, resumed on %s: the continuous run "
                  "(worst %s)" % (layout, what), worst, 1e-6)

    def refused(label, path, want, state=saved):
        p = subprocess.run([args.muir_run, path, "--steps", "1", "--resume",
                            state, "--quiet"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        chk.expect("refused: " + label, p.returncode != 0 and want in p.stderr
                   and not p.stdout, p.stderr.strip().splitlines()[-1]
                   if p.stderr.strip() else "no message")

    trained(args, chk, tmp)
    refused("another description (embed [40, 8])",
            yaml("dp=1", embed=(40, 8)),
            "the tensor 'embed.exp_avg': [40, 16] in it, [40, 8] in this step")
    refused("another lr on another layout", yaml("dp=1", lr=0.03),
            "the grid: saved on 'dp=2; @moe: ep=2', this run's is 'dp=1' "
            "(and the step differs beyond its layout)")
    # A damaged state on another layout: one bit of the ep-split stack's
    # momentum flipped.
    damaged = os.path.join(tmp, "damaged")
    shutil.rmtree(damaged, ignore_errors=True)
    shutil.copytree(saved, damaged)
    with open(os.path.join(damaged, "e.momentum.npy"), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)[0]
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last ^ 1]))
    refused("a damaged tensor on another layout", yaml("dp=1"),
            "'e.momentum.npy' has changed since it was saved", damaged)
    chk.finish()


if __name__ == "__main__":
    main()
