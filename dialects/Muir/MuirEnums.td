//===- MuirEnums.td - enums of the muir dialect ------------*- tablegen -*-===//
#ifndef MUIR_ENUMS_TD
#define MUIR_ENUMS_TD

include "Muir/MuirDialect.td"
include "mlir/IR/EnumAttr.td"

// What a step function's argument is (`muir.role`), what kind of layer a
// parameter belongs to (`muir.kind`), and the dtype a parameter is stored
// in (`muir.dtype`): #muir.role<param>, #muir.kind<attention>,
// #muir.dtype<bf16>.
def Muir_ArgRole : I32EnumAttr<"ArgRole", "a step argument's role", [
      I32EnumAttrCase<"param", 0>,
      I32EnumAttrCase<"grad", 1>,
      I32EnumAttrCase<"state", 2>,
      I32EnumAttrCase<"data", 3>,
      I32EnumAttrCase<"step", 4>,
      I32EnumAttrCase<"hyper", 5>,
      I32EnumAttrCase<"tokens", 6>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_ArgRoleAttr : EnumAttr<Muir_Dialect, Muir_ArgRole, "role"> {
  let assemblyFormat = "`<` $value `>`";
}

def Muir_ParamKind : I32EnumAttr<"ParamKind", "a parameter's kind of layer", [
      I32EnumAttrCase<"attention", 0>,
      I32EnumAttrCase<"mlp", 1>,
      I32EnumAttrCase<"expert", 2>,
      I32EnumAttrCase<"router", 3>,
      I32EnumAttrCase<"embedding", 4>,
      I32EnumAttrCase<"head", 5>,
      I32EnumAttrCase<"norm", 6>,
      I32EnumAttrCase<"bias", 7>,
      I32EnumAttrCase<"other", 8>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_ParamKindAttr : EnumAttr<Muir_Dialect, Muir_ParamKind, "kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def Muir_DType : I32EnumAttr<"DType", "a parameter's storage dtype", [
      I32EnumAttrCase<"f32", 0>,
      I32EnumAttrCase<"bf16", 1>,
      I32EnumAttrCase<"f16", 2>,
      I32EnumAttrCase<"f64", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_DTypeAttr : EnumAttr<Muir_Dialect, Muir_DType, "dtype"> {
  let assemblyFormat = "`<` $value `>`";
}

// The one list of schedule names: the op parser's message, the description
// reader's choices (and through them muir.settings() and muir.torch) are
// read off this enum, in this order; the tables are getNamedSchedule's.
def Muir_NSSchedule : I32EnumAttr<"NSSchedule",
    "Newton-Schulz coefficient schedule", [
      I32EnumAttrCase<"simple", 0>,
      I32EnumAttrCase<"quintic", 1>,
      I32EnumAttrCase<"polar_express", 2>,
      I32EnumAttrCase<"deepseekv4", 3>,
      I32EnumAttrCase<"cubic5", 4>,
      I32EnumAttrCase<"custom", 5>]> {
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

def Muir_NSPrecision : I32EnumAttr<"NSPrecision",
    "the element type Newton-Schulz iterates in", [
      I32EnumAttrCase<"f32", 0>,
      I32EnumAttrCase<"bf16", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}
def Muir_NSPrecisionAttr
    : EnumAttr<Muir_Dialect, Muir_NSPrecision, "ns_precision"> {
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

// The machine profiles of the cost model (the tools' --machine), named in
// flags, reports and `muir.ns_why`.
def Muir_Machine : I32EnumAttr<"Machine", "a machine profile of the cost model", [
      I32EnumAttrCase<"Cpu", 0, "cpu">,
      I32EnumAttrCase<"H200", 1, "h200">,
      I32EnumAttrCase<"H200Bf16", 2, "h200-bf16">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
}

def Muir_NSReason : I32EnumAttr<"NSReason",
    "why a split matrix's Newton-Schulz runs in the mode it does", [
      I32EnumAttrCase<"requested", 0>,
      I32EnumAttrCase<"cost_model", 1>,
      I32EnumAttrCase<"both_dims", 2>,
      I32EnumAttrCase<"fsdp_owner", 3>,
      I32EnumAttrCase<"layout_invariant", 4>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir";
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
