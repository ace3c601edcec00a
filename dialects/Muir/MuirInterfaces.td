//===- MuirInterfaces.td - interfaces of muir's ops --------*- tablegen -*-===//
//
// OptimizerUpdate: any optimizer step of one parameter (Muon, NorMuon,
// AdamW). OrthogonalizedUpdate: what muir-distribute needs of an update
// that orthogonalises its momentum (Muon and its variants).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_INTERFACES_TD
#define MUIR_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Muir_OptimizerUpdateInterface : OpInterface<"OptimizerUpdateInterface"> {
  let cppNamespace = "::mlir::muir";
  let description = [{
    One optimizer step of one parameter (Muon, NorMuon, AdamW): it reads
    the parameter W, its gradient and its state, and returns the new W
    followed by the new state, in the state operands' order. What the
    passes need of any update: muir-distribute runs an element-wise one
    (`isElementwise`) on each rank's shards as they are, and plans the
    others through OrthogonalizedUpdateInterface; a QK-clip finds the
    parameter an update's result belongs to.
  }];
  let methods = [
    InterfaceMethod<"The parameter W.", "::mlir::Value", "getParam">,
    InterfaceMethod<"Its gradient.", "::mlir::Value", "getGrad">,
    InterfaceMethod<"The updated parameter.", "::mlir::Value",
      "getNewParam">,
    InterfaceMethod<"The run-time hyperparameters (f64), or none.",
      "::mlir::OperandRange", "getHyper">,
    InterfaceMethod<"The run-time take flag (an i1), or null.",
      "::mlir::Value", "getTake">,
    InterfaceMethod<"The state operands, in the order of the results "
      "after the new parameter.", "::llvm::SmallVector<::mlir::Value>",
      "getStateOperands">,
    InterfaceMethod<[{
        Whether each element of every result depends only on the elements
        of the operands at its index (AdamW): the update of a shard is the
        shard of the update.
      }], "bool", "isElementwise", (ins), [{}], [{ return false; }]>,
  ];
}

def Muir_OrthogonalizedUpdateInterface
    : OpInterface<"OrthogonalizedUpdateInterface"> {
  let cppNamespace = "::mlir::muir";
  let description = [{
    An optimizer update of a matrix (or a stack of matrices over dimension
    0) that computes Muon's momentum and look-ahead U, orthogonalises U
    with Newton-Schulz (O), turns O into the update it applies (Muon: O
    itself; NorMuon: O normalised row by row and to an RMS), and applies
    it as `W' = W * (1 - lr * weight_decay) - lr * scale * update`.

    muir-distribute plans the momentum, the Newton-Schulz (its mode, the
    dp owner) and the apply through this interface alone: an op that
    implements it is distributed in every mode and layout without code of
    its own in the pass. The op's results are the new parameter, the new
    momentum, then the new values of its other state, in order
    (`buildNormalizedUpdate`'s `newState`).
  }];
  let methods = [
    InterfaceMethod<"The parameter W (this rank's shard once distributed).",
      "::mlir::Value", "getParam">,
    InterfaceMethod<"The gradient.", "::mlir::Value", "getGrad">,
    InterfaceMethod<"The momentum buffer.", "::mlir::Value",
      "getMomentumBuffer">,
    InterfaceMethod<"The updated parameter (of the global shape before "
      "muir-distribute).", "::mlir::Value", "getNewParam">,
    InterfaceMethod<"The updated momentum.", "::mlir::Value",
      "getNewMomentumBuffer">,
    InterfaceMethod<"The run-time hyperparameters: (lr, weight_decay) or "
      "(lr, weight_decay, momentum), or none.", "::mlir::OperandRange",
      "getHyper">,
    InterfaceMethod<"The run-time take flag (an i1), or null.",
      "::mlir::Value", "getTake">,
    InterfaceMethod<"", "::mlir::FloatAttr", "getLrAttr">,
    InterfaceMethod<"", "::mlir::FloatAttr", "getWeightDecayAttr">,
    InterfaceMethod<"", "::mlir::FloatAttr", "getBetaAttr">,
    InterfaceMethod<"", "::mlir::muir::MomentumKindAttr",
      "getMomentumKindAttr">,
    InterfaceMethod<"", "::mlir::BoolAttr", "getNesterovAttr">,
    InterfaceMethod<"", "::mlir::IntegerAttr", "getNsStepsAttr">,
    InterfaceMethod<"", "::mlir::muir::NSScheduleAttr", "getScheduleAttr">,
    InterfaceMethod<"", "::mlir::DenseF64ArrayAttr", "getCoefficientsAttr">,
    InterfaceMethod<"", "::mlir::FloatAttr", "getEpsAttr">,
    InterfaceMethod<"The state after the momentum, in result order (each "
      "operand's result follows the new momentum).",
      "::llvm::SmallVector<::mlir::Value>", "getOtherState">,
    InterfaceMethod<"Rows orthogonalised as separate blocks (a fused QKV), "
      "if any.", "::std::optional<::llvm::ArrayRef<int64_t>>",
      "getRowBlocks">,
    InterfaceMethod<[{
        The update applied to this rank's block `o` of the Newton-Schulz
        output O of the whole matrix (the global shape is the op's result
        type; with no `splits` o is O itself): `splits` say which matrix
        dimensions of O are split over which grid axes (a reduction over a
        split dimension must all-reduce over its axis). Appends the new
        values of the op's state after the momentum, in result order, to
        `newState`. Muon returns o; NorMuon O normalised by rows and RMS.
      }], "::mlir::Value", "buildNormalizedUpdate",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Location":$loc,
           "::mlir::Value":$o,
           "::llvm::ArrayRef<::mlir::muir::MatrixSplit>":$splits,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$newState)>,
    InterfaceMethod<[{
        The `scale` of the apply for a matrix (or a block of rows, or a
        block-wise approximated block) of m x n.
      }], "double", "getApplyScale", (ins "int64_t":$m, "int64_t":$n)>,
  ];
}

#endif // MUIR_INTERFACES_TD
