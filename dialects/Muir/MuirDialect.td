//===- MuirDialect.td - the muir dialect -------------------*- tablegen -*-===//
//
// The high-level dialect: tensor semantics, a grid of named device axes,
// Newton-Schulz, the Muon and AdamW updates, and collectives over grid axes.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_DIALECT_TD
#define MUIR_DIALECT_TD

include "mlir/IR/OpBase.td"

def Muir_Dialect : Dialect {
  let name = "muir";
  let cppNamespace = "::mlir::muir";
  let summary = "Muon optimizer steps and MoE layers over a device grid";
  let description = [{
    `muir` describes one training step's optimizer work at tensor level:
    the Muon update (momentum, Newton-Schulz orthogonalisation, scaled
    parameter update), AdamW for the parameters Muon does not take, the
    matrix products Newton-Schulz is made of, and collectives that name the
    axes of a `muir.grid` (dp, tp, ep, ...) instead of rank lists.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Canonicalization makes arith.constant (a group of one's rank).
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  // The discardable `muir.*` attributes that carry a step's contract
  // between the description, the passes and the runtime (a tensor's name
  // and role on function arguments, muir.entry, muir.ns_mode, ...) are
  // checked here: a misspelt or ill-typed one is an error, not ignored.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  // Those attributes, declared once (as upstream GPU's known_block_size):
  // each has a helper, MuirDialect::NameAttrHelper for `muir.name` and so
  // on, whose getNameStr() every reader and writer names it by.
  let discardableAttrs = (ins
    // On functions: an exec entry, a per-rank program, a function outlined
    // from a parallel loop nest (its outer loop's iterations).
    "::mlir::UnitAttr":$entry,
    "::mlir::UnitAttr":$per_rank,
    "::mlir::IntegerAttr":$parallel_range,
    // On a CPU exec function: the bytes of the arena its temporaries are
    // planned in (muir-plan-buffers).
    "::mlir::IntegerAttr":$arena_bytes,
    // On ops: a trained MoE layer's update (left alone by distribution),
    // muir-distribute's decisions and muir-gram-newton-schulz's form.
    "::mlir::UnitAttr":$local,
    // On a pure op computed a second time on purpose (an MoE layer's
    // activation recompute dispatches its tokens again): CSE keeps the
    // copy apart, so that the first copy's buffer can die early.
    "::mlir::UnitAttr":$recomputed,
    "::mlir::muir::NewtonSchulzModeAttr":$ns_mode,
    "::mlir::muir::NSWhyAttr":$ns_why,
    "::mlir::FloatAttr":$modelled_ms,
    "::mlir::IntegerAttr":$dp_owner,
    "::mlir::FloatAttr":$dp_weight,
    "::mlir::muir::NSFormAttr":$ns_form,
    "::mlir::muir::NSFormCostAttr":$ns_form_cost,
    // On a step function's arguments: the tensor's name, role, parameter
    // kind and dtype, its shards and splits, the folding its shards name,
    // its seeding's standard deviation, a hyperparameter's default.
    "::mlir::StringAttr":$name,
    "::mlir::muir::ArgRoleAttr":$role,
    "::mlir::muir::ParamKindAttr":$kind,
    "::mlir::muir::DTypeAttr":$dtype,
    "::mlir::ArrayAttr":$shards,
    "::mlir::ArrayAttr":$split,
    "::mlir::FlatSymbolRefAttr":$folding,
    "::mlir::FloatAttr":$init_std,
    "::mlir::FloatAttr":$default,
    // On a step function's results: the tensor a result updates.
    "::mlir::StringAttr":$updates
  );
}

// Every muir op rejects attributes it does not know (see MuirDialect.h).
def Muir_StrictAttributes : NativeOpTrait<"StrictAttributes"> {
  let cppNamespace = "::mlir::muir";
}

class Muir_Op<string mnemonic, list<Trait> traits = []>
    : Op<Muir_Dialect, mnemonic,
         !listconcat(traits, [Muir_StrictAttributes])>;

#endif // MUIR_DIALECT_TD
