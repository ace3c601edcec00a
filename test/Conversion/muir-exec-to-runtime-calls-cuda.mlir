// RUN: muir-opt %s --split-input-file --verify-diagnostics --muir-exec-to-runtime-calls="target=cuda" | FileCheck %s
// RUN: not muir-opt %s --split-input-file --muir-exec-to-runtime-calls 2>&1 | FileCheck %s --check-prefix=CPU

// The CUDA target's packed exchange: the chunk's address is its view's
// (the aligned pointer plus 4 bytes a float of the view's offset), its
// length the view's; the wait takes the same two. A sum of squares into
// double is its own call.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[P:[^:]+]]: memref<20xf32>, %[[O:[^:]+]]: index, %[[N:[^:]+]]: index
// CHECK: %[[V:.+]] = memref.subview %[[P]][%[[O]]] [%[[N]]] [1]
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[V]]
// CHECK: %[[BUF:.+]], %[[OFF:.+]], %{{.+}}, %{{.+}} = memref.extract_strided_metadata %[[V]]
// CHECK: %[[BYTES:.+]] = arith.muli %[[OFF]], %c4
// CHECK: %[[AT:.+]] = arith.addi %[[BASE]], %[[BYTES]]
// CHECK: %[[AT64:.+]] = arith.index_cast %[[AT]] : index to i64
// CHECK: %[[PTR:.+]] = llvm.inttoptr %[[AT64]]
// CHECK: %[[LEN:.+]] = memref.dim %[[V]], %c0
// CHECK: %[[LEN64:.+]] = arith.index_cast %[[LEN]] : index to i64
// CHECK: %[[R:.+]] = call @muirrt_cuda_packed_all_reduce_start(%{{.+}}, %[[PTR]], %[[LEN64]]) : (i64, !llvm.ptr, i64) -> i64
// CHECK: call @muirrt_cuda_packed_all_reduce_wait(%[[R]], %{{.+}}, %{{.+}}) : (i64, !llvm.ptr, i64) -> ()
// CHECK: call @muirrt_cuda_sum_squares_f64(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()
// The CPU runtime has neither.
// CPU: error: 'muir_exec.packed_all_reduce_start' op has no CPU runtime call (muir-rt/Entries.def: packed_all_reduce_start); compile this step for --target=cuda
// (The last split's error, which stderr gives before the output.)
// CPU: error: 'muir_exec.sum_squares' op has no CPU runtime call (muir-rt/Entries.def: sum_squares_f64); compile this step for --target=cuda
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @packed(%p: memref<20xf32>, %o: index, %n: index, %c: memref<2x4x4xf32>, %ss: memref<2xf64>) {
  %v = memref.subview %p[%o] [%n] [1] : memref<20xf32> to memref<?xf32, strided<[1], offset: ?>>
  %r = muir_exec.packed_all_reduce_start %v {group = #muir_exec.group<@world, ["dp"]>} : memref<?xf32, strided<[1], offset: ?>>
  muir_exec.packed_all_reduce_wait %r, %v : memref<?xf32, strided<[1], offset: ?>>
  muir_exec.sum_squares %c, %ss : memref<2x4x4xf32>, memref<2xf64>
  return
}

// -----

// The ops whose CUDA form is generated kernels need muir-exec-to-gpu first.
func.func @normalize(%x: memref<4x8xf32>) {
  // expected-error @+1 {{'muir_exec.frobenius_normalize' op becomes generated kernels for the CUDA target: run muir-exec-to-gpu first}}
  muir_exec.frobenius_normalize %x, %x {eps = 1.0e-7 : f64} : memref<4x8xf32>, memref<4x8xf32>
  return
}
// CPU-LABEL: func.func @normalize
// CPU: call @muirrt_frobenius_normalize

// -----

// Tracing buffers is the CPU runtime's only.
func.func @trace(%x: memref<4x8xf32>) {
  // expected-error @+1 {{'muir_exec.trace' op has no CUDA runtime call (muir-rt/Entries.def: trace_buffer); compile this step for --target=cpu}}
  muir_exec.trace %x {index = 0 : i64, loc = "x", op = "muir_exec.gemm", op_id = 0 : i64, output = false} : memref<4x8xf32>
  return
}
// CPU-LABEL: func.func @trace
// CPU: call @muirrt_trace_buffer

// -----

// A sum of squares kept in double is the CUDA target's; into f32 it is a
// call on both.
func.func @sum_squares(%c: memref<2x4x4xf32>, %s32: memref<2xf32>) {
  muir_exec.sum_squares %c, %s32 : memref<2x4x4xf32>, memref<2xf32>
  return
}
// CHECK-LABEL: func.func @sum_squares
// CHECK: call @muirrt_cuda_sum_squares(
// CPU-LABEL: func.func @sum_squares
// CPU: call @muirrt_sum_squares(

// -----

// Into double its entry is sum_squares_f64, which only the CUDA runtime
// has (muir-rt/Entries.def): the CPU target refuses it, naming the entry.
func.func @sum_squares_f64(%c: memref<2x4x4xf32>, %s64: memref<2xf64>) {
  muir_exec.sum_squares %c, %s64 : memref<2x4x4xf32>, memref<2xf64>
  return
}
// CHECK-LABEL: func.func @sum_squares_f64
// CHECK: call @muirrt_cuda_sum_squares_f64(
// (Its CPU error is checked after the first split's, above.)
