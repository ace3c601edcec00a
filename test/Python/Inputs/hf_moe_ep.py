"""muir.hf's drop-in with ep=2 under mpirun: every rank builds the same
transformers MoE block (Qwen3-MoE; DeepSeek-V3 with its shared experts and
a nonzero e_score_correction_bias), replaces it with MoEBlock(block, ep=2)
(rank r takes experts [r E/2, (r+1) E/2)) and runs its own tokens. Against
the HF block in one process on every rank's tokens (float32, eager
experts): each rank's output and input gradient, and the gradients of the
experts it holds (which sum over every rank's tokens) within 1e-5; the
router's and shared experts' gradients within 1e-5 of the HF block's on
the rank's own tokens (average them over the ranks, as DDP does); to_hf
writes each rank's rows back exactly.

  hf_moe_ep.py ep DIR        (under mpirun -n 2) each rank saves its part
  hf_moe_ep.py compare DIR   the HF block here, against both parts
"""
import os
import sys

import torch
import transformers

import muir.hf

from transformers import DeepseekV3Config, Qwen3MoeConfig
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds3
from transformers.models.qwen3_moe import modeling_qwen3_moe as q3

transformers.logging.set_verbosity_error()
H, I, TOKENS = 32, 24, (29, 40)
FAMILIES = {
    "qwen3_moe": (lambda: Qwen3MoeConfig(
        hidden_size=H, moe_intermediate_size=I, num_experts=8,
        num_experts_per_tok=2, norm_topk_prob=True),
        q3.Qwen3MoeSparseMoeBlock),
    "deepseek_v3": (lambda: DeepseekV3Config(
        hidden_size=H, moe_intermediate_size=I, n_routed_experts=16,
        num_experts_per_tok=4, n_group=4, topk_group=2, n_shared_experts=2,
        routed_scaling_factor=2.5, norm_topk_prob=True),
        ds3.DeepseekV3MoE),
}


def block(family):
    config = FAMILIES[family][0]()
    config._experts_implementation = "eager"
    torch.manual_seed(1)
    b = FAMILIES[family][1](config)
    with torch.no_grad():
        for _, p in sorted(b.named_parameters()):
            p.normal_(0.0, 0.2)
        for name, t in b.named_buffers():
            if name.endswith("e_score_correction_bias"):
                t.copy_(torch.randn(t.shape) * 0.1)
    return b


def data(rank):
    torch.manual_seed(100 + rank)
    return torch.randn(1, TOKENS[rank], H), torch.randn(1, TOKENS[rank], H)


def grads(module):
    return {n: p.grad.clone() for n, p in module.named_parameters()
            if p.grad is not None}


def ep(path):
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    out = {}
    for family in FAMILIES:
        drop = muir.hf.MoEBlock(block(family), ep=2)
        x, dy = data(rank)
        x.requires_grad_(True)
        y = drop(x)
        (y * dy).sum().backward()
        out[family] = {"y": y.detach(), "dx": x.grad,
                       "grads": grads(drop.moe),
                       "rows": muir.hf._rows(drop.moe)}
        back = block(family)
        with torch.no_grad():
            for p in back.parameters():
                p.zero_()
        drop.moe.to_hf(back)
        out[family]["to_hf"] = {n: p.detach().clone()
                                for n, p in back.named_parameters()}
        lo, hi = out[family]["rows"]
        print("rank %d: %s experts %d-%d, %d tokens" % (
            rank, family, lo, hi - 1, TOKENS[rank]), flush=True)
    torch.save(out, os.path.join(path, "rank%d.pt" % rank))


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def compare(path):
    parts = [torch.load(os.path.join(path, "rank%d.pt" % r))
             for r in range(2)]
    failures = []
    worst = 0.0
    for family in FAMILIES:
        hf = block(family)
        xs, dys = zip(*(data(r) for r in range(2)))
        x = torch.cat(xs, 1).requires_grad_(True)
        y = hf(x)
        (y * torch.cat(dys, 1)).sum().backward()
        names = muir.hf.MoEBlock(block(family)).moe
        whole = {"gate_proj.grad": hf.experts.gate_up_proj.grad[:, :I],
                 "up_proj.grad": hf.experts.gate_up_proj.grad[:, I:],
                 "down_proj.grad": hf.experts.down_proj.grad}
        start = 0
        for r, part in enumerate(p[family] for p in parts):
            rows = slice(start, start + TOKENS[r])
            start += TOKENS[r]
            lo, hi = part["rows"]
            checks = [("y", part["y"], y.detach()[:, rows]),
                      ("dx", part["dx"], x.grad[:, rows])]
            for n, want in whole.items():
                checks.append((n, part["grads"][n[:-5]], want[lo:hi]))
            # The router's and shared experts' gradients: the rank's own
            # tokens'.
            own = block(family)
            xo, dyo = data(r)
            (own(xo) * dyo).sum().backward()
            checks.append(("router.grad", part["grads"]["router"],
                           own.gate.weight.grad))
            if family == "deepseek_v3":
                sh = own.shared_experts
                for n, w in (("shared_gate_proj", sh.gate_proj),
                             ("shared_up_proj", sh.up_proj),
                             ("shared_down_proj", sh.down_proj)):
                    checks.append((n + ".grad", part["grads"][n],
                                   w.weight.grad))
            for what, got, want in checks:
                e = rel(got, want)
                worst = max(worst, e)
                if not e <= 1e-5:
                    failures.append("%s rank %d %s (%.2e)"
                                    % (family, r, what, e))
            back = part["to_hf"]
            src = block(family).experts
            exact = torch.equal(back["experts.gate_up_proj"][lo:hi],
                                src.gate_up_proj[lo:hi].detach()) and \
                torch.equal(back["experts.down_proj"][lo:hi],
                            src.down_proj[lo:hi].detach())
            if not exact:
                failures.append("%s rank %d to_hf" % (family, r))
        print("%s: ep=2 output, input gradient and every gradient within "
              "1e-5 of the HF block; to_hf writes each rank's rows exactly"
              % family)
        del names
    print("largest relative difference below 1e-5: %s" % (worst <= 1e-5))
    print("hf-moe-ep: %s" % ("PASS" if not failures else
                             "FAIL: " + ", ".join(failures)))


if sys.argv[1] == "ep":
    ep(sys.argv[2])
else:
    compare(sys.argv[2])
