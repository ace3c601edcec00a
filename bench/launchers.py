#!/usr/bin/env python3
"""muir.torch on 2 ranks launched by torchrun (the compiled steps'
collectives over torch.distributed's gloo group) against the same ranks
launched by mpirun (over MPI), issue 58's goal: at most 10% more.

Two workloads, each rank with OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1
(2 ranks on 2 cores):

  * muon: one muir.torch.Muon step (dp=2 by default from the job: each
    matrix's Newton-Schulz on one rank, the updates gathered) over 16
    matrices 512x512 and 8 of 1024x256 (fp32, gradients the same on both
    ranks, as after DDP's all-reduce); the fastest of --reps steps after
    two warm-ups (the first compiles);
  * moe: muir.torch.MoE(ep=2) forward + backward at bench/moe_layer.py's
    issue point split over the ranks: 2048 tokens a rank, hidden 1024,
    expert_size 512, 16 experts top-2 (dispatch and combine are
    all-to-alls over the 2 ranks); the fastest of --reps passes.

Rank 0 prints the slower rank's time for each rep (the step is as slow as
its slowest rank). Launches alternate, --rounds of each; the best of each
launcher is reported with torchrun / mpirun.

Run:  .venv/bin/python bench/launchers.py --build build
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402


def worker(args):
    import torch
    import torch.distributed as dist
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        dist.init_process_group("gloo", init_method="file://" + args.store,
                                rank=rank, world_size=2)
    else:
        dist.init_process_group("gloo")
    import muir.torch as mt
    torch.manual_seed(0)
    if args.workload == "muon":
        shapes = [(512, 512)] * 16 + [(1024, 256)] * 8
        params = [torch.nn.Parameter(torch.randn(*s) * 0.02) for s in shapes]
        opt = mt.Muon(params, lr=0.02, check_finite=False)
        for p in params:
            p.grad = torch.randn_like(p)

        def once():
            opt.step()
    else:
        layer = mt.MoE(1024, 512, 16, 2, ep=2, max_tokens=2048,
                       check_finite=False)
        torch.manual_seed(1 + dist.get_rank())
        x = torch.randn(2048, 1024, requires_grad=True)
        dy = torch.randn(2048, 1024)

        def once():
            x.grad = None
            for p in layer.parameters():
                p.grad = None
            (layer(x) * dy).sum().backward()
    once()
    once()
    times = []
    for _ in range(args.reps):
        dist.barrier()
        t0 = time.perf_counter()
        once()
        times.append((time.perf_counter() - t0) * 1e3)
    mine = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    if dist.get_rank() == 0:
        print(json.dumps({"ms": float(mine.min())}), flush=True)
    dist.destroy_process_group()


def launch(args, launcher, workload, store):
    env = common.torch_env("1")
    # One thread a rank on both sides (torchrun sets OMP_NUM_THREADS=1).
    env["OMP_NUM_THREADS"] = "1"
    script = [os.path.abspath(__file__), "--worker", "--workload", workload,
              "--reps", str(args.reps), "--store", store]
    if launcher == "mpirun":
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2",
               "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS",
               "-x", "PYTHONPATH",
               "-x", "MUIR_BUILD_DIR", "-x", "MUIR_CACHE_DIR",
               sys.executable] + script
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "2"] + script
    if os.path.exists(store):
        os.remove(store)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if p.returncode != 0:
        sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), p.stdout,
                                             p.stderr))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])["ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workloads", default="muon,moe")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--workload")
    ap.add_argument("--store")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    os.environ.setdefault("MUIR_BUILD_DIR", os.path.abspath(args.build))
    import tempfile
    tmp = tempfile.mkdtemp(prefix="muir-launchers-")
    # The compiled steps cached once, for both launchers.
    os.environ.setdefault("MUIR_CACHE_DIR", os.path.join(tmp, "cache"))
    import torch
    print("muir.torch on 2 ranks (OPENBLAS_NUM_THREADS=1 each), torch %s: "
          "torchrun (gloo transport) against mpirun (MPI); fastest of %d "
          "reps, %d alternating rounds" % (torch.__version__, args.reps,
                                          args.rounds))
    for workload in args.workloads.split(","):
        best = {}
        for _ in range(args.rounds):
            for launcher in ("mpirun", "torchrun"):
                ms = launch(args, launcher, workload,
                            os.path.join(tmp, "store"))
                best[launcher] = min(best.get(launcher, ms), ms)
        print("  %-5s mpirun %8.1f ms   torchrun %8.1f ms   torchrun / "
              "mpirun %.3f (goal <= 1.10)"
              % (workload, best["mpirun"], best["torchrun"],
                 best["torchrun"] / best["mpirun"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
