// RUN: muir-opt %s -split-input-file -verify-diagnostics

// One case per verifier branch of dialects/Muir/MuirOps.cpp, plus the
// StrictAttributes trait (MuirDialect.cpp), the custom schedule parser and a
// few ODS constraints.

//===----------------------------------------------------------------------===//
// muir.grid
//===----------------------------------------------------------------------===//

// expected-error@+1 {{'muir.grid' op expected at least one axis}}
muir.grid @g axes = [] shape = []

// -----

// expected-error@+1 {{'muir.grid' op expected one size per axis: 2 axes, 1 sizes}}
muir.grid @g axes = ["dp", "tp"] shape = [2]

// -----

// expected-error@+1 {{'muir.grid' op expected non-empty axis names}}
muir.grid @g axes = ["dp", ""] shape = [2, 2]

// -----

// expected-error@+1 {{'muir.grid' op axis 'dp' appears twice}}
muir.grid @g axes = ["dp", "tp", "dp"] shape = [2, 2, 2]

// -----

// expected-error@+1 {{'muir.grid' op expected axis 'tp' to have size >= 1, got 0}}
muir.grid @g axes = ["dp", "tp"] shape = [2, 0]

// -----

// expected-error@+1 {{'muir.grid' op expected axis 'dp' to have size >= 1, got -2}}
muir.grid @g axes = ["dp"] shape = [-2]

// -----

// expected-error@+1 {{'muir.grid' op unknown attribute 'size'; expected one of: axes, folds, shape, sym_name, sym_visibility}}
muir.grid @g axes = ["dp"] shape = [2] {size = 2}

//===----------------------------------------------------------------------===//
// muir.muon_update
//===----------------------------------------------------------------------===//

// -----

// expected-error@+1 {{'muir.grid' op folds @nowhere, which is not another muir.grid in scope}}
muir.grid @g axes = ["ep"] shape = [2] folds @nowhere

// -----

muir.grid @world axes = ["dp"] shape = [4]
// expected-error@+1 {{'muir.grid' op has 2 devices but folds @world, which has 4: a folding numbers the same ranks}}
muir.grid @moe axes = ["ep"] shape = [2] folds @world

// -----

muir.grid @world axes = ["dp"] shape = [4]
muir.grid @moe axes = ["ep"] shape = [4] folds @world
// expected-error@+1 {{'muir.grid' op folds @moe, which folds @world itself: fold the run's grid}}
muir.grid @moe2 axes = ["x"] shape = [4] folds @moe

// -----

func.func @muon_rank(%v: tensor<8xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected param to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0:2 = muir.muon_update %v, %v, %v {lr = 0.1} : tensor<8xf32>
  return
}

// -----

func.func @muon_rank4(%v: tensor<2x2x8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected param to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 4}}
  %0:2 = muir.muon_update %v, %v, %v {lr = 0.1} : tensor<2x2x8x4xf32>
  return
}

// -----

func.func @muon_lr(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected lr in [0.000000e+00, inf), got -1.000000e-01}}
  %0:2 = muir.muon_update %p, %p, %p {lr = -0.1} : tensor<8x4xf32>
  return
}

// -----

// NaN fails both bounds.
func.func @muon_lr_nan(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected lr in [0.000000e+00, inf), got nan}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0x7FF8000000000000 : f64} : tensor<8x4xf32>
  return
}

// -----

// The upper bound inf is exclusive.
func.func @muon_lr_inf(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected lr in [0.000000e+00, inf), got INF}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0x7FF0000000000000 : f64} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_beta(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected beta in [0.000000e+00, 1.000000e+00), got 1.000000e+00}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, beta = 1.0} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_beta_negative(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected beta in [0.000000e+00, 1.000000e+00), got -5.000000e-01}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, beta = -0.5} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_weight_decay(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected weight_decay in [0.000000e+00, inf), got -5.000000e-01}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, weight_decay = -0.5} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_scale_extra(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected scale_extra in (0.000000e+00, inf), got 0.000000e+00}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, scale_extra = 0.0} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_steps(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected at least 1 Newton-Schulz step, got 0}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, ns_steps = 0} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_custom_without_coefficients(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op schedule 'custom' needs 'coefficients' (a0, b0, c0, a1, ...)}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, schedule = #muir<schedule custom>} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_coefficients_not_triples(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected coefficients to be a non-empty list of (a, b, c) triples, got 4 values}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, schedule = #muir<schedule custom>, coefficients = array<f64: 3.0, -3.0, 1.0, 2.0>} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_coefficients_empty(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected coefficients to be a non-empty list of (a, b, c) triples, got 0 values}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, schedule = #muir<schedule custom>, coefficients = array<f64>} : tensor<8x4xf32>
  return
}

// -----

// Non-finite coefficients would print as INF or NAN, which the parser
// does not read back.
func.func @muon_coefficients_infinite(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected finite coefficients, got inf at index 1}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, schedule = #muir<schedule custom>, coefficients = array<f64: 3.0, 0x7FF0000000000000, 1.0>} : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_coefficients_nan(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op expected finite coefficients, got nan at index 2}}
  %0 = "muir.newton_schulz"(%x) <{steps = 5 : i64, schedule = #muir<schedule custom>, coefficients = array<f64: 3.0, -3.0, 0x7FF8000000000000>}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @muon_coefficients_named_schedule(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op 'coefficients' are only allowed with schedule 'custom', got schedule 'quintic'}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, schedule = #muir<schedule quintic>, coefficients = array<f64: 3.0, -3.0, 1.0>} : tensor<8x4xf32>
  return
}

// -----

// Coefficients with the default schedule (simple) are rejected too.
func.func @muon_coefficients_default_schedule(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op 'coefficients' are only allowed with schedule 'custom', got schedule 'simple'}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, coefficients = array<f64: 3.0, -3.0, 1.0>} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_eps(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected eps in (0.000000e+00, inf), got 0.000000e+00}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, eps = 0.0} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_unknown_attribute(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op unknown attribute 'lrr'; expected one of: beta, coefficients, eps, lr, momentum_kind, nesterov, ns_steps, row_blocks, scale_extra, scale_mode, schedule, weight_decay}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, lrr = 0.1} : tensor<8x4xf32>
  return
}

// -----

// The unknown-attribute check also covers the generic form.
func.func @muon_unknown_attribute_generic(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op unknown attribute 'nesterv'}}
  %0:2 = "muir.muon_update"(%p, %p, %p) <{lr = 0.1 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> {nesterv = false} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  return
}

// -----

func.func @muon_missing_lr(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.muon_update' op requires attribute 'lr'}}
  %0:2 = muir.muon_update %p, %p, %p {beta = 0.9} : tensor<8x4xf32>
  return
}

// -----

func.func @muon_bf16(%p: tensor<8x4xbf16>) {
  // expected-error@+1 {{'muir.muon_update' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float values, but got 'tensor<8x4xbf16>'}}
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1} : tensor<8x4xbf16>
  return
}

// -----

