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
}

// Every muir op rejects attributes it does not know (see MuirDialect.h).
def Muir_StrictAttributes : NativeOpTrait<"StrictAttributes"> {
  let cppNamespace = "::mlir::muir";
}

class Muir_Op<string mnemonic, list<Trait> traits = []>
    : Op<Muir_Dialect, mnemonic,
         !listconcat(traits, [Muir_StrictAttributes])>;

#endif // MUIR_DIALECT_TD
