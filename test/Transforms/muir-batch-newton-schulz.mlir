// RUN: muir-opt %s --split-input-file --muir-batch-newton-schulz | FileCheck %s
// RUN: muir-opt %s --split-input-file --muir-batch-newton-schulz --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUG

// Two 8x16 matrices and a stack of three with the same settings: one
// [5, 8, 16] batch, sliced back in order; readers of the first results move
// after the batch. The 16x8 matrix (another shape) and the one with other
// coefficients stay alone.
// CHECK-LABEL: func.func @group
// CHECK-DAG: %[[EA:.+]] = tensor.expand_shape %[[A:[^ ]+]] {{\[\[}}0, 1], [2]] output_shape [1, 8, 16]
// CHECK-DAG: %[[EB:.+]] = tensor.expand_shape %[[B:[^ ]+]] {{\[\[}}0, 1], [2]] output_shape [1, 8, 16]
// CHECK: %[[S:.+]] = tensor.concat dim(0) %[[EA]], %[[EB]], %[[E:[^ ]+]] : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<3x8x16xf32>) -> tensor<5x8x16xf32>
// CHECK: %[[O:.+]] = muir.newton_schulz %[[S]] steps(5) schedule(simple) : tensor<5x8x16xf32>
// CHECK: tensor.extract_slice %[[O]][0, 0, 0] [1, 8, 16] [1, 1, 1]
// CHECK: tensor.extract_slice %[[O]][1, 0, 0] [1, 8, 16] [1, 1, 1]
// CHECK: tensor.extract_slice %[[O]][2, 0, 0] [3, 8, 16] [1, 1, 1]
// CHECK: muir.newton_schulz %{{.*}} steps(5) schedule(simple) : tensor<16x8xf32>
// CHECK: muir.newton_schulz %{{.*}} steps(5) schedule(quintic) : tensor<8x16xf32>
// CHECK-NOT: muir.newton_schulz
func.func @group(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>, %e: tensor<3x8x16xf32>, %c: tensor<16x8xf32>, %d: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<3x8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>) {
  %a1 = muir.newton_schulz %a steps(5) schedule(simple) : tensor<8x16xf32>
  %a2 = muir.transpose %a1 : tensor<8x16xf32> -> tensor<16x8xf32>
  %b1 = muir.newton_schulz %b steps(5) schedule(simple) : tensor<8x16xf32>
  %c1 = muir.newton_schulz %c steps(5) schedule(simple) : tensor<16x8xf32>
  %d1 = muir.newton_schulz %d steps(5) schedule(quintic) : tensor<8x16xf32>
  %e1 = muir.newton_schulz %e steps(5) schedule(simple) : tensor<3x8x16xf32>
  %a3 = muir.transpose %a2 : tensor<16x8xf32> -> tensor<8x16xf32>
  return %a3, %b1, %e1, %c1, %d1 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<3x8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>
}

// -----

// Matrices owned by different data-parallel ranks (different switch cases)
// never batch together; those of one case do.
muir.grid @world axes = ["dp"] shape = [2]
// CHECK-LABEL: func.func @owners
// CHECK: case 0 {
// CHECK: muir.newton_schulz %{{.*}} : tensor<2x8x16xf32>
// CHECK: case 1 {
// CHECK: muir.newton_schulz %{{.*}} : tensor<8x16xf32>
// CHECK: default {
func.func @owners(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = muir.group_rank on @world axes = ["dp"] : index
  %s = scf.index_switch %r -> tensor<8x16xf32>
  case 0 {
    %a1 = muir.newton_schulz %a steps(5) schedule(simple) : tensor<8x16xf32>
    %b1 = muir.newton_schulz %b steps(5) schedule(simple) : tensor<8x16xf32>
    %x = muir.matmul %a1, %b1 {transpose_b} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %y = muir.matmul %x, %a1 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    scf.yield %y : tensor<8x16xf32>
  }
  case 1 {
    %c1 = muir.newton_schulz %c steps(5) schedule(simple) : tensor<8x16xf32>
    scf.yield %c1 : tensor<8x16xf32>
  }
  default {
    scf.yield %a : tensor<8x16xf32>
  }
  return %s : tensor<8x16xf32>
}

