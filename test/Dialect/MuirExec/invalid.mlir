// RUN: muir-opt %s -split-input-file -verify-diagnostics

// One case per verifier branch of dialects/MuirExec/MuirExecDialect.cpp plus
// the ODS buffer constraints. Cases marked "bug" describe the intended
// behaviour and fail until the verifier is fixed.

//===----------------------------------------------------------------------===//
// muir_exec.gemm
//===----------------------------------------------------------------------===//

func.func @gemm_dynamic(%a: memref<?x8xf32>, %b: memref<8x6xf32>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected static, contiguous buffers, got 'memref<?x8xf32>'}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<?x8xf32>, memref<8x6xf32>, memref<4x6xf32>
  return
}

// -----

func.func @gemm_strided(%a: memref<4x8xf32>, %b: memref<8x6xf32, strided<[8, 1]>>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected static, contiguous buffers, got 'memref<8x6xf32, strided<[8, 1]>>'}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<8x6xf32, strided<[8, 1]>>, memref<4x6xf32>
  return
}

// -----

func.func @gemm_batch(%a: memref<2x4x8xf32>, %b: memref<3x8x6xf32>, %c: memref<2x4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected equal batch sizes, got 2, 3 and 2}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<2x4x8xf32>, memref<3x8x6xf32>, memref<2x4x6xf32>
  return
}

// -----

func.func @gemm_contraction(%a: memref<4x8xf32>, %b: memref<6x8xf32>, %c: memref<4x8xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected op(A) 4x8 times op(B) 6x8 into C 4x8, got C 4x8}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<6x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @gemm_c_shape(%a: memref<8x4xf32>, %b: memref<6x8xf32>, %c: memref<6x4xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected op(A) 4x8 times op(B) 8x6 into C 4x6, got C 6x4}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0, transpose_a, transpose_b} : memref<8x4xf32>, memref<6x8xf32>, memref<6x4xf32>
  return
}

// -----

// A plain matrix next to a stack: today reported as batch "0" against 2.
func.func @gemm_rank_mismatch(%a: memref<4x8xf32>, %b: memref<2x8x6xf32>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<2x8x6xf32>, memref<4x6xf32>
  return
}

// -----

// Bug: a plain matrix next to an empty stack (batch 0) passes, because batch
// 0 is also the "no batch" marker; muir-exec-to-runtime-calls then calls
// muirrt_sgemm with batch 1 and reads 48 floats from the empty B.
func.func @gemm_rank_mismatch_empty_stack(%a: memref<4x8xf32>, %b: memref<0x8x6xf32>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<0x8x6xf32>, memref<4x6xf32>
  return
}

// -----

func.func @gemm_rank1(%a: memref<8xf32>, %b: memref<8x6xf32>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op operand #0 must be 2D/3D memref of 32-bit float or 64-bit float or bfloat16 type values, but got 'memref<8xf32>'}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<8xf32>, memref<8x6xf32>, memref<4x6xf32>
  return
}

// -----

func.func @gemm_mixed(%a: memref<4x8xf64>, %b: memref<8x6xf32>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected buffers of one element type, got 'f64' and 'f32'}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf64>, memref<8x6xf32>, memref<4x6xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir_exec.syrk
//===----------------------------------------------------------------------===//

// -----

func.func @syrk_dynamic(%a: memref<4x8xf32>, %c: memref<4x?xf32>) {
  // expected-error@+1 {{'muir_exec.syrk' op expected static, contiguous buffers, got 'memref<4x?xf32>'}}
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<4x?xf32>
  return
}

// -----

func.func @syrk_shape(%a: memref<4x8xf32>, %c: memref<8x8xf32>) {
  // expected-error@+1 {{'muir_exec.syrk' op expected C of 4x4 per batch item, got 8x8}}
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<8x8xf32>
  return
}

// -----

