// RUN: muir-opt %s --split-input-file --muir-fuse-syrk-all-reduce | FileCheck %s
// A function pass too: nested under func.func, the same rewrites.
// RUN: muir-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(muir-fuse-syrk-all-reduce))' | FileCheck %s
// RUN: muir-opt %s --split-input-file --muir-fuse-syrk-all-reduce=syrk-chunk-rows=5 | FileCheck %s --check-prefix=FIVE
// RUN: not muir-opt %s --split-input-file --muir-fuse-syrk-all-reduce=syrk-chunk-rows=-1 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not muir-compile %S/../../examples/tiny-moe.yaml --emit=none --syrk-chunk-rows=-1 2>&1 | FileCheck %s --check-prefix=BAD-TOOL
// BAD: error: syrk-chunk-rows must be >= 0, got -1
// BAD-TOOL: muir-compile: error: --syrk-chunk-rows must be >= 0, got -1

// The distributed mode's Gram all-reduce: the SYRK and the sum become one
// op that sends only the packed triangle. The default chunk from the cpu
// profile: four chunks of 64 rows would each carry about 32 KB, under four
// latencies' worth of bytes (4 * 5 us * 5 GB/s = 100 KB), so the rows
// double until one chunk remains; an explicit syrk-chunk-rows wins.
muir.grid @world axes = ["tp"] shape = [4]
// CHECK-LABEL: func.func @gram
// CHECK-NOT: muir.syrk %
// CHECK: %[[G:.+]] = muir.syrk_all_reduce %{{.+}} on @world axes = ["tp"] {chunk_rows = 256 : i64, transpose} : tensor<64x256xf32> -> tensor<256x256xf32>
// CHECK-NOT: muir.all_reduce
// CHECK: muir.syrk %[[G]] acc %[[G]]
// FIVE-LABEL: func.func @gram
// FIVE: muir.syrk_all_reduce {{.*}} {chunk_rows = 5 : i64, transpose}
func.func @gram(%x: tensor<64x256xf32>) -> tensor<256x256xf32> {
  %g = muir.syrk %x {transpose} : (tensor<64x256xf32>) -> tensor<256x256xf32>
  %r = muir.all_reduce %g on @world axes = ["tp"] : tensor<256x256xf32>
  %b = muir.syrk %r acc %r {alpha = 2.0, beta = -1.0} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  return %b : tensor<256x256xf32>
}

// -----

// Left alone: a max reduction; a SYRK with an accumulator; a SYRK read
// elsewhere too; an all_reduce of something else.
muir.grid @world axes = ["tp"] shape = [2]
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: muir.syrk_all_reduce
// CHECK-COUNT-4: muir.all_reduce
// CHECK-NOT: muir.syrk_all_reduce
func.func @left_alone(%x: tensor<4x8xf32>, %c: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %g = muir.syrk %x : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %m = muir.all_reduce %g on @world axes = ["tp"] reduction = max : tensor<4x4xf32>
  %h = muir.syrk %x acc %c {beta = 1.0} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = muir.all_reduce %h on @world axes = ["tp"] : tensor<4x4xf32>
  %k = muir.syrk %x {alpha = 2.0} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %t = muir.all_reduce %k on @world axes = ["tp"] : tensor<4x4xf32>
  %u = muir.all_reduce %c on @world axes = ["tp"] : tensor<4x4xf32>
  return %m, %s, %t, %k, %u : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
