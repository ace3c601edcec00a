#!/usr/bin/env python3
"""PyTorch eager on the GPU, the peer of bench/gpu/check.sh: the same Muon
step as muir's (EMA momentum with Nesterov, Frobenius normalisation, five
Newton-Schulz iterations with coefficients (3.4445, -4.775, 2.0315) on the
wide orientation, spectral scale 0.2 sqrt(max(m, n)), decoupled weight
decay) for the cases of bench/gpu/cases, in fp32 (TF32 off) and with the
Newton-Schulz iterations in bf16 (as Keller Jordan's Muon and NVIDIA's
Emerging-Optimizers run them); expert stacks as batched products. Also
cuBLAS's GEMM rate through torch.mm on 8192^3, fp32 and bf16, and the
peer of the MoE layer of cases/qwen3-moe.yaml trained in the step (4096
tokens, 128 experts of 768, top-8, hidden 2048, fp32): the teacher's
forward, the student's forward, the loss and autograd's backward, written
as PyTorch MoE layers are by hand (softmax router, top-k, tokens sorted by
expert, one SwiGLU per expert over its rows, weighted index_add_ combine),
in fp32 and in bf16; in bf16 also the strongest peers this PyTorch has:
the expert products as torch._grouped_mm (offsets on the device, no host
sync; PyTorch 2.8 and later) and, with --compile, that layer under
torch.compile. A peer this PyTorch lacks or refuses is recorded with its
error instead of a time. Prints one JSON object."""
import json
import sys
import traceback

import torch

A, B, C = 3.4445, -4.7750, 2.0315
CASES = {
    "ns8192": [(8192, 8192)],
    "qwen3-layer": [(4096, 2048), (512, 2048), (512, 2048), (2048, 4096),
                    (128, 768, 2048), (128, 768, 2048), (128, 2048, 768)],
}


def muon_step(W, G, M, ns_dtype):
    M.mul_(0.95).add_(G, alpha=0.05)
    U = G.mul(0.05).add_(M, alpha=0.95)
    X = U / (torch.linalg.vector_norm(U, dim=(-2, -1), keepdim=True) + 1e-7)
    tall = X.size(-2) > X.size(-1)
    if tall:
        X = X.mT
    X = X.to(ns_dtype)
    for _ in range(5):
        S = X @ X.mT
        Bm = B * S + C * (S @ S)
        X = A * X + Bm @ X
    X = X.to(torch.float32)
    if tall:
        X = X.mT
    m, n = W.shape[-2], W.shape[-1]
    W.mul_(1 - 0.02 * 0.1).add_(X, alpha=-0.02 * 0.2 * max(m, n) ** 0.5)


def moe_forward(x, router, gate, up, down, k):
    """A routed SwiGLU MoE layer as hand-written PyTorch runs it: the
    tokens sorted by expert (the counts read on the host), one product
    chain per expert, the outputs weighted and added back per token."""
    probs = torch.softmax(x @ router.mT, dim=-1)
    weights, idx = torch.topk(probs, k, dim=-1)
    flat = idx.flatten()
    order = torch.argsort(flat, stable=True)
    token = order // k
    counts = torch.bincount(flat, minlength=router.size(0)).tolist()
    rows = x[token]
    outs = []
    for e, xe in enumerate(rows.split(counts)):
        if xe.size(0):
            h = torch.nn.functional.silu(xe @ gate[e].mT) * (xe @ up[e].mT)
            outs.append(h @ down[e].mT)
    y = torch.cat(outs) * weights.flatten()[order].unsqueeze(1)
    return torch.zeros_like(x).index_add_(0, token, y)


