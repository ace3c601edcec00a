// RUN: muir-opt %s --split-input-file --muir-exec-to-runtime-calls --verify-diagnostics | FileCheck %s

// The runtime numbers grids by folding index: 0 for the run's grid (the one
// that folds no other), then the grids that fold it in the module's order,
// whatever the order of the declarations. A group's mask is its axes' bits
// (bit i for axis i of its grid) with the folding index from bit 48.
// @world's tp is axis 1: 2. @moe's ep is axis 1 of folding 1:
// (1 << 48) | 2 = 281474976710658. @moe2's x is axis 0 of folding 2:
// (2 << 48) | 1 = 562949953421313.
// CHECK-LABEL: func.func @masks
// CHECK-DAG: arith.constant 2 : i64
// CHECK-DAG: arith.constant 281474976710658 : i64
// CHECK-DAG: arith.constant 562949953421313 : i64
// CHECK-NOT: muir.grid
muir.grid @moe axes = ["edp", "ep"] shape = [1, 4] folds @world
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
muir.grid @moe2 axes = ["x"] shape = [4] folds @world
func.func @masks(%a: memref<4x4xf32>, %o: memref<4x4xf32>) {
  muir_exec.all_reduce %a, %o {group = #muir_exec.group<@world, ["tp"]>, reduction = #muir_exec.reduction<sum>} : memref<4x4xf32>, memref<4x4xf32>
  muir_exec.all_reduce %a, %o {group = #muir_exec.group<@moe, ["ep"]>, reduction = #muir_exec.reduction<sum>} : memref<4x4xf32>, memref<4x4xf32>
  muir_exec.all_reduce %a, %o {group = #muir_exec.group<@moe2, ["x"]>, reduction = #muir_exec.reduction<sum>} : memref<4x4xf32>, memref<4x4xf32>
  return
}

// -----

// Two grids that fold nothing: which one's ranks the run has is not said.
// expected-note@+1 {{the first grid that folds no other, @world}}
muir.grid @world axes = ["dp"] shape = [2]
// expected-error@+1 {{'muir.grid' op is a second grid that folds no other}}
muir.grid @other axes = ["tp"] shape = [2]
func.func @two(%a: memref<4x4xf32>, %o: memref<4x4xf32>) {
  muir_exec.all_reduce %a, %o {group = #muir_exec.group<@other, ["tp"]>, reduction = #muir_exec.reduction<sum>} : memref<4x4xf32>, memref<4x4xf32>
  return
}
