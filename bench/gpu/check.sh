#!/bin/bash
# The device check of the CUDA backend (issues 7 and 21), on one lent GPU
# in under 5 minutes: builds the CUDA runtime (nvcc), the step runner and
# the Gram-product timer (c++) there, runs the GPU correctness tests
# against float64 and the CPU backend (fp32, and the bf16 Newton-Schulz
# iterate against the CPU's), then times Muon steps (NS5) on 8192x8192 and
# on one Qwen3-30B-A3B layer set, fp32 and bf16 (the bf16 steps compiled
# with --cuda-bf16: a bf16 iterate), the Gram product X X^T as the upper
# triangle's blocks against the full GEMM, and the MoE layer: muir,
# PyTorch on the same GPU (eager; in bf16 also torch._grouped_mm and
# torch.compile where this PyTorch has them), cuBLAS's GEMM rate through
# torch.mm in the same run, the ratios and the issues' goals.
# Needs bench/gpu/prebuilt from bench/gpu/prepare.sh (run where muir is
# built; the GPU machine has no LLVM 22): carry it.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
pre="$root/bench/gpu/prebuilt"
work="${TMPDIR:-/tmp}/muir-gpu"
rm -rf "$work"
mkdir -p "$work"
if [ ! -f "$pre/check.o" ]; then
  echo "check.sh: no $pre/check.o: run bench/gpu/prepare.sh and carry bench/gpu/prebuilt" >&2
  exit 2
fi
py="${PYTHON:-python3}" # the one with PyTorch and NumPy
nvidia-smi -L || true
start=$SECONDS

# --- 1. Build the CUDA runtime and the runner here -------------------------
find_one() { # NAME: the first file of that name under the usual roots
  # (not a link-time stub: the runtime would load it and crash)
  find /usr/local/cuda/ /usr/local/ /usr/lib/ /usr/include/ /opt/ \
    -name "$1" -not -path '*/stubs/*' 2>/dev/null | head -n 1
}
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
nccl_h="$(find_one nccl.h)"
nccl_so="$(find_one libnccl.so)"; [ -n "$nccl_so" ] || nccl_so="$(find_one 'libnccl.so.2*')"
cublas_h="$(find_one cublas_v2.h)"
cublas_so="$(find_one libcublas.so)"; [ -n "$cublas_so" ] || cublas_so="$(find_one 'libcublas.so.1*')"
cublaslt_so="$(find_one libcublasLt.so)"; [ -n "$cublaslt_so" ] || cublaslt_so="$(find_one 'libcublasLt.so.1*')"
echo "nvcc $nvcc; nccl $nccl_h $nccl_so; cublas $cublas_h $cublas_so"
for f in "$nccl_h" "$nccl_so" "$cublas_h" "$cublas_so"; do
  [ -n "$f" ] || { echo "check.sh: NCCL or cuBLAS not found" >&2; exit 2; }
done
libdirs="$(dirname "$nccl_so"):$(dirname "$cublas_so"):$(dirname "$cublaslt_so")"
export LD_LIBRARY_PATH="$libdirs:${LD_LIBRARY_PATH:-}"
"$nvcc" -O3 -std=c++17 -shared -Xcompiler -fPIC --fmad=false \
  -gencode arch=compute_90,code=sm_90 \
  -I "$root/runtime/include" -I "$(dirname "$nccl_h")" -I "$(dirname "$cublas_h")" \
  "$root/runtime/cuda/CudaRuntime.cpp" "$root/runtime/cuda/CudaBlas.cpp" \
  "$root/runtime/cuda/CudaBootstrap.cpp" "$root/runtime/cuda/CudaCollectives.cpp" \
  "$root/runtime/cuda/CudaMoe.cpp" "$root/runtime/cuda/CudaStep.cpp" \
  "$root/runtime/cuda/Kernels.cu" \
  "$root/runtime/cuda/MoeKernels.cu" \
  "$cublas_so" "$cublaslt_so" "$nccl_so" -o "$work/libmuir_rt_cuda.so" || exit 1
