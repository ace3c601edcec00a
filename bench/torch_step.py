#!/usr/bin/env python3
"""The optimizer step through muir.torch against eager PyTorch and muir-run.

One optimizer step (Muon for the 2-D and 3-D weights, AdamW for the rest),
fp32, on the CPU, for these parameter sets:

  tiny-moe     the Muon matrices of examples/tiny-moe.yaml (as in
               bench/ns_sets.py): per layer q, k, v, o_proj 256x256 and
               the expert stacks gate_proj, up_proj [8, 512, 256] and
               down_proj [8, 256, 512]; 2 layers, 56 matrices;
  qwen3-small  a Qwen3-style small MoE (2 layers, hidden 512, GQA with 8
               query and 2 key/value heads of 64, q/k norms, 16 experts of
               intermediate size 128, router `mlp.gate`, vocabulary 8192,
               untied embedding and lm_head): 106 Muon matrices (many small
               experts) and the AdamW embedding, head and norms;
  small-400    400 small tensors (200 linear layers 64x64 and their
               biases): muir.torch's per-tensor costs.

  * muir.torch: muir.torch.Muon over torch tensors (parameters N(0, 0.02^2),
    gradients N(0, 1)), two warm-up steps (the first compiles), the fastest of
    --steps timed opt.step() calls, OPENBLAS_NUM_THREADS=2; this includes
    everything muir.torch does per step (checks, binding, hyperparameters);
    its on-disk cache of compiled steps is a folder of the run's own.
  * muir-run: the same description (written by the optimizer:
    opt.description()) run by `muir-run desc.json --steps K --quiet
    --no-probes --check-finite=false` (muir.torch checks no values) at
    OPENBLAS_NUM_THREADS=2; its min_ms.
  * eager: the same step in eager PyTorch, a loop over the parameters
    (momentum, Nesterov, NS5 on the wide form, spectral scale, decoupled
    weight decay; AdamW in place), best of --steps after a warm-up, at both
    thread settings of bench/common.py (torch.set_num_threads(2);
    torch.set_num_threads(1) with OPENBLAS_NUM_THREADS=2), the faster
    reported. Two variants: `loop`, Newton-Schulz per matrix written as
    NVIDIA Emerging-Optimizers does (addmm; an expert stack matrix by
    matrix), the baseline of the goal and of bench/ns_sets.py; and
    `batched`, each stack's matrices at once (baddbmm), for reference.
  Each side runs in its own process, --rounds times (default 3),
  interleaved, best of each.

Goals (issue 18): muir.torch within 5% of muir-run (no hidden copies), and
at least 1.3x faster than eager; issue 38: qwen3-small (16.9M parameters)
at least 1.4x the eager loop, Python per tensor per step <= 2 us.

Run:  PYTHONPATH=python .venv/bin/python bench/torch_step.py --build build
"""
import argparse
import json
import math
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

REPO = os.path.dirname(HERE)


def tiny_moe():
    params = []
    for layer in range(2):
        base = "layers.%d." % layer
        for proj in ("q", "k", "v", "o_proj"):
            params.append((base + "attn." + proj, (256, 256)))
        params += [(base + "moe.experts.gate_proj", (8, 512, 256)),
                   (base + "moe.experts.up_proj", (8, 512, 256)),
                   (base + "moe.experts.down_proj", (8, 256, 512))]
    return params


