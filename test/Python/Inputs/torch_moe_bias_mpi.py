"""muir.torch.MoE's aux-loss-free update (update_bias) on every layout of
the same tokens: one rank holding all of them; ep=2 under mpirun (each
rank half the experts and its own tokens); ep=1 on 2 mpirun ranks (each
rank every expert and its own tokens); ep=1 on 2 ranks of torch.distributed
(gloo) without mpirun. 6 steps of 2 micro-batches (forward and backward;
the weights stay, the bias changes the routing), update_bias() after each:
the loads and the biases of every step bitwise equal across the layouts,
and the one-rank run's against a float64 reference of the rule whose
routing takes its own bias (loads equal, bias within float32 rounding).

  torch_moe_bias_mpi.py one OUT               (OUT.pt)
  mpirun -n 2 torch_moe_bias_mpi.py ep OUT    (OUT<rank>.pt)
  mpirun -n 2 torch_moe_bias_mpi.py dp OUT    (OUT<rank>.pt)
  torch_moe_bias_mpi.py gloo OUT              (2 processes: OUT<rank>.pt)
  torch_moe_bias_mpi.py compare ONE.pt EP0.pt EP1.pt DP0.pt ...
"""
import os
import sys

import numpy as np
import torch

import moe_reference
import muir.torch as mt

H, F, E, K = 32, 48, 8, 2
STEPS = 6
# Tokens per rank and micro-batch.
TOKENS = ((23, 17), (19, 30))
RATE = 0.01
SETTINGS = dict(hidden=H, expert_size=F, experts=E, top_k=K,
                scoring="sigmoid", groups=4, groups_per_token=2,
                e_score_correction_bias=True, bias_update_rate=RATE)
ATTRS = dict(scoring="sigmoid", groups=4, groups_per_token=2)
WEIGHTS = ("router", "gate_proj", "up_proj", "down_proj")
STACKS = ("gate_proj", "up_proj", "down_proj")


def weights():
    g = torch.Generator().manual_seed(7)
    return {"router": torch.randn(E, H, generator=g) / H ** 0.5,
            "gate_proj": torch.randn(E, F, H, generator=g) / H ** 0.5,
            "up_proj": torch.randn(E, F, H, generator=g) / H ** 0.5,
            "down_proj": torch.randn(E, H, F, generator=g) / F ** 0.5}


def tokens(step, rank, micro):
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + micro)
    t = TOKENS[rank][micro]
    return torch.randn(t, H, generator=g), torch.randn(t, H, generator=g)


def load(layer, w, lo, hi):
    sd = {n: (t[lo:hi] if n in STACKS else t) for n, t in w.items()}
    sd["e_score_correction_bias"] = torch.zeros(E)
    layer.load_state_dict(sd)


def train(layer, batches):
    """Per step: forward and backward of each micro-batch, then
    update_bias(); returns the loads and the biases of every step."""
    out = {"loads": [], "biases": []}
    for step in range(STEPS):
        for x, dy in batches(step):
            x = x.clone().requires_grad_(True)
            (layer(x) * dy).sum().backward()
        out["loads"].append(layer.update_bias())
        out["biases"].append(layer.e_score_correction_bias.clone())
    return out


def own(rank):
    return lambda step: [tokens(step, rank, m) for m in range(2)]


def ranked(mode, path, rank):
    """One rank of a 2-rank layout (ep: half the experts)."""
    w = weights()
    ep = 2 if mode == "ep" else 1
    layer = mt.MoE(ep=ep, max_tokens=64 if ep > 1 else None, **SETTINGS)
    lo, hi = (rank * E // 2, (rank + 1) * E // 2) if ep > 1 else (0, E)
    load(layer, w, lo, hi)
    torch.save(train(layer, own(rank)), "%s%d.pt" % (path, rank))
    print("%s rank %d of 2: experts %d-%d, %d steps" % (mode, rank, lo,
                                                        hi - 1, STEPS),
          flush=True)


def gloo_worker(rank, path):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://%s.store" % path,
                            rank=rank, world_size=2)
    try:
        ranked("gloo", path, rank)
    finally:
        dist.destroy_process_group()


def one(path):
    w = weights()
    layer = mt.MoE(**SETTINGS)
    load(layer, w, 0, E)

    def both(step):
        return [tuple(torch.cat([tokens(step, r, m)[i] for r in range(2)])
                      for i in range(2)) for m in range(2)]
    out = train(layer, both)
    torch.save(out, path + ".pt")
    # The float64 reference of the rule, routing with its own bias.
    bias = np.zeros(E)
    router = w["router"].to(torch.float64)
    loads_ok, worst = True, 0.0
    for step in range(STEPS):
        want = np.zeros(E, dtype=np.int64)
        for x, _ in both(step):
            idx, _ = moe_reference.route(x.to(torch.float64), router,
                                         dict(ATTRS, selection_bias=bias),
                                         E, K)
            want += np.bincount(idx.reshape(-1).numpy(), minlength=E)
        loads_ok &= out["loads"][step].tolist() == want.tolist()
        bias = bias + RATE * np.sign(want.mean() - want)
        worst = max(worst, float(np.abs(
            out["biases"][step].to(torch.float64).numpy() - bias).max()))
    print("one rank: loads of %d steps = the float64 reference's %s"
          % (STEPS, "ok" if loads_ok else "FAIL"))
    print("one rank: bias within float32 rounding of the float64 rule's "
          "%s (max err %.1e)" % ("ok" if worst <= 1e-8 else "FAIL", worst))
    print("one rank: final bias %s" % ["%.2f" % v for v in bias])


def compare(one_path, others):
    a = torch.load(one_path)
    bad = []
    for p in others:
        b = torch.load(p)
        for step in range(STEPS):
            if not torch.equal(a["loads"][step], b["loads"][step]):
                bad.append("%s loads step %d" % (os.path.basename(p), step))
            if not torch.equal(a["biases"][step], b["biases"][step]):
                bad.append("%s bias step %d" % (os.path.basename(p), step))
    moved = sum(not torch.equal(a["loads"][s], a["loads"][0])
                for s in range(STEPS))
    print("loads change over the steps: %s" % ("ok" if moved else "FAIL"))
    if bad or not moved:
        print("torch-moe-bias-mpi: FAIL (%s)" % ", ".join(bad))
        sys.exit(1)
    print("%d layouts: loads and biases of %d steps bitwise the one rank's"
          % (len(others) // 2, STEPS))
    print("torch-moe-bias-mpi: PASS")


def main():
    mode = sys.argv[1]
    if mode == "compare":
        compare(sys.argv[2], sys.argv[3:])
    elif mode == "one":
        one(sys.argv[2])
    elif mode == "gloo":
        import torch.multiprocessing as mp
        mp.spawn(gloo_worker, args=(sys.argv[2],), nprocs=2)
    else:
        ranked(mode, sys.argv[2], int(os.environ["OMPI_COMM_WORLD_RANK"]))


if __name__ == "__main__":
    main()
