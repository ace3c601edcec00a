"""Exact resume: `muir-run --save-state DIR` after k steps, then
`muir-run --resume DIR` for the rest, equals one run of all the steps
bitwise, in every tensor (parameters, gradients, momentum, Adam moments,
the step counter AdamW's bias correction reads, training data).

The step: one MoE layer trained against a teacher (Muon on the expert
stacks, AdamW on the router, whose update depends on the step counter)
beside an attention matrix and a norm with seeded gradients.

Checked:
  - 1 rank: resume after k = 1, 2, 3 of 4 steps equals 4 steps;
  - 2 ranks (ep = 2): resume after 2 of 4 steps equals 4 steps;
  - saving again into an existing state replaces it (the step moves on);
  - a state is refused, with a message and no output, when a tensor file
    was changed (one bit), removed, when the manifest is missing or
    damaged, when it was saved for another description (another lr),
    another grid or another compile flag (each named), when its step
    counter is out of range, and when --load is given too; under mpirun
    itself (each rank hashing its share of the files) a changed file is
    refused, named once, and every file changed is refused by both ranks;
  - --save-state refuses, before any work and changing nothing, a
    directory of the user's, a regular file, and a state that holds files
    it does not name; an empty directory takes a state.
"""
import json
import os
import shutil
import subprocess

import numpy as np

import muirtest as mt


