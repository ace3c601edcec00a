// RUN: muir-opt %s | muir-opt | FileCheck %s
// RUN: muir-opt %s --mlir-print-op-generic | muir-opt | FileCheck %s
// RUN: muir-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trip of every muir_exec op on static, contiguous buffers.

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %[[A:.+]]: memref<4x8xf32>, %[[B:.+]]: memref<8x6xf32>, %[[AT:.+]]: memref<8x4xf32>, %[[BT:.+]]: memref<6x8xf32>, %[[C:.+]]: memref<4x6xf32>)
// CHECK: muir_exec.gemm %[[A]], %[[B]], %[[C]] : memref<4x8xf32>, memref<8x6xf32>, memref<4x6xf32>
// CHECK: muir_exec.gemm %[[AT]], %[[B]], %[[C]] {alpha = 2.000000e+00 : f64, beta = 1.000000e+00 : f64, transpose_a}
// CHECK-SAME: : memref<8x4xf32>, memref<8x6xf32>, memref<4x6xf32>
// CHECK: muir_exec.gemm %[[A]], %[[BT]], %[[C]] {transpose_b}
// CHECK-SAME: : memref<4x8xf32>, memref<6x8xf32>, memref<4x6xf32>
// CHECK: muir_exec.gemm %[[AT]], %[[BT]], %[[C]] {alpha = -1.000000e+00 : f64, beta = 5.000000e-01 : f64, transpose_a, transpose_b}
// CHECK-SAME: : memref<8x4xf32>, memref<6x8xf32>, memref<4x6xf32>
// GENERIC-LABEL: sym_name = "gemm"
// GENERIC: "muir_exec.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}>
// GENERIC-SAME: : (memref<4x8xf32>, memref<8x6xf32>, memref<4x6xf32>) -> ()
// GENERIC: "muir_exec.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 2.000000e+00 : f64, beta = 1.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>, transpose_a}>
// GENERIC: "muir_exec.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>, transpose_b}>
// GENERIC: "muir_exec.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = -1.000000e+00 : f64, beta = 5.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>, transpose_a, transpose_b}>
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @gemm(%a: memref<4x8xf32>, %b: memref<8x6xf32>, %at: memref<8x4xf32>, %bt: memref<6x8xf32>, %c: memref<4x6xf32>) {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<8x6xf32>, memref<4x6xf32>
  muir_exec.gemm %at, %b, %c {alpha = 2.0, beta = 1.0, transpose_a} : memref<8x4xf32>, memref<8x6xf32>, memref<4x6xf32>
  muir_exec.gemm %a, %bt, %c {alpha = 1.0, beta = 0.0, transpose_b} : memref<4x8xf32>, memref<6x8xf32>, memref<4x6xf32>
  muir_exec.gemm %at, %bt, %c {alpha = -1.0, beta = 0.5, transpose_a, transpose_b} : memref<8x4xf32>, memref<6x8xf32>, memref<4x6xf32>
  return
}

// Newton-Schulz's A = X X^T and X' = a X + B X on a stack of matrices.
// CHECK-LABEL: func.func @gemm_batched(
// CHECK-SAME: %[[X:.+]]: memref<2x4x8xf32>, %[[A:.+]]: memref<2x4x4xf32>, %[[Y:.+]]: memref<2x4x8xf32>)
// CHECK: muir_exec.gemm %[[X]], %[[X]], %[[A]] {transpose_b}
// CHECK-SAME: : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x4xf32>
// CHECK: muir_exec.gemm %[[A]], %[[X]], %[[Y]] {beta = 3.444500e+00 : f64}
// CHECK-SAME: : memref<2x4x4xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>
func.func @gemm_batched(%x: memref<2x4x8xf32>, %a: memref<2x4x4xf32>, %y: memref<2x4x8xf32>) {
  muir_exec.gemm %x, %x, %a {alpha = 1.0, beta = 0.0, transpose_b} : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x4xf32>
  muir_exec.gemm %a, %x, %y {alpha = 1.0, beta = 3.4445} : memref<2x4x4xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>
  return
}

// CHECK-LABEL: func.func @syrk(
// CHECK-SAME: %[[A:.+]]: memref<4x8xf32>, %[[C:.+]]: memref<4x4xf32>, %[[S:.+]]: memref<3x4x8xf32>, %[[SC:.+]]: memref<3x4x4xf32>)
// CHECK: muir_exec.syrk %[[A]], %[[C]] : memref<4x8xf32>, memref<4x4xf32>
// CHECK: muir_exec.syrk %[[S]], %[[SC]] {alpha = 2.031500e+00 : f64, beta = -4.775000e+00 : f64} : memref<3x4x8xf32>, memref<3x4x4xf32>
// GENERIC-LABEL: sym_name = "syrk"
// GENERIC: "muir_exec.syrk"(%{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 0.000000e+00 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (memref<4x8xf32>, memref<4x4xf32>) -> ()
func.func @syrk(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %s: memref<3x4x8xf32>, %sc: memref<3x4x4xf32>) {
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<4x4xf32>
  muir_exec.syrk %s, %sc {alpha = 2.0315, beta = -4.775} : memref<3x4x8xf32>, memref<3x4x4xf32>
  return
}