def qwen3_small(layers=2, hidden=512, heads=8, kv_heads=2, head_dim=64,
                experts=16, intermediate=128, vocab=8192):
    params = [("model.embed_tokens.weight", (vocab, hidden))]
    for layer in range(layers):
        b = "model.layers.%d." % layer
        params += [
            (b + "input_layernorm.weight", (hidden,)),
            (b + "self_attn.q_proj.weight", (heads * head_dim, hidden)),
            (b + "self_attn.k_proj.weight", (kv_heads * head_dim, hidden)),
            (b + "self_attn.v_proj.weight", (kv_heads * head_dim, hidden)),
            (b + "self_attn.o_proj.weight", (hidden, heads * head_dim)),
            (b + "self_attn.q_norm.weight", (head_dim,)),
            (b + "self_attn.k_norm.weight", (head_dim,)),
            (b + "post_attention_layernorm.weight", (hidden,)),
            (b + "mlp.gate.weight", (experts, hidden)),
            (b + "mlp.experts.gate_proj", (experts, intermediate, hidden)),
            (b + "mlp.experts.up_proj", (experts, intermediate, hidden)),
            (b + "mlp.experts.down_proj", (experts, hidden, intermediate)),
        ]
    params += [("model.norm.weight", (hidden,)),
               ("lm_head.weight", (vocab, hidden))]
    return params


def qwen3_layer():
    # bench/ns_sets.py's "qwen3-layer": one Qwen3-30B-A3B layer's attention
    # and the first 8 experts of each stack (slow: seconds a step).
    b = "model.layers.0."
    return [(b + "self_attn.q_proj.weight", (4096, 2048)),
            (b + "self_attn.k_proj.weight", (512, 2048)),
            (b + "self_attn.v_proj.weight", (512, 2048)),
            (b + "self_attn.o_proj.weight", (2048, 4096)),
            (b + "mlp.experts.gate_proj", (8, 768, 2048)),
            (b + "mlp.experts.up_proj", (8, 768, 2048)),
            (b + "mlp.experts.down_proj", (8, 2048, 768))]


def small_400():
    # 400 small tensors (200 linear layers 64x64 with their biases): the
    # per-tensor costs of muir.torch (Python per step, compile at the
    # first step) rather than the arithmetic.
    params = []
    for layer in range(200):
        params += [("blocks.%d.weight" % layer, (64, 64)),
                   ("blocks.%d.bias" % layer, (64,))]
    return params


SETS = {"tiny-moe": tiny_moe, "qwen3-small": qwen3_small,
        "qwen3-layer": qwen3_layer, "small-400": small_400}
DEFAULT_SETS = ["tiny-moe", "qwen3-small", "small-400"]
FORMAT = ("%-12s %5d %5d %9.1f %10.1f %9.3f %9.1f %7s %10.2f %9.1f %7s "
          "%10.2f %7.2f %7.2f %7.2f")
SETTINGS = dict(lr=0.02, weight_decay=0.1, adamw_lr=3e-4,
                adamw_weight_decay=0.1)


def make_tensors(torch, name):
    torch.manual_seed(0)
    params = []
    for pname, shape in SETS[name]():
        p = torch.nn.Parameter(torch.randn(shape) * 0.02)
        p.grad = torch.randn(shape)
        params.append((pname, p))
    return params


# --------------------------------------------------------------------------
# workers (each in its own process)
# --------------------------------------------------------------------------

def muir_worker(args):
    import torch
    import muir.torch

    params = make_tensors(torch, args.set)
    # --precision bf16: muir's bfloat16 Newton-Schulz (bf16 iterate, f32
    # accumulation: oneDNN's bf16 products), as torch.optim.Muon iterates.
    extra = {"ns_precision": "bf16"} if args.precision == "bf16" else {}
    opt = muir.torch.Muon(params, **SETTINGS, **extra)
    ptrs = [p.data_ptr() for _, p in params]
    t0 = time.perf_counter()
    opt.step()                                    # compiles
    first = time.perf_counter() - t0
    opt.step()                                    # warms the heap
    best_ms = common.fastest_ms(opt.step, args.steps)
    assert ptrs == [p.data_ptr() for _, p in params], "parameters moved"
    if args.description:
        with open(args.description, "w") as f:
            f.write(opt.description())
    # muir.torch's own time per tensor: opt.step() with the compiled
    # step's run replaced by nothing (its checks, the non-finite scan,
    # binding, hyperparameters and state bookkeeping remain).
    held = list(opt._cache.values())
    for c in held:
        c.step.run = lambda *a: None
    own_ms = common.fastest_ms(opt.step, args.steps)
    opt.check_finite = False
    python_ms = common.fastest_ms(opt.step, args.steps)
    opt.check_finite = True
    for c in held:
        del c.step.run
    muon = len(opt.param_groups[0]["params"])
    print(json.dumps({"ms": best_ms, "first_ms": first * 1e3,
                      "python_us": python_ms * 1e3 / len(params),
                      "scan_ms": max(own_ms - python_ms, 0.0),
                      "elements": sum(p.numel() for _, p in params),
                      "muon": muon,
                      "adamw": len(opt.param_groups[1]["params"])}))
    return 0


