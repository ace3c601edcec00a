"""The CUDA backend's optimizer step against float64 and the CPU backend.

A step with Muon on a tall matrix (192x128), a wide one (128x320) and a
3-D expert stack (4x64x96: batched Newton-Schulz, one per expert), AdamW
on a norm (128) and an embedding (512x64), and NorMuon on a stack
(2x48x80) and a GQA block's q (64x96) and k (32x96) that MuonClip's
QK-clip scales after each update (2 of 4 heads over tau), runs 3 steps
from the same float32 inputs (parameters, gradients, random momenta, Adam
and NorMuon moments, the block's max_logits) with muir-run --target=cuda,
and is checked against:
  - float64 (muir_reference.muon_update / adamw_update applied 3 times):
    W - W0 within 1e-5 relative (the CPU backend's bound in
    muon-reference.test; fp32 cuBLAS without TF32), momenta, Adam and
    NorMuon moments within 1e-6 (NorMuon's, through the Newton-Schulz
    output, 1e-5: normuon-reference.test's bound);
  - the CPU backend's run of the same step: W - W0 within 2e-5 (two fp32
    roundings of different summation orders);
  - itself: a second run, and a run without the CUDA graph (op by op), are
    bitwise equal to the first (one GPU, one stream, no atomics);
  - with --cuda-bf16 (a bf16 Newton-Schulz iterate: bf16 products with fp32
    accumulation): W - W0 within 5e-2 of float64 (bf16 keeps 8 bits;
    Newton-Schulz maps singular values to about 1 whatever the rounding,
    the error is in the directions), and within 3e-2 of the CPU backend's
    bf16 iterate (--ns-precision=bf16: the same roundings, but OpenBLAS
    and cuBLAS sum in different orders, so now and then a product rounds
    to the neighbouring bf16 value, and 5 steps carry it on: ns-bf16.test
    measures 4e-3 .. 9e-3 for that on the CPU alone).
"""
import numpy as np

import cuda_harness
import muir_reference as ref
import muirtest

args = cuda_harness.parse_args(__doc__.splitlines()[0])

YAML = """name: gpu
grid: {axes: {dp: 1}}
optimizer:
  muon: {lr: 0.02, momentum: 0.95, nesterov: true, weight_decay: 0.1,
         scale_mode: spectral, scale_extra: 0.2, ns_steps: 5, schedule: simple,
         qk_clip: 50}
  adamw: {lr: 0.001, beta1: 0.9, beta2: 0.95, eps: 1.0e-8, weight_decay: 0.1}
  normuon: {lr: 0.02, momentum: 0.95, weight_decay: 0.1, beta2: 0.9}
  overrides:
    - {names: [tall, wide, experts], optimizer: muon}
attention:
  - {name: gqa, q: gqa.q, k: gqa.k, heads: 4, kv_heads: 2}
parameters:
  - {name: tall, shape: [192, 128], role: mlp}
  - {name: wide, shape: [128, 320], role: attention}
  - {name: experts, shape: [4, 64, 96], role: expert}
  - {name: norm, shape: [128], role: norm}
  - {name: embed, shape: [512, 64], role: embedding}
  - {name: gqa.q, shape: [64, 96], role: attention}
  - {name: gqa.k, shape: [32, 96], role: attention}
  - {name: nstack, shape: [2, 48, 80], role: expert}
"""
MUON = {"tall": (192, 128), "wide": (128, 320), "experts": (4, 64, 96)}
ADAM = {"norm": (128,), "embed": (512, 64)}
# NorMuon (its rows' sums and per-row scaling are generated reduction and
# broadcast kernels); gqa's q and k clipped after it (heads 0 and 2 over
# tau, 1 and 3 under: kv head 0 takes head 0's factor, 1 head 2's).
NORMUON = {"gqa.q": (64, 96), "gqa.k": (32, 96), "nstack": (2, 48, 80)}
NORMUON_SETTINGS = dict(lr=0.02, beta=0.95, weight_decay=0.1, beta2=0.9)
LOGITS = [80.0, 20.0, 400.0, 49.0]
STEPS = 3