// A separate accumulator: C = alpha A A^T + beta acc, C = alpha A B + beta
// acc.
// CHECK-LABEL: func.func @with_acc(
// CHECK-SAME: %[[A:[^:]+]]: memref<4x8xf32>, %[[C:[^:]+]]: memref<4x4xf32>, %[[ACC:[^:]+]]: memref<4x4xf32>)
// CHECK: muir_exec.syrk %[[A]], %[[C]] acc %[[ACC]] {beta = 5.000000e-01 : f64} : memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>
// CHECK: muir_exec.gemm %[[C]], %[[C]], %[[C]] acc %[[ACC]] {beta = 2.000000e+00 : f64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
// GENERIC-LABEL: sym_name = "with_acc"
// GENERIC: "muir_exec.syrk"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 5.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()
func.func @with_acc(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %acc: memref<4x4xf32>) {
  muir_exec.syrk %a, %c acc %acc {alpha = 1.0, beta = 0.5} : memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>
  muir_exec.gemm %c, %c, %c acc %acc {alpha = 1.0, beta = 2.0} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  return
}

// Routing into index, weight and count buffers, with and without a bias.
// CHECK-LABEL: func.func @route(
// CHECK: muir_exec.route %{{.+}} into %{{.+}}, %{{.+}}, %{{.+}} {n_group = 1 : i64, scaling = 1.000000e+00 : f64, scoring = #muir_exec.scoring<softmax>, softmax_after_topk, topk_group = 1 : i64} : memref<6x8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
// CHECK: muir_exec.route %{{.+}} bias %{{.+}} into
func.func @route(%l: memref<6x8xf32>, %b: memref<8xf32>, %i: memref<6x2xi64>, %w: memref<6x2xf32>, %c: memref<8xi64>) {
  muir_exec.route %l into %i, %w, %c {scoring = #muir_exec.scoring<softmax>, softmax_after_topk, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f64} : memref<6x8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  muir_exec.route %l bias %b into %i, %w, %c {scoring = #muir_exec.scoring<sigmoid>, n_group = 4 : i64, topk_group = 2 : i64, scaling = 2.5 : f64} : memref<6x8xf32>, memref<8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  return
}

// One chunk of the fused SYRK + packed all-reduce: rows [2, 4) of the
// triangle, their exchange started and then waited for.
// CHECK-LABEL: func.func @triangle_chunk(
// CHECK-SAME: %[[A:[^:]+]]: memref<2x8x4xf32>, %[[C:[^:]+]]: memref<2x4x4xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: muir_exec.syrk_rows %[[A]], %[[C]] rows[%[[B]], %[[E]]) {alpha = 1.000000e+00 : f64, transpose} : memref<2x8x4xf32>, memref<2x4x4xf32>
// CHECK: %[[R:.+]] = muir_exec.triangle_all_reduce_start %[[C]] rows[%[[B]], %[[E]]) {group = #muir_exec.group<@world, ["tp"]>} : memref<2x4x4xf32>
// CHECK: muir_exec.triangle_all_reduce_wait %[[R]], %[[C]] rows[%[[B]], %[[E]]) : memref<2x4x4xf32>
// GENERIC-LABEL: sym_name = "triangle_chunk"
// GENERIC: "muir_exec.syrk_rows"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, transpose}> : (memref<2x8x4xf32>, memref<2x4x4xf32>, index, index) -> ()
// GENERIC: "muir_exec.triangle_all_reduce_start"(%{{.*}}, %{{.*}}, %{{.*}}) <{group = #muir_exec.group<@world, ["tp"]>}> : (memref<2x4x4xf32>, index, index) -> !muir_exec.request
// GENERIC: "muir_exec.triangle_all_reduce_wait"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!muir_exec.request, memref<2x4x4xf32>, index, index) -> ()
func.func @triangle_chunk(%a: memref<2x8x4xf32>, %c: memref<2x4x4xf32>, %b: index, %e: index) {
  muir_exec.syrk_rows %a, %c rows [%b, %e) {alpha = 1.0, transpose} : memref<2x8x4xf32>, memref<2x4x4xf32>
  %r = muir_exec.triangle_all_reduce_start %c rows [%b, %e) {group = #muir_exec.group<@world, ["tp"]>} : memref<2x4x4xf32>
  muir_exec.triangle_all_reduce_wait %r, %c rows [%b, %e) : memref<2x4x4xf32>
  return
}

// The CUDA target's packed exchange (muir-exec-to-gpu forms it): a 1-D
// view of the step's packed buffer, started, then waited for; and a sum of
// squares kept in double.
// CHECK-LABEL: func.func @packed(
// CHECK: %[[R:.+]] = muir_exec.packed_all_reduce_start %[[V:.+]] {group = #muir_exec.group<@world, ["dp"]>} : memref<?xf32, strided<[1], offset: ?>>
// CHECK: muir_exec.packed_all_reduce_wait %[[R]], %[[V]] : memref<?xf32, strided<[1], offset: ?>>
// CHECK: muir_exec.sum_squares %{{.+}}, %{{.+}} : memref<2x4x4xf32>, memref<2xf64>
func.func @packed(%p: memref<20xf32>, %o: index, %n: index, %c: memref<2x4x4xf32>, %ss: memref<2xf64>) {
  %v = memref.subview %p[%o] [%n] [1] : memref<20xf32> to memref<?xf32, strided<[1], offset: ?>>
  %r = muir_exec.packed_all_reduce_start %v {group = #muir_exec.group<@world, ["dp"]>} : memref<?xf32, strided<[1], offset: ?>>
  muir_exec.packed_all_reduce_wait %r, %v : memref<?xf32, strided<[1], offset: ?>>
  muir_exec.sum_squares %c, %ss : memref<2x4x4xf32>, memref<2xf64>
  return
}

// In place (input and output the same buffer) and out of place.
// CHECK-LABEL: func.func @frobenius_normalize(
// CHECK-SAME: %[[X:.+]]: memref<8x4xf32>, %[[Y:.+]]: memref<8x4xf32>, %[[S:.+]]: memref<2x8x4xf32>)
// CHECK: muir_exec.frobenius_normalize %[[X]], %[[X]] {eps = 9.9999999999999995E-8 : f64} : memref<8x4xf32>, memref<8x4xf32>
// CHECK: muir_exec.frobenius_normalize %[[X]], %[[Y]] {eps = 9.9999999999999995E-7 : f64} : memref<8x4xf32>, memref<8x4xf32>
// CHECK: muir_exec.frobenius_normalize %[[S]], %[[S]] {eps = 1.000000e-05 : f64} : memref<2x8x4xf32>, memref<2x8x4xf32>
// GENERIC-LABEL: sym_name = "frobenius_normalize"
// GENERIC: "muir_exec.frobenius_normalize"(%{{.*}}, %{{.*}}) <{eps = 9.9999999999999995E-8 : f64}> : (memref<8x4xf32>, memref<8x4xf32>) -> ()
func.func @frobenius_normalize(%x: memref<8x4xf32>, %y: memref<8x4xf32>, %s: memref<2x8x4xf32>) {
  muir_exec.frobenius_normalize %x, %x {eps = 1.0e-7} : memref<8x4xf32>, memref<8x4xf32>
  muir_exec.frobenius_normalize %x, %y {eps = 1.0e-6} : memref<8x4xf32>, memref<8x4xf32>
  muir_exec.frobenius_normalize %s, %s {eps = 1.0e-5} : memref<2x8x4xf32>, memref<2x8x4xf32>
  return
}

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %[[X:.+]]: memref<8x4xf32>, %[[XT:.+]]: memref<4x8xf32>, %[[S:.+]]: memref<3x8x4xf32>, %[[ST:.+]]: memref<3x4x8xf32>)
// CHECK: muir_exec.transpose %[[X]], %[[XT]] : memref<8x4xf32>, memref<4x8xf32>
// CHECK: muir_exec.transpose %[[S]], %[[ST]] : memref<3x8x4xf32>, memref<3x4x8xf32>
// GENERIC-LABEL: sym_name = "transpose"
// GENERIC: "muir_exec.transpose"(%{{.*}}, %{{.*}}) : (memref<8x4xf32>, memref<4x8xf32>) -> ()
func.func @transpose(%x: memref<8x4xf32>, %xt: memref<4x8xf32>, %s: memref<3x8x4xf32>, %st: memref<3x4x8xf32>) {
  muir_exec.transpose %x, %xt : memref<8x4xf32>, memref<4x8xf32>
  muir_exec.transpose %s, %st : memref<3x8x4xf32>, memref<3x4x8xf32>
  return
}

// observe takes a buffer of any rank.
// CHECK-LABEL: func.func @observe(
// CHECK-SAME: %[[X:.+]]: memref<8x4xf32>, %[[V:.+]]: memref<16xf32>, %[[S:.+]]: memref<f32>)
// CHECK: muir_exec.observe %[[X]] {label = "ns_out", slot = 0 : i64} : memref<8x4xf32>
// CHECK: muir_exec.observe %[[V]] {label = "grad", slot = 1 : i64} : memref<16xf32>
// CHECK: muir_exec.observe %[[S]] {label = "", slot = 12 : i64} : memref<f32>
// GENERIC-LABEL: sym_name = "observe"
// GENERIC: "muir_exec.observe"(%{{.*}}) <{label = "ns_out", slot = 0 : i64}> : (memref<8x4xf32>) -> ()
func.func @observe(%x: memref<8x4xf32>, %v: memref<16xf32>, %s: memref<f32>) {
  muir_exec.observe %x {label = "ns_out", slot = 0} : memref<8x4xf32>
  muir_exec.observe %v {label = "grad", slot = 1} : memref<16xf32>
  muir_exec.observe %s {label = "", slot = 12} : memref<f32>
  return
}

// A ragged exchange's counts are buffers in host memory (#muir_exec.host).
// CHECK-LABEL: func.func @all_to_allv(
// CHECK-SAME: %[[I:.+]]: memref<8x4xf32>, %[[SC:.+]]: memref<2xi64, #muir_exec.host>, %[[O:.+]]: memref<16x4xf32>, %[[RC:.+]]: memref<2xi64, #muir_exec.host>)
// CHECK: muir_exec.all_to_allv %[[I]], %[[SC]], %[[O]], %[[RC]] {group = #muir_exec.group<@world, ["dp"]>} : memref<8x4xf32>, memref<2xi64, #muir_exec.host>, memref<16x4xf32>, memref<2xi64, #muir_exec.host>
// GENERIC-LABEL: sym_name = "all_to_allv"
// GENERIC: "muir_exec.all_to_allv"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{group = #muir_exec.group<@world, ["dp"]>}> : (memref<8x4xf32>, memref<2xi64, #muir_exec.host>, memref<16x4xf32>, memref<2xi64, #muir_exec.host>) -> ()
func.func @all_to_allv(%i: memref<8x4xf32>, %sc: memref<2xi64, #muir_exec.host>, %o: memref<16x4xf32>, %rc: memref<2xi64, #muir_exec.host>) {
  muir_exec.all_to_allv %i, %sc, %o, %rc {group = #muir_exec.group<@world, ["dp"]>} : memref<8x4xf32>, memref<2xi64, #muir_exec.host>, memref<16x4xf32>, memref<2xi64, #muir_exec.host>
  return
}

// bf16 products (a bf16 Newton-Schulz iterate): every buffer bf16.
// CHECK-LABEL: func.func @bf16_products(
// CHECK: muir_exec.gemm %{{.*}}, %{{.*}}, %{{.*}} acc %{{.*}} {beta = 3.000000e+00 : f64} : memref<4x4xbf16>, memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>
// CHECK: muir_exec.syrk %{{.*}}, %{{.*}} : memref<4x8xbf16>, memref<4x4xbf16>
func.func @bf16_products(%a: memref<4x4xbf16>, %x: memref<4x8xbf16>, %y: memref<4x8xbf16>, %g: memref<4x4xbf16>) {
  muir_exec.gemm %a, %x, %y acc %x {alpha = 1.0, beta = 3.0} : memref<4x4xbf16>, memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>
  muir_exec.syrk %x, %g {alpha = 1.0, beta = 0.0} : memref<4x8xbf16>, memref<4x4xbf16>
  return
}

// Coefficients known at run time: the operands alone, no attribute beside
// them (alpha 1 and beta 0 are the defaults, elided).
// CHECK-LABEL: func.func @run_time_coefficients(
// CHECK-SAME: %[[A:[^:]+]]: memref<4x8xf32>, %[[C:[^:]+]]: memref<4x4xf32>, %[[S:[^:]+]]: f64, %[[T:[^:]+]]: f64)
// CHECK: muir_exec.gemm %[[A]], %[[A]], %[[C]] acc %[[C]] alpha(%[[S]]) beta(%[[T]]) {transpose_b} : memref<4x8xf32>, memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>
// CHECK: muir_exec.syrk %[[A]], %[[C]] alpha(%[[S]]) : memref<4x8xf32>, memref<4x4xf32>
func.func @run_time_coefficients(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %s: f64, %t: f64) {
  muir_exec.gemm %a, %a, %c acc %c alpha(%s) beta(%t) {transpose_b} : memref<4x8xf32>, memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>
  muir_exec.syrk %a, %c alpha(%s) : memref<4x8xf32>, memref<4x4xf32>
  return
}
