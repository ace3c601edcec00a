#!/usr/bin/env python3
"""The cost of muir-run's non-finite check (--check-finite, the default):
before every step each rank scans its gradients for a NaN or infinity (a
bit test at memory speed) and the ranks agree on the result; after it a
trained MoE layer's loss is checked. Both are inside the step's timed
region, and muir-run's closing line says how long they took per step
(check_ms).

Steps: the embedded default (Muon on 512x512, 2048x512, 512x2048 and AdamW
on a norm; 1 rank), examples/tiny-moe.yaml (two MoE layers trained against
a teacher, 23 parameters; 1 rank) and tiny-moe on 2 ranks (dp=2; moe:
ep=2), where the agreement is an exchange. The cost is check_ms over
mean_ms, the checks' share of the step (goal: <= 1%), the mean over
--rounds runs. Beside it, the step with and without the checks (best
min_ms of the interleaved runs): a difference of two noisy figures on this
shared 2-core machine, which moves by a few percent either way, so the
measured share is the figure to read. Also printed: the gradient bytes a
rank scans per step (a trained MoE layer's own gradients are computed by
the step, not scanned).

Run:  .venv/bin/python bench/check_finite.py --build build
"""
import os
import re
import tempfile

import common

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    args = common.parse_args(__doc__, steps=6, rounds=3)
    runner = os.path.join(args.bin, "muir-run")
    compiler = os.path.join(args.bin, "muir-compile")
    tiny = os.path.join(ROOT, "examples", "tiny-moe.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        ep2 = os.path.join(tmp, "ep2.yaml")
        common.run([compiler, tiny, "--layout", "dp=2;moe:ep=2",
                    "--emit=description", "--quiet", "-o", ep2])
        cases = [("default step, 1 rank", [], 1),
                 ("tiny-moe, 1 rank", [tiny], 1),
                 ("tiny-moe, dp=2;moe:ep=2, 2 ranks", [ep2], 2)]
        print("The non-finite check (gradients before each step, MoE losses "
              "after): cost per step")
        print("%-34s %10s %10s %8s %12s %12s %14s" % (
            "step", "step ms", "check ms", "share", "checked ms",
            "unchecked ms", "grad MB/rank"))
        for label, inputs, ranks in cases:
            best = {}
            shares, checks, means = [], [], []
            grads = 0.0
            for _ in range(args.rounds):
                for on in ("true", "false"):
                    cmd = [runner] + inputs + [
                        "--steps", str(args.steps), "--quiet",
                        "--check-finite=" + on]
                    if ranks > 1:
                        cmd += ["--ranks", str(ranks)]
                    text = common.run(cmd)
                    ms = float(re.search(r"min_ms ([\d.]+)", text).group(1))
                    best[on] = min(best.get(on, ms), ms)
                    if on == "true":
                        mean = float(re.search(r"mean_ms ([\d.]+)",
                                               text).group(1))
                        check = float(re.search(r"check_ms ([\d.]+)",
                                                text).group(1))
                        means.append(mean)
                        checks.append(check)
                        shares.append(check / mean)
            # Gradient bytes a rank scans: from a dump of one step.
            dump = os.path.join(tmp, "dump-%d" % len(inputs) + str(ranks))
            common.run([runner] + inputs + ["--steps", "1", "--quiet",
                                            "--dump", dump] +
                       (["--ranks", str(ranks)] if ranks > 1 else []))
            trained = ("layers.0.moe.", "layers.1.moe.") if inputs else ()
            for name in os.listdir(dump):
                if name.endswith(".grad.npy") and not name.startswith(trained):
                    grads += os.path.getsize(os.path.join(dump, name))
            n = len(shares)
            print("%-34s %10.2f %10.3f %7.2f%% %12.2f %12.2f %14.1f" % (
                label, sum(means) / n, sum(checks) / n,
                100 * sum(shares) / n, best["true"], best["false"],
                grads / 1e6 / ranks))


if __name__ == "__main__":
    main()
