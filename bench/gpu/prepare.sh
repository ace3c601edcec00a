#!/bin/bash
# Prepares bench/gpu/prebuilt/ for check.sh, on a machine with the muir
# build (LLVM/MLIR 22): the lent GPU machine has CUDA, PyTorch, CMake and a
# C++ compiler but no LLVM 22, so the compiler runs here and the runtime and
# the runner are built there. Writes:
#   <case>.o    each case compiled with --target=cuda --emit=object
#               (check, check-moe: the correctness steps of cuda_step.py
#               and cuda_moe.py; ns8192,
#               qwen3-layer: bench/gpu/cases), and <case>-bf16.o with
#               --cuda-bf16 (check, ns8192, qwen3-layer, qwen3-moe)
#   check/      that step's description, inputs and the CPU backend's
#               results after 3 steps (cpu/; cpu-bf16/ with a bf16
#               iterate)
#   check-moe/  the same for cuda_moe.py's MoE layers (2 steps)
# Then, with a lent GPU: run bench/gpu/check.sh carrying bench/gpu/prebuilt.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD:-$root/build}"
out="$root/bench/gpu/prebuilt"
arch="${CUDA_ARCH:-sm_90}"
rm -rf "$out"
mkdir -p "$out"
PYTHONPATH="$root/test/lib" "$root/.venv/bin/python" \
  "$root/test/Integration/Inputs/cuda_step.py" --muir-run "$build/bin/muir-run" \
  --tmp "$out/tmp" --prepare "$out/check"
PYTHONPATH="$root/test/lib" "$root/.venv/bin/python" \
  "$root/test/Integration/Inputs/cuda_moe.py" --muir-run "$build/bin/muir-run" \
  --tmp "$out/tmp" --prepare "$out/check-moe"
rm -rf "$out/tmp"
"$build/bin/muir-compile" "$out/check/step.yaml" --target=cuda \
  --cuda-arch="$arch" --emit=object --quiet -o "$out/check.o"
"$build/bin/muir-compile" "$out/check-moe/step.yaml" --target=cuda \
  --cuda-arch="$arch" --emit=object --quiet -o "$out/check-moe.o"
"$build/bin/muir-compile" "$out/check/step.yaml" --target=cuda --cuda-bf16 \
  --cuda-arch="$arch" --emit=object --quiet -o "$out/check-bf16.o"
for case in ns8192 qwen3-layer qwen3-moe; do
  "$build/bin/muir-compile" "$root/bench/gpu/cases/$case.yaml" --target=cuda \
    --cuda-arch="$arch" --emit=object --quiet -o "$out/$case.o"
  # The bf16 steps: a bf16 Newton-Schulz iterate.
  "$build/bin/muir-compile" "$root/bench/gpu/cases/$case.yaml" --target=cuda \
    --cuda-bf16 --cuda-arch="$arch" --emit=object --quiet -o "$out/$case-bf16.o"
done
du -sh "$out"
echo "prepared $out (for $arch); carry bench/gpu/prebuilt to run check.sh"