PEERS = ("torch.optim.Muon", "torch.compile", "emerging-optimizers",
         "foreach")


def peer_params(torch, name, split_stacks):
    """The set's tensors as the peers take them: (muon, adamw) lists of
    Parameters with gradients; split_stacks: each expert matrix of a 3-D
    stack as its own 2-D Parameter (a view of the stack, gradient a view of
    its gradient: torch.optim.Muon and Emerging-Optimizers take 2-D
    parameters only), as a model of per-expert nn.Linear holds them."""
    sys.path.insert(0, os.path.join(REPO, "python"))
    from muir.description import assign
    muon, adamw = [], []
    for n, p in make_tensors(torch, name):
        if assign(n, tuple(p.shape))[0] != "muon":
            adamw.append(p)
        elif p.dim() == 3 and split_stacks:
            for e in range(p.shape[0]):
                q = torch.nn.Parameter(p.data[e])
                q.grad = p.grad[e]
                muon.append(q)
        else:
            muon.append(p)
    return muon, adamw


def torch_worker(args):
    """One peer at one thread setting: {"ms": best step, "first_ms": the
    first step (torch.compile's compile included)}."""
    import torch

    torch.set_num_threads(args.torch_threads)
    lr, wd = SETTINGS["lr"], SETTINGS["weight_decay"]
    alr, awd = SETTINGS["adamw_lr"], SETTINGS["adamw_weight_decay"]
    peer = args.peer
    muon, adamw = peer_params(torch, args.set, peer != "foreach")
    opts = [torch.optim.AdamW(adamw, lr=alr, betas=(0.9, 0.95), eps=1e-8,
                              weight_decay=awd)] if adamw else []
    if peer in ("torch.optim.Muon", "torch.compile"):
        # torch's own Muon (its Newton-Schulz in bfloat16, as shipped),
        # match_rms_adamw: the same update scale as muir's spectral 0.2.
        opts.insert(0, torch.optim.Muon(muon, lr=lr, weight_decay=wd,
                                        momentum=0.95, nesterov=True,
                                        adjust_lr_fn="match_rms_adamw"))
    elif peer == "emerging-optimizers":
        from emerging_optimizers.orthogonalized_optimizers.muon import Muon
        # args.precision: "highest" float32 (muir's), "medium" bfloat16.
        opts.insert(0, Muon(muon, lr=lr, momentum=0.95, weight_decay=wd,
                            nesterov=True, fp32_matmul_prec=args.precision,
                            coefficient_type="simple", num_ns_steps=5,
                            scale_mode="spectral", extra_scale_factor=0.2))
    else:
        opts.insert(0, _ForeachMuon(torch, muon, lr, wd))

    def plain():
        for o in opts:
            o.step()
    step = plain
    if peer == "torch.compile":
        step = torch.compile(plain)
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    step()
    print(json.dumps({"ms": common.fastest_ms(step, args.steps),
                      "first_ms": first * 1e3}))
    return 0