case = cuda_harness.Case(args, STEPS)
if args.prepared:
    values = muirtest.read_dump(case.inp)
else:
    rng = np.random.default_rng(17)
    values = {}
    for name, shape in {**MUON, **ADAM}.items():
        values[name] = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        values[name + ".grad"] = rng.standard_normal(shape).astype(np.float32)
    for name, shape in NORMUON.items():
        values[name] = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        values[name + ".grad"] = rng.standard_normal(shape).astype(np.float32)
        values[name + ".variance"] = (0.01 + 0.02 * rng.random(shape[:-1])
                                      ).astype(np.float32)
    values["gqa.max_logits"] = np.array(LOGITS, np.float32)
    for name, shape in {**MUON, **NORMUON}.items():
        values[name + ".momentum"] = (rng.standard_normal(shape) * 0.1
                                      ).astype(np.float32)
    for name, shape in ADAM.items():
        values[name + ".exp_avg"] = (rng.standard_normal(shape) * 0.1
                                     ).astype(np.float32)
        values[name + ".exp_avg_sq"] = (rng.random(shape) * 0.1).astype(
            np.float32)
    case.write(YAML, values)
CPU_RUNS = (("cpu", []), ("cpu-bf16", ["--ns-precision=bf16"]))
case.prepare_and_exit(CPU_RUNS)

# float64 reference.
want = {}
for name in MUON:
    w, m = values[name], values[name + ".momentum"]
    for _ in range(STEPS):
        w, m = ref.muon_update(w, values[name + ".grad"], m, lr=0.02,
                               weight_decay=0.1)
    want[name], want[name + ".momentum"] = w, m
normuon = ref.normuon_clip_steps(values, NORMUON, STEPS, NORMUON_SETTINGS,
                                 ("gqa.q", "gqa.k", LOGITS, 50.0, 4, 2))
for name in NORMUON:
    (want[name], want[name + ".momentum"],
     want[name + ".variance"]) = normuon[name]
for name in ADAM:
    w, m, v = values[name], values[name + ".exp_avg"], values[
        name + ".exp_avg_sq"]
    for t in range(1, STEPS + 1):
        w, m, v = ref.adamw_update(w, values[name + ".grad"], m, v, t,
                                   lr=0.001, beta1=0.9, beta2=0.95, eps=1e-8,
                                   weight_decay=0.1)
    want[name], want[name + ".exp_avg"], want[name + ".exp_avg_sq"] = w, m, v


out = cuda_harness.Report()
cpu = case.run("cpu", [])
cpu_bf16 = case.run("cpu-bf16", ["--ns-precision=bf16"])
gpu = case.run("gpu", ["--target=cuda"])
again = case.run("gpu-again", ["--target=cuda"])
nograph = case.run("gpu-nograph", ["--target=cuda", "--cuda-graph=false"])
bf16 = case.run("gpu-bf16", ["--target=cuda", "--cuda-bf16"])

for name in list(MUON) + list(ADAM) + list(NORMUON):
    w0 = values[name].astype(np.float64)
    out.bound("%s: cuda W - W0 vs float64" % name,
              ref.rel_fro(gpu[name] - w0, want[name] - w0), 1e-5)
    out.bound("%s: cuda W - W0 vs cpu" % name,
              ref.rel_fro(gpu[name] - w0, cpu[name] - w0), 2e-5)
    if name in MUON:
        out.bound("%s: cuda bf16 W - W0 vs float64" % name,
                  ref.rel_fro(bf16[name] - w0, want[name] - w0), 5e-2)
        out.bound("%s: cuda bf16 W - W0 vs cpu bf16" % name,
                  ref.rel_fro(bf16[name] - w0, cpu_bf16[name] - w0), 3e-2)
for name in want:
    if name not in MUON and name not in ADAM and name not in NORMUON:
        out.bound("%s: cuda vs float64" % name,
                  ref.rel_fro(gpu[name], want[name]),
                  1e-5 if name.endswith(".variance") else 1e-6)
out.bitwise("two cuda runs", gpu, again)
out.bitwise("cuda graph vs op by op", gpu, nograph)
out.finish()