def description(ranks, lr=0.02):
    grid = "{dp: 1}" if ranks == 1 else "{ep: %d}" % ranks
    return """name: resume
grid: {axes: %s}
training: {data: teacher}
optimizer:
  muon: {lr: %s, momentum: 0.95, ns_steps: 5}
  adamw: {lr: 1.0e-3, beta1: 0.9, beta2: 0.95}
parameters:
  - {name: attn.q, shape: [32, 32], role: attention}
  - {name: norm, shape: [32], role: norm}
  - {name: l.router, shape: [8, 32], role: router}
  - {name: l.experts.gate_proj, shape: [8, 48, 32], role: expert}
  - {name: l.experts.up_proj, shape: [8, 48, 32], role: expert}
  - {name: l.experts.down_proj, shape: [8, 32, 48], role: expert}
moe:
  - {name: l, experts: 8, top_k: 2, hidden: 32, expert_size: 48, tokens_per_rank: %d}
""" % (grid, lr, 64 // ranks)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def muir(args, *extra, ok=True):
    cmd = [args.muir_run] + list(extra) + ["--quiet"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if ok and p.returncode != 0:
        raise SystemExit("FAIL: %s\n%s%s" % (" ".join(cmd), p.stdout,
                                            p.stderr))
    return p


def same(a, b):
    x, y = mt.read_dump(a), mt.read_dump(b)
    differ = sorted(n for n in x if n not in y or
                    not np.array_equal(x[n], y[n]))
    return len(x) > 0 and len(x) == len(y) and not differ, differ


def main():
    args = mt.parse_args(__doc__)
    tmp = args.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    chk = mt.Checker()
    for ranks, ks in ((1, (1, 2, 3)), (2, (2,))):
        desc = write(os.path.join(tmp, "r%d.yaml" % ranks),
                     description(ranks))
        rk = ["--ranks", str(ranks)] if ranks > 1 else []
        full = os.path.join(tmp, "full%d" % ranks)
        muir(args, desc, "--steps", "4", "--dump", full, *rk)
        for k in ks:
            state = os.path.join(tmp, "state%d_%d" % (ranks, k))
            out = os.path.join(tmp, "resumed%d_%d" % (ranks, k))
            muir(args, desc, "--steps", str(k), "--save-state", state, *rk)
            muir(args, desc, "--steps", str(4 - k), "--resume", state,
                 "--dump", out, *rk)
            ok, differ = same(full, out)
            chk.expect("%d rank(s): %d steps, saved, resumed for %d equals 4 "
                       "steps bitwise" % (ranks, k, 4 - k), ok,
                       "differ: %s" % differ)

    desc = os.path.join(tmp, "r1.yaml")
    full = os.path.join(tmp, "full1")
    # Saving over an existing state: 1 step, then 2 more saved on top.
    state = os.path.join(tmp, "again")
    muir(args, desc, "--steps", "1", "--save-state", state)
    muir(args, desc, "--steps", "2", "--resume", state, "--save-state", state)
    out = os.path.join(tmp, "again-out")
    muir(args, desc, "--steps", "1", "--resume", state, "--dump", out)
    ok, differ = same(full, out)
    chk.expect("a state saved over an older one (after 1, then 3 steps) "
               "resumes to 4 steps bitwise", ok, "differ: %s" % differ)
    left = [n for n in os.listdir(tmp) if ".new-" in n or ".old-" in n]
    chk.expect("no temporary or old state directories are left", not left,
               str(left))

    # Refusals: each on a fresh copy of a good state.
    good = os.path.join(tmp, "state1_2")

    def refused(label, mutate, want, extra=(), description=desc):
        bad = os.path.join(tmp, "bad-" + label.replace(" ", "-"))
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(good, bad)
        mutate(bad)
        dump = os.path.join(tmp, "bad-out")
        shutil.rmtree(dump, ignore_errors=True)
        p = muir(args, description, "--steps", "1", "--resume", bad,
                 "--dump", dump, *extra, ok=False)
        first = (p.stderr.strip().splitlines() or [""])[0]
        chk.expect("refused: %s (%s)" % (label, first),
                   p.returncode != 0 and want in p.stderr and
                   not os.path.exists(dump), "want %r" % want)

    def flip_bit(d, name="l.experts.up_proj.npy"):
        path = os.path.join(d, name)
        data = bytearray(open(path, "rb").read())
        data[-1] ^= 1
        open(path, "wb").write(bytes(data))

    refused("one bit changed", flip_bit, "has changed since it was saved")
    refused("a tensor file removed",
            lambda d: os.remove(os.path.join(d, "attn.q.momentum.npy")),
            "'attn.q.momentum.npy' is missing")
    refused("no manifest",
            lambda d: os.remove(os.path.join(d, "muir-state.json")),
            "no muir-state.json")
    refused("a truncated manifest",
            lambda d: write(os.path.join(d, "muir-state.json"),
                            open(os.path.join(d, "muir-state.json"))
                            .read()[:40]),
            "muir-state.json is damaged")
    other = write(os.path.join(tmp, "other.yaml"), description(1, lr=0.03))
    refused("another description (lr 0.03)", lambda d: None,
            "the step: its IR (shapes, optimizer settings, parameters) "
            "differs", description=other)
    refused("another grid (ep 2 on 2 ranks)", lambda d: None,
            "the grid: saved on 'dp=1', this run's is 'ep=2",
            description=os.path.join(tmp, "r2.yaml"), extra=("--ranks", "2"))
    refused("another flag (--syrk=false)", lambda d: None,
            "the flag --syrk: saved with 'true', this run has 'false'",
            extra=("--syrk=false",))

    def set_step(value):
        def mutate(d):
            path = os.path.join(d, "muir-state.json")
            m = json.load(open(path))
            m["step"] = value
            write(path, json.dumps(m))
        return mutate
    refused("a step counter of INT64_MAX", set_step(2**63 - 1),
            "expected \"step\": an integer in [0, 2^53)")
    refused("a step counter that 1 more step takes past 2^53",
            set_step(2**53 - 1), "pass 2^53")

    # Under mpirun itself (no launcher checking first) each rank hashes its
    # share of the files: a changed file is refused whichever rank's it is
    # (one bit in each file in turn would take a run each: every file
    # changed, each rank names another), named once, nothing written.
    def under_mpirun(label, names):
        bad = os.path.join(tmp, "mpi-" + label.replace(" ", "-"))
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(os.path.join(tmp, "state2_2"), bad)
        for n in names(bad):
            flip_bit(bad, n)
        dump = os.path.join(tmp, "mpi-out")
        shutil.rmtree(dump, ignore_errors=True)
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2",
               args.muir_run, os.path.join(tmp, "r2.yaml"), "--steps", "1",
               "--resume", bad, "--dump", dump, "--quiet"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        named = sorted(set(
            line.split("'")[3] for line in p.stdout.splitlines()
            if "has changed since it was saved" in line))
        return p.returncode != 0 and not os.path.exists(dump), named

    ok, named = under_mpirun("one bit", lambda d: ["l.experts.up_proj.npy"])
    chk.expect("refused under mpirun -n 2: one bit changed (%s)"
               % ", ".join(named), ok and named == ["l.experts.up_proj.npy"],
               "named %s" % named)
    ok, named = under_mpirun("every file", lambda d: [
        n for n in os.listdir(d) if n.endswith(".npy")])
    chk.expect("refused under mpirun -n 2: every file changed, by both ranks "
               "(%s)" % ", ".join(named), ok and len(named) == 2,
               "named %s" % named)

    # --save-state replaces only a state muir saved: never a directory of
    # the user's (its files stay), a file, or a state holding other files.
    def not_replaced(label, make, want):
        target = os.path.join(tmp, "keep-" + label.replace(" ", "-"))
        shutil.rmtree(target, ignore_errors=True)
        if os.path.isfile(target):
            os.remove(target)
        make(target)
        before = sorted(os.listdir(target)) if os.path.isdir(target) else \
            open(target).read()
        p = muir(args, desc, "--steps", "1", "--save-state", target,
                 ok=False)
        after = sorted(os.listdir(target)) if os.path.isdir(target) else \
            open(target).read()
        chk.expect("refused before any work: --save-state into %s (%s)" %
                   (label, (p.stderr.strip().splitlines() or [""])[0]),
                   p.returncode != 0 and want in p.stderr and not p.stdout
                   and before == after, "want %r" % want)

    def user_dir(t):
        os.makedirs(t)
        write(os.path.join(t, "notes.txt"), "x\n")

    def state_and_notes(t):
        shutil.copytree(good, t)
        write(os.path.join(t, "notes.txt"), "x\n")
    not_replaced("a directory of the user's", user_dir,
                 "is a directory that is not a muir state")
    not_replaced("a regular file", lambda t: write(t, "x\n"),
                 "exists and is not a directory")
    not_replaced("a state that also holds notes.txt", state_and_notes,
                 "also holds 'notes.txt'")
    empty = os.path.join(tmp, "empty-dir")
    shutil.rmtree(empty, ignore_errors=True)
    os.makedirs(empty)
    muir(args, desc, "--steps", "1", "--save-state", empty)
    saved = os.listdir(empty)
    chk.expect("an empty directory takes a state",
               "muir-state.json" in saved, "holds %s" % sorted(saved))
    p = muir(args, desc, "--steps", "1", "--save-state",
             os.path.join(tmp, "no", "such", "dir", "state"), ok=False)
    chk.expect("refused before any work: a state folder that does not exist "
               "(%s)" % (p.stderr.strip().splitlines() or [""])[0],
               p.returncode != 0 and "is not a writable directory" in p.stderr
               and not p.stdout)
    refused("with --load too", lambda d: None,
            "give either --load or --resume", extra=("--load", good))
    chk.finish()


if __name__ == "__main__":
    main()
