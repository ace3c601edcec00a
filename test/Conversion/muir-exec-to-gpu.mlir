// RUN: muir-opt %s --split-input-file --verify-diagnostics --muir-exec-to-gpu | FileCheck %s

// Buffers move to the device, copies become device copies, an element-wise
// kernel becomes a launch of one thread per element over flat views (2048
// elements: 8 blocks of 256), with its body on the loaded values; f32 sqrt
// becomes PTX's correctly rounded sqrt.

#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @step
func.func @step(%p: memref<64x32xf32>, %g: memref<64x32xf32>) attributes {muir.entry} {
  // CHECK: %[[T:.*]] = gpu.alloc () : memref<64x32xf32>
  %t = memref.alloc() {alignment = 64 : i64} : memref<64x32xf32>
  %c = arith.constant 0.5 : f32
  // CHECK-DAG: %[[P1:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2048], strides: [1]
  // CHECK-DAG: %[[B:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[N:.*]] = arith.constant 256 : index
  // CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[B]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[N]],
  // CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : index
  // CHECK: scf.if
  // CHECK: memref.load
  // CHECK: arith.mulf
  // CHECK: llvm.inline_asm "sqrt.rn.f32 $0, $1;", "=f,f"
  // CHECK: memref.store
  // CHECK: gpu.terminator
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%g : memref<64x32xf32>) outs(%t : memref<64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %c : f32
    %1 = math.sqrt %0 : f32
    linalg.yield %1 : f32
  }
  // CHECK: gpu.memcpy %{{.*}}, %[[T]] : memref<64x32xf32>, memref<64x32xf32>
  memref.copy %t, %p : memref<64x32xf32> to memref<64x32xf32>
  // CHECK: gpu.dealloc %[[T]] : memref<64x32xf32>
  memref.dealloc %t : memref<64x32xf32>
  // CHECK-NOT: linalg.generic
  // CHECK-NOT: memref.alloc
  return
}

// -----

// A reduction is no element-wise kernel.
#map = affine_map<(d0) -> (d0)>
#red = affine_map<(d0) -> ()>
func.func @reduce(%a: memref<8xf32>, %s: memref<f32>) {
  // expected-error @+1 {{'linalg.generic' op is not an element-wise kernel over identity-layout buffers}}
  linalg.generic {indexing_maps = [#map, #red], iterator_types = ["reduction"]} ins(%a : memref<8xf32>) outs(%s : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// The host cannot read a device buffer.
func.func @load(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op reads or writes a device buffer from the host}}
  %v = memref.load %a[%c0] : memref<8xf32>
  return %v : f32
}

// -----

// A copy out of a batch (a strided subview) becomes a kernel of one thread
// per element, its indices from the flat index; a contiguous one a memcpy.
// CHECK-LABEL: func.func @strided
func.func @strided(%batch: memref<2x4x8xf32>, %one: memref<1x4x8xf32>, %other: memref<1x4x8xf32>) {
  %s = memref.subview %batch[1, 0, 0] [1, 4, 8] [1, 1, 1] : memref<2x4x8xf32> to memref<1x4x8xf32, strided<[32, 8, 1], offset: 32>>
  // CHECK: gpu.launch
  // CHECK: arith.remui
  // CHECK: arith.divui
  // CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x4x8xf32, strided<[32, 8, 1], offset: 32>>
  // CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x4x8xf32>
  memref.copy %s, %one : memref<1x4x8xf32, strided<[32, 8, 1], offset: 32>> to memref<1x4x8xf32>
  // CHECK: gpu.memcpy
  memref.copy %one, %other : memref<1x4x8xf32> to memref<1x4x8xf32>
  return
}