// Bug: the batch mismatch is reported as "expected C of 4x4 per batch item,
// got 4x4"; it should name the batch sizes, as muir_exec.gemm does.
func.func @syrk_batch(%a: memref<2x4x8xf32>, %c: memref<3x4x4xf32>) {
  // expected-error@+1 {{'muir_exec.syrk' op expected equal batch sizes, got 2 and 3}}
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<2x4x8xf32>, memref<3x4x4xf32>
  return
}

// -----

// Bug: accepted today (batch 0 is also the "no batch" marker); the runtime
// call then writes 16 floats into the empty C.
func.func @syrk_rank_mismatch_empty_stack(%a: memref<4x8xf32>, %c: memref<0x4x4xf32>) {
  // expected-error@+1 {{'muir_exec.syrk' op}}
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<0x4x4xf32>
  return
}

// -----

func.func @syrk_acc_type(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %acc: memref<2x8xf32>) {
  // expected-error@+1 {{'muir_exec.syrk' op expected the accumulator of C's type 'memref<4x4xf32>', got 'memref<2x8xf32>'}}
  muir_exec.syrk %a, %c acc %acc {alpha = 1.0, beta = 1.0} : memref<4x8xf32>, memref<4x4xf32>, memref<2x8xf32>
  return
}

// -----

// syrk_rows checks shapes as syrk does: C is n x n, n the columns of A
// with transpose.
func.func @syrk_rows_shape(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %b: index, %e: index) {
  // expected-error@+1 {{'muir_exec.syrk_rows' op expected C of 8x8 per batch item, got 4x4}}
  muir_exec.syrk_rows %a, %c rows [%b, %e) {alpha = 1.0, transpose} : memref<4x8xf32>, memref<4x4xf32>
  return
}

// -----

// A triangle chunk's constant rows lie within [0, n], in order.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @triangle_rows(%c: memref<4x4xf32>) {
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  // expected-error@+1 {{'muir_exec.triangle_all_reduce_start' op has rows [1, 5) outside [0, 4] or out of order}}
  %r = muir_exec.triangle_all_reduce_start %c rows [%c1, %c5) {group = #muir_exec.group<@world, ["dp"]>} : memref<4x4xf32>
  return
}

// -----

