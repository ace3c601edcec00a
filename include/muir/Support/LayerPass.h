//===- LayerPass.h - which pass of an MoE layer a step is -------*- C++ -*-===//
//
// The layer-pass option (the step library's "layer-pass=", muir-compile's
// --layer-pass), declared once with its names (EnumNames.h): the importer
// builds the pass, the tools and the step library read its name.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_LAYERPASS_H
#define MUIR_SUPPORT_LAYERPASS_H

#include "muir/Support/EnumNames.h"

namespace mlir::muir {

/// The passes of an MoE layer a model calls (desc::buildLayerModule).
enum class LayerPass { Forward, ForwardOnly, Backward, Recompute };

inline constexpr EnumName<LayerPass> kLayerPasses[] = {
    {LayerPass::Forward, "forward",
     "the forward: y, the tokens per expert and what the backward keeps"},
    {LayerPass::ForwardOnly, "forward-only",
     "the forward alone: y and the tokens per expert, nothing kept "
     "(inference, or training with activation recompute)"},
    {LayerPass::Backward, "backward",
     "the backward from what the forward kept"},
    {LayerPass::Recompute, "recompute",
     "the backward from x and the weights alone (activation recompute): "
     "the forward's products computed again, the same bits"},
};

inline llvm::StringRef stringify(LayerPass pass) {
  return enumName(kLayerPasses, pass);
}

} // namespace mlir::muir

#endif // MUIR_SUPPORT_LAYERPASS_H
