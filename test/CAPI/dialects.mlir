// MLIR's C API for muir (muir-c/Dialects.h, libMuirCAPI.so): the handles
// name their dialects; IR with muir ops parses only once the handles put
// the dialects in the registry; muir's passes, registered through
// mlirRegisterMuirPasses, run from a pipeline string.
// RUN: muir-capi-test %s 'builtin.module(muir-decompose-optimizers)' | FileCheck %s
// (header.test compiles a C program against the header.)

// CHECK: namespace: muir
// CHECK-NEXT: namespace: muir_exec
// CHECK-NEXT: without the handles: refused
// CHECK-NEXT: loaded: muir
// CHECK-NEXT: loaded: muir_exec
// CHECK-NEXT: with the handles: parsed
// CHECK-LABEL: func.func @step
// CHECK: muir.momentum
// CHECK: muir.newton_schulz %{{.*}} steps(5) schedule(simple) : tensor<4x8xf32>
// CHECK: muir.apply_update
// CHECK-NOT: muir.muon_update
func.func @step(%w: tensor<4x8xf32> {muir.name = "w"}, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02, beta = 0.9, weight_decay = 0.1} : tensor<4x8xf32>
  return %w1, %m1 : tensor<4x8xf32>, tensor<4x8xf32>
}
