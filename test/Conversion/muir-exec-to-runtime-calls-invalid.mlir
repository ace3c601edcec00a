// RUN: muir-opt %s --split-input-file --verify-diagnostics --muir-exec-to-runtime-calls

// A request that crosses a function boundary has no runtime handle: the
// pass converts only the loops that carry requests between a start and its
// wait.
muir.grid @world axes = ["tp"] shape = [2]
func.func @from_caller(%c: memref<4x4xf32>, %r: !muir_exec.request) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // expected-error@+1 {{'builtin.unrealized_conversion_cast' op a request that no runtime call takes or makes}}
  muir_exec.triangle_all_reduce_wait %r, %c rows [%c0, %c4) : memref<4x4xf32>
  return
}
