//===- MuirAttrs.td - attributes of the muir dialect -------*- tablegen -*-===//
//
// The typed decisions and shardings: the cost model's reason for a
// Newton-Schulz mode (NSWhyAttr with its NSCandidateAttrs), a tensor's
// shards on the grid's axes and a matrix's split.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_ATTRS_TD
#define MUIR_ATTRS_TD

include "Muir/MuirEnums.td"
include "mlir/IR/AttrTypeBase.td"

// A double (as APFloat, which hashes) printed with %g and parsed as a float literal: the cost model's
// estimates, which muir-distribute rounds to three significant digits.
// A machine profile (the Machine enum), spelt as a string: "cpu", "h200",
// "h200-bf16"; another name does not parse.
def Muir_MachineParameter
    : OptionalParameter<"std::optional<::mlir::muir::Machine>",
                        "the machine profile"> {
  let parser = "::mlir::muir::parseMachineParameter($_parser)";
  let printer = "::mlir::muir::printMachineParameter($_printer, $_self)";
}

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
                        Muir_MachineParameter:$machine,
                        OptionalArrayRefParameter<"NSCandidateAttr">:
                            $candidates);
  let assemblyFormat =
      "`<` $reason (`on` $machine^)? (`:` `[` $candidates^ `]`)? `>`";
  let genVerifyDecl = 1;
}

def Muir_NSFormCostAttr : AttrDef<Muir_Dialect, "NSFormCost"> {
  let mnemonic = "ns_form_cost";
  let summary = "the modelled seconds of both forms of a Newton-Schulz";
  let description = [{
    Next to `muir.ns_form`, from muir-gram-newton-schulz: what the cost
    model priced each form at on one rank,
    `#muir.ns_form_cost<standard = 0.00213 s, gram = 0.00118 s>` (finite,
    non-negative).
  }];
  let parameters = (ins Muir_F64Parameter<"the standard form's seconds">:
                            $standard,
                        Muir_F64Parameter<"the Gram form's seconds">:$gram);
  let assemblyFormat =
      "`<` `standard` `=` $standard `s` `,` `gram` `=` $gram `s` `>`";
  let genVerifyDecl = 1;
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

#endif // MUIR_ATTRS_TD
