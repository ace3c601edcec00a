// RUN: muir-opt %s --muir-exec-to-runtime-calls --cse | FileCheck %s
// RUN: muir-opt %s --muir-exec-to-runtime-calls | FileCheck %s --check-prefix=SPACE
// SPACE-NOT: #muir_exec.host

// Strings (layer names) are private constant globals at the module's top.
// CHECK: llvm.mlir.global private constant @__muir_str_{{[0-9]+}}("l3\00")

// A chunk of the fused SYRK + all-reduce: row bounds become i64; the start
// returns the request (i64) that the wait takes.
// CHECK-LABEL: func.func @triangle_chunk
// CHECK-SAME: (%[[A:[^:]+]]: memref<2x8x4xf32>, %[[C:[^:]+]]: memref<2x4x4xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK-DAG: %[[B64:.+]] = arith.index_cast %[[B]] : index to i64
// CHECK-DAG: %[[E64:.+]] = arith.index_cast %[[E]] : index to i64
// batch 2, transpose, n 4, k 8
// CHECK: call @muirrt_ssyrk_rows(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[B64]], %[[E64]]) : (i64, i32, i64, i64, f32, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK: %[[R:.+]] = call @muirrt_triangle_all_reduce_start(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[B64]], %[[E64]]) : (i64, i64, i64, !llvm.ptr, i64, i64) -> i64
// CHECK: call @muirrt_triangle_all_reduce_wait(%[[R]], %{{.+}}, %[[B64]], %[[E64]]) : (i64, !llvm.ptr, i64, i64) -> ()
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @triangle_chunk(%a: memref<2x8x4xf32>, %c: memref<2x4x4xf32>, %b: index, %e: index) {
  muir_exec.syrk_rows %a, %c rows [%b, %e) {alpha = 1.0, transpose} : memref<2x8x4xf32>, memref<2x4x4xf32>
  %r = muir_exec.triangle_all_reduce_start %c rows [%b, %e) {group = #muir_exec.group<@world, ["dp"]>} : memref<2x4x4xf32>
  muir_exec.triangle_all_reduce_wait %r, %c rows [%b, %e) : memref<2x4x4xf32>
  return
}

// Routing: one call with the sizes (tokens, experts, k), the bias pointer
// (null when absent) and the options.
// CHECK-LABEL: func.func @route
// CHECK-DAG: %[[T:.+]] = arith.constant 6 : i64
// CHECK-DAG: %[[E:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[K:.+]] = arith.constant 2 : i64
// CHECK: %[[NB:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @muirrt_route(%[[T]], %[[E]], %[[K]], %{{.+}}, %[[NB]], {{.*}}) : (i64, i64, i64, !llvm.ptr, !llvm.ptr, i32, i32, i32, i64, i64, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
func.func @route(%l: memref<6x8xf32>, %i: memref<6x2xi64>, %w: memref<6x2xf32>, %c: memref<8xi64>) {
  muir_exec.route %l into %i, %w, %c {scoring = #muir_exec.scoring<softmax>, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f64, normalize} : memref<6x8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  return
}

// A layer called on %n of its 6 rows: the count replaces the rows (its
// buffers' later rows were filled by the lowering to exec).
// CHECK-LABEL: func.func @route_tokens
// CHECK-SAME: %[[N:[^:]+]]: i64
// CHECK: call @muirrt_route(%[[N]], {{.*}}) : (i64, i64, i64,
// CHECK: call @muirrt_capacity(%[[N]], {{.*}}) : (i64, i64, i64, f64,
// CHECK: call @muirrt_route_grad(%[[N]], {{.*}}) : (i64, i64, i64,
func.func @route_tokens(%l: memref<6x8xf32>, %i: memref<6x2xi64>, %w: memref<6x2xf32>, %c: memref<8xi64>, %n: i64, %dl: memref<6x8xf32>) {
  muir_exec.route %l into %i, %w, %c tokens(%n) {scoring = #muir_exec.scoring<softmax>, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f64} : memref<6x8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  muir_exec.capacity %i, %w into %i, %w, %c tokens(%n) {capacity_factor = 1.0 : f64, policy = #muir_exec.drop_policy<weight>, group_tokens = 0 : i64} : memref<6x2xi64>, memref<6x2xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
  muir_exec.route_grad %l, %i, %w into %dl tokens(%n) {scoring = #muir_exec.scoring<softmax>, scaling = 1.0 : f64} : memref<6x8xf32>, memref<6x2xi64>, memref<6x2xf32> -> memref<6x8xf32>
  return
}

// A row-stable product: muirrt_gemm_rows with the flags, sizes and buffers.
// CHECK-LABEL: func.func @gemm_rows
// CHECK: call @muirrt_gemm_rows({{.*}}) : (i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
func.func @gemm_rows(%a: memref<6x4xf32>, %b: memref<8x4xf32>, %c: memref<6x8xf32>) {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0, transpose_b, row_stable} : memref<6x4xf32>, memref<8x4xf32>, memref<6x8xf32>
  return
}

// A grouped GEMM: experts, the row bound, k and n, then the buffers.
// CHECK-LABEL: func.func @grouped_gemm
// CHECK: call @muirrt_grouped_gemm({{.*}}) : (i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> ()
func.func @grouped_gemm(%x: memref<6x8xf32>, %w: memref<4x5x8xf32>, %c: memref<4xi64>, %y: memref<6x5xf32>) {
  muir_exec.grouped_gemm %x, %w, %c into %y {transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
  return
}

// bf16 operands: the _bf16 entries, with the same arguments.
// CHECK-LABEL: func.func @grouped_gemm_bf16
// CHECK: call @muirrt_grouped_gemm_bf16({{.*}}) : (i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_grouped_gemm_wgrad_bf16({{.*}}) : (i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> ()
func.func @grouped_gemm_bf16(%x: memref<6x8xf32>, %w: memref<4x5x8xf32>, %c: memref<4xi64>, %y: memref<6x5xf32>, %dw: memref<4x5x8xf32>) {
  muir_exec.grouped_gemm %x, %w, %c into %y {bf16_operands, transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
  muir_exec.grouped_gemm_wgrad %x, %y, %c into %dw {bf16_operands, transpose_b} : memref<6x8xf32>, memref<6x5xf32>, memref<4xi64> -> memref<4x5x8xf32>
  return
}

// Dispatch and combine: the mask, tokens, top-k, experts and hidden size,
// the buffers (no weights: a null pointer) and the layer's name as a
// private constant string.
// CHECK-LABEL: func.func @moe_calls
// CHECK: %[[NAME:.+]] = llvm.mlir.addressof @__muir_str_
// CHECK: call @muirrt_moe_dispatch({{.*}}, %[[NAME]]) : (i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_moe_combine({{.*}}) : (i64, i64, i64, i64, i64, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_moe_combine_weights_grad({{.*}}) : (i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_grouped_gemm_wgrad({{.*}}) : (i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_route_grad({{.*}}) : (i64, i64, i64, !llvm.ptr, i32, i32, i32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_capacity({{.*}}) : (i64, i64, i64, f64, i32, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
func.func @moe_calls(%x: memref<2x8xf32>, %i: memref<2x2xi64>, %w: memref<2x2xf32>, %r: memref<8x8xf32>, %c: memref<2xi64>, %p: memref<24xi64>, %y: memref<2x8xf32>, %dw: memref<2x2xf32>, %wg: memref<2x8x8xf32>, %l: memref<2x4xf32>, %dl: memref<2x4xf32>, %kc: memref<4xi64>) {
  muir_exec.moe_dispatch %x, %i into %r, %c, %p {group = #muir_exec.group<@world, ["dp"]>, num_experts = 4 : i64, layer = "l3"} : memref<2x8xf32>, memref<2x2xi64> -> memref<8x8xf32>, memref<2xi64>, memref<24xi64>
  muir_exec.moe_combine %r, %i, %p weights %w into %y {group = #muir_exec.group<@world, ["dp"]>, num_experts = 4 : i64, layer = "l3"} : memref<8x8xf32>, memref<2x2xi64>, memref<24xi64>, memref<2x2xf32> -> memref<2x8xf32>
  muir_exec.moe_combine_weights_grad %y, %r, %i, %p into %dw {group = #muir_exec.group<@world, ["dp"]>, num_experts = 4 : i64, layer = "l3"} : memref<2x8xf32>, memref<8x8xf32>, memref<2x2xi64>, memref<24xi64> -> memref<2x2xf32>
  muir_exec.grouped_gemm_wgrad %r, %r, %c into %wg : memref<8x8xf32>, memref<8x8xf32>, memref<2xi64> -> memref<2x8x8xf32>
  muir_exec.route_grad %l, %i, %dw into %dl {scoring = #muir_exec.scoring<softmax>, scaling = 1.0 : f64} : memref<2x4xf32>, memref<2x2xi64>, memref<2x2xf32> -> memref<2x4xf32>
  muir_exec.capacity %i, %w into %i, %w, %kc {capacity_factor = 1.0 : f64, policy = #muir_exec.drop_policy<weight>, group_tokens = 0 : i64} : memref<2x2xi64>, memref<2x2xf32> -> memref<2x2xi64>, memref<2x2xf32>, memref<4xi64>
  return
}

// A request carried by a loop (the chunked exchange's): the loop carries
// the runtime's i64 handle, and no cast is left.
// CHECK-LABEL: func.func @carried
// CHECK: %[[R0:.+]] = call @muirrt_triangle_all_reduce_start({{.*}}) : (i64, i64, i64, !llvm.ptr, i64, i64) -> i64
// CHECK: %[[LAST:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[PREV:.+]] = %[[R0]]) -> (i64) {
// CHECK: %[[NEXT:.+]] = func.call @muirrt_triangle_all_reduce_start({{.*}}) : (i64, i64, i64, !llvm.ptr, i64, i64) -> i64
// CHECK: func.call @muirrt_triangle_all_reduce_wait(%[[PREV]], {{.*}}) : (i64, !llvm.ptr, i64, i64) -> ()
// CHECK: scf.yield %[[NEXT]] : i64
// CHECK: call @muirrt_triangle_all_reduce_wait(%[[LAST]], {{.*}})
// CHECK-NOT: unrealized_conversion_cast
func.func @carried(%c: memref<2x4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %first = muir_exec.triangle_all_reduce_start %c rows [%c0, %c1) {group = #muir_exec.group<@world, ["tp"]>} : memref<2x4x4xf32>
  %last = scf.for %j = %c1 to %c4 step %c1 iter_args(%prev = %first) -> (!muir_exec.request) {
    %j1 = arith.addi %j, %c1 : index
    %next = muir_exec.triangle_all_reduce_start %c rows [%j, %j1) {group = #muir_exec.group<@world, ["tp"]>} : memref<2x4x4xf32>
    %p = arith.subi %j, %c1 : index
    muir_exec.triangle_all_reduce_wait %prev, %c rows [%p, %j) : memref<2x4x4xf32>
    scf.yield %next : !muir_exec.request
  }
  muir_exec.triangle_all_reduce_wait %last, %c rows [%c2, %c4) : memref<2x4x4xf32>
  return
}

// Host memory (#muir_exec.host) is the default memory space once buffers are
// pointers: it is gone from the allocations, the stores and the signature.
// CHECK-LABEL: func.func @ragged
// CHECK-SAME: %{{[^:]+}}: memref<2xi64>)
// CHECK: %[[S:.+]] = memref.alloc() : memref<2xi64>
// CHECK: memref.store %{{.+}}, %[[S]][%{{.+}}] : memref<2xi64>
// CHECK: call @muirrt_all_to_allv(
// CHECK: memref.dealloc %[[S]] : memref<2xi64>
func.func @ragged(%in: memref<8xf32>, %out: memref<8xf32>, %recv: memref<2xi64, #muir_exec.host>) {
  %c0 = arith.constant 0 : index
  %n = arith.constant 4 : i64
  %send = memref.alloc() : memref<2xi64, #muir_exec.host>
  memref.store %n, %send[%c0] : memref<2xi64, #muir_exec.host>
  muir_exec.all_to_allv %in, %send, %out, %recv {group = #muir_exec.group<@world, ["dp"]>} : memref<8xf32>, memref<2xi64, #muir_exec.host>, memref<8xf32>, memref<2xi64, #muir_exec.host>
  memref.dealloc %send : memref<2xi64, #muir_exec.host>
  return
}

// CPU: the sum of two grouped products of one grouping, each read by the
// sum alone, is the first with the second accumulated into its buffer
// (bf16 operands kept); the sum's readers read that buffer. A product
// something else reads stays.
// CHECK-LABEL: func.func @grouped_sum
// CHECK: %[[A:.+]] = memref.alloc() : memref<6x5xf32>
// CHECK: call @muirrt_grouped_gemm(
// CHECK-NOT: memref.alloc
// transpose_b and bf16_operands: both 1.
// CHECK: call @muirrt_grouped_gemm_add({{.*}}, %[[C1:[^,]+]], %[[C1]], %{{[^,]+}}, %{{[^,)]+}}) : (i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NOT: linalg.generic
// CHECK: memref.copy %[[A]], %{{.+}}
// CHECK: memref.dealloc %[[A]]
// CHECK-LABEL: func.func @grouped_sum_kept
// CHECK: linalg.generic
func.func @grouped_sum(%x: memref<6x8xf32>, %w: memref<4x5x8xf32>, %v: memref<4x5x8xf32>, %c: memref<4xi64>, %y: memref<6x5xf32>) {
  %a = memref.alloc() : memref<6x5xf32>
  muir_exec.grouped_gemm %x, %w, %c into %a {transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
  %b = memref.alloc() : memref<6x5xf32>
  muir_exec.grouped_gemm %x, %v, %c into %b {bf16_operands, transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
  %s = memref.alloc() : memref<6x5xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<6x5xf32>, memref<6x5xf32>) outs(%s : memref<6x5xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  }
  memref.copy %s, %y : memref<6x5xf32> to memref<6x5xf32>
  memref.dealloc %a : memref<6x5xf32>
  memref.dealloc %b : memref<6x5xf32>
  memref.dealloc %s : memref<6x5xf32>
  return
}
func.func @grouped_sum_kept(%x: memref<6x8xf32>, %w: memref<4x5x8xf32>, %c: memref<4xi64>, %y: memref<6x5xf32>) {
  %a = memref.alloc() : memref<6x5xf32>
  muir_exec.grouped_gemm %x, %w, %c into %a {transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
  %b = memref.alloc() : memref<6x5xf32>
  muir_exec.grouped_gemm %x, %w, %c into %b {transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
  %s = memref.alloc() : memref<6x5xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<6x5xf32>, memref<6x5xf32>) outs(%s : memref<6x5xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  }
  memref.copy %b, %y : memref<6x5xf32> to memref<6x5xf32>
  memref.copy %s, %y : memref<6x5xf32> to memref<6x5xf32>
  memref.dealloc %a : memref<6x5xf32>
  memref.dealloc %b : memref<6x5xf32>
  memref.dealloc %s : memref<6x5xf32>
  return
}

// CPU: a buffer is freed right after the op that last uses it or a view of
// it (a loop that reads it inside counts as a whole), not at the block's
// end; one that enters a loop as an iteration argument stays freed there.
// CHECK-LABEL: func.func @free_after_last_use
// CHECK: %[[A:.+]] = memref.alloc() : memref<2x4x8xf32>
// CHECK: %[[B:.+]] = memref.alloc() : memref<8x8xf32>
// CHECK: scf.for
// CHECK: call @muirrt_frobenius_normalize
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: call @muirrt_frobenius_normalize
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: scf.for {{.*}} iter_args
// CHECK: call @muirrt_frobenius_normalize
// CHECK: call @muirrt_frobenius_normalize
// CHECK-NEXT: memref.dealloc %{{.+}}
// CHECK-NEXT: memref.dealloc %{{.+}}
// CHECK-NEXT: return
func.func @free_after_last_use(%out: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<2x4x8xf32>
  %b = memref.alloc() : memref<8x8xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    %v = memref.collapse_shape %a [[0, 1], [2]] : memref<2x4x8xf32> into memref<8x8xf32>
    muir_exec.frobenius_normalize %v, %out {eps = 1.0e-7} : memref<8x8xf32>, memref<8x8xf32>
  }
  muir_exec.frobenius_normalize %b, %out {eps = 1.0e-7} : memref<8x8xf32>, memref<8x8xf32>
  %c = memref.alloc() : memref<8x8xf32>
  %last = scf.for %j = %c0 to %c2 step %c1 iter_args(%buf = %c) -> (memref<8x8xf32>) {
    muir_exec.frobenius_normalize %buf, %out {eps = 1.0e-7} : memref<8x8xf32>, memref<8x8xf32>
    scf.yield %buf : memref<8x8xf32>
  }
  %d = memref.alloc() : memref<8x8xf32>
  muir_exec.frobenius_normalize %d, %out {eps = 1.0e-7} : memref<8x8xf32>, memref<8x8xf32>
  memref.dealloc %a : memref<2x4x8xf32>
  memref.dealloc %b : memref<8x8xf32>
  memref.dealloc %c : memref<8x8xf32>
  memref.dealloc %d : memref<8x8xf32>
  return
}

// Each exec op is one call with raw pointers and static sizes; a batch of
// matrices is one call. Declarations are added once; grids are dropped.
// CHECK-NOT: muir.grid
// CHECK-LABEL: func.func @calls
// CHECK-SAME: (%[[A:[^:]+]]: memref<4x8xf32>, %[[BT:[^:]+]]: memref<8x4xf32>, %[[C:[^:]+]]: memref<4x4xf32>, %[[S:[^:]+]]: memref<3x4x8xf32>, %[[SC:[^:]+]]: memref<3x4x4xf32>, %[[B:[^:]+]]: memref<4x4xf32>)
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[NO:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[YES:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[FOUR:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[EIGHT:.+]] = arith.constant 8 : i64
// CHECK: %[[IA:.+]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[PA:.+]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK: %[[IC:.+]] = memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: %[[PC:.+]] = llvm.inttoptr
// batch 1, transpose_a 0, transpose_b 1, m 4, n 4, k 8
// No accumulator operand: a null pointer (C is its own accumulator).
// CHECK: %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @muirrt_sgemm(%[[ONE]], %[[NO]], %[[YES]], %[[FOUR]], %[[FOUR]], %[[EIGHT]], %{{.*}}, %[[PA]], %[[PA]], %{{.*}}, %[[PC]], %[[NULL]]) : (i64, i32, i32, i64, i64, i64, f32, !llvm.ptr, !llvm.ptr, f32, !llvm.ptr, !llvm.ptr) -> ()
// An accumulator operand: its pointer.
// CHECK: %[[IB:.+]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[PB:.+]] = llvm.inttoptr
// CHECK: call @muirrt_ssyrk({{.*}}, %[[PC]], %[[PB]]) : (i64, i32, i64, i64, f32, !llvm.ptr, f32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_frobenius_normalize({{.*}}) : (i64, i64, f32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @muirrt_transpose({{.*}}) : (i64, i64, i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: %[[THREE:.+]] = arith.constant 3 : i64
// CHECK: call @muirrt_ssyrk(%[[THREE]], {{.*}})
// CHECK: call @muirrt_observe({{.*}}) : (i64, !llvm.ptr, i64) -> ()
// CHECK-DAG: func.func private @muirrt_sgemm(i64, i32, i32, i64, i64, i64, f32, !llvm.ptr, !llvm.ptr, f32, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @muirrt_ssyrk(i64, i32, i64, i64, f32, !llvm.ptr, f32, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @muirrt_frobenius_normalize(i64, i64, f32, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @muirrt_transpose(i64, i64, i64, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @muirrt_observe(i64, !llvm.ptr, i64)
func.func @calls(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>, %s: memref<3x4x8xf32>, %sc: memref<3x4x4xf32>, %acc: memref<4x4xf32>) {
  muir_exec.gemm %a, %a, %c {alpha = 1.0, beta = 0.0, transpose_b} : memref<4x8xf32>, memref<4x8xf32>, memref<4x4xf32>
  muir_exec.syrk %a, %c acc %acc {alpha = 2.0, beta = 1.0} : memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>
  muir_exec.frobenius_normalize %a, %a {eps = 1.0e-7} : memref<4x8xf32>, memref<4x8xf32>
  muir_exec.transpose %a, %b : memref<4x8xf32>, memref<8x4xf32>
  muir_exec.syrk %s, %sc {alpha = 1.0, beta = 0.0} : memref<3x4x8xf32>, memref<3x4x4xf32>
  muir_exec.observe %c {label = "c", slot = 2} : memref<4x4xf32>
  return
}

