#!/usr/bin/env python3
"""muir.torch.MoE, forward + backward of one layer, against the faster of
two eager PyTorch layers at their best thread setting (issue 37, item 7).

Points (tokens, hidden, expert_size, experts, top_k): small (1024, 512,
256, 8, 2), the issue's (4096, 1024, 512, 16, 2), large (8192, 1024, 512,
32, 2). Softmax router with the top-k renormalised (Qwen3-MoE), dropless,
float32, CPU.

  * muir: muir.torch.MoE with max_tokens = tokens, y = layer(x);
    (y * dy).sum().backward(), fastest of --reps after two warm-ups (the
    first compiles), OPENBLAS_NUM_THREADS=2.
  * hf: the Hugging Face style loop (per expert: the tokens that chose it
    by torch.where on the top-k indices, its SwiGLU MLP as three F.linear,
    index_add_ of the weighted rows), autograd backward.
  * sorted: the tokens' (token, slot) pairs sorted by expert (a stable
    argsort), one contiguous slice per expert, index_add_ back.
  Each eager layer at both thread settings of bench/common.py
  (torch.set_num_threads(2); torch.set_num_threads(1) with
  OPENBLAS_NUM_THREADS=2), the faster reported. Every side runs in its own
  process; peak memory is the process's peak RSS during the timed passes
  (VmHWM, reset after the warm-ups) over its RSS before the first pass,
  after the parameters and data were made: what a forward and backward
  hold at their peak, and for muir also its compiled passes (the JIT's
  code and MLIR context, about 100 MB here). The machine's sgemm rate (bin/muir-sgemm-rate) gives
  the fraction: useful flops (6 T k H F forward, twice that backward, plus
  the router's 6 T H E) over time.

Goal: muir >= 1.5x the faster eager peer.

Run:  PYTHONPATH=python .venv/bin/python bench/moe_layer.py --build build
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


def worker(args):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    T, H, FF, E, K = POINTS[args.point]
    if args.side == "muir":
        import muir.torch as mt
        layer = mt.MoE(H, FF, E, K, max_tokens=T, check_finite=False)
        params = list(layer.parameters())
    else:
        torch.set_num_threads(args.torch_threads)
        router = torch.nn.Parameter(torch.randn(E, H) / H ** 0.5)
        gate = torch.nn.Parameter(torch.randn(E, FF, H) / H ** 0.5)
        up = torch.nn.Parameter(torch.randn(E, FF, H) / H ** 0.5)
        down = torch.nn.Parameter(torch.randn(E, H, FF) / FF ** 0.5)
        params = [router, gate, up, down]

        def layer(x):
            w, idx = F.linear(x, router).softmax(-1).topk(K, dim=-1)
            w = w / w.sum(-1, keepdim=True)
            out = torch.zeros_like(x)
            if args.side == "hf":
                for e in range(E):
                    tok, slot = torch.where(idx == e)
                    if tok.numel() == 0:
                        continue
                    xe = x[tok]
                    h = F.silu(F.linear(xe, gate[e])) * F.linear(xe, up[e])
                    ye = F.linear(h, down[e]) * w[tok, slot, None]
                    out = out.index_add(0, tok, ye)
                return out
            flat = idx.reshape(-1)
            order = torch.sort(flat, stable=True).indices
            tok = order // K
            counts = torch.bincount(flat, minlength=E).tolist()
            xs = x[tok]
            ws = w.reshape(-1)[order]
            start = 0
            for e in range(E):
                n = counts[e]
                if n == 0:
                    continue
                xe = xs[start:start + n]
                h = F.silu(F.linear(xe, gate[e])) * F.linear(xe, up[e])
                ye = F.linear(h, down[e]) * ws[start:start + n, None]
                out = out.index_add(0, tok[start:start + n], ye)
                start += n
            return out
    x = torch.randn(T, H, requires_grad=True)
    dy = torch.randn(T, H)
    before = status_mb("VmRSS")

    def once():
        for p in params:
            p.grad = None
        x.grad = None
        y = layer(x)
        (y * dy).sum().backward()
    once()
    once()
    # Peak memory of the timed passes over the process's memory before the
    # first pass (the parameters and the data are in both).
    reset_peak()
    ms = common.fastest_ms(once, args.reps)
    print(json.dumps({"ms": ms, "peak_mb": status_mb("VmHWM") - before}))


def side(args, name, threads, blas):
    env = common.torch_env(blas)
    out = common.run([sys.executable, os.path.abspath(__file__), "--worker",
                      "--side", name, "--point", args.point_name,
                      "--reps", str(args.reps), "--torch-threads",
                      str(threads)], env=env)
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--points", default="small,issue,large")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--side")
    ap.add_argument("--point")
    ap.add_argument("--torch-threads", type=int, default=2)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    os.environ.setdefault("MUIR_BUILD_DIR", os.path.abspath(args.build))
    env = common.torch_env("2")
    out = common.run([os.path.join(args.build, "bin", "muir-sgemm-rate")],
                     env=env)
    m = re.search(r"sgemm_gflops ([\d.]+)", out)
    rate = float(m.group(1)) if m else None
    print("sgemm rate %.1f GFLOP/s (OPENBLAS_NUM_THREADS=2)" % (rate or 0))
    print("point  tokens hidden ffn experts k | muir ms  peak MB | "
          "hf ms (setting) peak MB | sorted ms (setting) peak MB | "
          "speedup vs faster | muir fraction of sgemm")
    for name in args.points.split(","):
        args.point_name = name
        T, H, FF, E, K = POINTS[name]
        m = side(args, "muir", 2, "2")
        peers = {}
        for peer in ("hf", "sorted"):
            best = None
            for label, threads, blas in common.TORCH_SETTINGS:
                r = side(args, peer, threads, blas)
                if best is None or r["ms"] < best[0]["ms"]:
                    best = (r, label)
            peers[peer] = best
        faster = min(peers.values(), key=lambda p: p[0]["ms"])
        flops = 3 * 6.0 * T * K * H * FF + 6.0 * T * H * E
        frac = ""
        if rate:
            frac = "%.2f" % (flops / (m["ms"] * 1e-3) / (rate * 1e9))
        print("%-6s %6d %6d %4d %7d %d | %7.1f %7.0f | %7.1f (%s) %5.0f | "
              "%7.1f (%s) %5.0f | %.2fx | %s"
              % (name, T, H, FF, E, K, m["ms"], m["peak_mb"],
                 peers["hf"][0]["ms"], peers["hf"][1],
                 peers["hf"][0]["peak_mb"], peers["sorted"][0]["ms"],
                 peers["sorted"][1], peers["sorted"][0]["peak_mb"],
                 faster[0]["ms"] / m["ms"], frac))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
