// RUN: muir-opt %s --canonicalize --split-input-file | FileCheck %s

// The dialect's folders and canonicalization patterns. A collective over a
// group of one rank moves nothing: the grid @g has dp = 1, so every
// collective over "dp" alone is its input; over "tp" (2 ranks) it stays.

muir.grid @g axes = ["dp", "tp"] shape = [1, 2]

// CHECK-LABEL: func.func @group_of_one(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x4xf32>, %[[D:[^:]+]]: tensor<4x4xf64>
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[D]]
func.func @group_of_one(%x: tensor<8x4xf32>, %d: tensor<4x4xf64>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>,
        tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf64>) {
  %0 = muir.all_reduce %x on @g axes = ["dp"] : tensor<8x4xf32>
  %1 = muir.all_reduce %x on @g axes = ["dp"] reduction = avg : tensor<8x4xf32>
  %2 = muir.all_gather %x on @g axes = ["dp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %3 = muir.reduce_scatter %x on @g axes = ["dp"] scatter_axis = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %4 = muir.all_to_all %x on @g axes = ["dp"] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %5 = muir.broadcast %x on @g axes = ["dp"] root = 0 : tensor<8x4xf32>
  %6 = muir.all_slice %x on @g axes = ["dp"] slice_axis = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %7 = muir.symmetric_all_reduce %d on @g axes = ["dp"] : tensor<4x4xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<8x4xf32>, tensor<8x4xf32>,
      tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>,
      tensor<8x4xf32>, tensor<4x4xf64>
}

// Over two ranks (or dp and tp together) they stay.
// CHECK-LABEL: func.func @group_of_two(
// CHECK: muir.all_reduce %{{.*}} on @g axes = ["tp"]
// CHECK: muir.all_reduce %{{.*}} on @g axes = ["dp", "tp"]
// CHECK: muir.all_gather %{{.*}} on @g axes = ["tp"]
// CHECK: muir.broadcast %{{.*}} on @g axes = ["tp"]
// CHECK: muir.all_slice %{{.*}} on @g axes = ["tp"]
// CHECK: muir.reduce_scatter %{{.*}} on @g axes = ["tp"]
// CHECK: muir.all_to_all %{{.*}} on @g axes = ["tp"]
func.func @group_of_two(%x: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
        tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>) {
  %0 = muir.all_reduce %x on @g axes = ["tp"] : tensor<8x4xf32>
  %1 = muir.all_reduce %x on @g axes = ["dp", "tp"] : tensor<8x4xf32>
  %2 = muir.all_gather %x on @g axes = ["tp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<16x4xf32>
  %3 = muir.broadcast %x on @g axes = ["tp"] root = 1 : tensor<8x4xf32>
  %4 = muir.all_slice %x on @g axes = ["tp"] slice_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %5 = muir.reduce_scatter %x on @g axes = ["tp"] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %6 = muir.all_to_all %x on @g axes = ["tp"] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<8x4xf32>, tensor<8x4xf32>,
      tensor<16x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>,
      tensor<4x8xf32>
}

// The rank in a group of one is 0: a switch on it keeps case 0 only.
// CHECK-LABEL: func.func @rank_of_one(
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[R:.+]] = muir.group_rank on @g axes = ["tp"] : index
// CHECK-NEXT: return %[[C0]], %[[R]]
func.func @rank_of_one() -> (index, index) {
  %0 = muir.group_rank on @g axes = ["dp"] : index
  %1 = muir.group_rank on @g axes = ["tp"] : index
  return %0, %1 : index, index
}

// The fused SYRK all-reduce over one rank is the rank's SYRK (its alpha
// and transpose kept, no accumulator).
// CHECK-LABEL: func.func @syrk_of_one(
// CHECK-NEXT: %[[S:.+]] = muir.syrk %{{[^ ]+}} {alpha = 2.500000e-01 : f64, transpose} : (tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[T:.+]] = muir.syrk_all_reduce %{{.*}} on @g axes = ["tp"]
// CHECK-NEXT: return %[[S]], %[[T]]
func.func @syrk_of_one(%a: tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = muir.syrk_all_reduce %a on @g axes = ["dp"] {alpha = 0.25 : f64, transpose, chunk_rows = 2 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  %1 = muir.syrk_all_reduce %a on @g axes = ["tp"] {transpose} : tensor<8x4xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A transpose of a transpose is the tensor; one transpose stays.
// CHECK-LABEL: func.func @transposes(
// CHECK-SAME: %[[X:[^:]+]]: tensor<3x8x4xf32>
// CHECK-NEXT: %[[T:.+]] = muir.transpose %[[X]] : tensor<3x8x4xf32> -> tensor<3x4x8xf32>
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transposes(%x: tensor<3x8x4xf32>) -> (tensor<3x8x4xf32>, tensor<3x4x8xf32>) {
  %0 = muir.transpose %x : tensor<3x8x4xf32> -> tensor<3x4x8xf32>
  %1 = muir.transpose %0 : tensor<3x4x8xf32> -> tensor<3x8x4xf32>
  return %1, %0 : tensor<3x8x4xf32>, tensor<3x4x8xf32>
}
