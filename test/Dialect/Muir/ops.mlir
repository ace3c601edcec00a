// RUN: muir-opt %s | muir-opt | FileCheck %s
// RUN: muir-opt %s --mlir-print-op-generic | muir-opt | FileCheck %s
// RUN: muir-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: muir-opt %s | FileCheck %s --check-prefix=SPACES --strict-whitespace

// Round trip of every muir op in its pretty form, through the pretty and the
// generic printer. Default-valued attributes are elided when printed pretty
// and materialised as properties in the generic form.

// CHECK: muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
// CHECK: muir.grid @line axes = ["x"] shape = [8]
// CHECK: muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
// GENERIC: "muir.grid"() <{axes = ["dp", "tp"], shape = array<i64: 2, 4>, sym_name = "world"}> : () -> ()
muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @line axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @muon_update_defaults(
// CHECK-SAME: %[[P:.+]]: tensor<8x4xf32>, %[[G:.+]]: tensor<8x4xf32>, %[[M:.+]]: tensor<8x4xf32>)
// CHECK: %[[W:.+]], %[[MB:.+]] = muir.muon_update %[[P]], %[[G]], %[[M]] {lr = 2.000000e-02 : f64} : tensor<8x4xf32>
// CHECK: return %[[W]], %[[MB]]
// GENERIC-LABEL: sym_name = "muon_update_defaults"
// GENERIC: "muir.muon_update"(%{{.*}}, %{{.*}}, %{{.*}}) <{beta = 0.94999999999999996 : f64, eps = 9.9999999999999995E-8 : f64, lr = 2.000000e-02 : f64,
// GENERIC-SAME: momentum_kind = #muir<momentum_kind ema>, nesterov = true, ns_steps = 5 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, scale_extra = 2.000000e-01 : f64,
// GENERIC-SAME: scale_mode = #muir<scale_mode spectral>, schedule = #muir<schedule simple>, weight_decay = 0.000000e+00 : f64}>
// GENERIC-SAME: : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
func.func @muon_update_defaults(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0:2 = muir.muon_update %p, %g, %m {lr = 2.0e-02} : tensor<8x4xf32>
  return %0#0, %0#1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @muon_update_all_attrs(
// CHECK-SAME: %[[P:.+]]: tensor<8x4xf32>, %[[G:.+]]: tensor<8x4xf32>, %[[M:.+]]: tensor<8x4xf32>)
// CHECK: muir.muon_update %[[P]], %[[G]], %[[M]] {beta = 9.000000e-01 : f64,
// CHECK-SAME: coefficients = array<f64: 3.000000e+00, -3.200000e+00, 1.200000e+00, 2.000000e+00, -1.500000e+00, 5.000000e-01>,
// CHECK-SAME: eps = 9.9999999999999995E-7 : f64, lr = 2.000000e-02 : f64, momentum_kind = #muir<momentum_kind accumulate>,
// CHECK-SAME: nesterov = false, ns_steps = 3 : i64, scale_extra = 5.000000e-01 : f64, scale_mode = #muir<scale_mode unit_rms>,
// CHECK-SAME: schedule = #muir<schedule custom>, weight_decay = 1.000000e-02 : f64} : tensor<8x4xf32>
func.func @muon_update_all_attrs(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0:2 = muir.muon_update %p, %g, %m {lr = 2.0e-02, beta = 0.9, momentum_kind = #muir<momentum_kind accumulate>, nesterov = false, weight_decay = 0.01, scale_mode = #muir<scale_mode unit_rms>, scale_extra = 0.5, ns_steps = 3, schedule = #muir<schedule custom>, coefficients = array<f64: 3.0, -3.2, 1.2, 2.0, -1.5, 0.5>, eps = 1.0e-6} : tensor<8x4xf32>
  return %0#0, %0#1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// A stack of expert matrices; lr = 0 and beta = 0 are the inclusive bounds.
// CHECK-LABEL: func.func @muon_update_stack(
// CHECK-SAME: %[[P:.+]]: tensor<2x8x4xf32>, %[[G:.+]]: tensor<2x8x4xf32>, %[[M:.+]]: tensor<2x8x4xf32>)
// CHECK: muir.muon_update %[[P]], %[[G]], %[[M]] {beta = 0.000000e+00 : f64, lr = 0.000000e+00 : f64, ns_steps = 8 : i64,
// CHECK-SAME: scale_mode = #muir<scale_mode shape>, schedule = #muir<schedule polar_express>} : tensor<2x8x4xf32>
// CHECK: muir.muon_update %[[P]], %[[G]], %[[M]] {lr = 1.000000e-03 : f64, schedule = #muir<schedule quintic>} : tensor<2x8x4xf32>
func.func @muon_update_stack(%p: tensor<2x8x4xf32>, %g: tensor<2x8x4xf32>, %m: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %0:2 = muir.muon_update %p, %g, %m {lr = 0.0, beta = 0.0, scale_mode = #muir<scale_mode shape>, schedule = #muir<schedule polar_express>, ns_steps = 8} : tensor<2x8x4xf32>
  %1:2 = muir.muon_update %p, %g, %m {lr = 1.0e-03, schedule = #muir<schedule quintic>} : tensor<2x8x4xf32>
  return %0#0, %1#1 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
}

// CHECK-LABEL: func.func @adamw_update(
// CHECK-SAME: %[[P:.+]]: tensor<16xf32>, %[[G:.+]]: tensor<16xf32>, %[[M:.+]]: tensor<16xf32>, %[[V:.+]]: tensor<16xf32>, %[[T:.+]]: i64)
// CHECK: %[[W:.+]], %[[M1:.+]], %[[V1:.+]] = muir.adamw_update %[[P]], %[[G]], %[[M]], %[[V]] step %[[T]] {lr = 1.000000e-03 : f64} : tensor<16xf32>
// CHECK: %[[W2:.+]], %[[M2:.+]], %[[V2:.+]] = muir.adamw_update %[[W]], %[[G]], %[[M1]], %[[V1]] step %[[T]]
// CHECK-SAME: {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-10 : f64, lr = 3.000000e-04 : f64,
// CHECK-SAME: weight_decay = 1.000000e-01 : f64} : tensor<16xf32>
// CHECK: return %[[W2]], %[[M2]], %[[V2]]
// GENERIC-LABEL: sym_name = "adamw_update"
// GENERIC: "muir.adamw_update"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64,
// GENERIC-SAME: eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, weight_decay = 0.000000e+00 : f64}>
// GENERIC-SAME: : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, i64) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
func.func @adamw_update(%p: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %t: i64) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %0:3 = muir.adamw_update %p, %g, %m, %v step %t {lr = 1.0e-3} : tensor<16xf32>
  %1:3 = muir.adamw_update %0#0, %g, %0#1, %0#2 step %t {lr = 3.0e-4, beta1 = 0.8, beta2 = 0.95, eps = 1.0e-10, weight_decay = 0.1} : tensor<16xf32>
  return %1#0, %1#1, %1#2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @momentum(
// CHECK-SAME: %[[G:.+]]: tensor<8x4xf32>, %[[M:.+]]: tensor<8x4xf32>)
// CHECK: %[[U:.+]], %[[M1:.+]] = muir.momentum %[[G]], %[[M]] {beta = 0.94999999999999996 : f64, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<8x4xf32>
// CHECK: %[[U2:.+]], %[[M2:.+]] = muir.momentum %[[U]], %[[M1]] {beta = 0.000000e+00 : f64, momentum_kind = #muir<momentum_kind accumulate>, nesterov = false} : tensor<8x4xf32>
// CHECK: return %[[U2]], %[[M2]]
func.func @momentum(%g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0:2 = muir.momentum %g, %m {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<8x4xf32>
  %1:2 = muir.momentum %0#0, %0#1 {beta = 0.0, momentum_kind = #muir<momentum_kind accumulate>, nesterov = false} : tensor<8x4xf32>
  return %1#0, %1#1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @apply_update(
// CHECK-SAME: %[[P:.+]]: tensor<8x4xf32>, %[[U:.+]]: tensor<8x4xf32>)
// CHECK: %[[R:.+]] = muir.apply_update %[[P]], %[[U]] {lr = 2.000000e-02 : f64, scale = 4.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @apply_update(%p: tensor<8x4xf32>, %u: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = muir.apply_update %p, %u {lr = 2.0e-02, scale = 0.4, weight_decay = 0.0} : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

//===----------------------------------------------------------------------===//
// Newton-Schulz and linear algebra
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @newton_schulz(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>, %[[S:.+]]: tensor<3x4x8xf32>)
// CHECK: muir.newton_schulz %[[X]] steps(5) schedule(simple) : tensor<8x4xf32>
// CHECK: muir.newton_schulz %[[X]] steps(5) schedule(quintic) : tensor<8x4xf32>
// CHECK: muir.newton_schulz %[[X]] steps(10) schedule(polar_express) {eps = 9.9999999999999995E-7 : f64} : tensor<8x4xf32>
// CHECK: muir.newton_schulz %[[X]] steps(2) schedule(custom)
// CHECK-SAME: coefficients([3.444500e+00, -4.775000e+00, 2.031500e+00, 1.875000e+00, -1.250000e+00, 3.750000e-01]) : tensor<8x4xf32>
// CHECK: muir.newton_schulz %[[S]] steps(1) schedule(custom) coefficients([1.500000e+00, -5.000000e-01, 0.000000e+00]) : tensor<3x4x8xf32>
// CHECK: muir.newton_schulz %[[X]] steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<8x4xf32>
// GENERIC-LABEL: sym_name = "newton_schulz"
// GENERIC: "muir.newton_schulz"(%{{.*}}) <{eps = 9.9999999999999995E-8 : f64, precision = #muir.ns_precision<f32>, schedule = #muir<schedule simple>, steps = 5 : i64}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
// GENERIC: "muir.newton_schulz"(%{{.*}}) <{eps = 9.9999999999999995E-8 : f64, precision = #muir.ns_precision<f32>, schedule = #muir<schedule quintic>, steps = 5 : i64}>
// GENERIC: "muir.newton_schulz"(%{{.*}}) <{eps = 9.9999999999999995E-7 : f64, precision = #muir.ns_precision<f32>, schedule = #muir<schedule polar_express>, steps = 10 : i64}>
// GENERIC: "muir.newton_schulz"(%{{.*}}) <{coefficients = array<f64: 3.444500e+00, -4.775000e+00, 2.031500e+00, 1.875000e+00, -1.250000e+00, 3.750000e-01>,
// GENERIC-SAME: eps = 9.9999999999999995E-8 : f64, precision = #muir.ns_precision<f32>, schedule = #muir<schedule custom>, steps = 2 : i64}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
// GENERIC: "muir.newton_schulz"(%{{.*}}) <{coefficients = array<f64: 1.500000e+00, -5.000000e-01, 0.000000e+00>,
// GENERIC-SAME: precision = #muir.ns_precision<f32>, schedule = #muir<schedule custom>, steps = 1 : i64}> : (tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
// GENERIC: "muir.newton_schulz"(%{{.*}}) <{eps = 9.9999999999999995E-8 : f64, precision = #muir.ns_precision<bf16>, schedule = #muir<schedule simple>, steps = 5 : i64}>
func.func @newton_schulz(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<3x4x8xf32>, tensor<8x4xf32>) {
  %0 = muir.newton_schulz %x steps(5) schedule(simple) : tensor<8x4xf32>
  %1 = muir.newton_schulz %x steps(5) schedule(quintic) : tensor<8x4xf32>
  %2 = muir.newton_schulz %x steps(10) schedule(polar_express) {eps = 1.0e-6} : tensor<8x4xf32>
  %3 = muir.newton_schulz %x steps(2) schedule(custom) coefficients([3.4445, -4.775, 2.0315, 1.875, -1.25, 0.375]) : tensor<8x4xf32>
  %4 = muir.newton_schulz %s steps(1) schedule(custom) coefficients([1.5, -0.5, 0.0]) : tensor<3x4x8xf32>
  %5 = muir.newton_schulz %x steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<8x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<3x4x8xf32>, tensor<8x4xf32>
}

// The DeepSeek-V4 and cubic schedules, by name (a 3-D stack takes them too).
// CHECK-LABEL: func.func @newton_schulz_deepseekv4_cubic5(
// CHECK: muir.newton_schulz %{{.*}} steps(10) schedule(deepseekv4) : tensor<8x4xf32>
// CHECK: muir.newton_schulz %{{.*}} steps(5) schedule(cubic5) : tensor<3x4x8xf32>
// GENERIC-LABEL: sym_name = "newton_schulz_deepseekv4_cubic5"
// GENERIC: schedule = #muir<schedule deepseekv4>, steps = 10 : i64}>
// GENERIC: schedule = #muir<schedule cubic5>, steps = 5 : i64}>
func.func @newton_schulz_deepseekv4_cubic5(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<8x4xf32>, tensor<3x4x8xf32>) {
  %0 = muir.newton_schulz %x steps(10) schedule(deepseekv4) : tensor<8x4xf32>
  %1 = muir.newton_schulz %s steps(5) schedule(cubic5) : tensor<3x4x8xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<3x4x8xf32>
}

// CHECK-LABEL: func.func @frobenius_normalize(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>, %[[S:.+]]: tensor<3x4x8xf32>)
// CHECK: muir.frobenius_normalize %[[X]] : tensor<8x4xf32>
// CHECK: muir.frobenius_normalize %[[S]] {eps = 1.000000e-05 : f64} : tensor<3x4x8xf32>
func.func @frobenius_normalize(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<8x4xf32>, tensor<3x4x8xf32>) {
  %0 = muir.frobenius_normalize %x : tensor<8x4xf32>
  %1 = muir.frobenius_normalize %s {eps = 1.0e-5} : tensor<3x4x8xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<3x4x8xf32>
}

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>, %[[S:.+]]: tensor<3x4x8xf32>)
// CHECK: muir.transpose %[[X]] : tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK: muir.transpose %[[S]] : tensor<3x4x8xf32> -> tensor<3x8x4xf32>
// GENERIC-LABEL: sym_name = "transpose"
// GENERIC: "muir.transpose"(%{{.*}}) : (tensor<8x4xf32>) -> tensor<4x8xf32>
func.func @transpose(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<4x8xf32>, tensor<3x8x4xf32>) {
  %0 = muir.transpose %x : tensor<8x4xf32> -> tensor<4x8xf32>
  %1 = muir.transpose %s : tensor<3x4x8xf32> -> tensor<3x8x4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<3x8x4xf32>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8x6xf32>, %[[AT:.+]]: tensor<8x4xf32>, %[[BT:.+]]: tensor<6x8xf32>, %[[C:.+]]: tensor<4x6xf32>)
// CHECK: muir.matmul %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
// CHECK: muir.matmul %[[AT]], %[[B]] {transpose_a} : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
// CHECK: muir.matmul %[[A]], %[[BT]] {transpose_b} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
// CHECK: muir.matmul %[[AT]], %[[BT]] {alpha = 2.000000e+00 : f64, transpose_a, transpose_b} : (tensor<8x4xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
// CHECK: muir.matmul %[[A]], %[[B]] acc %[[C]] {alpha = 5.000000e-01 : f64, beta = 1.000000e+00 : f64}
// CHECK-SAME: : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// GENERIC-LABEL: sym_name = "matmul"
// GENERIC: "muir.matmul"(%{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
// GENERIC: "muir.matmul"(%{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, transpose_a}>
// GENERIC: "muir.matmul"(%{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, transpose_b}>
// GENERIC: "muir.matmul"(%{{.*}}, %{{.*}}) <{alpha = 2.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, transpose_a, transpose_b}>
// GENERIC: "muir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 5.000000e-01 : f64, beta = 1.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}>
// GENERIC-SAME: : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %at: tensor<8x4xf32>, %bt: tensor<6x8xf32>, %c: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = muir.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %1 = muir.matmul %at, %b {transpose_a} : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %2 = muir.matmul %a, %bt {transpose_b} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %3 = muir.matmul %at, %bt {alpha = 2.0, transpose_a, transpose_b} : (tensor<8x4xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %4 = muir.matmul %a, %b acc %c {alpha = 0.5, beta = 1.0} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2, %3, %4 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// The Newton-Schulz forms A = X X^T (batched) and X' = B X.
// CHECK-LABEL: func.func @matmul_batched(
// CHECK-SAME: %[[X:.+]]: tensor<2x4x8xf32>, %[[C:.+]]: tensor<2x4x4xf32>)
// CHECK: %[[A:.+]] = muir.matmul %[[X]], %[[X]] acc %[[C]] {beta = -4.775000e+00 : f64, transpose_b}
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK: muir.matmul %[[A]], %[[X]] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
func.func @matmul_batched(%x: tensor<2x4x8xf32>, %c: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x8xf32>) {
  %0 = muir.matmul %x, %x acc %c {beta = -4.775, transpose_b} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %1 = muir.matmul %0, %x : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0, %1 : tensor<2x4x4xf32>, tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @syrk(
// CHECK-SAME: %[[A:.+]]: tensor<4x8xf32>, %[[C:.+]]: tensor<4x4xf32>, %[[S:.+]]: tensor<2x4x8xf32>)
// CHECK: muir.syrk %[[A]] : (tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: muir.syrk %[[A]] acc %[[C]] {alpha = 2.031500e+00 : f64, beta = -4.775000e+00 : f64} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: muir.syrk %[[S]] : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
// GENERIC-LABEL: sym_name = "syrk"
// GENERIC: "muir.syrk"(%{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (tensor<4x8xf32>) -> tensor<4x4xf32>
// GENERIC: "muir.syrk"(%{{.*}}, %{{.*}}) <{alpha = 2.031500e+00 : f64, beta = -4.775000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @syrk(%a: tensor<4x8xf32>, %c: tensor<4x4xf32>, %s: tensor<2x4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x4x4xf32>) {
  %0 = muir.syrk %a : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %1 = muir.syrk %a acc %c {alpha = 2.0315, beta = -4.775} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = muir.syrk %s : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  return %0, %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x4x4xf32>
}

// CHECK-LABEL: func.func @probe(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>, %[[V:.+]]: tensor<16xf32>)
// CHECK: muir.probe %[[X]] {label = "ns_out", slot = 0 : i64} : tensor<8x4xf32>
// CHECK: muir.probe %[[V]] {label = "", slot = 7 : i64} : tensor<16xf32>
// GENERIC-LABEL: sym_name = "probe"
// GENERIC: "muir.probe"(%{{.*}}) <{label = "ns_out", slot = 0 : i64}> : (tensor<8x4xf32>) -> ()
func.func @probe(%x: tensor<8x4xf32>, %v: tensor<16xf32>) {
  muir.probe %x {label = "ns_out", slot = 0} : tensor<8x4xf32>
  muir.probe %v {label = "", slot = 7} : tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// `reduction = sum` is the default and is elided when printed.
// CHECK-LABEL: func.func @all_reduce(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>)
// CHECK: muir.all_reduce %[[X]] on @world axes = ["dp"] : tensor<8x4xf32>
// CHECK: muir.all_reduce %[[X]] on @world axes = ["dp"] : tensor<8x4xf32>
// CHECK: muir.all_reduce %[[X]] on @world axes = ["tp"] reduction = max : tensor<8x4xf32>
// One space each side of '=' (the printer wrote two before the kind):
// SPACES: muir.all_reduce %arg0 on @world axes = ["tp"] reduction = max : tensor<8x4xf32>
// CHECK: muir.all_reduce %[[X]] on @world axes = ["dp", "tp"] reduction = min : tensor<8x4xf32>
// CHECK: muir.all_reduce %[[X]] on @line axes = ["x"] reduction = avg : tensor<8x4xf32>
// CHECK: muir.all_reduce %[[X]] on @world axes = ["tp", "dp"] reduction = avg : tensor<8x4xf32>
// GENERIC-LABEL: sym_name = "all_reduce"
// GENERIC: "muir.all_reduce"(%{{.*}}) <{grid = @world, grid_axes = ["dp"], reduction = #muir<reduction sum>}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
// GENERIC: "muir.all_reduce"(%{{.*}}) <{grid = @world, grid_axes = ["dp"], reduction = #muir<reduction sum>}>
// GENERIC: "muir.all_reduce"(%{{.*}}) <{grid = @world, grid_axes = ["tp"], reduction = #muir<reduction max>}>
// GENERIC: "muir.all_reduce"(%{{.*}}) <{grid = @world, grid_axes = ["dp", "tp"], reduction = #muir<reduction min>}>
// GENERIC: "muir.all_reduce"(%{{.*}}) <{grid = @line, grid_axes = ["x"], reduction = #muir<reduction avg>}>
func.func @all_reduce(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = muir.all_reduce %x on @world axes = ["dp"] : tensor<8x4xf32>
  %1 = muir.all_reduce %x on @world axes = ["dp"] reduction = sum : tensor<8x4xf32>
  %2 = muir.all_reduce %x on @world axes = ["tp"] reduction = max : tensor<8x4xf32>
  %3 = muir.all_reduce %x on @world axes = ["dp", "tp"] reduction = min : tensor<8x4xf32>
  %4 = muir.all_reduce %x on @line axes = ["x"] reduction = avg : tensor<8x4xf32>
  %5 = muir.all_reduce %x on @world axes = ["tp", "dp"] reduction = avg : tensor<8x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @all_gather(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>)
// CHECK: muir.all_gather %[[X]] on @world axes = ["dp", "tp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<64x4xf32>
// CHECK: muir.all_gather %[[X]] on @world axes = ["dp"] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x8xf32>
// GENERIC-LABEL: sym_name = "all_gather"
// GENERIC: "muir.all_gather"(%{{.*}}) <{gather_axis = 0 : i64, grid = @world, grid_axes = ["dp", "tp"]}> : (tensor<8x4xf32>) -> tensor<64x4xf32>
func.func @all_gather(%x: tensor<8x4xf32>) -> (tensor<64x4xf32>, tensor<8x8xf32>) {
  %0 = muir.all_gather %x on @world axes = ["dp", "tp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<64x4xf32>
  %1 = muir.all_gather %x on @world axes = ["dp"] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return %0, %1 : tensor<64x4xf32>, tensor<8x8xf32>
}

// A zero size is allowed; a size-1 axis makes a group of one.
// CHECK-LABEL: func.func @all_gatherv(
// CHECK-SAME: %[[X:.+]]: tensor<3x4xf32>)
// CHECK: muir.all_gatherv %[[X]] on @world axes = ["tp"] gather_axis = 0 sizes = [3, 2, 2, 0] : tensor<3x4xf32> -> tensor<7x4xf32>
// CHECK: muir.all_gatherv %[[X]] on @cube axes = ["dp"] gather_axis = 1 sizes = [4] : tensor<3x4xf32> -> tensor<3x4xf32>
// GENERIC-LABEL: sym_name = "all_gatherv"
// GENERIC: "muir.all_gatherv"(%{{.*}}) <{gather_axis = 0 : i64, grid = @world, grid_axes = ["tp"], sizes = array<i64: 3, 2, 2, 0>}>
// GENERIC-SAME: : (tensor<3x4xf32>) -> tensor<7x4xf32>
func.func @all_gatherv(%x: tensor<3x4xf32>) -> (tensor<7x4xf32>, tensor<3x4xf32>) {
  %0 = muir.all_gatherv %x on @world axes = ["tp"] gather_axis = 0 sizes = [3, 2, 2, 0] : tensor<3x4xf32> -> tensor<7x4xf32>
  %1 = muir.all_gatherv %x on @cube axes = ["dp"] gather_axis = 1 sizes = [4] : tensor<3x4xf32> -> tensor<3x4xf32>
  return %0, %1 : tensor<7x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @reduce_scatter(
// CHECK-SAME: %[[X:.+]]: tensor<8x6xf32>)
// CHECK: muir.reduce_scatter %[[X]] on @world axes = ["tp"] scatter_axis = 0 : tensor<8x6xf32> -> tensor<2x6xf32>
// CHECK: muir.reduce_scatter %[[X]] on @cube axes = ["ep", "tp"] scatter_axis = 1 reduction = avg : tensor<8x6xf32> -> tensor<8x1xf32>
// SPACES: muir.reduce_scatter %arg0 on @cube axes = ["ep", "tp"] scatter_axis = 1 reduction = avg : tensor<8x6xf32> -> tensor<8x1xf32>
// GENERIC-LABEL: sym_name = "reduce_scatter"
// GENERIC: "muir.reduce_scatter"(%{{.*}}) <{grid = @world, grid_axes = ["tp"], reduction = #muir<reduction sum>, scatter_axis = 0 : i64}>
// GENERIC: "muir.reduce_scatter"(%{{.*}}) <{grid = @cube, grid_axes = ["ep", "tp"], reduction = #muir<reduction avg>, scatter_axis = 1 : i64}>
func.func @reduce_scatter(%x: tensor<8x6xf32>) -> (tensor<2x6xf32>, tensor<8x1xf32>) {
  %0 = muir.reduce_scatter %x on @world axes = ["tp"] scatter_axis = 0 : tensor<8x6xf32> -> tensor<2x6xf32>
  %1 = muir.reduce_scatter %x on @cube axes = ["ep", "tp"] scatter_axis = 1 reduction = avg : tensor<8x6xf32> -> tensor<8x1xf32>
  return %0, %1 : tensor<2x6xf32>, tensor<8x1xf32>
}

// CHECK-LABEL: func.func @all_to_all(
// CHECK-SAME: %[[X:.+]]: tensor<8x6xf32>, %[[S:.+]]: tensor<2x8x6xf32>)
// CHECK: muir.all_to_all %[[X]] on @world axes = ["tp"] split_axis = 0 concat_axis = 1 : tensor<8x6xf32> -> tensor<2x24xf32>
// CHECK: muir.all_to_all %[[S]] on @world axes = ["dp"] split_axis = 0 concat_axis = 0 : tensor<2x8x6xf32> -> tensor<2x8x6xf32>
// GENERIC-LABEL: sym_name = "all_to_all"
// GENERIC: "muir.all_to_all"(%{{.*}}) <{concat_axis = 1 : i64, grid = @world, grid_axes = ["tp"], split_axis = 0 : i64}> : (tensor<8x6xf32>) -> tensor<2x24xf32>
func.func @all_to_all(%x: tensor<8x6xf32>, %s: tensor<2x8x6xf32>) -> (tensor<2x24xf32>, tensor<2x8x6xf32>) {
  %0 = muir.all_to_all %x on @world axes = ["tp"] split_axis = 0 concat_axis = 1 : tensor<8x6xf32> -> tensor<2x24xf32>
  %1 = muir.all_to_all %s on @world axes = ["dp"] split_axis = 0 concat_axis = 0 : tensor<2x8x6xf32> -> tensor<2x8x6xf32>
  return %0, %1 : tensor<2x24xf32>, tensor<2x8x6xf32>
}

// CHECK-LABEL: func.func @all_to_allv(
// CHECK-SAME: %[[X:.+]]: tensor<16x32xf32>, %[[C:.+]]: tensor<4xi64>)
// CHECK: %[[R:.+]], %[[RC:.+]] = muir.all_to_allv %[[X]], %[[C]] on @world axes = ["tp"]
// CHECK-SAME: : (tensor<16x32xf32>, tensor<4xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
// CHECK: return %[[R]], %[[RC]]
// GENERIC-LABEL: sym_name = "all_to_allv"
// GENERIC: "muir.all_to_allv"(%{{.*}}, %{{.*}}) <{grid = @world, grid_axes = ["tp"]}> : (tensor<16x32xf32>, tensor<4xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
func.func @all_to_allv(%x: tensor<16x32xf32>, %c: tensor<4xi64>) -> (tensor<64x32xf32>, tensor<4xi64>) {
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<4xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return %0#0, %0#1 : tensor<64x32xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @broadcast(
// CHECK-SAME: %[[X:.+]]: tensor<8x4xf32>)
// CHECK: muir.broadcast %[[X]] on @world axes = ["dp"] root = 0 : tensor<8x4xf32>
// CHECK: muir.broadcast %[[X]] on @world axes = ["dp", "tp"] root = 7 : tensor<8x4xf32>
// GENERIC-LABEL: sym_name = "broadcast"
// GENERIC: "muir.broadcast"(%{{.*}}) <{grid = @world, grid_axes = ["dp"], root = 0 : i64}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
func.func @broadcast(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = muir.broadcast %x on @world axes = ["dp"] root = 0 : tensor<8x4xf32>
  %1 = muir.broadcast %x on @world axes = ["dp", "tp"] root = 7 : tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// Attributes of other dialects' namespaces are accepted and kept, and so
// are muir's own known ones (muir.ns_mode, muir.local, ...); unknown
// muir.* names and un-namespaced unknown names are rejected (see
// invalid.mlir).
// CHECK-LABEL: func.func @discardable_attrs
// CHECK: muir.transpose %{{.+}} {test.note = 1 : i32, test.tag = "keep"} : tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK: muir.muon_update %{{.+}}, %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64, muir.local, muir.ns_mode = #muir.ns_mode<distributed>} : tensor<8x4xf32>
// GENERIC-LABEL: sym_name = "discardable_attrs"
// GENERIC: "muir.transpose"(%{{.*}}) {test.note = 1 : i32, test.tag = "keep"} : (tensor<8x4xf32>) -> tensor<4x8xf32>
// GENERIC: "muir.muon_update"(%{{.*}}, %{{.*}}, %{{.*}}) <{{{.*}}lr = 1.000000e-01 : f64{{.*}}}> {muir.local, muir.ns_mode = #muir.ns_mode<distributed>}
func.func @discardable_attrs(%x: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %0 = muir.transpose %x {test.tag = "keep", test.note = 1 : i32} : tensor<8x4xf32> -> tensor<4x8xf32>
  %1:2 = muir.muon_update %x, %x, %x {lr = 0.1, muir.local, muir.ns_mode = #muir.ns_mode<distributed>} : tensor<8x4xf32>
  return %0, %1#0 : tensor<4x8xf32>, tensor<8x4xf32>
}

// muir-distribute's reasons round-trip; a candidate's costs print with %g.
// CHECK-LABEL: func.func @ns_why
// CHECK: muir.apply_update %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64, muir.ns_mode = #muir.ns_mode<distributed>, muir.ns_why = #muir.ns_why<cost_model on "h200" : [<duplicated, standard, 0.0207 ms, 0.786 MB>, <distributed, gram, 0.0179 ms, 0.79 MB>]>, scale = 1.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8x4xf32>
// Whole numbers and powers of ten keep a decimal point, so the printed
// form parses back (the RUN line's round trip).
// CHECK: muir.apply_update %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<duplicated, gram, 150.0 ms, 0.0 MB>, <resharded, standard, 1.0e+06 ms, 1.0e-05 MB>]>, scale = 1.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8x4xf32>
// CHECK: muir.apply_update %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64, muir.ns_why = #muir.ns_why<fsdp_owner>, scale = 1.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8x4xf32>
func.func @ns_why(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_mode = #muir.ns_mode<distributed>, muir.ns_why = #muir.ns_why<cost_model on "h200" : [<duplicated, standard, 2.07e-2 ms, 0.786 MB>, <distributed, gram, 0.0179 ms, 0.79 MB>]>} : tensor<8x4xf32>
  %2 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<duplicated, gram, 150.0 ms, 0.0 MB>, <resharded, standard, 1000000.0 ms, 0.00001 MB>]>} : tensor<8x4xf32>
  %1 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<fsdp_owner>} : tensor<8x4xf32>
  return %0, %1, %2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// Routing: Qwen3-MoE's (softmax, normalised top-k) and DeepSeek-V3's
// (sigmoid with a selection bias, group-limited, normalised and scaled).
// CHECK-LABEL: func.func @route
// CHECK: muir.route %{{.+}} {normalize, top_k = 2 : i64} : (tensor<6x8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
// CHECK: muir.route %{{.+}} bias %{{.+}} {n_group = 4 : i64, normalize, scaling = 2.500000e+00 : f64, scoring = #muir<route_scoring sigmoid>, top_k = 3 : i64, topk_group = 2 : i64}
// CHECK: muir.route %{{.+}} {softmax_after_topk, top_k = 2 : i64}
// GENERIC-LABEL: sym_name = "route"
// GENERIC: "muir.route"(%{{.*}}) <{n_group = 1 : i64, normalize, operandSegmentSizes = array<i32: 1, 0, 0>, scaling = 1.000000e+00 : f64, scoring = #muir<route_scoring softmax>, top_k = 2 : i64, topk_group = 1 : i64}> : (tensor<6x8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
func.func @route(%l: tensor<6x8xf32>, %b: tensor<8xf32>) -> (tensor<6x2xi64>, tensor<6x3xf32>, tensor<8xi64>) {
  %i, %w, %c = muir.route %l {top_k = 2, normalize} : (tensor<6x8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  %i2, %w2, %c2 = muir.route %l bias %b {top_k = 3, scoring = #muir<route_scoring sigmoid>, n_group = 4, topk_group = 2, normalize, scaling = 2.5} : (tensor<6x8xf32>, tensor<8xf32>) -> (tensor<6x3xi64>, tensor<6x3xf32>, tensor<8xi64>)
  %i3, %w3, %c3 = muir.route %l {top_k = 2, softmax_after_topk} : (tensor<6x8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return %i, %w2, %c3 : tensor<6x2xi64>, tensor<6x3xf32>, tensor<8xi64>
}

// Experts renumbered for the ranks that compute them.
// CHECK-LABEL: func.func @renumber
// CHECK: muir.renumber %{{.+}} map = [0, 1, 4, 5, 2, 3, 6, 7] : tensor<6x2xi64>
func.func @renumber(%i: tensor<6x2xi64>) -> tensor<6x2xi64> {
  %r = muir.renumber %i map = [0, 1, 4, 5, 2, 3, 6, 7] : tensor<6x2xi64>
  return %r : tensor<6x2xi64>
}

// A layer compiled for 6 rows called on %n tokens: route, capacity and
// route_grad take the count; the token-row products are row-stable.
// CHECK-LABEL: func.func @layer_tokens
// CHECK: muir.route %{{.+}} tokens(%{{.+}}) {normalize, top_k = 2 : i64} : (tensor<6x8xf32>, i64)
// CHECK: muir.capacity %{{.+}}, %{{.+}} tokens(%{{.+}}) {capacity_factor = 1.000000e+00 : f64, num_experts = 8 : i64} : (tensor<6x2xi64>, tensor<6x2xf32>, i64)
// CHECK: muir.route_grad %{{.+}}, %{{.+}}, %{{.+}} tokens(%{{.+}}) {normalize} : (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>, i64)
// CHECK: muir.matmul %{{.+}}, %{{.+}} {row_stable, transpose_b}
// GENERIC-LABEL: sym_name = "layer_tokens"
// GENERIC: "muir.route"(%{{.*}}, %{{.*}}) <{{{.*}}operandSegmentSizes = array<i32: 1, 0, 1>
func.func @layer_tokens(%l: tensor<6x8xf32>, %n: i64, %x: tensor<6x4xf32>, %r: tensor<8x4xf32>) -> (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x8xf32>) {
  %i, %w, %c = muir.route %l tokens(%n) {top_k = 2, normalize} : (tensor<6x8xf32>, i64) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  %ki, %kw, %kc = muir.capacity %i, %w tokens(%n) {num_experts = 8, capacity_factor = 1.0} : (tensor<6x2xi64>, tensor<6x2xf32>, i64) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  %g = muir.route_grad %l, %i, %kw tokens(%n) {normalize} : (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>, i64) -> tensor<6x8xf32>
  %p = muir.matmul %x, %r {transpose_b, row_stable} : (tensor<6x4xf32>, tensor<8x4xf32>) -> tensor<6x8xf32>
  return %g, %ki, %p : tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x8xf32>
}

// Per-expert products over ragged row groups, weights as [E, K, N] or as
// PyTorch Linear stacks [E, N, K] (transpose_b).
// CHECK-LABEL: func.func @grouped_matmul
// CHECK: muir.grouped_matmul %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x16xf32>, tensor<4x16x24xf32>, tensor<4xi64>) -> tensor<8x24xf32>
// CHECK: muir.grouped_matmul %{{.+}}, %{{.+}}, %{{.+}} {transpose_b} : (tensor<8x16xf32>, tensor<4x24x16xf32>, tensor<4xi64>) -> tensor<8x24xf32>
func.func @grouped_matmul(%x: tensor<8x16xf32>, %w: tensor<4x16x24xf32>, %wt: tensor<4x24x16xf32>, %s: tensor<4xi64>) -> (tensor<8x24xf32>, tensor<8x24xf32>) {
  %y = muir.grouped_matmul %x, %w, %s : (tensor<8x16xf32>, tensor<4x16x24xf32>, tensor<4xi64>) -> tensor<8x24xf32>
  %z = muir.grouped_matmul %x, %wt, %s {transpose_b} : (tensor<8x16xf32>, tensor<4x24x16xf32>, tensor<4xi64>) -> tensor<8x24xf32>
  return %y, %z : tensor<8x24xf32>, tensor<8x24xf32>
}

// CHECK-LABEL: func.func @swiglu
// CHECK: muir.swiglu %{{.+}}, %{{.+}} : tensor<8x24xf32>
func.func @swiglu(%g: tensor<8x24xf32>, %u: tensor<8x24xf32>) -> tensor<8x24xf32> {
  %h = muir.swiglu %g, %u : tensor<8x24xf32>
  return %h : tensor<8x24xf32>
}

// Expert dispatch and combine over ep = 2 (8 experts, 4 per rank; 6 tokens,
// top-2: a bound of 2 * 6 * 2 = 24 rows and a plan of 2 * 24 + 4 * 2), and
// the backward ops.
muir.grid @ep2 axes = ["ep"] shape = [2]
// CHECK-LABEL: func.func @dispatch_combine
// CHECK: muir.dispatch %{{.+}}, %{{.+}} on @ep2 axes = ["ep"] {layer = "l0", num_experts = 8 : i64} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
// CHECK: muir.dispatch %{{.+}}, %{{.+}} weights %{{.+}} on @ep2 axes = ["ep"] {num_experts = 8 : i64}
// CHECK: muir.combine %{{.+}}, %{{.+}}, %{{.+}} weights %{{.+}} on @ep2 axes = ["ep"] {num_experts = 8 : i64} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>, tensor<6x2xf32>) -> tensor<6x16xf32>
// CHECK: muir.combine %{{.+}}, %{{.+}}, %{{.+}} on @ep2 axes = ["ep"] {num_experts = 8 : i64} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x16xf32>
// CHECK: muir.combine_weights_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} on @ep2 axes = ["ep"] {num_experts = 8 : i64} : (tensor<6x16xf32>, tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x2xf32>
func.func @dispatch_combine(%x: tensor<6x16xf32>, %i: tensor<6x2xi64>, %w: tensor<6x2xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x2xf32>, tensor<24x16xf32>) {
  %r, %c, %p = muir.dispatch %x, %i on @ep2 axes = ["ep"] {num_experts = 8, layer = "l0"} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
  %rw, %c2, %p2 = muir.dispatch %x, %i weights %w on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
  %y = muir.combine %r, %i, %p weights %w on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>, tensor<6x2xf32>) -> tensor<6x16xf32>
  %s = muir.combine %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x16xf32>
  %dw = muir.combine_weights_grad %y, %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x2xf32>
  return %y, %s, %dw, %rw : tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x2xf32>, tensor<24x16xf32>
}

// Capacity mode, and a dispatch on no axes (this rank alone).
// CHECK-LABEL: func.func @capacity
// CHECK: muir.capacity %{{.+}}, %{{.+}} {capacity_factor = 1.250000e+00 : f64, group_tokens = 3 : i64, num_experts = 8 : i64, policy = #muir<drop_policy position>} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
// CHECK: muir.dispatch %{{.+}}, %{{.+}} on @ep2 axes = [] {num_experts = 8 : i64}
func.func @capacity(%x: tensor<6x16xf32>, %i: tensor<6x2xi64>, %w: tensor<6x2xf32>) -> (tensor<6x2xf32>, tensor<12x16xf32>) {
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 1.25, policy = #muir<drop_policy position>, group_tokens = 3} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  %r, %c, %p = muir.dispatch %x, %ki on @ep2 axes = [] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<12x16xf32>, tensor<8xi64>, tensor<28xi64>)
  return %kw, %r : tensor<6x2xf32>, tensor<12x16xf32>
}

// CHECK-LABEL: func.func @moe_grads
// CHECK: muir.grouped_matmul_wgrad %{{.+}}, %{{.+}}, %{{.+}} {transpose_b} : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x24x16xf32>
// CHECK: muir.grouped_matmul_wgrad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x16x24xf32>
// CHECK: muir.swiglu_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<8x24xf32>
// CHECK: muir.add %{{.+}}, %{{.+}} : tensor<8x24xf32>
// CHECK: muir.route_grad %{{.+}}, %{{.+}}, %{{.+}} {normalize, scaling = 2.500000e+00 : f64, scoring = #muir<route_scoring sigmoid>} : (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<6x8xf32>
func.func @moe_grads(%x: tensor<8x16xf32>, %d: tensor<8x24xf32>, %s: tensor<4xi64>, %g: tensor<8x24xf32>, %u: tensor<8x24xf32>, %l: tensor<6x8xf32>, %i: tensor<6x2xi64>, %dw: tensor<6x2xf32>) -> (tensor<4x24x16xf32>, tensor<4x16x24xf32>, tensor<8x24xf32>, tensor<6x8xf32>) {
  %a = muir.grouped_matmul_wgrad %x, %d, %s {transpose_b} : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x24x16xf32>
  %b = muir.grouped_matmul_wgrad %x, %d, %s : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x16x24xf32>
  %dg, %du = muir.swiglu_grad %g, %u, %d : tensor<8x24xf32>
  %sum = muir.add %dg, %du : tensor<8x24xf32>
  %dl = muir.route_grad %l, %i, %dw {scoring = #muir<route_scoring sigmoid>, normalize, scaling = 2.5} : (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<6x8xf32>
  return %a, %b, %sum, %dl : tensor<4x24x16xf32>, tensor<4x16x24xf32>, tensor<8x24xf32>, tensor<6x8xf32>
}

// A grid may be private to its module.
// CHECK: muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}
muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}

// Coefficients known only at run time (a Newton-Schulz loop's, read from
// its table): f64 operands in place of alpha and beta, and of
// add_diagonal's value.
// CHECK-LABEL: func.func @run_time_coefficients(
// CHECK-SAME: %[[X:.+]]: tensor<4x8xf32>, %[[A:.+]]: tensor<4x4xf32>, %[[G:.+]]: tensor<4x4xf64>, %[[S:.+]]: f64, %[[T:.+]]: f64)
// CHECK: muir.matmul %[[A]], %[[A]] acc %[[A]] alpha(%[[S]]) beta(%[[T]]) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, f64, f64) -> tensor<4x4xf32>
// CHECK: muir.matmul %[[A]], %[[X]] acc %[[X]] beta(%[[T]]) : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, f64) -> tensor<4x8xf32>
// CHECK: muir.syrk %[[X]] alpha(%[[S]]) : (tensor<4x8xf32>, f64) -> tensor<4x4xf32>
// CHECK: muir.add_diagonal %[[G]], %[[S]] : tensor<4x4xf64>
// CHECK: muir.add_diagonal %[[G]], 2.500000e-01 : tensor<4x4xf64>
func.func @run_time_coefficients(%x: tensor<4x8xf32>, %a: tensor<4x4xf32>, %g: tensor<4x4xf64>, %s: f64, %t: f64) -> (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf64>, tensor<4x4xf64>) {
  %0 = muir.matmul %a, %a acc %a alpha(%s) beta(%t) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, f64, f64) -> tensor<4x4xf32>
  %1 = muir.matmul %a, %x acc %x beta(%t) : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, f64) -> tensor<4x8xf32>
  %2 = muir.syrk %x alpha(%s) : (tensor<4x8xf32>, f64) -> tensor<4x4xf32>
  %3 = muir.add_diagonal %g, %s : tensor<4x4xf64>
  %4 = muir.add_diagonal %g, 0.25 : tensor<4x4xf64>
  return %0, %1, %2, %3, %4 : tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf64>, tensor<4x4xf64>
}
