"""muir.torch.MoE expert-parallel: under `mpirun -n 2`, ep=2 (rank r holds
experts [4r, 4r + 4) of 8, passes its own tokens: 40 on rank 0, 29 on
rank 1) against one rank (ep=1) on both ranks' tokens concatenated in rank
order. y, dx and every expert's gradients must be bitwise equal, and so
must the experts after one muir.torch.Muon step (each rank steps its own
experts: the stacks are split over ep in its step, never shared out); the
router's gradient is from the rank's own tokens (against the one-rank
layer on them alone, within float32 rounding: its expert outputs were
computed in groups of another size), the shared experts' bitwise.

  torch_moe_mpi.py one OUT        (no mpirun: OUT.pt)
  mpirun -n 2 torch_moe_mpi.py ep OUT   (OUT<rank>.pt)
  torch_moe_mpi.py compare ONE.pt EP0.pt EP1.pt
"""
import os
import sys

import torch

import muir.torch as mt

H, F, E, K = 32, 48, 8, 2
TOKENS = (40, 29)
SETTINGS = dict(hidden=H, expert_size=F, experts=E, top_k=K,
                shared_experts=1)


def weights():
    g = torch.Generator().manual_seed(7)
    return {"router": torch.randn(E, H, generator=g) / H ** 0.5,
            "gate_proj": torch.randn(E, F, H, generator=g) / H ** 0.5,
            "up_proj": torch.randn(E, F, H, generator=g) / H ** 0.5,
            "down_proj": torch.randn(E, H, F, generator=g) / F ** 0.5,
            "shared_gate_proj": torch.randn(F, H, generator=g) / H ** 0.5,
            "shared_up_proj": torch.randn(F, H, generator=g) / H ** 0.5,
            "shared_down_proj": torch.randn(H, F, generator=g) / F ** 0.5}


def data():
    g = torch.Generator().manual_seed(11)
    xs = [torch.randn(t, H, generator=g) for t in TOKENS]
    dys = [torch.randn(t, H, generator=g) for t in TOKENS]
    return xs, dys


def run(layer, x, dy, muon=False):
    """The layer's outputs and gradients; with `muon`, then one
    muir.torch.Muon step of the expert stacks (their updated values)."""
    x = x.clone().requires_grad_(True)
    y = layer(x)
    (y * dy).sum().backward()
    out = {"y": y.detach().clone(), "dx": x.grad.clone()}
    for n in layer._weight_names:
        out[n + ".grad"] = getattr(layer, n).grad.clone()
    if muon:
        stacks = [(n, getattr(layer, n))
                  for n in ("gate_proj", "up_proj", "down_proj")]
        opt = mt.Muon(stacks, lr=0.02, weight_decay=0.1, cache_dir=None)
        opt.step()
        for n, p in stacks:
            out[n + ".updated"] = p.detach().clone()
        opt.close()
    for n in layer._weight_names:
        getattr(layer, n).grad = None
    return out


def load(layer, w, lo, hi):
    sd = {n: (t[lo:hi] if n in ("gate_proj", "up_proj", "down_proj") else t)
          for n, t in w.items()}
    layer.load_state_dict(sd)


def main():
    mode, path = sys.argv[1], sys.argv[2]
    w = weights()
    xs, dys = data()
    if mode == "one":
        layer = mt.MoE(max_tokens=128, **SETTINGS)
        load(layer, w, 0, E)
        out = run(layer, torch.cat(xs), torch.cat(dys), muon=True)
        load(layer, w, 0, E)
        # The router's gradient from each rank's tokens alone.
        for r in range(2):
            own = run(layer, xs[r], dys[r])
            out["router.grad.%d" % r] = own["router.grad"]
            out["shared.%d" % r] = {n: own[n] for n in own
                                    if n.startswith("shared")}
        torch.save(out, path + ".pt")
        print("one rank: %d tokens" % sum(TOKENS))
        return
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    # "ep": every rank's bound max_tokens; "ep-auto": none given, the ranks
    # agree on the size class of the larger call (40 tokens: 128).
    layer = mt.MoE(ep=2, max_tokens=64, **SETTINGS) if mode == "ep" else \
        mt.MoE(ep=2, **SETTINGS)
    el = E // 2
    load(layer, w, rank * el, (rank + 1) * el)
    out = run(layer, xs[rank], dys[rank], muon=True)
    torch.save(out, "%s%d.pt" % (path, rank))
    print("rank %d of 2: %d tokens, experts %d-%d, bound %d" % (
        rank, TOKENS[rank], rank * el, (rank + 1) * el - 1, layer.bound),
        flush=True)


def compare(one, eps):
    a = torch.load(one)
    bad = []
    start = 0
    el = E // 2
    for r, p in enumerate(eps):
        b = torch.load(p)
        rows = slice(start, start + TOKENS[r])
        start += TOKENS[r]
        for n in ("y", "dx"):
            if not torch.equal(a[n][rows], b[n]):
                bad.append("%s rank %d" % (n, r))
        for n in ("gate_proj.grad", "up_proj.grad", "down_proj.grad",
                  "gate_proj.updated", "up_proj.updated",
                  "down_proj.updated"):
            if not torch.equal(a[n][r * el:(r + 1) * el], b[n]):
                bad.append("%s rank %d" % (n, r))
        # The router's gradient is the rank's own tokens', through expert
        # outputs computed with the other rank's tokens in the same
        # grouped products (BLAS rounds another group size differently):
        # equal within float32 rounding, not bitwise.
        want = a["router.grad.%d" % r]
        err = float((want - b["router.grad"]).abs().max() /
                    want.abs().max())
        if not err <= 1e-5:
            bad.append("router.grad rank %d (rel err %.1e)" % (r, err))
        for n, t in a["shared.%d" % r].items():
            if not torch.equal(t, b[n]):
                bad.append("%s rank %d" % (n, r))
    if bad:
        print("torch-moe-mpi: FAIL (not bitwise: %s)" % ", ".join(bad))
        sys.exit(1)
    print("ep=2: y, dx and the experts' gradients bitwise those of one rank "
          "on the concatenated tokens; the shared experts' gradients bitwise "
          "and the router's within 1e-5 those of the rank's own tokens")
    print("ep=2: muir.torch.Muon stepped each rank's experts to bitwise the "
          "one-rank step's")
    print("torch-moe-mpi: PASS")


if __name__ == "__main__":
    if sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3:])
    else:
        main()
