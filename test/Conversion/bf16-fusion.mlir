// RUN: muir-opt %s --muir-exec-to-runtime-calls | FileCheck %s

// A normalisation into a fresh f32 buffer that only a truncf kernel reads
// writes the bf16 buffer itself (CPU): one call, no kernel, no f32 buffer.
// A normalisation whose output something else also reads stays as it is.
// CHECK-LABEL: func.func @normalize_bf16
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.alloc
// CHECK: call @muirrt_frobenius_normalize_bf16({{.*}}) : (i64, i64, f32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: memref.alloc() {{.*}} : memref<2x4x8xf32>
// CHECK: call @muirrt_frobenius_normalize({{.*}}) : (i64, i64, f32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: linalg.generic
func.func @normalize_bf16(%a: memref<2x4x8xf32>, %b: memref<2x4x8xbf16>, %c: memref<2x4x8xbf16>, %d: memref<2x4x8xf32>) {
  %n = memref.alloc() {alignment = 64 : i64} : memref<2x4x8xf32>
  muir_exec.frobenius_normalize %a, %n {eps = 1.0e-7} : memref<2x4x8xf32>, memref<2x4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%n : memref<2x4x8xf32>) outs(%b : memref<2x4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %n : memref<2x4x8xf32>
  %m = memref.alloc() {alignment = 64 : i64} : memref<2x4x8xf32>
  muir_exec.frobenius_normalize %a, %m {eps = 1.0e-7} : memref<2x4x8xf32>, memref<2x4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%m : memref<2x4x8xf32>) outs(%c : memref<2x4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.copy %m, %d : memref<2x4x8xf32> to memref<2x4x8xf32>
  memref.dealloc %m : memref<2x4x8xf32>
  return
}

// A bf16 Newton-Schulz result widened into an f32 buffer that kernels only
// read through views (the updates' slices of the batch): each kernel reads
// the same view of the bf16 buffer and widens the element itself; the
// widening kernel and the f32 buffer go. A widened buffer something else
// also reads (a copy) stays.
// CHECK-LABEL: func.func @widen_into_readers
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x4x8xbf16>, %[[W0:[^:]+]]: memref<4x8xf32>, %[[W1:[^:]+]]: memref<4x8xf32>
// CHECK-NOT: memref.alloc
// CHECK: %[[V0:.+]] = memref.subview %[[X]][0, 0, 0] [1, 4, 8] [1, 1, 1] : memref<2x4x8xbf16> to memref<1x4x8xbf16, strided<[32, 8, 1]>>
// CHECK: %[[C0:.+]] = memref.collapse_shape %[[V0]]
// CHECK: linalg.generic {{.*}} ins(%[[W0]], %[[C0]] : memref<4x8xf32>, memref<4x8xbf16, strided<[8, 1]>>) outs(%[[W0]] : memref<4x8xf32>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[IN:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[E:.+]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: arith.subf %{{.*}}, %[[E]]
// CHECK: %[[V1:.+]] = memref.subview %[[X]][1, 0, 0] [1, 4, 8] [1, 1, 1]
// CHECK: linalg.generic {{.*}} outs(%[[W1]] : memref<4x8xf32>)
// CHECK: memref.alloc() {{.*}} : memref<2x4x8xf32>
// CHECK: arith.extf
// CHECK: memref.copy
func.func @widen_into_readers(%x: memref<2x4x8xbf16>, %w0: memref<4x8xf32>, %w1: memref<4x8xf32>, %y: memref<2x4x8xf32>) {
  %wide = memref.alloc() {alignment = 64 : i64} : memref<2x4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : memref<2x4x8xbf16>) outs(%wide : memref<2x4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  }
  %s0 = memref.subview %wide[0, 0, 0] [1, 4, 8] [1, 1, 1] : memref<2x4x8xf32> to memref<1x4x8xf32, strided<[32, 8, 1]>>
  %c0 = memref.collapse_shape %s0 [[0, 1], [2]] : memref<1x4x8xf32, strided<[32, 8, 1]>> into memref<4x8xf32, strided<[8, 1]>>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%w0, %c0 : memref<4x8xf32>, memref<4x8xf32, strided<[8, 1]>>) outs(%w0 : memref<4x8xf32>) {
  ^bb0(%a: f32, %u: f32, %out: f32):
    %d = arith.subf %a, %u : f32
    linalg.yield %d : f32
  }
  %s1 = memref.subview %wide[1, 0, 0] [1, 4, 8] [1, 1, 1] : memref<2x4x8xf32> to memref<1x4x8xf32, strided<[32, 8, 1], offset: 32>>
  %c1 = memref.collapse_shape %s1 [[0, 1], [2]] : memref<1x4x8xf32, strided<[32, 8, 1], offset: 32>> into memref<4x8xf32, strided<[8, 1], offset: 32>>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%w1, %c1 : memref<4x8xf32>, memref<4x8xf32, strided<[8, 1], offset: 32>>) outs(%w1 : memref<4x8xf32>) {
  ^bb0(%a: f32, %u: f32, %out: f32):
    %d = arith.subf %a, %u : f32
    linalg.yield %d : f32
  }
  memref.dealloc %wide : memref<2x4x8xf32>
  %kept = memref.alloc() {alignment = 64 : i64} : memref<2x4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : memref<2x4x8xbf16>) outs(%kept : memref<2x4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  }
  memref.copy %kept, %y : memref<2x4x8xf32> to memref<2x4x8xf32>
  memref.dealloc %kept : memref<2x4x8xf32>
  return
}