func.func @triangle_wait_rows(%c: memref<4x4xf32>, %r: !muir_exec.request) {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  // expected-error@+1 {{'muir_exec.triangle_all_reduce_wait' op has rows [3, 2) outside [0, 4] or out of order}}
  muir_exec.triangle_all_reduce_wait %r, %c rows [%c3, %c2) : memref<4x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir_exec.frobenius_normalize
//===----------------------------------------------------------------------===//

// -----

func.func @frobenius_normalize_dynamic(%x: memref<2x?x4xf32>) {
  // expected-error@+1 {{'muir_exec.frobenius_normalize' op expected static, contiguous buffers, got 'memref<2x?x4xf32>'}}
  muir_exec.frobenius_normalize %x, %x {eps = 1.0e-7} : memref<2x?x4xf32>, memref<2x?x4xf32>
  return
}

// -----

func.func @frobenius_normalize_types(%x: memref<8x4xf32>, %y: memref<4x8xf32>) {
  // expected-error@+1 {{'muir_exec.frobenius_normalize' op expected input and output of one type (or an f32 input and a bf16 output of its shape), got 'memref<8x4xf32>' and 'memref<4x8xf32>'}}
  muir_exec.frobenius_normalize %x, %y {eps = 1.0e-7} : memref<8x4xf32>, memref<4x8xf32>
  return
}

// -----

func.func @frobenius_normalize_bf16_shape(%x: memref<8x4xf32>, %y: memref<4x8xbf16>) {
  // expected-error@+1 {{'muir_exec.frobenius_normalize' op expected input and output of one type (or an f32 input and a bf16 output of its shape), got 'memref<8x4xf32>' and 'memref<4x8xbf16>'}}
  muir_exec.frobenius_normalize %x, %y {eps = 1.0e-7} : memref<8x4xf32>, memref<4x8xbf16>
  return
}

// -----

func.func @frobenius_normalize_missing_eps(%x: memref<8x4xf32>) {
  // expected-error@+1 {{'muir_exec.frobenius_normalize' op requires attribute 'eps'}}
  muir_exec.frobenius_normalize %x, %x : memref<8x4xf32>, memref<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir_exec.transpose
//===----------------------------------------------------------------------===//

// -----

func.func @transpose_strided(%x: memref<8x4xf32, strided<[4, 1], offset: 4>>, %y: memref<4x8xf32>) {
  // expected-error@+1 {{'muir_exec.transpose' op expected static, contiguous buffers, got 'memref<8x4xf32, strided<[4, 1], offset: 4>>'}}
  muir_exec.transpose %x, %y : memref<8x4xf32, strided<[4, 1], offset: 4>>, memref<4x8xf32>
  return
}

// -----

func.func @transpose_shape(%x: memref<8x4xf32>, %y: memref<8x4xf32>) {
  // expected-error@+1 {{'muir_exec.transpose' op expected output 4x8 per batch item, got 8x4}}
  muir_exec.transpose %x, %y : memref<8x4xf32>, memref<8x4xf32>
  return
}

// -----

// Bug: the batch mismatch is reported as "expected output 4x8 per batch item,
// got 4x8"; it should name the batch sizes.
func.func @transpose_batch(%x: memref<3x8x4xf32>, %y: memref<2x4x8xf32>) {
  // expected-error@+1 {{'muir_exec.transpose' op expected equal batch sizes, got 3 and 2}}
  muir_exec.transpose %x, %y : memref<3x8x4xf32>, memref<2x4x8xf32>
  return
}

// -----

// Bug: accepted today; the runtime call then writes 32 floats into the empty
// output.
func.func @transpose_rank_mismatch_empty_stack(%x: memref<8x4xf32>, %y: memref<0x4x8xf32>) {
  // expected-error@+1 {{'muir_exec.transpose' op}}
  muir_exec.transpose %x, %y : memref<8x4xf32>, memref<0x4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// muir_exec.observe
//===----------------------------------------------------------------------===//

// -----

func.func @observe_f64(%x: memref<8xf64>) {
  // expected-error@+1 {{'muir_exec.observe' op operand #0 must be memref of 32-bit float values, but got 'memref<8xf64>'}}
  muir_exec.observe %x {label = "x", slot = 0} : memref<8xf64>
  return
}

// -----

func.func @observe_missing_slot(%x: memref<8xf32>) {
  // expected-error@+1 {{'muir_exec.observe' op requires attribute 'slot'}}
  muir_exec.observe %x {label = "x"} : memref<8xf32>
  return
}

// -----

// Bug: observe has no verifier. muir-exec-to-runtime-calls passes
// getNumElements() (INT64_MIN here) and the aligned base pointer, so the
// buffer must be static and contiguous like every other muir_exec operand.
func.func @observe_dynamic(%x: memref<?xf32>) {
  // expected-error@+1 {{'muir_exec.observe' op expected static, contiguous buffers, got 'memref<?xf32>'}}
  muir_exec.observe %x {label = "x", slot = 0} : memref<?xf32>
  return
}

// -----

// Bug: as above; the offset and strides are ignored by the runtime call.
func.func @observe_strided(%x: memref<4x4xf32, strided<[8, 1], offset: 2>>) {
  // expected-error@+1 {{'muir_exec.observe' op expected static, contiguous buffers, got 'memref<4x4xf32, strided<[8, 1], offset: 2>>'}}
  muir_exec.observe %x {label = "x", slot = 0} : memref<4x4xf32, strided<[8, 1], offset: 2>>
  return
}

// -----

// Bug: muir.probe rejects a negative slot but the op it lowers to does not;
// the runtime then drops the observation silently.
func.func @observe_slot(%x: memref<8xf32>) {
  // expected-error@+1 {{'muir_exec.observe' op expected slot >= 0, got -1}}
  muir_exec.observe %x {label = "x", slot = -1} : memref<8xf32>
  return
}

// -----

func.func @trace_normalize_scale(%a: memref<3x4x4xf64>, %o: memref<3x4x4xf64>, %s: memref<1xf64>) {
  // expected-error@+1 {{'muir_exec.trace_normalize' op expected one scale per matrix (3), got 'memref<1xf64>'}}
  muir_exec.trace_normalize %a, %o, %s {eps = 1.0e-7} : memref<3x4x4xf64>, memref<3x4x4xf64>, memref<1xf64>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @symmetric_all_reduce_not_square(%a: memref<4x6xf64>, %o: memref<4x6xf64>) {
  // expected-error@+1 {{'muir_exec.symmetric_all_reduce' op expected square matrices, got 4x6}}
  muir_exec.symmetric_all_reduce %a, %o {group = #muir_exec.group<@world, ["dp"]>} : memref<4x6xf64>, memref<4x6xf64>
  return
}

// -----

// A group names a muir.grid in scope and axes of it, each once.
func.func @group_without_grid(%a: memref<4x4xf32>, %o: memref<4x4xf32>) {
  // expected-error@+1 {{'muir_exec.all_reduce' op group names @world, which is not a muir.grid in scope}}
  muir_exec.all_reduce %a, %o {group = #muir_exec.group<@world, ["dp"]>, reduction = #muir_exec.reduction<sum>} : memref<4x4xf32>, memref<4x4xf32>
  return
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @group_unknown_axis() -> index {
  // expected-error@+1 {{'muir_exec.group_rank' op group axis 'ep' is not an axis of @world}}
  %r = muir_exec.group_rank {group = #muir_exec.group<@world, ["ep"]>} : index
  return %r : index
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @group_axis_twice() -> index {
  // expected-error@+1 {{grid axis 'tp' named twice}}
  %r = muir_exec.group_rank {group = #muir_exec.group<@world, ["tp", "tp"]>} : index
  return %r : index
}

// -----

// A ragged exchange's counts are host buffers on every target.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @all_to_allv_counts_not_host(%i: memref<8xf32>, %sc: memref<2xi64>, %o: memref<16xf32>, %rc: memref<2xi64, #muir_exec.host>) {
  // expected-error@+1 {{'muir_exec.all_to_allv' op operand #1 must be 1-D i64 memref in #muir_exec.host memory, but got 'memref<2xi64>'}}
  muir_exec.all_to_allv %i, %sc, %o, %rc {group = #muir_exec.group<@world, ["dp"]>} : memref<8xf32>, memref<2xi64>, memref<16xf32>, memref<2xi64, #muir_exec.host>
  return
}

// -----

func.func @gemm_mixed_bf16(%a: memref<4x8xbf16>, %b: memref<8x6xbf16>, %c: memref<4x6xf32>) {
  // expected-error@+1 {{'muir_exec.gemm' op expected buffers of one element type, got 'bf16' and 'f32'}}
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xbf16>, memref<8x6xbf16>, memref<4x6xf32>
  return
}

// -----

// One form of each coefficient: an operand, or an attribute (default alpha
// 1, beta 0), never both.
func.func @gemm_alpha_twice(%a: memref<4x8xf32>, %b: memref<8x6xf32>, %c: memref<4x6xf32>, %s: f64) {
  // expected-error@+1 {{'muir_exec.gemm' op has both an alpha operand and alpha = 2.000000e+00; give one}}
  muir_exec.gemm %a, %b, %c alpha(%s) {alpha = 2.0} : memref<4x8xf32>, memref<8x6xf32>, memref<4x6xf32>
  return
}

// -----

func.func @syrk_beta_twice(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %s: f64) {
  // expected-error@+1 {{'muir_exec.syrk' op has both a beta operand and beta = 1.000000e+00; give one}}
  muir_exec.syrk %a, %c beta(%s) {beta = 1.0} : memref<4x8xf32>, memref<4x4xf32>
  return
}
