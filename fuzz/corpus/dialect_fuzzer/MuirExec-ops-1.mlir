muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @route(%l: memref<6x8xf32>, %b: memref<8xf32>, %i: memref<6x2xi64>, %w: memref<6x2xf32>, %c: memref<8xi64>) {
  muir_exec.route %l into %i, %w, %c {scoring = #muir_exec.scoring<softmax>, softmax_after_topk, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f64} : memref<6x8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  muir_exec.route %l bias %b into %i, %w, %c {scoring = #muir_exec.scoring<sigmoid>, n_group = 4 : i64, topk_group = 2 : i64, scaling = 2.5 : f64} : memref<6x8xf32>, memref<8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  return
}
func.func @triangle_chunk(%a: memref<2x8x4xf32>, %c: memref<2x4x4xf32>, %b: index, %e: index) {
  muir_exec.syrk_rows %a, %c rows [%b, %e) {alpha = 1.0, transpose} : memref<2x8x4xf32>, memref<2x4x4xf32>
  %r = muir_exec.triangle_all_reduce_start %c rows [%b, %e) {group = #muir_exec.group<@world, ["tp"]>} : memref<2x4x4xf32>
  muir_exec.triangle_all_reduce_wait %r, %c rows [%b, %e) : memref<2x4x4xf32>
  return
}
func.func @packed(%p: memref<20xf32>, %o: index, %n: index, %c: memref<2x4x4xf32>, %ss: memref<2xf64>) {
  %v = memref.subview %p[%o] [%n] [1] : memref<20xf32> to memref<?xf32, strided<[1], offset: ?>>
  %r = muir_exec.packed_all_reduce_start %v {group = #muir_exec.group<@world, ["dp"]>} : memref<?xf32, strided<[1], offset: ?>>
  muir_exec.packed_all_reduce_wait %r, %v : memref<?xf32, strided<[1], offset: ?>>
  muir_exec.sum_squares %c, %ss : memref<2x4x4xf32>, memref<2xf64>
  return
}
func.func @frobenius_normalize(%x: memref<8x4xf32>, %y: memref<8x4xf32>, %s: memref<2x8x4xf32>) {
  muir_exec.frobenius_normalize %x, %x {eps = 1.0e-7} : memref<8x4xf32>, memref<8x4xf32>
  muir_exec.frobenius_normalize %x, %y {eps = 1.0e-6} : memref<8x4xf32>, memref<8x4xf32>
  muir_exec.frobenius_normalize %s, %s {eps = 1.0e-5} : memref<2x8x4xf32>, memref<2x8x4xf32>
  return
}
