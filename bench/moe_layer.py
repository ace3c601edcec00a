#!/usr/bin/env python3
"""muir.torch.MoE, forward + backward of one layer, against transformers'
MoE blocks (issue 57).

Points (tokens, hidden, expert_size, experts, top_k): small (1024, 512,
256, 8, 2), the issue's (4096, 1024, 512, 16, 2), large (8192, 1024, 512,
32, 2). Softmax router with the top-k renormalised (Qwen3-MoE), dropless,
float32, CPU.

  * muir: muir.torch.MoE with max_tokens = tokens, y = layer(x);
    (y * dy).sum().backward(), fastest of --reps after two warm-ups (the
    first compiles), OPENBLAS_NUM_THREADS=2; and the same with
    recompute=True.
  * hf <impl>: transformers 5.25's Qwen3MoeSparseMoeBlock (built from a
    Qwen3MoeConfig made here) with each experts implementation a CPU user
    can pick (config._experts_implementation): eager (the loop over the
    experts hit), batched_mm (each pair's expert weights gathered for
    bmm), grouped_mm (pairs sorted by expert, torch._grouped_mm, which
    torch 2.9 has on the CPU); each at torch.set_num_threads 1 and 2.
  Rounds alternate the sides; each side runs in its own process; peak
  memory is the process's peak RSS during the timed passes (VmHWM, reset
  after the warm-ups) over its RSS before the first pass, after the
  parameters and data were made and, for muir, its two passes compiled or
  loaded (layer.prepare: their code and the libraries they load, printed
  as "load MB", are the process's once, not a step's). The
  machine's sgemm rate (bin/muir-sgemm-rate) gives the fraction: useful
  flops (6 T k H F forward, twice that backward, plus the router's
  6 T H E) over time.

Precisions (--precisions): float32 (above); autocast, the same float32
parameters and tokens under torch.autocast("cpu", dtype=torch.bfloat16)
(muir's default there: the experts' products on bfloat16 operands, sums
in float32; HF's experts run torch's bfloat16 kernels); bf16-model, the
parameters and the tokens bfloat16 (model.to(torch.bfloat16); muir's
default products there are bfloat16 too, HF computes in bfloat16).

Goal: muir >= 1.5x the fastest HF implementation, peak memory at most
that peer's.

Run:  .venv/bin/python bench/moe_layer.py --build build
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

POINTS = {"small": (1024, 512, 256, 8, 2),
          "issue": (4096, 1024, 512, 16, 2),
          "large": (8192, 1024, 512, 32, 2)}


def status_mb(key):
    """VmRSS or VmHWM of this process, in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def reset_peak():
    """Resets VmHWM to the current RSS (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


# The Hugging Face experts implementations a CPU user can pick
# (config._experts_implementation; transformers 5.25: "eager" is the
# per-expert loop, "batched_mm" gathers each token's experts' weights,
# "grouped_mm" sorts the pairs by expert and calls torch._grouped_mm, which
# torch 2.9 provides on the CPU); "deepgemm" and "sonicmoe" are GPU only.
HF_IMPLS = ("eager", "batched_mm", "grouped_mm")


def worker(args):
    import torch
    torch.manual_seed(0)
    T, H, FF, E, K = POINTS[args.point]
    bf16 = torch.bfloat16
    load_mb = 0.0
    if args.side == "muir":
        import muir.torch as mt
        module = mt.MoE(H, FF, E, K, max_tokens=T, check_finite=False,
                        recompute=args.recompute)
        if args.precision == "bf16-model":
            module = module.to(bf16)
        params = list(module.parameters())
        # The passes compiled or loaded before the baseline: their code and
        # libraries (libMLIR, the step objects: load_mb) are the process's
        # once, not a step's memory.
        loading = status_mb("VmRSS")
        module.prepare(T, "float32" if args.precision == "float32"
                       else "bfloat16")
        load_mb = status_mb("VmRSS") - loading

        def layer(x):
            return module(x)
    else:
        # A transformers Qwen3-MoE block (softmax router, top-k
        # renormalised), built from a config made here, its experts
        # implementation `side`.
        torch.set_num_threads(args.torch_threads)
        from transformers import Qwen3MoeConfig
        from transformers.models.qwen3_moe.modeling_qwen3_moe import \
            Qwen3MoeSparseMoeBlock
        cfg = Qwen3MoeConfig(hidden_size=H, moe_intermediate_size=FF,
                             num_experts=E, num_experts_per_tok=K,
                             norm_topk_prob=True)
        cfg._experts_implementation = args.side
        block = Qwen3MoeSparseMoeBlock(cfg)
        with torch.no_grad():
            for p in block.parameters():
                p.normal_(0, 1 / H ** 0.5)
        if args.precision == "bf16-model":
            block = block.to(bf16)
        params = list(block.parameters())

        def layer(x):
            return block(x.view(1, T, H)).view(T, H)
    dtype = bf16 if args.precision == "bf16-model" else torch.float32
    x = torch.randn(T, H).to(dtype).requires_grad_(True)
    dy = torch.randn(T, H).to(dtype)
    before = status_mb("VmRSS")

    def once():
        for p in params:
            p.grad = None
        x.grad = None
        with torch.autocast("cpu", dtype=bf16,
                            enabled=args.precision == "autocast"):
            y = layer(x)
        (y * dy).sum().backward()
    once()
    once()
    # Peak memory of the timed passes over the process's memory before the
    # first pass (the parameters and the data are in both).
    reset_peak()
    ms = common.fastest_ms(once, args.reps)
    print(json.dumps({"ms": ms, "peak_mb": status_mb("VmHWM") - before,
                      "load_mb": load_mb}))


def side(args, name, threads, blas):
    env = common.torch_env(blas)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker",
           "--side", name, "--point", args.point_name, "--reps",
           str(args.reps), "--torch-threads", str(threads),
           "--precision", args.precision] + \
        (["--recompute"] if args.recompute else [])
    if name == "muir":
        out = common.run(cmd, env=env)
    else:
        # A peer that cannot run a point (batched_mm gathers every pair's
        # expert matrices: 34 GB at the point) is reported, not
        # fatal.
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["?"])[-1]
            return {"ms": float("inf"), "peak_mb": float("nan"),
                    "error": last[:100]}
        out = p.stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--points", default="small,issue,large")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--side")
    ap.add_argument("--point")
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--torch-threads", type=int, default=2)
    ap.add_argument("--precisions", default="float32,autocast,bf16-model")
    ap.add_argument("--impls", default=",".join(HF_IMPLS),
                    help="the HF experts implementations to run (batched_mm "
                    "takes 4 s a pass at the small point and runs out of "
                    "memory at the others)")
    ap.add_argument("--precision", default="float32")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    os.environ.setdefault("MUIR_BUILD_DIR", os.path.abspath(args.build))
    env = common.torch_env("2")
    out = common.run([os.path.join(args.build, "bin", "muir-sgemm-rate")],
                     env=env)
    m = re.search(r"sgemm_gflops ([\d.]+)", out)
    rate = float(m.group(1)) if m else None
    import torch
    print("MoE layer forward + backward, CPU (2 cores), torch %s; "
          "best of %d reps, %d alternating rounds; sgemm rate %.1f GFLOP/s"
          % (torch.__version__, args.reps, args.rounds, rate or 0))
    print("peers: transformers' Qwen3MoeSparseMoeBlock with each experts "
          "implementation, torch threads 1 and 2, the fastest")
    for name, precision in [(n, p) for n in args.points.split(",")
                            for p in args.precisions.split(",")]:
        args.point_name = name
        args.precision = precision
        T, H, FF, E, K = POINTS[name]
        best = {}

        def keep(key, r, label=""):
            if key not in best or r["ms"] < best[key][0]["ms"]:
                best[key] = (r, label)
        for _ in range(args.rounds):
            args.recompute = False
            keep("muir", side(args, "muir", 2, "2"))
            args.recompute = True
            keep("muir recompute", side(args, "muir", 2, "2"))
            args.recompute = False
            for impl in args.impls.split(","):
                for threads in (1, 2):
                    keep("hf " + impl, side(args, impl, threads, None),
                         "t%d" % threads)
        mt = best["muir"][0]["ms"]
        fastest = min((k for k in best if k.startswith("hf ")),
                      key=lambda k: best[k][0]["ms"])
        leanest = min((k for k in best if k.startswith("hf ") and
                       "error" not in best[k][0]),
                      key=lambda k: best[k][0]["peak_mb"])
        flops = 3 * 6.0 * T * K * H * FF + 6.0 * T * H * E
        print("\n%s, %s: %d tokens, hidden %d, expert_size %d, %d experts, "
              "top-%d" % (name, precision, T, H, FF, E, K))
        print("  %-18s %9s %8s %8s %9s %10s" % ("", "ms", "setting",
                                               "x muir", "peak MB",
                                               "of sgemm"))
        for key, (r, label) in best.items():
            if "error" in r:
                print("  %-18s failed: %s" % (key, r["error"]))
                continue
            print("  %-18s %9.1f %8s %8.2f %9.0f %10s"
                  % (key, r["ms"], label, r["ms"] / mt, r["peak_mb"],
                     "%.2f" % (flops / (r["ms"] * 1e-3) / (rate * 1e9))
                     if rate else ""))
        print("  fastest peer %s: %.2fx muir's time (goal >= 1.5); muir's "
              "peak %.0f MB, recompute's %.0f MB, the fastest peer's %.0f MB, "
              "the leanest peer's (%s) %.0f MB"
              % (fastest, best[fastest][0]["ms"] / mt,
                 best["muir"][0]["peak_mb"],
                 best["muir recompute"][0]["peak_mb"],
                 best[fastest][0]["peak_mb"], leanest,
                 best[leanest][0]["peak_mb"]))
        print("  muir's passes loaded once per process: %.0f MB"
              % best["muir"][0].get("load_mb", 0.0))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
