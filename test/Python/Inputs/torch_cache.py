"""muir.torch.Muon keeps compiled CPU steps on disk (muir's cache-dir):
the first process compiles and writes one shared library, a second one
with the same model and settings (but another lr schedule position: the
lr is an argument, not part of the description) loads it without writing
anything, and a process without the cache (JIT) gets bitwise the same
results as both.

  torch_cache.py run OUT [LR_SCALE]    3 steps; OUT gets the parameters
  torch_cache.py compare A B ...       bitwise equal
"""
import glob
import os
import sys

import torch

import muir.torch
import torchtest as tt


def files(cache):
    return {f: (os.stat(f).st_ino, os.stat(f).st_mtime_ns)
            for f in glob.glob(os.path.join(cache, "*"))} if cache else {}


def run(out, scale):
    cache = os.environ.get("MUIR_CACHE_DIR", "")
    before = files(cache)
    model = tt.make_model()
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1)
    for group in opt.param_groups:
        group["lr"] *= scale
    for step in range(1, 4):
        tt.train_step(model, opt, step)
    after = files(cache)
    kept = sorted(f for f in after if before.get(f) == after[f])
    print("cache %s: %d file(s) before, %d after, %d unchanged" % (
        "on" if cache else "off", len(before), len(after), len(kept)))
    torch.save({n: p.detach().clone() for n, p in model.named_parameters()},
               out)


def compare(paths):
    fail = tt.Failures("torch-cache")
    runs = [torch.load(p) for p in paths]
    for path, r in zip(paths[1:], runs[1:]):
        for n, t in runs[0].items():
            fail.check(torch.equal(t, r[n]), "%s: %s differs from %s" % (
                os.path.basename(path), n, os.path.basename(paths[0])))
    print("%d runs bitwise equal" % len(runs))
    fail.finish()


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
    else:
        compare(sys.argv[2:])
