// muir-reduce (upstream's mlir-reduce with muir's dialects and passes):
// the reduction tree drops every op the interestingness test does not need
// (here: a muir.newton_schulz must stay), muir ops parsed and printed.
// RUN: muir-reduce %s -reduction-tree='traversal-mode=0 test=%S/Inputs/has-newton-schulz.sh' 2>/dev/null | FileCheck %s
// RUN: muir-reduce --help | FileCheck %s --check-prefix=HELP

// CHECK-NOT: @update
// CHECK-NOT: muir.muon_update
// CHECK: func.func @orthogonalize
// CHECK: %[[N:.+]] = muir.frobenius_normalize
// CHECK: muir.newton_schulz %[[N]] steps(5) schedule(simple) : tensor<8x4xf32>
// HELP: --muir-distribute

func.func @update(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %w, %mb = muir.muon_update %p, %g, %m {lr = 2.000000e-02 : f64} : tensor<8x4xf32>
  return %w, %mb : tensor<8x4xf32>, tensor<8x4xf32>
}

func.func @orthogonalize(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %n = muir.frobenius_normalize %x : tensor<8x4xf32>
  %o = muir.newton_schulz %n steps(5) schedule(simple) : tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}
