//===- Limits.h - the sizes muir accepts ------------------------*- C++ -*-===//
//
// Bounds on what a description, a layout or a module may ask for, checked
// where the value is read (with its file:line:col) with overflow-safe
// arithmetic, so that no product of sizes wraps around further on. They
// are far above any model trained today (docs/description.md, "Limits").
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_LIMITS_H
#define MUIR_SUPPORT_LIMITS_H

#include <cstdint>

namespace mlir::muir {

/// A tensor dimension (and the MoE layer sizes): OpenBLAS (LP64) takes
/// 32-bit sizes.
inline constexpr int64_t kMaxDim = (int64_t(1) << 31) - 1;
/// Devices of a grid (the product of its axis sizes): 2^20.
inline constexpr int64_t kMaxDevices = int64_t(1) << 20;
/// Elements of one tensor (a parameter, an MoE layer's activations): 2^40,
/// 4 TiB of float32.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// Elements of all parameters of a step together: 2^48 (with gradients and
/// optimizer state, byte counts stay far inside int64).
inline constexpr int64_t kMaxModelElements = int64_t(1) << 48;

/// Newton-Schulz iterations of one update (`ns_steps`, the `ns_steps` and
/// `steps` of muir.muon_update and muir.newton_schulz, checked by their
/// verifiers). The steps are one loop, so the generated code does not grow
/// with the count; the bound only catches a count no run could finish (a
/// typo of 2^31 - 1): the longest published schedule (deepseekv4) has 10
/// steps and the usual count is 5.
inline constexpr int64_t kMaxNSSteps = 1000000;
/// Values of `optimizer.muon.coefficients`: 100 (a, b, c) triples, the
/// table a Newton-Schulz loop embeds (its last triple repeats); the
/// longest published schedule has 10.
inline constexpr int64_t kMaxCoefficientTriples = 100;
inline constexpr int64_t kMaxCoefficients = 3 * kMaxCoefficientTriples;
/// Row blocks of one fused matrix (`split_rows`, muir.muon_update's
/// `row_blocks`): each block gets its own Newton-Schulz, kernels and
/// products in the generated code (about 80 ms of JIT time and 1 MB each on
/// the CPU backend: 1024 blocks took 80 s). A fused QKV has 3 blocks; one
/// per head of a 128-head model with its key and value groups fits.
inline constexpr int64_t kMaxRowBlocks = 256;

/// Layers of a Hugging Face config (`num_hidden_layers`): each adds its
/// parameters' updates to the generated code (DeepSeek-V3's 61 layers are
/// 1084 parameters and 1 s to exec IR), so six digits in a config would
/// ask for hours and gigabytes. The deepest published models have under
/// 200.
inline constexpr int64_t kMaxLayers = 1024;

/// A file name (one component of a path) on Linux file systems: NAME_MAX.
inline constexpr int64_t kMaxFileNameBytes = 255;
/// What muir-run appends to a tensor name for its file: the longest state
/// tensor and the extension, "<name>.exp_avg_sq.npy".
inline constexpr int64_t kTensorFileSuffixBytes = sizeof(".exp_avg_sq.npy") - 1;
/// Room kept for the temporary names the runtime writes beside a file
/// before renaming it into place ("<file>.tmp.<pid>.<n>", "<file>.old...").
inline constexpr int64_t kSideFileSuffixBytes = 32;
/// The longest last path component of a parameter name: its files and
/// their temporaries must fit in kMaxFileNameBytes (255 - 15 - 32 = 208).
inline constexpr int64_t kMaxNameComponentBytes =
    kMaxFileNameBytes - kTensorFileSuffixBytes - kSideFileSuffixBytes;

} // namespace mlir::muir

#endif // MUIR_SUPPORT_LIMITS_H
