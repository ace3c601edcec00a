// RUN: muir-opt %s --split-input-file --muir-expand-newton-schulz | FileCheck %s

// Wide: no transposes; per step A = X X^T, B = b A + c A A, X' = a X + B X.
// CHECK-LABEL: func.func @wide
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK: %[[N:.+]] = muir.frobenius_normalize %[[X]] {eps = 1.000000e-03 : f64} : tensor<4x8xf32>
// CHECK-NOT: muir.transpose
// CHECK: %[[A:.+]] = muir.matmul %[[N]], %[[N]] {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: %[[B:.+]] = muir.matmul %[[A]], %[[A]] acc %[[A]] {alpha = 2.031500e+00 : f64, beta = -4.775000e+00 : f64}
// CHECK: %[[X1:.+]] = muir.matmul %[[B]], %[[N]] acc %[[N]] {beta = 3.444500e+00 : f64} : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[A2:.+]] = muir.matmul %[[X1]], %[[X1]] {transpose_b}
// CHECK: %[[B2:.+]] = muir.matmul %[[A2]], %[[A2]] acc %[[A2]]
// CHECK: %[[X2:.+]] = muir.matmul %[[B2]], %[[X1]] acc %[[X1]]
// CHECK-NOT: muir.matmul
// CHECK-NOT: muir.transpose
// CHECK: return %[[X2]]
func.func @wide(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = muir.newton_schulz %x steps(2) schedule(simple) {eps = 1.0e-3} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tall: the transposed iteration without transposes, so the Gram matrix is
// 4x4: A = X^T X, X' = a X + X B.
// CHECK-LABEL: func.func @tall
// CHECK: %[[N:.+]] = muir.frobenius_normalize %{{.*}} : tensor<8x4xf32>
// CHECK-NOT: muir.transpose
// CHECK: %[[A:.+]] = muir.matmul %[[N]], %[[N]] {transpose_a} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[B:.+]] = muir.matmul %[[A]], %[[A]] acc %[[A]]
// CHECK: %[[X:.+]] = muir.matmul %[[N]], %[[B]] acc %[[N]] {beta = 3.444500e+00 : f64} : (tensor<8x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NOT: muir.transpose
// CHECK: return %[[X]]
func.func @tall(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %y = muir.newton_schulz %x steps(1) schedule(simple) : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Batched stacks stay batched: one op per product for all experts.
// CHECK-LABEL: func.func @stack
// CHECK: muir.frobenius_normalize %{{.*}} : tensor<3x8x4xf32>
// CHECK-NOT: muir.transpose
// CHECK: muir.matmul %{{.*}} {transpose_a} : (tensor<3x8x4xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
// CHECK: muir.matmul %{{.*}} : (tensor<3x8x4xf32>, tensor<3x4x4xf32>, tensor<3x8x4xf32>) -> tensor<3x8x4xf32>
// CHECK-NOT: muir.transpose
func.func @stack(%x: tensor<3x8x4xf32>) -> tensor<3x8x4xf32> {
  %y = muir.newton_schulz %x steps(1) schedule(simple) : tensor<3x8x4xf32>
  return %y : tensor<3x8x4xf32>
}

// -----

// Per-step schedules: quintic's five triples in order, and polar_express's
// last triple (1.875, -1.25, 0.375) repeating from step 8 on.
// CHECK-LABEL: func.func @quintic
// CHECK: {alpha = 2.927000e+00 : f64, beta = -6.894600e+00 : f64}
// CHECK: {beta = 4.084800e+00 : f64}
// CHECK: {alpha = 2.637700e+00 : f64, beta = -6.302900e+00 : f64}
// CHECK: {beta = 3.950500e+00 : f64}
// CHECK: {alpha = 2.303700e+00 : f64, beta = -5.591300e+00 : f64}
// CHECK: {beta = 3.741800e+00 : f64}
// CHECK: {alpha = 1.204600e+00 : f64, beta = -3.142700e+00 : f64}
// CHECK: {beta = 2.876900e+00 : f64}
// CHECK: {alpha = 1.201200e+00 : f64, beta = -3.052500e+00 : f64}
// CHECK: {beta = 2.836600e+00 : f64}
// CHECK-NOT: muir.matmul
func.func @quintic(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(5) schedule(quintic) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @polar_express_repeats
// CHECK: {alpha = 1.646070e+01 : f64, beta = -2.290190e+01 : f64}
// CHECK: {beta = 8.205100e+00 : f64}
// CHECK-COUNT-2: {alpha = 3.750000e-01 : f64, beta = -1.250000e+00 : f64}
// CHECK: {beta = 1.875000e+00 : f64}
// CHECK-NOT: muir.matmul
func.func @polar_express_repeats(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(9) schedule(polar_express) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @custom_repeats
// CHECK-COUNT-3: {alpha = 5.000000e-01 : f64, beta = -1.000000e+00 : f64}
// CHECK: {beta = 2.000000e+00 : f64}
// CHECK-NOT: muir.matmul
func.func @custom_repeats(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(3) schedule(custom) coefficients([2.0, -1.0, 0.5]) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// A bf16 iterate: X normalised in f32 and rounded once, every product on
// bf16 tensors, the result widened back to f32.
// CHECK-LABEL: func.func @bf16
// CHECK: %[[N:.+]] = muir.frobenius_normalize %{{.*}} : tensor<4x8xf32>
// CHECK: %[[H:.+]] = arith.truncf %[[N]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[A:.+]] = muir.matmul %[[H]], %[[H]] {transpose_b} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x4xbf16>
// CHECK: %[[B:.+]] = muir.matmul %[[A]], %[[A]] acc %[[A]] {{.*}} : (tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
// CHECK: %[[X:.+]] = muir.matmul %[[B]], %[[H]] acc %[[H]] {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[W:.+]] = arith.extf %[[X]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: return %[[W]]
func.func @bf16(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = muir.newton_schulz %x steps(1) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
