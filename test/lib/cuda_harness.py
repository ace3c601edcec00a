"""What the CUDA backend's integration scripts share (cuda_step.py,
cuda_moe.py): their command line, running a step on either backend with
muir-run or, on a GPU machine without LLVM, with bench/gpu's
muir-step-runner on prepared inputs, and reporting errors against bounds.

    --muir-run PATH   muir-run (runs both backends)
    --tmp DIR         scratch directory, wiped at start
    --prepare DIR     only write the description, the inputs and the CPU
                      backend's results into DIR (bench/gpu/prepare.sh)
    --prepared DIR    read them from DIR and run the GPU with --runner
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

import muirtest


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--muir-run", help="muir-run (runs both backends)")
    ap.add_argument("--tmp", required=True, help="scratch directory")
    ap.add_argument("--prepare", metavar="DIR",
                    help="only write the description, the inputs and the "
                         "CPU backend's results into DIR (for a GPU machine "
                         "without LLVM: bench/gpu/prepare.sh)")
    ap.add_argument("--prepared", metavar="DIR",
                    help="read the inputs and the CPU results from DIR and "
                         "run the GPU with --runner instead of muir-run")
    ap.add_argument("--runner", help="muir-step-runner")
    ap.add_argument("--runtime", help="libmuir_rt_cuda.so for --runner")
    ap.add_argument("--step-so", help="the step compiled with "
                                      "--emit=object, linked shared")
    ap.add_argument("--step-so-bf16", help="the step compiled with "
                                           "--cuda-bf16 (a bf16 Newton-"
                                           "Schulz iterate), linked shared")
    args = ap.parse_args()
    shutil.rmtree(args.tmp, ignore_errors=True)
    os.makedirs(args.tmp)
    if not args.prepared and not args.muir_run:
        sys.exit("error: give --muir-run, or --prepared with --runner")
    return args


class Case:
    """A step's description and inputs under `base` (the prepared
    directory, the one being prepared, or the scratch directory)."""

    # muir-run's CUDA flags as the runner spells them.
    RUNNER_FLAGS = {"--target=cuda": [], "--cuda-graph=false": ["--no-graph"],
                    "--cuda-bf16": ["--bf16"],
                    "--cuda-cublas-grouped-gemm": ["--grouped-gemm=cublas"]}

    def __init__(self, args, steps):
        self.args, self.steps = args, steps
        self.base = args.prepared or args.prepare or args.tmp
        self.inp = os.path.join(self.base, "in")
        self.desc = os.path.join(self.base, "step.yaml")

    def write(self, yaml, values):
        os.makedirs(self.base, exist_ok=True)
        for name, v in values.items():
            muirtest.write_npy(self.inp, name, v)
        with open(self.desc, "w") as f:
            f.write(yaml)

    def run(self, tag, extra, output=False):
        """The tensors after the steps; `extra` muir-run's flags ([] the
        CPU backend). With `output`, also what the run printed (per step,
        `  loss <layer> <value>` of trained MoE layers)."""
        args = self.args
        out = os.path.join(args.tmp, tag)
        # The CPU backend's runs ("cpu", "cpu-bf16", ...) are prepared.
        cpu = tag.split("-")[0] == "cpu"
        if cpu and args.prepared:
            return muirtest.read_dump(os.path.join(args.prepared, tag))
        if cpu and args.prepare:
            out = os.path.join(args.prepare, tag)
        if args.prepared:
            os.makedirs(out)
            # --cuda-bf16 compiles another program (a bf16 iterate).
            step = args.step_so_bf16 if "--cuda-bf16" in extra else args.step_so
            if not step:
                sys.exit("error: --prepared needs --step-so%s" %
                         ("-bf16 for --cuda-bf16 runs" if "--cuda-bf16" in
                          extra else ""))
            cmd = [args.runner, "--runtime", args.runtime, "--step",
                   step, "--steps", str(self.steps), "--load",
                   self.inp, "--dump", out]
            for flag in extra:
                if flag not in self.RUNNER_FLAGS:
                    sys.exit("error: no runner flag for muir-run's " + flag)
                cmd += self.RUNNER_FLAGS[flag]
            text = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                                  universal_newlines=True).stdout
        else:
            text = muirtest.check_output(
                [args.muir_run, self.desc, "--steps", str(self.steps),
                 "--load", self.inp, "--dump", out] +
                ([] if output else ["--quiet"]) + extra)
        tensors = muirtest.read_dump(out)
        return (tensors, text) if output else tensors

    def prepare_and_exit(self, cpu_runs=(("cpu", []),)):
        """With --prepare: the CPU results (each (tag, muir-run flags) of
        `cpu_runs`), then exit."""
        if self.args.prepare:
            for tag, flags in cpu_runs:
                self.run(tag, flags)
            print("prepared %s" % self.args.prepare)
            sys.exit(0)


class Report:
    """One line per check, FAIL where an error is over its bound."""

    def __init__(self):
        self.ok = True

    def bound(self, what, err, bound):
        good = err <= bound
        self.ok &= good
        print("%-48s %.2e (bound %.0e)%s" % (what, err, bound,
                                            "" if good else "  FAIL"))

    def bitwise(self, what, a, b):
        same = all(np.array_equal(a[n], b[n]) for n in a)
        self.ok &= same
        print("%s bitwise equal: %s" % (what, "yes" if same else "NO  FAIL"))

    def finish(self):
        print("ALL PASSED" if self.ok else "FAIL")
        sys.exit(0 if self.ok else 1)