class _ForeachMuon:
    """Muon written from the algorithm as a PyTorch user would batch it:
    momentum and update by torch._foreach ops over all matrices, and
    Newton-Schulz (simple coefficients, 5 steps, float32) once per shape:
    the matrices of one shape (a 3-D stack's experts, a layer's same-sized
    projections) stacked and iterated with baddbmm on the wide form."""

    def __init__(self, torch, params, lr, wd):
        self.torch, self.lr, self.wd = torch, lr, wd
        self.params = params
        self.bufs = [torch.zeros_like(p) for p in params]
        groups = {}
        for i, p in enumerate(params):
            groups.setdefault(tuple(p.shape[-2:]), []).append(i)
        self.groups = list(groups.items())

    def _ns(self, x):
        torch = self.torch
        a, b, c = 3.4445, -4.7750, 2.0315
        x = x / (torch.linalg.matrix_norm(x, keepdim=True) + 1e-7)
        tall = x.shape[-2] > x.shape[-1]
        if tall:
            x = x.mT
        for _ in range(5):
            gram = x @ x.mT
            gram = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)
            x = torch.baddbmm(x, gram, x, beta=a, alpha=1.0)
        return x.mT if tall else x

    def step(self):
        torch = self.torch
        with torch.no_grad():
            grads = [p.grad for p in self.params]
            torch._foreach_lerp_(self.bufs, grads, 1 - 0.95)
            upd = torch._foreach_lerp(grads, self.bufs, 0.95)
            torch._foreach_mul_(self.params, 1 - self.lr * self.wd)
            for (m, n), idx in self.groups:
                flat = []
                for i in idx:
                    u = upd[i]
                    flat.append(u.reshape(-1, m, n))
                o = self._ns(torch.cat(flat))
                k = 0
                scale = -self.lr * 0.2 * math.sqrt(max(m, n))
                for i in idx:
                    cnt = upd[i].numel() // (m * n)
                    self.params[i].add_(o[k:k + cnt].reshape(
                        self.params[i].shape), alpha=scale)
                    k += cnt


# --------------------------------------------------------------------------

