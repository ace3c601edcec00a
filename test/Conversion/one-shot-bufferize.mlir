// RUN: muir-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// The muir ops' BufferizableOpInterface models under upstream's own pass:
// each op becomes its exec op, its results fresh 64-byte-aligned buffers
// that it writes; its operands are only read (the argument is not copied).
muir.grid @g axes = ["tp"] shape = [2]
// CHECK-LABEL: func.func @models
// CHECK-SAME: (%[[X:[^:]+]]: memref<4x8xf32>) -> memref<4x4xf32>
// CHECK: %[[N:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK: muir_exec.frobenius_normalize %[[X]], %[[N]]
// CHECK: %[[A:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
// CHECK: muir_exec.gemm %[[N]], %[[N]], %[[A]] {{.*}}transpose_b
// CHECK: %[[R:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
// CHECK: muir_exec.all_reduce %[[A]], %[[R]] {group = #muir_exec.group<@g, ["tp"]>, reduction = #muir_exec.reduction<sum>}
// CHECK: muir_exec.observe %[[R]]
// CHECK-NOT: memref.copy
// CHECK: return %[[R]]
func.func @models(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %n = muir.frobenius_normalize %x : tensor<4x8xf32>
  %a = muir.matmul %n, %n {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %r = muir.all_reduce %a on @g axes = ["tp"] : tensor<4x4xf32>
  muir.probe %r {label = "r", slot = 0} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