func.func @muon_types_differ(%p: tensor<8x4xf32>, %g: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.muon_update' op failed to verify that all of {param, grad, momentum_buffer, new_param, new_momentum_buffer} have same type}}
  %0:2 = "muir.muon_update"(%p, %g, %p) <{lr = 0.1 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  return
}

//===----------------------------------------------------------------------===//
// muir.adamw_update
//===----------------------------------------------------------------------===//

// -----

func.func @adamw_lr(%p: tensor<16xf32>, %t: i64) {
  // expected-error@+1 {{'muir.adamw_update' op expected lr in [0.000000e+00, inf), got -1.000000e-03}}
  %0:3 = muir.adamw_update %p, %p, %p, %p step %t {lr = -1.0e-3} : tensor<16xf32>
  return
}

// -----

func.func @adamw_beta1(%p: tensor<16xf32>, %t: i64) {
  // expected-error@+1 {{'muir.adamw_update' op expected beta1 in [0.000000e+00, 1.000000e+00), got 1.000000e+00}}
  %0:3 = muir.adamw_update %p, %p, %p, %p step %t {lr = 1.0e-3, beta1 = 1.0} : tensor<16xf32>
  return
}

// -----

func.func @adamw_beta2(%p: tensor<16xf32>, %t: i64) {
  // expected-error@+1 {{'muir.adamw_update' op expected beta2 in [0.000000e+00, 1.000000e+00), got -1.000000e-01}}
  %0:3 = muir.adamw_update %p, %p, %p, %p step %t {lr = 1.0e-3, beta2 = -0.1} : tensor<16xf32>
  return
}

// -----

func.func @adamw_eps(%p: tensor<16xf32>, %t: i64) {
  // expected-error@+1 {{'muir.adamw_update' op expected eps in (0.000000e+00, inf), got 0.000000e+00}}
  %0:3 = muir.adamw_update %p, %p, %p, %p step %t {lr = 1.0e-3, eps = 0.0} : tensor<16xf32>
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<16xf32>, %t: i64) {
  // expected-error@+1 {{'muir.adamw_update' op expected weight_decay in [0.000000e+00, inf), got -1.000000e-02}}
  %0:3 = muir.adamw_update %p, %p, %p, %p step %t {lr = 1.0e-3, weight_decay = -0.01} : tensor<16xf32>
  return
}

// -----

func.func @adamw_step_type(%p: tensor<16xf32>, %t: i32) {
  // expected-error@+1 {{'muir.adamw_update' op operand #4 must be 64-bit signless integer, but got 'i32'}}
  %0:3 = "muir.adamw_update"(%p, %p, %p, %p, %t) <{lr = 1.0e-3 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>}> : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, i32) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

//===----------------------------------------------------------------------===//
// muir.momentum, muir.apply_update
//===----------------------------------------------------------------------===//

// -----

func.func @momentum_beta(%g: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.momentum' op expected beta in [0.000000e+00, 1.000000e+00), got 1.500000e+00}}
  %0:2 = muir.momentum %g, %g {beta = 1.5, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<8x4xf32>
  return
}

// -----

func.func @momentum_missing_kind(%g: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.momentum' op requires attribute 'momentum_kind'}}
  %0:2 = muir.momentum %g, %g {beta = 0.9, nesterov = true} : tensor<8x4xf32>
  return
}

// -----

func.func @apply_update_lr(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.apply_update' op expected lr in [0.000000e+00, inf), got -2.000000e-02}}
  %0 = muir.apply_update %p, %p {lr = -2.0e-02, scale = 0.4, weight_decay = 0.0} : tensor<8x4xf32>
  return
}

// -----

func.func @apply_update_weight_decay(%p: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.apply_update' op expected weight_decay in [0.000000e+00, inf), got -1.000000e+00}}
  %0 = muir.apply_update %p, %p {lr = 2.0e-02, scale = 0.4, weight_decay = -1.0} : tensor<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.newton_schulz, muir.frobenius_normalize, muir.transpose
//===----------------------------------------------------------------------===//

// -----

func.func @newton_schulz_rank(%v: tensor<8xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op expected input to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0 = muir.newton_schulz %v steps(5) schedule(simple) : tensor<8xf32>
  return
}

// -----

func.func @newton_schulz_steps(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op expected at least 1 Newton-Schulz step, got -1}}
  %0 = muir.newton_schulz %x steps(-1) schedule(simple) : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_custom_without_coefficients(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op schedule 'custom' needs 'coefficients' (a0, b0, c0, a1, ...)}}
  %0 = muir.newton_schulz %x steps(5) schedule(custom) : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_coefficients_not_triples(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op expected coefficients to be a non-empty list of (a, b, c) triples, got 5 values}}
  %0 = muir.newton_schulz %x steps(2) schedule(custom) coefficients([3.0, -3.0, 1.0, 2.0, -1.5]) : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_coefficients_named_schedule(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op 'coefficients' are only allowed with schedule 'custom', got schedule 'polar_express'}}
  %0 = muir.newton_schulz %x steps(2) schedule(polar_express) coefficients([3.0, -3.0, 1.0]) : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_eps(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op expected eps in (0.000000e+00, inf), got -1.000000e-07}}
  %0 = muir.newton_schulz %x steps(5) schedule(simple) {eps = -1.0e-7} : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_unknown_schedule(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{unknown Newton-Schulz schedule 'cubic'; expected simple, quintic, polar_express, deepseekv4, cubic5 or custom}}
  %0 = muir.newton_schulz %x steps(5) schedule(cubic) : tensor<8x4xf32>
  return
}

// -----

func.func @newton_schulz_unknown_attribute(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.newton_schulz' op unknown attribute 'step'; expected one of: coefficients, eps, precision, schedule, steps}}
  %0 = muir.newton_schulz %x steps(5) schedule(simple) {step = 3} : tensor<8x4xf32>
  return
}

// -----

func.func @frobenius_normalize_rank(%v: tensor<2x2x8x4xf32>) {
  // expected-error@+1 {{'muir.frobenius_normalize' op expected input to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 4}}
  %0 = muir.frobenius_normalize %v : tensor<2x2x8x4xf32>
  return
}

// -----

func.func @frobenius_normalize_eps(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.frobenius_normalize' op expected eps in (0.000000e+00, inf), got -1.000000e+00}}
  %0 = muir.frobenius_normalize %x {eps = -1.0} : tensor<8x4xf32>
  return
}

// -----