// -----

// A single matrix of its kind is left as it is.
// CHECK-LABEL: func.func @single
// CHECK-NOT: tensor.concat
// CHECK: muir.newton_schulz %{{.*}} : tensor<8x16xf32>
func.func @single(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a1 = muir.newton_schulz %a steps(5) schedule(simple) : tensor<8x16xf32>
  return %a1 : tensor<8x16xf32>
}

// -----

// Same shapes but different precisions: two batches, each keeping its
// precision.
// CHECK-LABEL: func.func @precisions
// CHECK-DAG: muir.newton_schulz %{{.*}} steps(5) schedule(simple) : tensor<2x4x8xf32>
// CHECK-DAG: muir.newton_schulz %{{.*}} steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<2x4x8xf32>
// CHECK-NOT: muir.newton_schulz
func.func @precisions(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = muir.newton_schulz %a steps(5) schedule(simple) : tensor<4x8xf32>
  %1 = muir.newton_schulz %b steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<4x8xf32>
  %2 = muir.newton_schulz %c steps(5) schedule(simple) : tensor<4x8xf32>
  %3 = muir.newton_schulz %d steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<4x8xf32>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// f64 matrices (an f64 parameter's, computed in f64) batch with each other,
// never with f32 ones of the same shape.
// CHECK-LABEL: func.func @element_types
// CHECK: tensor.concat dim(0) %{{.*}}, %{{.*}} : (tensor<1x8x16xf64>, tensor<1x8x16xf64>) -> tensor<2x8x16xf64>
// CHECK: muir.newton_schulz %{{.*}} steps(5) schedule(simple) : tensor<2x8x16xf64>
// CHECK: muir.newton_schulz %{{.*}} steps(5) schedule(simple) : tensor<8x16xf32>
// CHECK-NOT: muir.newton_schulz
func.func @element_types(%a: tensor<8x16xf64>, %b: tensor<8x16xf64>, %c: tensor<8x16xf32>)
    -> (tensor<8x16xf64>, tensor<8x16xf64>, tensor<8x16xf32>) {
  %a1 = muir.newton_schulz %a steps(5) schedule(simple) : tensor<8x16xf64>
  %c1 = muir.newton_schulz %c steps(5) schedule(simple) : tensor<8x16xf32>
  %b1 = muir.newton_schulz %b steps(5) schedule(simple) : tensor<8x16xf64>
  return %a1, %b1, %c1 : tensor<8x16xf64>, tensor<8x16xf64>, tensor<8x16xf32>
}

// -----

// The batch's location fuses its matrices' (the plan report names a
// batch's matrices from it).
// CHECK-LABEL: func.func @named
// DEBUG-LABEL: func.func @named
// DEBUG: muir.newton_schulz %{{.*}} : tensor<2x8x16xf32> loc(#[[FUSED:loc[0-9]+]])
// DEBUG-DAG: #[[A:loc[0-9]+]] = loc("param a"(#{{loc[0-9]+}}))
// DEBUG-DAG: #[[B:loc[0-9]+]] = loc("param b"(#{{loc[0-9]+}}))
// DEBUG-DAG: #[[FUSED]] = loc(fused[#[[A]], #[[B]]])
func.func @named(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %a1 = muir.newton_schulz %a steps(5) schedule(simple) : tensor<8x16xf32> loc("param a"("a.yaml":3:5))
  %b1 = muir.newton_schulz %b steps(5) schedule(simple) : tensor<8x16xf32> loc("param b"("a.yaml":4:5))
  return %a1, %b1 : tensor<8x16xf32>, tensor<8x16xf32>
}
