// RUN: muir-opt %s --split-input-file --muir-form-syrk | FileCheck %s
// A function pass too: nested under func.func, the same rewrites.
// RUN: muir-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(muir-form-syrk))' | FileCheck %s

// One Newton-Schulz step as muir-expand-newton-schulz writes it: the Gram
// matrix X X^T and A A (A symmetric) become SYRK, with b A joining as the
// accumulator; B X + a X stays a GEMM.
// CHECK-LABEL: func.func @ns_step
// CHECK: %[[A:.+]] = muir.syrk %[[X:.+]] : (tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: %[[B:.+]] = muir.syrk %[[A]] acc %[[A]] {alpha = 2.031500e+00 : f64, beta = -4.775000e+00 : f64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: muir.matmul %[[B]], %[[X]] acc %[[X]] {beta = 3.444500e+00 : f64}
func.func @ns_step(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = muir.matmul %x, %x {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %b = muir.matmul %a, %a acc %a {alpha = 2.0315, beta = -4.775} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = muir.matmul %b, %x acc %x {beta = 3.4445} : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The distributed mode's row split: X^T X (transpose), all-reduced (a sum of
// symmetric matrices is symmetric), then A A; batched stacks too.
muir.grid @world axes = ["tp"] shape = [2]
// CHECK-LABEL: func.func @gram_rows
// CHECK: %[[G:.+]] = muir.syrk %{{.+}} {transpose} : (tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
// CHECK: %[[R:.+]] = muir.all_reduce %[[G]]
// CHECK: muir.syrk %[[R]] acc %[[R]] {alpha = 2.000000e+00 : f64, beta = -1.000000e+00 : f64}
func.func @gram_rows(%x: tensor<2x4x8xf32>) -> tensor<2x8x8xf32> {
  %g = muir.matmul %x, %x {transpose_a} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  %r = muir.all_reduce %g on @world axes = ["tp"] : tensor<2x8x8xf32>
  %b = muir.matmul %r, %r acc %r {alpha = 2.0, beta = -1.0} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %b : tensor<2x8x8xf32>
}

// -----

// Left alone: a product of two different matrices; A A of a matrix not
// known to be symmetric; X X without a transpose; X^T X^T; and a symmetric
// product whose accumulator is not symmetric (beta != 0).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: muir.syrk
// CHECK-COUNT-5: muir.matmul
// CHECK-NOT: muir.syrk
func.func @left_alone(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = muir.matmul %x, %y {transpose_b} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = muir.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = muir.matmul %1, %1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = muir.matmul %x, %x {transpose_a, transpose_b} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = muir.matmul %x, %x acc %y {transpose_b, beta = 1.0} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0, %1, %2, %3, %4 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// An accumulator read with beta 0 is dropped, so the product still forms.
// CHECK-LABEL: func.func @unread_acc
// CHECK: muir.syrk %{{.+}} {alpha = 5.000000e-01 : f64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
func.func @unread_acc(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = muir.matmul %x, %x acc %y {transpose_b, alpha = 0.5, beta = 0.0} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
