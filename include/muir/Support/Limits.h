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

} // namespace mlir::muir

#endif // MUIR_SUPPORT_LIMITS_H
