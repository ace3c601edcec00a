// RUN: muir-opt %s --split-input-file --muir-expand-newton-schulz | FileCheck %s
// A function pass too: nested under func.func, the same rewrites.
// RUN: muir-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(muir-expand-newton-schulz))' | FileCheck %s

// Wide: no transposes; one loop over the steps whose body is one step,
// A = X X^T, B = b A + c A A, X' = a X + B X, the coefficients operands (a
// one-triple schedule: constants before the loop).
// CHECK-LABEL: func.func @wide
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK: %[[N:.+]] = muir.frobenius_normalize %[[X]] {eps = 1.000000e-03 : f64} : tensor<4x8xf32>
// CHECK-DAG: %[[CA:.+]] = arith.constant 3.444500e+00 : f64
// CHECK-DAG: %[[CB:.+]] = arith.constant -4.775000e+00 : f64
// CHECK-DAG: %[[CC:.+]] = arith.constant 2.031500e+00 : f64
// CHECK-DAG: %[[STEPS:.+]] = arith.constant 2 : index
// CHECK-NOT: muir.transpose
// CHECK: %[[R:.+]] = scf.for %{{.*}} = %{{.*}} to %[[STEPS]] step %{{.*}} iter_args(%[[XK:.+]] = %[[N]]) -> (tensor<4x8xf32>) {
// CHECK-NEXT: %[[A:.+]] = muir.matmul %[[XK]], %[[XK]] {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[B:.+]] = muir.matmul %[[A]], %[[A]] acc %[[A]] alpha(%[[CC]]) beta(%[[CB]]) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, f64, f64) -> tensor<4x4xf32>
// CHECK-NEXT: %[[X1:.+]] = muir.matmul %[[B]], %[[XK]] acc %[[XK]] beta(%[[CA]]) : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, f64) -> tensor<4x8xf32>
// CHECK-NEXT: scf.yield %[[X1]]
// CHECK-NOT: muir.matmul
// CHECK-NOT: muir.transpose
// CHECK: return %[[R]]
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
// CHECK: scf.for {{.*}} iter_args(%[[XK:.+]] = %[[N]])
// CHECK-NEXT: %[[A:.+]] = muir.matmul %[[XK]], %[[XK]] {transpose_a} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[B:.+]] = muir.matmul %[[A]], %[[A]] acc %[[A]]
// CHECK-NEXT: %[[X:.+]] = muir.matmul %[[XK]], %[[B]] acc %[[XK]] beta(%{{.*}}) : (tensor<8x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>, f64) -> tensor<8x4xf32>
// CHECK-NOT: muir.transpose
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
// CHECK: muir.matmul %{{.*}} : (tensor<3x8x4xf32>, tensor<3x4x4xf32>, tensor<3x8x4xf32>, f64) -> tensor<3x8x4xf32>
// CHECK-NOT: muir.transpose
func.func @stack(%x: tensor<3x8x4xf32>) -> tensor<3x8x4xf32> {
  %y = muir.newton_schulz %x steps(1) schedule(simple) : tensor<3x8x4xf32>
  return %y : tensor<3x8x4xf32>
}

// -----