c++ -O2 -g -rdynamic -std=c++17 -I "$root/include" -I "$root/runtime/include" \
  "$root/bench/gpu/muir-step-runner.cpp" "$root/lib/Runner/StepCore.cpp" \
  "$root/lib/Support/Version.cpp" "$root/runtime/cpu/Host.cpp" "$root/runtime/cpu/Npy.cpp" "$root/runtime/cpu/TensorFiles.cpp" "$root/runtime/cpu/Staging.cpp" -ldl -pthread -o "$work/muir-step-runner" || exit 1
c++ -O2 -std=c++17 -I "$root/runtime/include" "$root/bench/gpu/gram_rate.cpp" \
  "$work/libmuir_rt_cuda.so" -Wl,-rpath,"$work" -o "$work/gram-rate" || exit 1
for o in "$pre"/*.o; do
  c++ -shared "$o" -o "$work/$(basename "${o%.o}").so" || exit 1
done
echo "built in $((SECONDS - start)) s"
runner=("$work/muir-step-runner" --runtime "$work/libmuir_rt_cuda.so")
# A first step, its output shown; on a crash, a backtrace if gdb is here.
if ! "${runner[@]}" --step "$work/check.so" --steps 1 --load "$pre/check/in"; then
  echo "check.sh: the runner failed on its first step"
  ldd "$work/libmuir_rt_cuda.so" | grep -E "cublas|nccl|cudart"
  "${runner[@]}" --step "$work/check.so" --steps 1 --load "$pre/check/in" 2>&1 |
    grep -oE "[^ (]+\.so\(\+0x[0-9a-f]+\)|[^ (]+\.so\([A-Za-z_0-9]+\+0x[0-9a-f]+\)" |
    while IFS= read -r f; do
      lib="${f%%(*}"; off="${f##*+}"; off="${off%)}"
      echo "$f: $(addr2line -f -C -e "$lib" "$off" 2>/dev/null | head -n 1)"
    done
  if command -v gdb >/dev/null; then
    gdb -q -batch -ex run -ex bt --args "${runner[@]}" --step "$work/check.so" \
      --steps 1 --load "$pre/check/in" 2>&1 | tail -n 30
  fi
fi

# --- 2. Correctness: float64, the CPU backend, itself ----------------------
PYTHONPATH="$root/test/lib" "$py" "$root/test/Integration/Inputs/cuda_step.py" \
  --tmp "$work/check" --prepared "$pre/check" --runner "$work/muir-step-runner" \
  --runtime "$work/libmuir_rt_cuda.so" --step-so "$work/check.so" \
  --step-so-bf16 "$work/check-bf16.so"
test_rc=$?
PYTHONPATH="$root/test/lib" "$py" "$root/test/Integration/Inputs/cuda_moe.py" \
  --tmp "$work/check-moe" --prepared "$pre/check-moe" \
  --runner "$work/muir-step-runner" --runtime "$work/libmuir_rt_cuda.so" \
  --step-so "$work/check-moe.so" || test_rc=1
echo "correctness done at $((SECONDS - start)) s (rc $test_rc)"

# --- 3. Speed: muir vs PyTorch eager, cuBLAS's GEMM rate -------------------
for c in ns8192 qwen3-layer qwen3-moe; do
  for p in fp32 bf16; do
    step="$work/$c.so"; extra=()
    [ "$p" = bf16 ] && { step="$work/$c-bf16.so"; extra=(--bf16); }
    timeout 120 "${runner[@]}" --step "$step" --steps 6 "${extra[@]}" \
      | tee "$work/$c-$p.txt" | tail -n 1
  done
done
# The Gram product X X^T: the upper triangle's blocks against the full GEMM.
timeout 60 "$work/gram-rate" 8192 4096 | tee "$work/gram.txt"
# The MoE layer op by op: the runtime's grouped GEMM and cuBLAS's (expert
# sizes on the host, so no graph), each less the layer set's step op by op.
for v in layer:qwen3-layer:--no-graph moe:qwen3-moe:--no-graph \
         cublas:qwen3-moe:--grouped-gemm=cublas; do
  IFS=: read -r tag c flag <<< "$v"
  timeout 120 "${runner[@]}" --step "$work/$c.so" --steps 6 "$flag" \
    | tee "$work/nograph-$tag.txt" | tail -n 1
done
timeout 150 "$py" "$root/bench/gpu/peer.py" > "$work/peer.json" || echo "peer failed"
# torch.compile of the grouped layer, alone: its compile time must not
# take the eager peers down with it.
timeout 100 "$py" "$root/bench/gpu/peer.py" --compile > "$work/peer-compile.json" \
  || echo "peer with torch.compile failed"
"$py" - "$work" <<'PY'
import json, os, re, sys
work = sys.argv[1]
try:
    peer = json.load(open(os.path.join(work, "peer.json")))
except ValueError:
    peer = None
    print("\nno PyTorch results (peer.py failed): muir's times only")
nan = float("nan")
def median(name):
    """The runner's median step time in work/NAME.txt (NaN if absent)."""
    m = re.search(r"median_ms ([0-9.]+)",
                  open(os.path.join(work, name + ".txt")).read())
    return float(m.group(1)) if m else nan
def ns_flops(shape, steps=5):
    *batch, m, n = shape
    b = 1
    for d in batch:
        b *= d
    r, c = min(m, n), max(m, n)
    # X X^T, (X X^T)^2 and B X as full products: an effective rate (the
    # runtime computes the symmetric ones from n = 1024 on as triangles)
    return b * steps * (2 * r * r * c + 2 * r ** 3 + 2 * r * r * c)
cases = {"ns8192": [(8192, 8192)],
         "qwen3-layer": [(4096, 2048), (512, 2048), (512, 2048), (2048, 4096),
                         (128, 768, 2048), (128, 768, 2048), (128, 2048, 768)]}
if peer:
    print("\nGPU: %s, torch %s; cuBLAS GEMM 8192^3 (torch.mm): fp32 %.1f "
          "TFLOP/s, bf16 %.1f TFLOP/s" % (
              peer["device"], peer["torch"], peer["gemm_tflops"]["fp32"],
              peer["gemm_tflops"]["bf16"]))
print("%-20s %11s %11s %12s %14s %12s" % ("Muon step (NS5)", "muir ms", "torch ms",
      "torch/muir", "muir TFLOP/s", "of GEMM rate"))
for c, shapes in cases.items():
    flops = sum(ns_flops(s) for s in shapes)
    for p in ["fp32", "bf16"]:
        muir = median("%s-%s" % (c, p))
        torch = peer["cases"]["%s/%s" % (c, p)]["median_ms"] if peer else nan
        gemm = peer["gemm_tflops"][p] if peer else nan
        tflops = flops / (muir * 1e-3) / 1e12
        print("%-20s %11.2f %11.2f %11.2fx %14.1f %11.0f%%" % (
            "%s %s" % (c, p), muir, torch, torch / muir, tflops,
            100 * tflops / gemm))
# The MoE layer trained in the step: qwen3-moe's step less qwen3-layer's
# (the same Muon updates). Its grouped products, 2 x 32768 routed rows
# (4096 tokens x top-8) x 2048 x 768 flops each: teacher and student
# forward (3 each), the student's backward (down_proj's data gradient and
# the 3 weight gradients; the tokens need no gradient): 10 in all.
print("\n%-20s %11s %11s %14s %14s" % ("MoE layer (ep 1)", "step ms",
      "layer ms", "grouped GEMM", "TFLOP/s"))
rows, hidden, ff = 4096 * 8, 2048, 768
grouped = 10 * 2 * rows * hidden * ff
for p in ["fp32", "bf16"]:
    step = median("qwen3-moe-" + p)
    moe = step - median("qwen3-layer-" + p)
    print("%-20s %11.2f %11.2f %11.2f TF %14.1f" % (
        "qwen3-moe %s" % p, step, moe, grouped / 1e12,
        grouped / (moe * 1e-3) / 1e12))
for tag, what in (("moe", "runtime grouped"), ("cublas", "cuBLAS grouped")):
    step = median("nograph-" + tag)
    moe = step - median("nograph-layer")
    print("%-20s %11.2f %11.2f %11.2f TF %14.1f  (fp32, op by op)" % (
        what, step, moe, grouped / 1e12, grouped / (moe * 1e-3) / 1e12))
# The peers: the same layer's forward (teacher and student), loss and
# backward in PyTorch, against muir's layer in its graph.
try:
    compiled = json.load(open(os.path.join(work, "peer-compile.json")))
except (OSError, ValueError):
    compiled = None
moe_peers = dict(peer["moe"]) if peer and "moe" in peer else {}
if compiled and "moe" in compiled:
    for key, v in compiled["moe"].items():
        if "compiled" in key:
            moe_peers[key] = v
best_peer = {}
for key, v in sorted(moe_peers.items()):
    p = key.split("/")[0]
    layer = median("qwen3-moe-" + p) - median("qwen3-layer-" + p)
    if "error" in v:
        print("%-20s %s: %s" % ("torch MoE layer", key, v["error"]))
        continue
    torch = v["median_ms"]
    if torch < best_peer.get(p, (nan, float("inf")))[1]:
        best_peer[p] = (key, torch)
    print("%-20s %11s %11.2f %11.2f TF %14.1f  (PyTorch %s; torch/muir "
          "%.2fx)" % ("torch MoE layer", "", torch, grouped / 1e12,
                      grouped / (torch * 1e-3) / 1e12, key, torch / layer))

# --- The goals of issue 21, each with its figure --------------------------
def goal(what, value, target, more_is_better=True):
    met = value >= target if more_is_better else value <= target
    print("%-58s %8.3f  goal %s %.2f  %s" % (
        what, value, ">=" if more_is_better else "<=", target,
        "met" if met else ("NOT MET" if value == value else "no figure")))
print("\nissue 21 goals")
gemm_bf16 = peer["gemm_tflops"]["bf16"] if peer else nan
moe_bf16 = median("qwen3-moe-bf16") - median("qwen3-layer-bf16")
goal("MoE grouped products TFLOP/s / bf16 GEMM rate (bf16 step)",
     grouped / (moe_bf16 * 1e-3) / 1e12 / gemm_bf16, 0.5)
if "bf16" in best_peer:
    key, torch = best_peer["bf16"]
    goal("MoE layer: torch best (%s) / muir, bf16" % key, torch / moe_bf16, 1.5)
else:
    goal("MoE layer: torch best / muir, bf16 (no peer)", nan, 1.5)
for c, target in (("qwen3-layer", 1.2), ("ns8192", 1.3)):
    torch = peer["cases"]["%s/bf16" % c]["median_ms"] if peer else nan
    goal("%s bf16 Muon step: torch eager / muir" % c,
         torch / median("%s-bf16" % c), target)
gram = open(os.path.join(work, "gram.txt")).read()
for p in ("bf16", "fp32"):
    m = re.search(r"gram 8192 %s: .*triangle/full ([0-9.]+)" % p, gram)
    goal("Gram X X^T 8192^2 %s: triangle ms / full GEMM ms" % p,
         float(m.group(1)) if m else nan, 0.6, more_is_better=False)
PY
echo "check.sh: done in $((SECONDS - start)) s; correctness rc $test_rc"
exit $test_rc