def best_peer(name, peer, steps):
    """(ms, first_ms, label) of `peer` at its best setting: torch's threads
    1 and 2 (PyPI's torch computes with MKL and oneDNN, not OpenBLAS), and
    for Emerging-Optimizers its float32 ("highest") and bfloat16 ("medium",
    its default) Newton-Schulz."""
    best = None
    precisions = ("highest", "medium") if peer == "emerging-optimizers" \
        else ("highest",)
    for threads in (1, 2):
        for precision in precisions:
            out = common.run([sys.executable, os.path.abspath(__file__),
                              "--torch-worker", "--torch-threads",
                              str(threads), "--peer", peer, "--set", name,
                              "--steps", str(steps), "--precision",
                              precision], env=common.torch_env(None))
            r = json.loads(out.strip().splitlines()[-1])
            label = "t%d" % threads + ("" if len(precisions) == 1 else
                                       " " + ("fp32" if precision ==
                                              "highest" else "bf16"))
            if best is None or r["ms"] < best[0]:
                best = (r["ms"], r["first_ms"], label)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.environ.get("MUIR_BUILD_DIR",
                                                      os.path.join(REPO,
                                                                   "build")))
    ap.add_argument("--steps", type=int, default=5,
                    help="timed steps per process (after a warm-up)")
    ap.add_argument("--sets", nargs="*", default=DEFAULT_SETS,
                    choices=list(SETS))
    ap.add_argument("--peers", nargs="*", default=list(PEERS),
                    choices=list(PEERS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-worker", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--muir-worker", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help=argparse.SUPPRESS)
    ap.add_argument("--set", help=argparse.SUPPRESS)
    ap.add_argument("--description", help=argparse.SUPPRESS)
    ap.add_argument("--peer", default="foreach", help=argparse.SUPPRESS)
    ap.add_argument("--precision", default="highest", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if args.muir_worker:
        return muir_worker(args)

    build = os.path.abspath(args.build)
    runner = os.path.join(build, "bin", "muir-run")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", MUIR_BUILD_DIR=build)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python")] +
        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    t_start = time.time()
    import torch
    print("optimizer step (Muon + AdamW), fp32 parameters, CPU (2 cores), "
          "torch %s; best of %d steps, %d alternating rounds"
          % (torch.__version__, args.steps, args.rounds))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # muir.torch's compiled steps: kept in the run's own folder (the
        # first round compiles and writes them, later rounds load them).
        env["MUIR_CACHE_DIR"] = os.path.join(tmp, "cache")
        for name in args.sets:
            desc = os.path.join(tmp, name + ".json")
            best = {}
            first = {}
            info = None

            def keep(key, ms, label=""):
                if key not in best or ms < best[key][0]:
                    best[key] = (ms, label)
            for _ in range(args.rounds):
                out = common.run([sys.executable, os.path.abspath(__file__),
                                  "--muir-worker", "--set", name,
                                  "--steps", str(args.steps),
                                  "--description", desc], env=env)
                info = json.loads(out.strip().splitlines()[-1])
                keep("muir.torch", info["ms"])
                # The first round compiles (later ones load the cache).
                first.setdefault("muir.torch", info["first_ms"])
                out = common.run([sys.executable, os.path.abspath(__file__),
                                  "--muir-worker", "--set", name,
                                  "--steps", str(args.steps),
                                  "--precision", "bf16"], env=env)
                bf = json.loads(out.strip().splitlines()[-1])
                keep("muir.torch bf16", bf["ms"])
                first.setdefault("muir.torch bf16", bf["first_ms"])
                out = common.run([runner, desc, "--steps",
                                  str(args.steps + 1), "--quiet",
                                  "--no-probes", "--check-finite=false"],
                                 env=env)
                keep("muir-run", float(re.search(r"min_ms ([\d.]+)",
                                                 out).group(1)))
                for peer in args.peers:
                    ms, first_ms, label = best_peer(name, peer, args.steps)
                    keep(peer, ms, label)
                    first[peer] = max(first.get(peer, 0.0), first_ms)
            mt = best["muir.torch"][0]
            fastest = min(args.peers, key=lambda k: best[k][0])
            rows.append((name, mt, fastest, best[fastest][0] / mt,
                         best[fastest][0] / best["muir.torch bf16"][0]))
            print("\n%s: %d Muon and %d AdamW tensors, %.1fM elements"
                  % (name, info["muon"], info["adamw"],
                     info["elements"] / 1e6))
            print("  %-22s %9s %8s %10s %12s" % ("", "ms/step", "setting",
                                                 "x muir", "first step s"))
            for key in ["muir.torch", "muir.torch bf16", "muir-run"] + \
                    list(args.peers):
                ms, label = best[key]
                print("  %-22s %9.2f %8s %10.2f %12s"
                      % (key, ms, label, ms / mt,
                         "%.2f" % (first[key] / 1e3) if key in first
                         else ""))
            print("  muir.torch's Python per tensor per step %.2f us; "
                  "non-finite scan %.2f ms" % (info["python_us"],
                                               info["scan_ms"]))
    print("\n(x muir: the row's time / muir.torch's (float32 Newton-"
          "Schulz), > 1 where muir is faster; muir.torch bf16: its "
          "ns_precision=\"bf16\" (bf16 iterate, f32 accumulation), the "
          "precision torch.optim.Muon and Emerging-Optimizers' default "
          "iterate in; goal (issue 57): the fastest peer >= 1.5. first step: "
          "the slowest round's first step, torch.compile's compile and "
          "muir's compile included; muir.torch's later rounds load its "
          "cache. torch.optim.Muon and Emerging-Optimizers take each expert "
          "of a 3-D stack as its own 2-D parameter; foreach batches every "
          "same-shaped matrix into one baddbmm Newton-Schulz)")
    for name, mt, fastest, ratio, ratio_bf16 in rows:
        print("%s: fastest peer %s, %.2fx muir.torch's time (float32 "
              "Newton-Schulz), %.2fx muir.torch bf16's: goal %s"
              % (name, fastest, ratio, ratio_bf16,
                 "met" if max(ratio, ratio_bf16) >= 1.5 else "NOT met"))
    print("%.0f s" % (time.time() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