// Per-step schedules: the table of the distinct triples, step k reading
// row min(k, rows - 1): quintic's five triples; polar_express's eight,
// its last (1.875, -1.25, 0.375) repeating from step 8 on; a table longer
// than the count is cut to the count.
// CHECK-LABEL: func.func @quintic
// CHECK: %[[T:.+]] = arith.constant dense<{{\[}}[4.084800e+00, -6.894600e+00, 2.927000e+00], [3.950500e+00, -6.302900e+00, 2.637700e+00], [3.741800e+00, -5.591300e+00, 2.303700e+00], [2.876900e+00, -3.142700e+00, 1.204600e+00], [2.836600e+00, -3.052500e+00, 1.201200e+00]]> : tensor<5x3xf64>
// CHECK: %[[STEPS:.+]] = arith.constant 5 : index
// CHECK: scf.for %[[K:.+]] = %{{.*}} to %[[STEPS]]
// CHECK-NEXT: %[[LAST:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[ROW:.+]] = arith.minui %[[K]], %[[LAST]] : index
// CHECK: %[[CA:.+]] = tensor.extract %[[T]][%[[ROW]], %{{.*}}] : tensor<5x3xf64>
// CHECK: %[[CB:.+]] = tensor.extract %[[T]][%[[ROW]], %{{.*}}] : tensor<5x3xf64>
// CHECK: %[[CC:.+]] = tensor.extract %[[T]][%[[ROW]], %{{.*}}] : tensor<5x3xf64>
// CHECK: muir.matmul {{.*}} alpha(%[[CC]]) beta(%[[CB]])
// CHECK: muir.matmul {{.*}} beta(%[[CA]])
// CHECK: scf.yield
// CHECK-NOT: muir.matmul
func.func @quintic(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(5) schedule(quintic) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @polar_express_repeats
// CHECK: arith.constant dense<{{\[}}[8.205100e+00, -2.290190e+01, 1.646070e+01], {{.*}}, [1.875000e+00, -1.250000e+00, 3.750000e-01]]> : tensor<8x3xf64>
// CHECK: %[[STEPS:.+]] = arith.constant 9 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STEPS]]
// CHECK-NEXT: arith.constant 7 : index
func.func @polar_express_repeats(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(9) schedule(polar_express) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// deepseekv4: eight copies of simple's triple then two of (2, -1.5, 0.5),
// whose trailing run is one row: nine rows, the last repeating; cut to
// five steps it is simple's one triple (constants, no table). cubic5: five
// cubic triples (c = 0), the last repeating.
// CHECK-LABEL: func.func @deepseekv4
// CHECK: arith.constant dense<{{\[}}[3.444500e+00, -4.775000e+00, 2.031500e+00], {{.*}}, [3.444500e+00, -4.775000e+00, 2.031500e+00], [2.000000e+00, -1.500000e+00, 5.000000e-01]]> : tensor<9x3xf64>
// CHECK: %[[STEPS:.+]] = arith.constant 12 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STEPS]]
// CHECK-NEXT: arith.constant 8 : index
func.func @deepseekv4(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(12) schedule(deepseekv4) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @deepseekv4_cut
// CHECK-DAG: arith.constant 3.444500e+00 : f64
// CHECK-DAG: arith.constant -4.775000e+00 : f64
// CHECK-DAG: arith.constant 2.031500e+00 : f64
// CHECK-NOT: tensor<{{[0-9]+}}x3xf64>
// CHECK: scf.for
func.func @deepseekv4_cut(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(5) schedule(deepseekv4) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @cubic5
// CHECK: arith.constant dense<{{\[}}[3.3656576, -3.3420991999999998, 0.000000e+00], [2.5744351999999999, -1.4957376, 0.000000e+00], [2.5368962000000002, -1.431257, 0.000000e+00], [2.4418905999999998, -1.2764040000000001, 0.000000e+00], [2.2230471999999999, -0.96306499999999994, 0.000000e+00]]> : tensor<5x3xf64>
// CHECK: %[[STEPS:.+]] = arith.constant 7 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STEPS]]
// CHECK-NEXT: arith.constant 4 : index
func.func @cubic5(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = muir.newton_schulz %x steps(7) schedule(cubic5) : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @quintic_cut
// CHECK: arith.constant dense<{{\[}}[4.084800e+00, -6.894600e+00, 2.927000e+00], [3.950500e+00, -6.302900e+00, 2.637700e+00]]> : tensor<2x3xf64>
func.func @quintic_cut(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(2) schedule(quintic) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// A custom table whose last triples are equal is cut to the first of them.
// CHECK-LABEL: func.func @custom_repeats
// CHECK-DAG: arith.constant 5.000000e-01 : f64
// CHECK-DAG: arith.constant -1.000000e+00 : f64
// CHECK-DAG: arith.constant 2.000000e+00 : f64
// CHECK-NOT: tensor<
// CHECK: scf.for
func.func @custom_repeats(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = muir.newton_schulz %x steps(3) schedule(custom) coefficients([2.0, -1.0, 0.5, 2.0, -1.0, 0.5]) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// A bf16 iterate: X normalised in f32 and rounded once, every product on
// bf16 tensors (the loop carries bf16), the result widened back to f32.
// CHECK-LABEL: func.func @bf16
// CHECK: %[[N:.+]] = muir.frobenius_normalize %{{.*}} : tensor<4x8xf32>
// CHECK: %[[H:.+]] = arith.truncf %[[N]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[R:.+]] = scf.for {{.*}} iter_args(%[[XK:.+]] = %[[H]]) -> (tensor<4x8xbf16>)
// CHECK-NEXT: %[[A:.+]] = muir.matmul %[[XK]], %[[XK]] {transpose_b} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x4xbf16>
// CHECK-NEXT: %[[B:.+]] = muir.matmul %[[A]], %[[A]] acc %[[A]] {{.*}} : (tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, f64, f64) -> tensor<4x4xbf16>
// CHECK-NEXT: %[[X:.+]] = muir.matmul %[[B]], %[[XK]] acc %[[XK]] {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[W:.+]] = arith.extf %[[R]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: return %[[W]]
func.func @bf16(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = muir.newton_schulz %x steps(1) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The form muir-gram-newton-schulz recorded on the Newton-Schulz moves to
// the normalisation (the plan report reads it there).
// CHECK-LABEL: func.func @recorded
// CHECK: muir.frobenius_normalize %{{.*}} {muir.ns_form = #muir.ns_form<standard>, muir.ns_form_cost = #muir.ns_form_cost<standard = 0.002 s, gram = 0.003 s>} : tensor<4x8xf32>
func.func @recorded(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = muir.newton_schulz %x steps(1) schedule(simple) {muir.ns_form = #muir.ns_form<standard>, muir.ns_form_cost = #muir.ns_form_cost<standard = 0.002 s, gram = 0.003 s>} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
