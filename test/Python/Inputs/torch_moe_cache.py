"""muir.torch.MoE keeps its compiled CPU passes on disk as muir.torch.Muon
keeps its steps (muir's cache-dir): the first process compiles and writes a
forward and a backward pass per token bound, a second one with the same
layer loads them without writing anything, and a process without the cache
(JIT) gets bitwise the same outputs and gradients as both.

  torch_moe_cache.py run OUT        two batches (two bounds), forward and
                                    backward; OUT gets y, dx and the grads
  torch_moe_cache.py compare A B ...  bitwise equal
"""
import glob
import os
import sys

import torch

import muir.torch as mt


def files(cache):
    return {f: (os.stat(f).st_ino, os.stat(f).st_mtime_ns)
            for f in glob.glob(os.path.join(cache, "*"))} if cache else {}


def run(out):
    cache = os.environ.get("MUIR_CACHE_DIR", "")
    before = files(cache)
    torch.manual_seed(0)
    layer = mt.MoE(hidden=32, expert_size=16, experts=8, top_k=2,
                   shared_experts=1, capacity_factor=1.25)
    got = {}
    for tokens in (100, 300):             # bounds 128 and 512
        x = torch.randn(tokens, 32, requires_grad=True)
        layer.zero_grad()
        y = layer(x)
        (y * torch.randn_like(y)).sum().backward()
        got["y%d" % tokens] = y.detach()
        got["dx%d" % tokens] = x.grad
        for n, p in layer.named_parameters():
            got["%s%d" % (n, tokens)] = p.grad.clone()
    after = files(cache)
    kept = sorted(f for f in after if before.get(f) == after[f])
    print("cache %s: %d file(s) before, %d after, %d unchanged" % (
        "on" if cache else "off", len(before), len(after), len(kept)))
    torch.save(got, out)


def compare(paths):
    runs = [torch.load(p) for p in paths]
    bad = [(os.path.basename(p), n) for p, r in zip(paths[1:], runs[1:])
           for n, t in runs[0].items() if not torch.equal(t, r[n])]
    for p, n in bad:
        print("%s: %s differs" % (p, n))
    print("%d runs bitwise equal (%d tensors)" % (len(runs), len(runs[0]))
          if not bad else "runs differ")
    print("torch-moe-cache: %s" % ("PASS" if not bad else "FAIL"))


if sys.argv[1] == "run":
    run(sys.argv[2])
else:
    compare(sys.argv[2:])
