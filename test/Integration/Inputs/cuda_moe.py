"""The CUDA backend's trained MoE layers (ep = 1) against the CPU backend.

Two SwiGLU MoE layers, each trained on its teacher in the step (forward,
backward, then Muon on the experts and AdamW on the router), run 2 steps
from the same float32 inputs with muir-run --target=cuda and on the CPU:
  - "a": Qwen3-style softmax top-2 of 8 experts (256 tokens, hidden 64,
    expert size 96: several 64-row tiles an expert, ragged last ones);
  - "b": DeepSeek-style sigmoid scoring over 4 groups of 2 (2 groups a
    token), routed scaling 2.5, and a capacity factor of 0.75 by weight,
    so that pairs are dropped (the capacity kernel, dropped slots in the
    plan, the permute and the combine);
and is checked, independently of the CPU backend, against float64 PyTorch
autograd of the same layers (moe_reference.py, as moe-train.test checks
the CPU backend): after one step, every parameter's gradient within 1e-5
(max abs error over max abs value) and each layer's loss within 1e-5
relative; and against the CPU backend after two steps:
  - every parameter's change W - W0 within 1e-4 relative (fp32 products in
    other orders through the forward, the backward and Newton-Schulz: the
    grouped GEMMs' tiles, cuBLAS against OpenBLAS);
  - every optimizer state within 1e-4 relative;
  - itself: a second run, and a run op by op without the CUDA graph, are
    bitwise equal to the first (no float atomics anywhere);
  - the grouped products through cuBLAS's grouped GEMM instead
    (--cuda-cublas-grouped-gemm: expert sizes on the host, op by op) within
    the same bounds of the CPU backend, and bitwise equal run to run.
Rows routed to an expert differ between the backends only if a routing
score ties to within rounding; the inputs here have no such near-tie (a
flipped choice would show as a large error, not a small one).
"""
import numpy as np

import cuda_harness
import moe_reference
import muir_reference as ref
import muirtest

args = cuda_harness.parse_args(__doc__.splitlines()[0])

E, K, T, H, F = 8, 2, 256, 64, 96
YAML = """name: gpu-moe
grid: {axes: {dp: 1}}
training: {data: teacher}
optimizer:
  muon: {lr: 0.02, momentum: 0.95, nesterov: true, weight_decay: 0.1,
         ns_steps: 5, schedule: simple}
  adamw: {lr: 0.001, beta1: 0.9, beta2: 0.95, weight_decay: 0.1}
parameters:
%(params)s
moe:
  - {name: a, experts: %(E)d, top_k: %(K)d, hidden: %(H)d, expert_size: %(F)d,
     tokens_per_rank: %(T)d}
  - {name: b, experts: %(E)d, top_k: %(K)d, hidden: %(H)d, expert_size: %(F)d,
     tokens_per_rank: %(T)d, scoring: sigmoid, groups: 4,
     groups_per_token: 2, routed_scaling: 2.5, capacity_factor: 0.75,
     drop_policy: weight}
"""
SHAPES = {}
for layer in ("a", "b"):
    SHAPES[layer + ".router"] = (E, H)
    SHAPES[layer + ".experts.gate_proj"] = (E, F, H)
    SHAPES[layer + ".experts.up_proj"] = (E, F, H)
    SHAPES[layer + ".experts.down_proj"] = (E, H, F)
ROLES = {"router": "router", "gate_proj": "expert", "up_proj": "expert",
         "down_proj": "expert"}
params = "\n".join(
    "  - {name: %s, shape: [%s], role: %s}" % (
        n, ", ".join(map(str, s)), ROLES[n.split(".")[-1]])
    for n, s in SHAPES.items())
STEPS = 2

case = cuda_harness.Case(args, STEPS)
if args.prepared:
    values = muirtest.read_dump(case.inp)
else:
    rng = np.random.default_rng(23)
    values = {}
    for name, shape in SHAPES.items():
        fan_in = shape[-1]
        values[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(
            np.float32)
        values[name + ".grad"] = np.zeros(shape, np.float32)
        if name.endswith(".router"):
            values[name + ".exp_avg"] = np.zeros(shape, np.float32)
            values[name + ".exp_avg_sq"] = np.zeros(shape, np.float32)
        else:
            values[name + ".momentum"] = np.zeros(shape, np.float32)
    for layer in ("a", "b"):
        values[layer + ".data.tokens"] = rng.standard_normal(
            (T, H)).astype(np.float32)
        for part, shape in (("router", (E, H)), ("gate_proj", (E, F, H)),
                            ("up_proj", (E, F, H)), ("down_proj", (E, H, F))):
            values["%s.teacher.%s" % (layer, part)] = (
                rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(
                    np.float32)
    case.write(YAML % {"params": params, "E": E, "K": K, "H": H, "F": F,
                       "T": T}, values)
case.prepare_and_exit()

out = cuda_harness.Report()
# The float64 anchor: step 1's gradients (dumped as <param>.grad) and
# losses against PyTorch autograd in float64.
LAYERS = {"a": {"scoring": "softmax"},
          "b": {"scoring": "sigmoid", "groups": 4, "groups_per_token": 2,
                "routed_scaling": 2.5, "capacity": (0.75, "weight")}}
ref_grads, ref_loss = moe_reference.step1(values, LAYERS, E, K)
one, text = cuda_harness.Case(args, 1).run("gpu-step1", ["--target=cuda"],
                                           output=True)
for name, want in sorted(ref_grads.items()):
    out.bound("%s: cuda step 1 vs float64" % name,
              np.abs(one[name] - want).max() / np.abs(want).max(), 1e-5)
losses = moe_reference.losses_of(text)
for layer in LAYERS:
    got = losses.get(layer, [float("nan")])[0]
    out.bound("loss %s: cuda step 1 vs float64" % layer,
              abs(got - ref_loss[layer]) / ref_loss[layer], 1e-5)
cpu = case.run("cpu", [])
gpu = case.run("gpu", ["--target=cuda"])
again = case.run("gpu-again", ["--target=cuda"])
nograph = case.run("gpu-nograph", ["--target=cuda", "--cuda-graph=false"])
CUBLAS = ["--target=cuda", "--cuda-cublas-grouped-gemm"]
cublas = case.run("gpu-cublas", CUBLAS)
cublas_again = case.run("gpu-cublas-again", CUBLAS)

for name in SHAPES:
    w0 = values[name].astype(np.float64)
    out.bound("%s: cuda W - W0 vs cpu" % name,
              ref.rel_fro(gpu[name] - w0, cpu[name] - w0), 1e-4)
    for state in (".momentum", ".exp_avg", ".exp_avg_sq"):
        if name + state in cpu:
            out.bound("%s%s: cuda vs cpu" % (name, state),
                      ref.rel_fro(gpu[name + state], cpu[name + state]), 1e-4)
    out.bound("%s: cuBLAS grouped W - W0 vs cpu" % name,
              ref.rel_fro(cublas[name] - w0, cpu[name] - w0), 1e-4)
out.bitwise("two cuda runs", gpu, again)
out.bitwise("cuda graph vs op by op", gpu, nograph)
out.bitwise("two cuBLAS grouped runs", cublas, cublas_again)
out.finish()