def moe_forward_grouped(x, router, gate, up, down, k):
    """The same layer with the expert products as torch._grouped_mm over
    the rows sorted by expert (cumulative counts as int32 offsets on the
    device): no host sync, so torch.compile can take it whole."""
    probs = torch.softmax(x @ router.mT, dim=-1)
    weights, idx = torch.topk(probs, k, dim=-1)
    flat = idx.flatten()
    order = torch.argsort(flat, stable=True)
    token = order // k
    offs = torch.cumsum(torch.bincount(flat, minlength=router.size(0)),
                        0).to(torch.int32)
    rows = x[token]
    h = torch.nn.functional.silu(torch._grouped_mm(rows, gate.mT, offs=offs)) \
        * torch._grouped_mm(rows, up.mT, offs=offs)
    y = torch._grouped_mm(h, down.mT, offs=offs) \
        * weights.flatten()[order].unsqueeze(1).to(h.dtype)
    return torch.zeros_like(x).index_add_(0, token, y)


def moe_step(x, teacher, student, k, forward=moe_forward):
    with torch.no_grad():
        target = forward(x, *teacher, k)
    out = forward(x, *student, k)
    loss = 0.5 * ((out - target) ** 2).sum(dim=-1).mean()
    loss.backward()


def timed(fn, reps=5, warmup=2):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
            enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[0], times[len(times) // 2]


def dense(out, dev):
    """cuBLAS's GEMM rates and the Muon cases, fp32 and bf16."""
    with torch.no_grad():
        for dtype, name in [(torch.float32, "fp32"), (torch.bfloat16, "bf16")]:
            a = torch.randn(8192, 8192, device=dev, dtype=dtype)
            b = torch.randn(8192, 8192, device=dev, dtype=dtype)
            best, _ = timed(lambda: torch.mm(a, b), reps=10, warmup=3)
            out["gemm_tflops"][name] = 2 * 8192 ** 3 / (best * 1e-3) / 1e12
            del a, b
        for case, shapes in CASES.items():
            params = []
            for shape in shapes:
                W = torch.randn(*shape, device=dev) * 0.02
                G = torch.randn(*shape, device=dev)
                params.append((W, G, torch.zeros_like(W)))
            for dtype, name in [(torch.float32, "fp32"),
                                (torch.bfloat16, "bf16")]:
                def step():
                    for W, G, M in params:
                        muon_step(W, G, M, dtype)
                best, median = timed(step)
                out["cases"]["%s/%s" % (case, name)] = {"min_ms": best,
                                                        "median_ms": median}
            del params
            torch.cuda.empty_cache()


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
           "cases": {}, "gemm_tflops": {}}
    # With --compile, only the MoE layer under torch.compile (a run of its
    # own, under its own timeout in check.sh).
    compile_only = "--compile" in sys.argv
    if not compile_only:
        dense(out, dev)
    # The MoE layer trained in the step (cases/qwen3-moe.yaml).
    E, K, T, H, F = 128, 8, 4096, 2048, 768
    out["moe"] = {}
    for dtype, name in [(torch.float32, "fp32"), (torch.bfloat16, "bf16")]:
        if compile_only and dtype != torch.bfloat16:
            continue
        x = torch.randn(T, H, device=dev, dtype=dtype)

        def layer(requires_grad):
            shapes = [(E, H), (E, F, H), (E, F, H), (E, H, F)]
            return [(torch.randn(*s, device=dev) / s[-1] ** 0.5).to(
                dtype).requires_grad_(requires_grad) for s in shapes]
        teacher, student = layer(False), layer(True)
        peers = []
        if not compile_only:
            peers.append(("loop", moe_forward))
            if dtype == torch.bfloat16:
                peers.append(("grouped_mm", moe_forward_grouped))
        elif dtype == torch.bfloat16:
            peers.append(("grouped_mm_compiled",
                          torch.compile(moe_forward_grouped)))
        for peer, forward in peers:
            key = name if peer == "loop" else "%s/%s" % (name, peer)
            try:
                best, median = timed(
                    lambda: moe_step(x, teacher, student, K, forward))
                out["moe"][key] = {"min_ms": best, "median_ms": median}
            except Exception as e:  # a peer this PyTorch lacks
                out["moe"][key] = {"error": traceback.format_exception_only(
                    type(e), e)[-1].strip()[:300]}
        del x, teacher, student
        torch.cuda.empty_cache()
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