func.func @transpose_rank(%v: tensor<8xf32>) {
  // expected-error@+1 {{'muir.transpose' op expected input to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0 = muir.transpose %v : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @transpose_shape(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.transpose' op expected result shape 4x8, got 8x4}}
  %0 = muir.transpose %x : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @transpose_batch(%x: tensor<3x8x4xf32>) {
  // expected-error@+1 {{'muir.transpose' op expected result shape 3x4x8, got 2x4x8}}
  %0 = muir.transpose %x : tensor<3x8x4xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @transpose_result_rank(%x: tensor<3x8x4xf32>) {
  // expected-error@+1 {{'muir.transpose' op expected result shape 3x4x8, got 4x8}}
  %0 = muir.transpose %x : tensor<3x8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @transpose_unknown_attribute(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.transpose' op unknown attribute 'perm'; expected one of: (none)}}
  %0 = muir.transpose %x {perm = [1, 0]} : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.matmul
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_mixed_bf16(%a: tensor<4x8xbf16>, %b: tensor<8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected every operand of element type 'bf16' (the result's), got 'tensor<8x6xf32>'}}
  %0 = muir.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x6xf32>) -> tensor<4x6xbf16>
  return
}

// -----

func.func @syrk_bf16_into_f32(%a: tensor<4x8xbf16>) {
  // expected-error@+1 {{'muir.syrk' op expected every operand of element type 'f32' (the result's), got 'tensor<4x8xbf16>'}}
  %0 = muir.syrk %a : (tensor<4x8xbf16>) -> tensor<4x4xf32>
  return
}

// -----

func.func @newton_schulz_precision(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{expected ::mlir::muir::NSPrecision to be one of: f32, bf16}}
  // expected-error@+1 {{failed to parse Muir_NSPrecisionAttr parameter 'value' which is to be a `::mlir::muir::NSPrecision`}}
  %0 = muir.newton_schulz %x steps(5) schedule(simple) {precision = #muir.ns_precision<f16>} : tensor<8x4xf32>
  return
}

// -----

func.func @matmul_lhs_rank(%v: tensor<8xf32>, %b: tensor<8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected lhs to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0 = muir.matmul %v, %b : (tensor<8xf32>, tensor<8x6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<4x8xf32>, %b: tensor<1x1x8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected rhs to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 4}}
  %0 = muir.matmul %a, %b : (tensor<4x8xf32>, tensor<1x1x8x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @matmul_result_rank(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected result to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0 = muir.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<24xf32>
  return
}

// -----

func.func @matmul_rank_mismatch(%a: tensor<4x8xf32>, %b: tensor<2x8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected operands and result of equal rank, got 2, 3 and 3}}
  %0 = muir.matmul %a, %b : (tensor<4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected equal batch sizes, got 2, 3 and 2}}
  %0 = muir.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected contraction sizes to match: op(lhs) is 4x8, op(rhs) is 6x8}}
  %0 = muir.matmul %a, %b : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// transpose_a makes the 8x4 lhs 4x8; its contraction size 8 does not match 6.
func.func @matmul_contraction_transposed(%a: tensor<8x4xf32>, %b: tensor<6x8xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected contraction sizes to match: op(lhs) is 4x8, op(rhs) is 6x8}}
  %0 = muir.matmul %a, %b {transpose_a} : (tensor<8x4xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected result matrix 4x6, got 6x4}}
  %0 = muir.matmul %a, %b {transpose_b} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @matmul_beta_without_acc(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) {
  // expected-error@+1 {{'muir.matmul' op beta is 1.000000e+00 but there is no accumulator operand}}
  %0 = muir.matmul %a, %b {beta = 1.0} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @matmul_acc_type(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %c: tensor<6x4xf32>) {
  // expected-error@+1 {{'muir.matmul' op expected accumulator type 'tensor<4x6xf32>' (the result type), got 'tensor<6x4xf32>'}}
  %0 = muir.matmul %a, %b acc %c {beta = 1.0} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<4x6xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.syrk
//===----------------------------------------------------------------------===//

// -----

func.func @syrk_operand_rank(%v: tensor<8xf32>) {
  // expected-error@+1 {{'muir.syrk' op expected operand to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0 = muir.syrk %v : (tensor<8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @syrk_result_rank(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.syrk' op expected result to be a matrix (rank 2) or a stack of matrices (rank 3), got rank 1}}
  %0 = muir.syrk %a : (tensor<4x8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @syrk_rank_mismatch(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.syrk' op expected operand and result of equal rank, got 2 and 3}}
  %0 = muir.syrk %a : (tensor<4x8xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @syrk_batch(%a: tensor<2x4x8xf32>) {
  // expected-error@+1 {{'muir.syrk' op expected equal batch sizes, got 2 and 3}}
  %0 = muir.syrk %a : (tensor<2x4x8xf32>) -> tensor<3x4x4xf32>
  return
}

// -----

func.func @syrk_result_shape(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.syrk' op expected result matrix 4x4 (A is 4x8), got 8x8}}
  %0 = muir.syrk %a : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @syrk_beta_without_acc(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.syrk' op beta is -4.775000e+00 but there is no accumulator operand}}
  %0 = muir.syrk %a {beta = -4.775} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @syrk_acc_type(%a: tensor<2x4x8xf32>, %c: tensor<4x4xf32>) {
  // expected-error@+1 {{'muir.syrk' op expected accumulator type 'tensor<2x4x4xf32>' (the result type), got 'tensor<4x4xf32>'}}
  %0 = muir.syrk %a acc %c {beta = 1.0} : (tensor<2x4x8xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.probe
//===----------------------------------------------------------------------===//

// -----

func.func @probe_slot(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.probe' op expected slot >= 0, got -1}}
  muir.probe %x {label = "ns_out", slot = -1} : tensor<8x4xf32>
  return
}

// -----

func.func @probe_missing_label(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.probe' op requires attribute 'label'}}
  muir.probe %x {slot = 0} : tensor<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Collectives: grid and axes (shared by all collectives)
//===----------------------------------------------------------------------===//

// -----

func.func @unknown_grid(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_reduce' op expected 'nope' to name a muir.grid}}
  %0 = muir.all_reduce %x on @nope axes = ["dp"] : tensor<8x4xf32>
  return
}

// -----

// A symbol that is not a grid.
func.func @not_a_grid(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.broadcast' op expected 'not_a_grid' to name a muir.grid}}
  %0 = muir.broadcast %x on @not_a_grid axes = ["dp"] root = 0 : tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @no_axes(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_reduce' op expected at least one grid axis}}
  %0 = muir.all_reduce %x on @world axes = [] : tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @unknown_axis(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op grid 'world' has no axis 'ep' (axes: dp, tp)}}
  %0 = muir.all_gather %x on @world axes = ["ep"] gather_axis = 0 : tensor<8x4xf32> -> tensor<16x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @duplicate_axis(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.reduce_scatter' op grid axis 'tp' appears twice}}
  %0 = muir.reduce_scatter %x on @world axes = ["tp", "dp", "tp"] scatter_axis = 0 : tensor<8x4xf32> -> tensor<1x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_reduce_unknown_attribute(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_reduce' op unknown attribute 'root'; expected one of: grid, grid_axes, reduction}}
  %0 = muir.all_reduce %x on @world axes = ["dp"] {root = 0} : tensor<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.all_gather
//===----------------------------------------------------------------------===//

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gather_dim(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op expected result dim 0 to be 32 (8 x group size 4), got 16}}
  %0 = muir.all_gather %x on @world axes = ["tp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<16x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gather_other_dim(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op expected result dim 1 to be 4, got 8}}
  %0 = muir.all_gather %x on @world axes = ["dp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<16x8xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gather_result_rank(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op expected result rank 2, got 3}}
  %0 = muir.all_gather %x on @world axes = ["dp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gather_axis_range(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op expected gather_axis in [0, 2), got 2}}
  %0 = muir.all_gather %x on @world axes = ["dp"] gather_axis = 2 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gather_axis_negative(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op expected gather_axis in [0, 2), got -1}}
  %0 = muir.all_gather %x on @world axes = ["dp"] gather_axis = -1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.all_gatherv
//===----------------------------------------------------------------------===//

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gatherv_axis_range(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{'muir.all_gatherv' op expected gather_axis in [0, 2), got 3}}
  %0 = muir.all_gatherv %x on @world axes = ["dp"] gather_axis = 3 sizes = [3, 3] : tensor<3x4xf32> -> tensor<6x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gatherv_sizes_count(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{'muir.all_gatherv' op expected one size per group rank (4), got 3}}
  %0 = muir.all_gatherv %x on @world axes = ["tp"] gather_axis = 0 sizes = [3, 2, 2] : tensor<3x4xf32> -> tensor<7x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gatherv_negative_size(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{'muir.all_gatherv' op expected sizes >= 0, got -1}}
  %0 = muir.all_gatherv %x on @world axes = ["dp"] gather_axis = 0 sizes = [3, -1] : tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gatherv_input_not_largest(%x: tensor<2x4xf32>) {
  // expected-error@+1 {{'muir.all_gatherv' op expected input dim 0 to be 3 (the largest size; shards are padded to it), got 2}}
  %0 = muir.all_gatherv %x on @world axes = ["dp"] gather_axis = 0 sizes = [2, 3] : tensor<2x4xf32> -> tensor<5x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gatherv_result_not_sum(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{'muir.all_gatherv' op expected result dim 0 to be 5 (sum of sizes), got 6}}
  %0 = muir.all_gatherv %x on @world axes = ["dp"] gather_axis = 0 sizes = [2, 3] : tensor<3x4xf32> -> tensor<6x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.reduce_scatter
//===----------------------------------------------------------------------===//

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @reduce_scatter_axis_range(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.reduce_scatter' op expected scatter_axis in [0, 2), got 5}}
  %0 = muir.reduce_scatter %x on @world axes = ["tp"] scatter_axis = 5 : tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @reduce_scatter_not_divisible(%x: tensor<6x4xf32>) {
  // expected-error@+1 {{'muir.reduce_scatter' op expected input dim 0 (6) to be divisible by the group size 4}}
  %0 = muir.reduce_scatter %x on @world axes = ["tp"] scatter_axis = 0 : tensor<6x4xf32> -> tensor<1x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @reduce_scatter_result(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.reduce_scatter' op expected result dim 1 to be 1 (4 / group size 4), got 4}}
  %0 = muir.reduce_scatter %x on @world axes = ["tp"] scatter_axis = 1 reduction = max : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.all_to_all
//===----------------------------------------------------------------------===//

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_all_split_axis(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_to_all' op expected split_axis in [0, 2), got 2}}
  %0 = muir.all_to_all %x on @world axes = ["tp"] split_axis = 2 concat_axis = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_all_concat_axis(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_to_all' op expected concat_axis in [0, 2), got -1}}
  %0 = muir.all_to_all %x on @world axes = ["tp"] split_axis = 0 concat_axis = -1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_all_not_divisible(%x: tensor<6x4xf32>) {
  // expected-error@+1 {{'muir.all_to_all' op expected input dim 0 (6) to be divisible by the group size 4}}
  %0 = muir.all_to_all %x on @world axes = ["tp"] split_axis = 0 concat_axis = 1 : tensor<6x4xf32> -> tensor<1x16xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_all_shape(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.all_to_all' op expected result shape 2x16 (split dim 0 by, concat dim 1 times, group size 4), got 16x2}}
  %0 = muir.all_to_all %x on @world axes = ["tp"] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<16x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir.all_to_allv
//===----------------------------------------------------------------------===//

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_send_counts(%x: tensor<16x32xf32>, %c: tensor<2xi64>) {
  // expected-error@+1 {{'muir.all_to_allv' op expected send_counts of shape 4 (the group size), got 2}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<2xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_send_counts_rank(%x: tensor<16x32xf32>, %c: tensor<2x2xi64>) {
  // expected-error@+1 {{'muir.all_to_allv' op expected send_counts of shape 4 (the group size), got 2x2}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<2x2xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_recv_counts(%x: tensor<16x32xf32>, %c: tensor<8xi64>) {
  // expected-error@+1 {{'muir.all_to_allv' op expected recv_counts of shape 8 (the group size), got 4}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["dp", "tp"] : (tensor<16x32xf32>, tensor<8xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_row_shape(%x: tensor<16x32xf32>, %c: tensor<4xi64>) {
  // expected-error@+1 {{'muir.all_to_allv' op expected result rows of shape 32, got 16}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<4xi64>) -> (tensor<64x16xf32>, tensor<4xi64>)
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_row_rank(%x: tensor<16x32xf32>, %c: tensor<4xi64>) {
  // expected-error@+1 {{'muir.all_to_allv' op expected result rows of shape 32, got 2x32}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<4xi64>) -> (tensor<64x2x32xf32>, tensor<4xi64>)
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_counts_type(%x: tensor<16x32xf32>, %c: tensor<4xi32>) {
  // expected-error@+1 {{'muir.all_to_allv' op operand #1 must be ranked tensor of 64-bit signless integer values, but got 'tensor<4xi32>'}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<4xi32>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return
}

//===----------------------------------------------------------------------===//
// muir.broadcast
//===----------------------------------------------------------------------===//

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @broadcast_root(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.broadcast' op expected root in [0, 2) (the group size), got 2}}
  %0 = muir.broadcast %x on @world axes = ["dp"] root = 2 : tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @broadcast_root_negative(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.broadcast' op expected root in [0, 8) (the group size), got -1}}
  %0 = muir.broadcast %x on @world axes = ["dp", "tp"] root = -1 : tensor<8x4xf32>
  return
}

// -----

// all_to_allv moves rows (dimension 0), so a rank-0 input has none. This is
// a bug today: the verifier takes drop_front() of the empty shape and
// crashes muir-opt instead of diagnosing the op. Keep this case last; the
// fragment is deliberately loose until the message is chosen.
muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_rank0(%x: tensor<f32>, %c: tensor<4xi64>) {
  // expected-error@+1 {{'muir.all_to_allv' op}}
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<f32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xi64>)
  return
}

// -----

func.func @frobenius_normalize_eps_zero(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.frobenius_normalize' op expected eps in (0.000000e+00, inf), got 0.000000e+00}}
  %0 = muir.frobenius_normalize %x {eps = 0.0} : tensor<8x4xf32>
  return
}

// -----

muir.grid @world axes = ["tp"] shape = [2]
func.func @all_gather_dynamic(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{'muir.all_gather' op operand #0 must be statically shaped tensor of 32-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = muir.all_gather %x on @world axes = ["tp"] gather_axis = 0 : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @row_blocks_sum(%w: tensor<8x16xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected row_blocks to add up to the 8 rows, got 6}}
  %0, %1 = muir.muon_update %w, %w, %w {lr = 0.02, row_blocks = array<i64: 4, 2>} : tensor<8x16xf32>
  return
}

// -----

func.func @row_blocks_empty_block(%w: tensor<8x16xf32>) {
  // expected-error@+1 {{'muir.muon_update' op expected row blocks of at least 1 row, got 0}}
  %0, %1 = muir.muon_update %w, %w, %w {lr = 0.02, row_blocks = array<i64: 8, 0>} : tensor<8x16xf32>
  return
}

// -----

func.func @row_blocks_stack(%w: tensor<2x8x16xf32>) {
  // expected-error@+1 {{'muir.muon_update' op row_blocks needs a matrix (rank 2), got rank 3}}
  %0, %1 = muir.muon_update %w, %w, %w {lr = 0.02, row_blocks = array<i64: 4, 4>} : tensor<2x8x16xf32>
  return
}

// -----

func.func @route_top_k_above_experts(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op top_k 9 must be in [1, 8] (the number of experts)}}
  %i, %w, %c = muir.route %l {top_k = 9} : (tensor<4x8xf32>) -> (tensor<4x9xi64>, tensor<4x9xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_top_k_zero(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op top_k 0 must be in [1, 8] (the number of experts)}}
  %i, %w, %c = muir.route %l {top_k = 0} : (tensor<4x8xf32>) -> (tensor<4x0xi64>, tensor<4x0xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_groups_do_not_divide(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op n_group 3 must divide the 8 experts}}
  %i, %w, %c = muir.route %l {top_k = 2, n_group = 3, topk_group = 1} : (tensor<4x8xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_topk_group(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op topk_group 5 must be in [1, 4] (n_group)}}
  %i, %w, %c = muir.route %l {top_k = 2, n_group = 4, topk_group = 5} : (tensor<4x8xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_too_few_grouped_experts(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op top_k 5 exceeds the 4 experts of the topk_group best groups}}
  %i, %w, %c = muir.route %l {top_k = 5, n_group = 4, topk_group = 2} : (tensor<4x8xf32>) -> (tensor<4x5xi64>, tensor<4x5xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_bias_shape(%l: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'muir.route' op expected bias of 8 experts, got 'tensor<4xf32>'}}
  %i, %w, %c = muir.route %l bias %b {top_k = 2} : (tensor<4x8xf32>, tensor<4xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_softmax_after_sigmoid(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op softmax_after_topk needs scoring softmax}}
  %i, %w, %c = muir.route %l {top_k = 2, scoring = #muir<route_scoring sigmoid>, softmax_after_topk} : (tensor<4x8xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_scaling(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op scaling must be > 0, got 0}}
  %i, %w, %c = muir.route %l {top_k = 2, scaling = 0.0} : (tensor<4x8xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @route_result_types(%l: tensor<4x8xf32>) {
  // expected-error@+1 {{'muir.route' op expected counts of type 'tensor<8xi64>', got 'tensor<4xi64>'}}
  %i, %w, %c = muir.route %l {top_k = 2} : (tensor<4x8xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<4xi64>)
  return
}

// -----

func.func @route_logits_rank(%l: tensor<2x4x8xf32>) {
  // expected-error@+1 {{'muir.route' op expected logits [tokens, experts], got rank 3}}
  %i, %w, %c = muir.route %l {top_k = 2} : (tensor<2x4x8xf32>) -> (tensor<4x2xi64>, tensor<4x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @grouped_matmul_hidden(%x: tensor<8x32xf32>, %w: tensor<4x24x16xf32>, %s: tensor<4xi64>) {
  // expected-error@+1 {{'muir.grouped_matmul' op input rows of 32 do not match the experts' 16 inputs (mismatched hidden sizes)}}
  %y = muir.grouped_matmul %x, %w, %s {transpose_b} : (tensor<8x32xf32>, tensor<4x24x16xf32>, tensor<4xi64>) -> tensor<8x24xf32>
  return
}

// -----

func.func @grouped_matmul_sizes(%x: tensor<8x16xf32>, %w: tensor<4x16x24xf32>, %s: tensor<3xi64>) {
  // expected-error@+1 {{'muir.grouped_matmul' op expected sizes of the 4 experts, got 'tensor<3xi64>'}}
  %y = muir.grouped_matmul %x, %w, %s : (tensor<8x16xf32>, tensor<4x16x24xf32>, tensor<3xi64>) -> tensor<8x24xf32>
  return
}

// -----

func.func @grouped_matmul_result(%x: tensor<8x16xf32>, %w: tensor<4x16x24xf32>, %s: tensor<4xi64>) {
  // expected-error@+1 {{'muir.grouped_matmul' op expected result 'tensor<8x24xf32>', got 'tensor<8x16xf32>'}}
  %y = muir.grouped_matmul %x, %w, %s : (tensor<8x16xf32>, tensor<4x16x24xf32>, tensor<4xi64>) -> tensor<8x16xf32>
  return
}

// -----

muir.grid @ep3 axes = ["ep"] shape = [3]
func.func @dispatch_experts_not_divisible(%x: tensor<6x16xf32>, %i: tensor<6x2xi64>) {
  // expected-error@+1 {{'muir.dispatch' op 8 experts do not divide evenly over the 3 ranks of the group (experts not divisible by ep)}}
  %r, %c, %p = muir.dispatch %x, %i on @ep3 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<36x16xf32>, tensor<2xi64>, tensor<84xi64>)
  return
}

// -----

muir.grid @ep2 axes = ["ep"] shape = [2]
func.func @dispatch_top_k(%x: tensor<6x16xf32>, %i: tensor<6x10xi64>) {
  // expected-error@+1 {{'muir.dispatch' op top_k 10 must be in [1, 8] (the number of experts)}}
  %r, %c, %p = muir.dispatch %x, %i on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x10xi64>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
  return
}

// -----

muir.grid @ep2 axes = ["ep"] shape = [2]
func.func @dispatch_hidden(%x: tensor<6x32xf32>, %i: tensor<6x2xi64>) {
  // expected-error@+1 {{'muir.dispatch' op expected input 'tensor<6x16xf32>', got 'tensor<6x32xf32>'}}
  %r, %c, %p = muir.dispatch %x, %i on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x32xf32>, tensor<6x2xi64>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
  return
}

// -----

muir.grid @ep2 axes = ["ep"] shape = [2]
func.func @dispatch_counts(%x: tensor<6x16xf32>, %i: tensor<6x2xi64>) {
  // expected-error@+1 {{'muir.dispatch' op expected counts (one per local expert) 'tensor<4xi64>', got 'tensor<8xi64>'}}
  %r, %c, %p = muir.dispatch %x, %i on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<24x16xf32>, tensor<8xi64>, tensor<56xi64>)
  return
}

// -----

muir.grid @ep2 axes = ["ep"] shape = [2]
func.func @combine_plan(%r: tensor<24x16xf32>, %i: tensor<6x2xi64>, %p: tensor<48xi64>) {
  // expected-error@+1 {{'muir.combine' op expected plan (2 * bound + 4 * group size) 'tensor<56xi64>', got 'tensor<48xi64>'}}
  %y = muir.combine %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<48xi64>) -> tensor<6x16xf32>
  return
}

// -----

muir.grid @ep2 axes = ["ep"] shape = [2]
func.func @combine_hidden(%r: tensor<24x16xf32>, %i: tensor<6x2xi64>, %p: tensor<56xi64>) {
  // expected-error@+1 {{'muir.combine' op expected result 'tensor<6x16xf32>', got 'tensor<6x8xf32>'}}
  %y = muir.combine %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x8xf32>
  return
}

// -----

muir.grid @ep2 axes = ["ep"] shape = [2]
func.func @combine_weights_grad_result(%d: tensor<6x16xf32>, %r: tensor<24x16xf32>, %i: tensor<6x2xi64>, %p: tensor<56xi64>) {
  // expected-error@+1 {{'muir.combine_weights_grad' op expected result 'tensor<6x2xf32>', got 'tensor<6x16xf32>'}}
  %y = muir.combine_weights_grad %d, %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x16xf32>
  return
}

// -----

func.func @grouped_matmul_wgrad_rows(%x: tensor<8x16xf32>, %d: tensor<6x24xf32>, %s: tensor<4xi64>) {
  // expected-error@+1 {{'muir.grouped_matmul_wgrad' op input has 8 rows but the gradient 6}}
  %w = muir.grouped_matmul_wgrad %x, %d, %s : (tensor<8x16xf32>, tensor<6x24xf32>, tensor<4xi64>) -> tensor<4x16x24xf32>
  return
}

// -----

func.func @grouped_matmul_wgrad_result(%x: tensor<8x16xf32>, %d: tensor<8x24xf32>, %s: tensor<4xi64>) {
  // expected-error@+1 {{'muir.grouped_matmul_wgrad' op expected result 'tensor<4x24x16xf32>', got 'tensor<4x16x24xf32>'}}
  %w = muir.grouped_matmul_wgrad %x, %d, %s {transpose_b} : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x16x24xf32>
  return
}

// -----

func.func @route_grad_weights(%l: tensor<6x8xf32>, %i: tensor<6x2xi64>, %dw: tensor<6x3xf32>) {
  // expected-error@+1 {{'muir.route_grad' op expected weights_grad of the indices' shape, got 'tensor<6x3xf32>'}}
  %d = muir.route_grad %l, %i, %dw : (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x3xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @capacity_factor(%i: tensor<6x2xi64>, %w: tensor<6x2xf32>) {
  // expected-error@+1 {{'muir.capacity' op capacity_factor must be > 0, got 0}}
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 0.0} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @capacity_group(%i: tensor<6x2xi64>, %w: tensor<6x2xf32>) {
  // expected-error@+1 {{'muir.capacity' op group_tokens 4 must be 0 or divide the 6 tokens}}
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 1.0, group_tokens = 4} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return
}

// -----

func.func @renumber_not_permutation(%i: tensor<6x2xi64>) -> tensor<6x2xi64> {
  // expected-error@+1 {{'muir.renumber' op map must be a permutation of [0, 4); entry 2 is 1}}
  %r = muir.renumber %i map = [0, 1, 1, 3] : tensor<6x2xi64>
  return %r : tensor<6x2xi64>
}

// -----

func.func @renumber_out_of_range(%i: tensor<6x2xi64>) -> tensor<6x2xi64> {
  // expected-error@+1 {{'muir.renumber' op map must be a permutation of [0, 2); entry 0 is 2}}
  %r = muir.renumber %i map = [2, 0] : tensor<6x2xi64>
  return %r : tensor<6x2xi64>
}

// -----

// The discardable muir.* attributes (MuirDialect.cpp): one case per kind.

// expected-error@+1 {{'muir.role' (the argument's role) must be #muir.role<param|grad|state|data|step|hyper|tokens>; got "param"}}
func.func @arg_role(%x: tensor<8xf32> {muir.name = "x", muir.role = "param"}) {
  return
}

// -----

// expected-error@+1 {{argument 0: 'muir.name' must be a non-empty tensor name usable as a relative file name}}
func.func @arg_name_empty(%x: tensor<8xf32> {muir.name = ""}) {
  return
}

// -----

// expected-error@+1 {{argument 0: 'muir.name' must be a non-empty tensor name}}
func.func @arg_name_escapes(%x: tensor<8xf32> {muir.name = "../x"}) {
  return
}

// -----

// expected-error@+1 {{argument 0: 'muir.name' must be a non-empty tensor name}}
func.func @arg_name_not_string(%x: tensor<8xf32> {muir.name = 3 : i64}) {
  return
}

// -----

// The old string form of a shard is refused: shards are typed.
// expected-error@+1 {{argument 0: 'muir.shards' must be a list of #muir.shard<kind, "axis", dim>; got ["tp_column@tp:0"]}}
func.func @arg_shards_string(%x: tensor<8x4xf32> {muir.name = "x", muir.shards = ["tp_column@tp:0"]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.shard<tp_row, "tp", 2> splits dimension 2 of a rank-2 tensor}}
func.func @arg_shard_dim(%x: tensor<8x4xf32> {muir.name = "x", muir.shards = [#muir.shard<tp_row, "tp", 2>]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.shard<expert, "ep", 0> names axis 'ep', which no muir.grid has}}
func.func @arg_shard_axis(%x: tensor<8x4xf32> {muir.name = "x", muir.shards = [#muir.shard<expert, "ep", 0>]}) {
  return
}

// -----

// expected-error@+2 {{expected ::mlir::muir::ShardKind to be one of: tp_column, tp_row, fsdp, expert}}
// expected-error@+1 {{failed to parse Muir_ShardAttr parameter 'kind'}}
func.func @arg_shard_kind(%x: tensor<8x4xf32> {muir.name = "x", muir.shards = [#muir.shard<column, "tp", 0>]}) {
  return
}

// -----

// A folding is a grid, by symbol.
muir.grid @world axes = ["ep"] shape = [2]
// expected-error@+1 {{argument 0: 'muir.folding' must name a grid (@moe); got "moe"}}
func.func @arg_folding_string(%x: tensor<8x4xf32> {muir.name = "x", muir.folding = "moe"}) {
  return
}

// -----

muir.grid @world axes = ["ep"] shape = [2]
// expected-error@+1 {{argument 0: 'muir.folding' names @moe, which the module does not have}}
func.func @arg_folding_unknown(%x: tensor<8x4xf32> {muir.name = "x", muir.folding = @moe}) {
  return
}

// -----

// A split is typed too, and names its grid: no "first grid" rule.
// expected-error@+1 {{argument 0: 'muir.split' must be a list of #muir.split<@grid, ["axis", ...], dim>; got ["tp:0"]}}
func.func @arg_split_string(%x: tensor<8x4xf32> {muir.name = "x", muir.split = ["tp:0"]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.split<@moe, ["ep"], 0> names grid @moe, which the module does not have}}
func.func @arg_split_grid(%x: tensor<8x4xf32> {muir.name = "x", muir.split = [#muir.split<@moe, ["ep"], 0>]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.split<@g, ["dp", "ep"], 0> names axis 'ep', which @g does not have}}
func.func @arg_split_axis(%x: tensor<8x4xf32> {muir.name = "x", muir.split = [#muir.split<@g, ["dp", "ep"], 0>]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.split<@g, ["tp", "dp"], 0> must list distinct axes in @g's order}}
func.func @arg_split_order(%x: tensor<8x4xf32> {muir.name = "x", muir.split = [#muir.split<@g, ["tp", "dp"], 0>]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.split<@g, ["tp", "tp"], 0> must list distinct axes in @g's order}}
func.func @arg_split_twice(%x: tensor<8x4xf32> {muir.name = "x", muir.split = [#muir.split<@g, ["tp", "tp"], 0>]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.split<@g, ["tp"], -1> splits dimension -1 of a rank-2 tensor}}
func.func @arg_split_dim(%x: tensor<8x4xf32> {muir.name = "x", muir.split = [#muir.split<@g, ["tp"], -1>]}) {
  return
}

// -----

muir.grid @g axes = ["dp", "tp"] shape = [2, 2]
// expected-error@+1 {{argument 0: #muir.split<@g, [], 0> must name its axes as strings}}
func.func @arg_split_no_axes(%x: tensor<8x4xf32> {muir.name = "x", muir.split = [#muir.split<@g, [], 0>]}) {
  return
}

// -----

// expected-error@+1 {{unknown argument attribute 'muir.nmae'; expected one of: muir.name, muir.role}}
func.func @arg_unknown(%x: tensor<8xf32> {muir.nmae = "x"}) {
  return
}

// -----

// expected-error@+1 {{unknown result attribute 'muir.update'; expected one of: muir.updates}}
func.func @result_unknown(%x: tensor<8xf32>) -> (tensor<8xf32> {muir.update = "x"}) {
  return %x : tensor<8xf32>
}

// -----

func.func @op_ns_why_string(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.ns_why' must be #muir.ns_why<requested>, <both_dims>, <fsdp_owner>, <layout_invariant> or <cost_model on "machine" : [candidates]>; got "cheapest"}}
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = "cheapest"} : tensor<8x4xf32>
  return
}

// -----

func.func @op_ns_why_no_candidates(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{#muir.ns_why<cost_model> names the machine profile and the candidates it weighed}}
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<cost_model>} : tensor<8x4xf32>
  return
}

// -----

// The machine is one of the cost model's profiles.
func.func @op_ns_why_unknown_machine(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{unknown machine profile 'tpu' (expected one of: cpu, h200, h200-bf16)}}
  // expected-error@+1 {{failed to parse Muir_NSWhyAttr parameter 'machine'}}
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<cost_model on "tpu" : [<duplicated, standard, 0.1 ms, 0.2 MB>]>} : tensor<8x4xf32>
  return
}

// -----

func.func @op_ns_why_requested_costs(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{only #muir.ns_why<cost_model> has a machine profile and candidates}}
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<requested on "cpu">} : tensor<8x4xf32>
  return
}

// -----

func.func @op_ns_candidate_mode(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{an ns_candidate is duplicated, distributed or resharded; got blockwise}}
  // expected-error@+1 {{failed to parse Muir_NSWhyAttr parameter 'candidates'}}
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<blockwise, standard, 1.0 ms, 0.5 MB>]>} : tensor<8x4xf32>
  return
}

// -----

func.func @op_ns_candidate_cost(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{an ns_candidate's milliseconds and megabytes are finite and non-negative}}
  // expected-error@+1 {{failed to parse Muir_NSWhyAttr parameter 'candidates'}}
  %0 = muir.apply_update %x, %x {lr = 0.1, scale = 1.0, weight_decay = 0.0, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<duplicated, standard, -1.0 ms, 0.5 MB>]>} : tensor<8x4xf32>
  return
}

// -----

func.func @op_ns_mode(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'muir.ns_mode' must be #muir.ns_mode<auto>, <duplicated>, <distributed>, <resharded> or <blockwise>; got "bogus"}}
  %1:2 = muir.muon_update %x, %x, %x {lr = 0.1, muir.ns_mode = "bogus"} : tensor<8x4xf32>
  return
}

// -----

func.func @op_unknown(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{unknown operation attribute 'muir.ns_mdoe'; expected one of: muir.entry, muir.per_rank}}
  %1:2 = muir.muon_update %x, %x, %x {lr = 0.1, muir.ns_mdoe = "distributed"} : tensor<8x4xf32>
  return
}

// -----

// expected-error@+1 {{'muir.entry' must be a unit attribute}}
func.func @op_entry(%x: tensor<8xf32>) attributes {muir.entry = 1 : i64} {
  return
}

// -----

// expected-error@+1 {{'muir.grid' op expected at most 1048576 devices (the product of the sizes)}}
muir.grid @world axes = ["dp", "pp"] shape = [4294967296, 4294967296]

// -----

func.func @add_diagonal_not_square(%x: tensor<4x6xf64>) -> tensor<4x6xf64> {
  // expected-error@+1 {{'muir.add_diagonal' op expected square matrices, got 4x6}}
  %0 = muir.add_diagonal %x, 1.0 : tensor<4x6xf64>
  return %0 : tensor<4x6xf64>
}

// -----

func.func @matmul_mixed_precision(%a: tensor<4x4xf64>, %b: tensor<4x4xf32>) -> tensor<4x4xf64> {
  // expected-error@+1 {{'muir.matmul' op expected every operand of element type 'f64' (the result's), got 'tensor<4x4xf32>'}}
  %0 = muir.matmul %a, %b : (tensor<4x4xf64>, tensor<4x4xf32>) -> tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}

// -----

func.func @ns_form_not_typed(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error@+1 {{'muir.ns_form' must be #muir.ns_form<standard> or #muir.ns_form<gram>}}
  %0 = muir.newton_schulz %x steps(5) schedule(simple) {muir.ns_form = "gram"} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @ns_form_cost_untyped(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error@+1 {{'muir.ns_form_cost' must be #muir.ns_form_cost<standard = S s, gram = G s>}}
  %0 = muir.newton_schulz %x steps(5) schedule(simple) {muir.ns_form_cost = array<f64: 1.0, 2.0>} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @ns_form_cost_negative(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error@+1 {{an ns_form_cost's seconds are finite and non-negative}}
  %0 = muir.newton_schulz %x steps(5) schedule(simple) {muir.ns_form_cost = #muir.ns_form_cost<standard = -1.0 s, gram = 2.0 s>} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @trace_normalize_scale_shape(%a: tensor<3x4x4xf64>) -> tensor<3x4x4xf64> {
  // expected-error@+1 {{'muir.trace_normalize' op expected one scale per matrix, tensor<3xf64>, got 'tensor<1xf64>'}}
  %r, %s = muir.trace_normalize %a : tensor<3x4x4xf64> -> tensor<3x4x4xf64>, tensor<1xf64>
  return %r : tensor<3x4x4xf64>
}

// -----

func.func @symmetric_not_square(%a: tensor<4x8xf64>, %b: tensor<8x4xf64>) -> tensor<4x4xf64> {
  // expected-error@+1 {{'muir.matmul' op a symmetric product needs square operands, got 4x8 times 8x4}}
  %0 = muir.matmul %a, %b {symmetric} : (tensor<4x8xf64>, tensor<8x4xf64>) -> tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}

// -----

func.func @symmetric_f32(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{'muir.matmul' op a symmetric product runs in f64, got 'f32'}}
  %0 = muir.matmul %a, %b {symmetric} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @trace_normalize_eps(%a: tensor<4x4xf64>) -> tensor<4x4xf64> {
  // expected-error@+1 {{'muir.trace_normalize' op expected eps in (0.000000e+00, inf), got 0.000000e+00}}
  %r, %s = muir.trace_normalize %a {eps = 0.0} : tensor<4x4xf64> -> tensor<4x4xf64>, tensor<1xf64>
  return %r : tensor<4x4xf64>
}

// -----

func.func @matmul_alpha_twice(%a: tensor<4x4xf32>, %s: f64) -> tensor<4x4xf32> {
  // expected-error@+1 {{'muir.matmul' op has both an alpha operand and alpha = 2.000000e+00; give one}}
  %0 = muir.matmul %a, %a alpha(%s) {alpha = 2.0} : (tensor<4x4xf32>, tensor<4x4xf32>, f64) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @matmul_beta_operand_without_acc(%a: tensor<4x4xf32>, %s: f64) -> tensor<4x4xf32> {
  // expected-error@+1 {{'muir.matmul' op has a beta operand but no accumulator operand}}
  %0 = muir.matmul %a, %a beta(%s) : (tensor<4x4xf32>, tensor<4x4xf32>, f64) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @syrk_beta_twice(%a: tensor<4x8xf32>, %c: tensor<4x4xf32>, %s: f64) -> tensor<4x4xf32> {
  // expected-error@+1 {{'muir.syrk' op has both a beta operand and beta = 5.000000e-01; give one}}
  %0 = muir.syrk %a acc %c beta(%s) {beta = 0.5} : (tensor<4x8xf32>, tensor<4x4xf32>, f64) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @add_diagonal_two_values(%g: tensor<4x4xf64>, %s: f64) -> tensor<4x4xf64> {
  // expected-error@+1 {{'muir.add_diagonal' op expected the value as an attribute or as an f64 operand, exactly one of them}}
  %0 = muir.add_diagonal %g, %s {value = 1.0 : f64} : tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}

// -----

func.func @capacity_tokens_in_blocks(%i: tensor<8x2xi64>, %w: tensor<8x2xf32>, %n: i64) -> tensor<8x2xi64> {
  // expected-error@+1 {{'muir.capacity' op a run-time token count needs group_tokens 0 (the block is the first `tokens` rows), got 4}}
  %ki, %kw, %kc = muir.capacity %i, %w tokens(%n) {num_experts = 4, capacity_factor = 1.0, group_tokens = 4} : (tensor<8x2xi64>, tensor<8x2xf32>, i64) -> (tensor<8x2xi64>, tensor<8x2xf32>, tensor<4xi64>)
  return %ki : tensor<8x2xi64>
}

// -----

func.func @row_stable_with_acc(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{'muir.matmul' op a row_stable product is a plain f32 matrix product (2-D, no accumulator, alpha 1, not symmetric)}}
  %0 = muir.matmul %a, %b acc %c {row_stable, beta = 1.0} : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @f64_bf16_iterate(%x: tensor<8x16xf64>) -> tensor<8x16xf64> {
  // expected-error@+1 {{'muir.newton_schulz' op an f64 input iterates in f64: precision bf16 takes an f32 input}}
  %y = muir.newton_schulz %x steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<8x16xf64>
  return %y : tensor<8x16xf64>
}

// -----

func.func @transpose_element_type(%x: tensor<8x16xf64>) -> tensor<16x8xf32> {
  // expected-error@+1 {{'muir.transpose' op expected the result's element type 'f64', got 'f32'}}
  %y = muir.transpose %x : tensor<8x16xf64> -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// -----

func.func @normuon_variance_shape(%w: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'muir.normuon_update' op expected variance of shape 4 (one value per row of 4x8), got 8}}
  %w1, %m1, %v1 = muir.normuon_update %w, %w, %w, %v {lr = 0.02} : tensor<4x8xf32>, tensor<8xf32>
  return %w1 : tensor<4x8xf32>
}

// -----

func.func @normuon_beta2(%w: tensor<4x8xf32>, %v: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'muir.normuon_update' op expected beta2 in [0.000000e+00, 1.000000e+00), got 1.000000e+00}}
  %w1, %m1, %v1 = muir.normuon_update %w, %w, %w, %v {lr = 0.02, beta2 = 1.0} : tensor<4x8xf32>, tensor<4xf32>
  return %w1 : tensor<4x8xf32>
}

// -----

func.func @row_sum_squares_shape(%x: tensor<2x4x8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{'muir.row_sum_squares' op expected a result of shape 2x4 (one value per row of 2x4x8), got 2x8}}
  %s = muir.row_sum_squares %x : tensor<2x4x8xf32> -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// -----

func.func @row_sum_squares_precision(%x: tensor<4x8xf64>) -> tensor<4xf32> {
  // expected-error@+1 {{'muir.row_sum_squares' op expected every operand of element type 'f32' (the result's), got 'tensor<4x8xf64>'}}
  %s = muir.row_sum_squares %x : tensor<4x8xf64> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @normuon_update_precision(%w: tensor<4x8xf64>, %v: tensor<4xf32>) -> tensor<4x8xf64> {
  // expected-error@+1 {{'muir.normuon_update' op expected every operand of element type 'f64' (the result's), got 'tensor<4xf32>'}}
  %w1, %m1, %v1 = muir.normuon_update %w, %w, %w, %v {lr = 0.02} : tensor<4x8xf64>, tensor<4xf32>
  return %w1 : tensor<4x8xf64>
}

// -----

func.func @normuon_normalize_columns(%x: tensor<4x8xf32>, %v: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'muir.normuon_normalize' op expected columns (of the whole matrix) of at least 8, got 4}}
  %p, %v1 = muir.normuon_normalize %x, %v, %v {beta2 = 0.9, eps2 = 1.0e-8, columns = 4} : tensor<4x8xf32>, tensor<4xf32>
  return %p : tensor<4x8xf32>
}

// -----

func.func @qk_clip_heads(%w: tensor<32x8xf32>, %x: tensor<3xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{'muir.qk_clip' op max_logits has 3 heads; 4 heads of rows with group 1 need 4}}
  %c = muir.qk_clip %w, %x {tau = 100.0, head_rows = 8, group = 1} : tensor<32x8xf32>, tensor<3xf32>
  return %c : tensor<32x8xf32>
}

// -----

func.func @qk_clip_rows(%w: tensor<30x8xf32>, %x: tensor<4xf32>) -> tensor<30x8xf32> {
  // expected-error@+1 {{'muir.qk_clip' op rows (30) are not whole heads of head_rows 8}}
  %c = muir.qk_clip %w, %x {tau = 100.0, head_rows = 8, group = 1} : tensor<30x8xf32>, tensor<4xf32>
  return %c : tensor<30x8xf32>
}

// -----

func.func @qk_clip_tau(%w: tensor<32x8xf32>, %x: tensor<8xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{'muir.qk_clip' op expected tau in (0.000000e+00, inf), got 0.000000e+00}}
  %c = muir.qk_clip %w, %x {tau = 0.0, head_rows = 8, group = 2} : tensor<32x8xf32>, tensor<8xf32>
  return %c : tensor<32x8xf32>
}

// -----

func.func @qk_clip_stack(%w: tensor<2x32x8xf32>, %x: tensor<4xf32>) -> tensor<2x32x8xf32> {
  // expected-error@+1 {{'muir.qk_clip' op clips a matrix (rank 2), not rank 3}}
  %c = muir.qk_clip %w, %x {tau = 1.0, head_rows = 8, group = 1} : tensor<2x32x8xf32>, tensor<4xf32>
  return %c : tensor<2x32x8xf32>
}
