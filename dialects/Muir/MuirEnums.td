//===- MuirEnums.td - enums of the muir dialect ------------*- tablegen -*-===//
#ifndef MUIR_ENUMS_TD
#define MUIR_ENUMS_TD

include "Muir/MuirDialect.td"
include "mlir/IR/EnumAttr.td"

def Muir_NSSchedule : I32EnumAttr<"NSSchedule",
    "Newton-Schulz coefficient schedule", [
      I32EnumAttrCase<"simple", 0>,
      I32EnumAttrCase<"quintic", 1>,
      I32EnumAttrCase<"polar_express", 2>,
      I32EnumAttrCase<"custom", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_NSScheduleAttr : EnumAttr<Muir_Dialect, Muir_NSSchedule, "schedule">;

def Muir_NSForm : I32EnumAttr<"NSForm",
    "how Newton-Schulz iterates: on X, or on its small Gram matrix", [
      I32EnumAttrCase<"standard", 0>,
      I32EnumAttrCase<"gram", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_NSFormAttr : EnumAttr<Muir_Dialect, Muir_NSForm, "ns_form"> {
  let assemblyFormat = "`<` $value `>`";
}

def Muir_NewtonSchulzMode : I32EnumAttr<"NewtonSchulzMode",
    "how Newton-Schulz of a split matrix runs over its group", [
      I32EnumAttrCase<"auto_", 0, "auto">,
      I32EnumAttrCase<"duplicated", 1>,
      I32EnumAttrCase<"distributed", 2>,
      I32EnumAttrCase<"resharded", 3>,
      I32EnumAttrCase<"blockwise", 4>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
// `muir.ns_mode` on a muon_update (a request, from a description's
// ns_mode) or on an apply_update (muir-distribute's decision).
def Muir_NewtonSchulzModeAttr
    : EnumAttr<Muir_Dialect, Muir_NewtonSchulzMode, "ns_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

def Muir_NSReason : I32EnumAttr<"NSReason",
    "why a split matrix's Newton-Schulz runs in the mode it does", [
      I32EnumAttrCase<"requested", 0>,
      I32EnumAttrCase<"cost_model", 1>,
      I32EnumAttrCase<"both_dims", 2>,
      I32EnumAttrCase<"fsdp_owner", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}

// A double (as APFloat, which hashes) printed with %g and parsed as a float literal: the cost model's
// estimates, which muir-distribute rounds to three significant digits.
class Muir_F64Parameter<string desc>
    : AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = "::mlir::muir::parseF64Parameter($_parser)";
  let printer = "::mlir::muir::printF64Parameter($_printer, $_self)";
}

def Muir_NSCandidateAttr : AttrDef<Muir_Dialect, "NSCandidate"> {
  let mnemonic = "ns_candidate";
  let summary = "one way the cost model weighed to run a Newton-Schulz";
  let description = [{
    `#muir.ns_candidate<distributed, gram, 0.0179 ms, 0.79 MB>`: the mode
    and form, the modelled milliseconds of the whole Newton-Schulz on one
    rank, and the megabytes each rank sends for it.
  }];
  let parameters = (ins EnumParameter<Muir_NewtonSchulzMode>:$mode,
                        EnumParameter<Muir_NSForm>:$form,
                        Muir_F64Parameter<"modelled milliseconds">:$ms,
                        Muir_F64Parameter<"megabytes sent per rank">:$mb);
  let assemblyFormat = "`<` $mode `,` $form `,` $ms `ms` `,` $mb `MB` `>`";
  let genVerifyDecl = 1;
}

def Muir_NSWhyAttr : AttrDef<Muir_Dialect, "NSWhy"> {
  let mnemonic = "ns_why";
  let summary = "why muir-distribute ran a Newton-Schulz the way it did";
  let description = [{
    Next to `muir.ns_mode` on the `apply_update` of a split or FSDP
    matrix. `requested`: the description or the ns-mode option fixed the
    mode; `both_dims`: the matrix is split on both dimensions, so it is
    gathered (duplicated); `fsdp_owner`: one dp rank orthogonalises the
    whole matrix; `cost_model`: the cheapest of the listed candidates on
    the named machine profile:

    ```
    #muir.ns_why<cost_model on "cpu" : [
        <duplicated, standard, 0.0207 ms, 0.786 MB>,
        <distributed, gram, 0.0179 ms, 0.79 MB>]>
    ```
  }];
  let parameters = (ins EnumParameter<Muir_NSReason>:$reason,
                        StringRefParameter<"machine profile", "\"\"">:$machine,
                        OptionalArrayRefParameter<"NSCandidateAttr">:
                            $candidates);
  let assemblyFormat =
      "`<` $reason (`on` $machine^)? (`:` `[` $candidates^ `]`)? `>`";
  let genVerifyDecl = 1;
}

def Muir_ShardKind : I32EnumAttr<"ShardKind",
    "how a tensor dimension is split over a grid axis", [
      I32EnumAttrCase<"tp_column", 0>,
      I32EnumAttrCase<"tp_row", 1>,
      I32EnumAttrCase<"fsdp", 2>,
      I32EnumAttrCase<"expert", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}

def Muir_ShardAttr : AttrDef<Muir_Dialect, "Shard"> {
  let mnemonic = "shard";
  let summary = "one dimension of a tensor split over a grid axis";
  let description = [{
    `#muir.shard<tp_column, "tp", 0>`: dimension `dim` of the tensor is
    split evenly over the ranks of grid axis `axis` (of the module's grid
    that has it, or of the argument's `muir.folding`). `kind` says why:
    `tp_column` (output features of a tensor-parallel layer), `tp_row`
    (input features), `fsdp` (a data-parallel split of the stored tensor),
    `expert` (an expert stack over an expert-parallel axis). A function
    argument lists its splits in `muir.shards`; `muir-distribute` reads
    them.
  }];
  let parameters = (ins EnumParameter<Muir_ShardKind>:$kind,
                        StringRefParameter<"grid axis">:$axis,
                        "int64_t":$dim);
  let assemblyFormat = "`<` $kind `,` $axis `,` $dim `>`";
}

def Muir_SplitAttr : AttrDef<Muir_Dialect, "Split"> {
  let mnemonic = "split";
  let summary = "how this rank's block of a tensor sits in the whole";
  let description = [{
    `#muir.split<@world, ["tp"], 0>`: the argument is this rank's block of
    dimension `dim` of the whole tensor, split evenly over the group of
    `axes` of grid `grid` (several axes: one split over all of them,
    row-major). `muir-distribute` writes one for every shard it applies,
    naming the grid the axis belongs to; the step library reads them to
    slice whole tensors into rank parts and gather them back.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$grid,
                        "::mlir::ArrayAttr":$axes,
                        "int64_t":$dim);
  let assemblyFormat = "`<` $grid `,` $axes `,` $dim `>`";
}

def Muir_MomentumKind : I32EnumAttr<"MomentumKind",
    "how the momentum buffer accumulates gradients", [
      I32EnumAttrCase<"ema", 0>,
      I32EnumAttrCase<"accumulate", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_MomentumKindAttr
    : EnumAttr<Muir_Dialect, Muir_MomentumKind, "momentum_kind">;

def Muir_ScaleMode : I32EnumAttr<"ScaleMode",
    "how the orthogonalised update is scaled", [
      I32EnumAttrCase<"spectral", 0>,
      I32EnumAttrCase<"shape", 1>,
      I32EnumAttrCase<"unit_rms", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_ScaleModeAttr : EnumAttr<Muir_Dialect, Muir_ScaleMode, "scale_mode">;

def Muir_RouteScoring : I32EnumAttr<"RouteScoring",
    "how a router turns logits into expert scores", [
      I32EnumAttrCase<"softmax", 0>,
      I32EnumAttrCase<"sigmoid", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_RouteScoringAttr
    : EnumAttr<Muir_Dialect, Muir_RouteScoring, "route_scoring">;

def Muir_DropPolicy : I32EnumAttr<"DropPolicy",
    "which routed pairs an expert over capacity keeps", [
      I32EnumAttrCase<"weight", 0>,
      I32EnumAttrCase<"position", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_DropPolicyAttr
    : EnumAttr<Muir_Dialect, Muir_DropPolicy, "drop_policy">;

def Muir_ReductionKind : I32EnumAttr<"ReductionKind",
    "element-wise reduction of a collective", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>,
      I32EnumAttrCase<"avg", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_ReductionKindAttr
    : EnumAttr<Muir_Dialect, Muir_ReductionKind, "reduction">;

#endif // MUIR_ENUMS_TD
