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

// A kernel over a view (a slice of a batch, which bufferization leaves as
// a subview) indexes it by the element's indices over the shape, (i / 8,
// i % 8); its identity-layout operands stay flat rows indexed by i.
#map2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @view
func.func @view(%b: memref<2x4x8xf32>, %o: memref<4x8xf32>) attributes {muir.entry} {
  %v = memref.subview %b[1, 0, 0] [1, 4, 8] [1, 1, 1] : memref<2x4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  // CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [32], strides: [1]
  // CHECK: gpu.launch
  // CHECK: %[[I:.*]] = arith.addi
  // CHECK: %[[C8:.*]] = arith.constant 8 : index
  // CHECK: %[[COL:.*]] = arith.remui %[[I]], %[[C8]] : index
  // CHECK: %[[Q:.*]] = arith.divui %[[I]], %[[C8]] : index
  // CHECK: %[[C4:.*]] = arith.constant 4 : index
  // CHECK: %[[ROW:.*]] = arith.remui %[[Q]], %[[C4]] : index
  // CHECK: %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[COL]]] : memref<4x8xf32, strided<[8, 1], offset: 32>>
  // CHECK: %[[Y:.*]] = arith.addf %[[X]], %[[X]] : f32
  // CHECK: memref.store %[[Y]], %[[FLAT]][%[[I]]] : memref<32xf32>
  linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%v : memref<4x8xf32, strided<[8, 1], offset: 32>>) outs(%o : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A constant buffer in device memory has no lowering on the CUDA target.
memref.global "private" constant @rows : memref<4xf32> = dense<1.0>
func.func @device_constant(%o: memref<4xf32>) attributes {muir.entry} {
  // expected-error @+1 {{'memref.get_global' op names a constant buffer outside #muir_exec.host memory}}
  %g = memref.get_global @rows : memref<4xf32>
  memref.copy %g, %o : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A row reduction (NorMuon's rows' sums) after a fill: the fill is a
// kernel storing its value; the reduction a thread per row (4 rows: one
// block) whose loop over the 8 columns, in order, carries the output's
// value (the CPU's loop order: the same sums).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sums
// CHECK: gpu.launch {{.*}}function(@muir_fill)
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<4xf32>
// CHECK: gpu.launch {{.*}}function(@muir_reduction)
// CHECK: %[[ROW:.*]] = arith.remui
// CHECK: %[[ACC:.*]] = memref.load %arg1[%[[ROW]]] : memref<4xf32>
// CHECK: %[[SUM:.*]] = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[S:.*]] = %[[ACC]]) -> (f32) {
// CHECK: %[[X:.*]] = memref.load %arg0[%[[ROW]], %[[J]]] : memref<4x8xf32>
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[NEW:.*]] = arith.addf %[[S]], %[[SQ]] : f32
// CHECK: scf.yield %[[NEW]] : f32
// CHECK: memref.store %[[SUM]], %arg1[%[[ROW]]] : memref<4xf32>
// A broadcast (each row divided by its value) is a thread per element.
// CHECK: gpu.launch {{.*}}function(@muir_broadcast)
// CHECK: %[[C:.*]] = arith.remui
// CHECK: %[[R:.*]] = arith.remui
// CHECK-DAG: memref.load %arg0[%[[R]], %[[C]]] : memref<4x8xf32>
// CHECK-DAG: memref.load %arg1[%[[R]]] : memref<4xf32>
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %arg2[%[[R]], %[[C]]] : memref<4x8xf32>
// CHECK-NOT: linalg.
func.func @row_sums(%a: memref<4x8xf32>, %s: memref<4xf32>, %p: memref<4x8xf32>) attributes {muir.entry} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]} ins(%a : memref<4x8xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %s : memref<4x8xf32>, memref<4xf32>) outs(%p : memref<4x8xf32>) {
  ^bb0(%in: f32, %r: f32, %out: f32):
    %0 = arith.divf %in, %r : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A map that is no projected permutation (a sliding window: a 1-D
// convolution) has no kernel.
#win = affine_map<(d0, d1) -> (d0 + d1)>
#tap = affine_map<(d0, d1) -> (d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @window(%a: memref<12xf32>, %w: memref<5xf32>, %s: memref<8xf32>) {
  // expected-error @+1 {{'linalg.generic' op is not a kernel over static buffers with projected-permutation maps}}
  linalg.generic {indexing_maps = [#win, #tap, #out], iterator_types = ["parallel", "reduction"]} ins(%a, %w : memref<12xf32>, memref<5xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %t: f32, %out: f32):
    %p = arith.mulf %in, %t : f32
    %0 = arith.addf %p, %out : f32
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

// -----

// MoE with every expert on this rank (a group of no grid axis): the
// dispatch becomes the runtime's plan (counts, each row's pair and each
// pair's row) and a generated gather of one thread per output element
// (16 rows x 4: 64), the pair's token from plan[r] / k, its weight times
// the token's value, zero where plan[r] < 0.
// CHECK-LABEL: func.func @moe
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @moe(%x: memref<8x4xf32>, %idx: memref<8x2xi64>, %w: memref<8x2xf32>, %rows: memref<16x4xf32>, %counts: memref<4xi64>, %plan: memref<36xi64>, %out: memref<8x4xf32>, %dw: memref<8x2xf32>) {
  // CHECK: muir_exec.moe_plan %{{.*}} into %{{.*}}, %{{.*}} {bound = 16 : i64, layer = "l", num_experts = 4 : i64} : memref<8x2xi64> -> memref<4xi64>, memref<36xi64>
  // CHECK: gpu.launch
  // CHECK: arith.divui %{{.*}}, %{{.*}} : index
  // CHECK: arith.remui
  // CHECK: memref.load %{{.*}}[%{{.*}}] : memref<36xi64>
  // CHECK: arith.cmpi sge
  // CHECK: arith.divui
  // CHECK: memref.load %{{.*}}[%{{.*}}] : memref<32xf32>
  // CHECK: memref.load %{{.*}}[%{{.*}}] : memref<16xf32>
  // CHECK: arith.mulf
  // CHECK: arith.select
  // CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<64xf32>
  muir_exec.moe_dispatch %x, %idx weights %w into %rows, %counts, %plan {group = #muir_exec.group<@world, []>, layer = "l", num_experts = 4 : i64} : memref<8x4xf32>, memref<8x2xi64>, memref<8x2xf32> -> memref<16x4xf32>, memref<4xi64>, memref<36xi64>
  // The weighted combine: one thread per output element, the k slots in
  // order in double, each slot's row from plan[bound + t * k + j].
  // CHECK: gpu.launch
  // CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f64)
  // CHECK: memref.load %{{.*}}[%{{.*}}] : memref<36xi64>
  // CHECK: arith.extf %{{.*}} : f32 to f64
  // CHECK: arith.mulf %{{.*}}, %{{.*}} : f64
  // CHECK: arith.addf %{{.*}}, %{{.*}} : f64
  // CHECK: arith.select
  // CHECK: arith.truncf %{{.*}} : f64 to f32
  // CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<32xf32>
  muir_exec.moe_combine %rows, %idx, %plan weights %w into %out {group = #muir_exec.group<@world, []>, layer = "l", num_experts = 4 : i64} : memref<16x4xf32>, memref<8x2xi64>, memref<36xi64>, memref<8x2xf32> -> memref<8x4xf32>
  // Combine's weight gradient: one thread per pair, a dot product over the
  // hidden size (no iterations for a dropped slot).
  // CHECK: gpu.launch
  // CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
  // CHECK: scf.for
  // CHECK: arith.mulf %{{.*}}, %{{.*}} : f64
  // CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<16xf32>
  // CHECK-NOT: muir_exec.moe_
  muir_exec.moe_combine_weights_grad %out, %rows, %idx, %plan into %dw {group = #muir_exec.group<@world, []>, layer = "l", num_experts = 4 : i64} : memref<8x4xf32>, memref<16x4xf32>, memref<8x2xi64>, memref<36xi64> -> memref<8x2xf32>
  return
}

// -----

// The CUDA target needs one row per (token, slot) pair.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @small_bound(%x: memref<8x4xf32>, %idx: memref<8x2xi64>, %rows: memref<12x4xf32>, %counts: memref<4xi64>, %plan: memref<28xi64>) {
  // expected-error @+1 {{'muir_exec.moe_dispatch' op has a bound of 12 rows under its 8 tokens x 2 slots; the CUDA target needs one row per pair}}
  muir_exec.moe_dispatch %x, %idx into %rows, %counts, %plan {group = #muir_exec.group<@world, []>, layer = "l", num_experts = 4 : i64} : memref<8x4xf32>, memref<8x2xi64> -> memref<12x4xf32>, memref<4xi64>, memref<28xi64>
  return
}

// -----

// Experts spread over ranks have no CUDA exchange yet.
muir.grid @g axes = ["ep"] shape = [2]
func.func @spread(%x: memref<8x4xf32>, %idx: memref<8x2xi64>, %rows: memref<16x4xf32>, %counts: memref<2xi64>, %plan: memref<40xi64>) {
  // expected-error @+1 {{'muir_exec.moe_dispatch' op spreads the experts over 2 ranks; the CUDA target runs MoE layers with every expert on one rank (ep = 1) so far: compile this step for --target=cpu}}
  muir_exec.moe_dispatch %x, %idx into %rows, %counts, %plan {group = #muir_exec.group<@g, ["ep"]>, layer = "l", num_experts = 4 : i64} : memref<8x4xf32>, memref<8x2xi64> -> memref<16x4xf32>, memref<2xi64>, memref<40xi64>
  return
}

// -----

// A plan that is not one rank's (2 bound + 4 entries) is refused.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @other_plan(%rows: memref<16x4xf32>, %idx: memref<8x2xi64>, %plan: memref<40xi64>, %out: memref<8x4xf32>) {
  // expected-error @+1 {{'muir_exec.moe_combine' op has a plan of 40 entries; one rank's is 2 x 16 + 4}}
  muir_exec.moe_combine %rows, %idx, %plan into %out {group = #muir_exec.group<@world, []>, layer = "l", num_experts = 4 : i64} : memref<16x4xf32>, memref<8x2xi64>, memref<40xi64> -> memref<8x4xf32>
  return
}

// -----

// Buffers in #muir_exec.host memory (an all_to_allv's counts, stored by the
// host) stay host allocations, with their stores, views and the copies
// between them; the rows move to the device.
// CHECK-LABEL: func.func @ragged
muir.grid @w axes = ["dp"] shape = [2]
func.func @ragged(%in: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 4 : i64
  // CHECK: %[[SEND:.*]] = memref.alloc() : memref<2xi64, #muir_exec.host>
  // CHECK: memref.store %{{.*}}, %[[SEND]]
  // CHECK: %[[OUT:.*]] = gpu.alloc () : memref<8xf32>
  // CHECK: %[[RECV:.*]] = memref.alloc() : memref<2xi64, #muir_exec.host>
  // CHECK: %[[TMP:.*]] = memref.alloc() : memref<2xi64, #muir_exec.host>
  // CHECK: memref.copy %[[TMP]], %[[RECV]]
  // CHECK: %[[HALF:.*]] = memref.subview %[[TMP]][0] [1] [1]
  // CHECK: memref.copy %[[HALF]], %{{.*}} : memref<1xi64, strided<[1]>, #muir_exec.host> to memref<1xi64, strided<[1], offset: 1>, #muir_exec.host>
  // CHECK: muir_exec.all_to_allv %{{.*}}, %[[SEND]], %[[OUT]], %[[RECV]]
  // CHECK: memref.dealloc %[[SEND]]
  // CHECK: gpu.dealloc %[[OUT]]
  %send = memref.alloc() : memref<2xi64, #muir_exec.host>
  memref.store %n, %send[%c0] : memref<2xi64, #muir_exec.host>
  memref.store %n, %send[%c1] : memref<2xi64, #muir_exec.host>
  %out = memref.alloc() : memref<8xf32>
  %recv = memref.alloc() : memref<2xi64, #muir_exec.host>
  %tmp = memref.alloc() : memref<2xi64, #muir_exec.host>
  memref.copy %tmp, %recv : memref<2xi64, #muir_exec.host> to memref<2xi64, #muir_exec.host>
  %half = memref.subview %tmp[0] [1] [1] : memref<2xi64, #muir_exec.host> to memref<1xi64, strided<[1]>, #muir_exec.host>
  %other = memref.subview %recv[1] [1] [1] : memref<2xi64, #muir_exec.host> to memref<1xi64, strided<[1], offset: 1>, #muir_exec.host>
  memref.copy %half, %other : memref<1xi64, strided<[1]>, #muir_exec.host> to memref<1xi64, strided<[1], offset: 1>, #muir_exec.host>
  muir_exec.all_to_allv %in, %send, %out, %recv {group = #muir_exec.group<@w, ["dp"]>} : memref<8xf32>, memref<2xi64, #muir_exec.host>, memref<8xf32>, memref<2xi64, #muir_exec.host>
  memref.dealloc %send : memref<2xi64, #muir_exec.host>
  memref.dealloc %out : memref<8xf32>
  memref.dealloc %recv : memref<2xi64, #muir_exec.host>
  memref.dealloc %tmp : memref<2xi64, #muir_exec.host>
  return
}

// -----

// Counts that a device kernel writes cannot stay on the host.
muir.grid @w axes = ["dp"] shape = [2]
func.func @device_counts(%in: memref<8xf32>, %logits: memref<4x2xf32>, %idx: memref<4x1xi64>, %w: memref<4x1xf32>) {
  %send = memref.alloc() : memref<2xi64, #muir_exec.host>
  %out = memref.alloc() : memref<8xf32>
  %recv = memref.alloc() : memref<2xi64, #muir_exec.host>
  // expected-error @+1 {{'muir_exec.route' op operand #3 is a buffer in host memory (#muir_exec.host), which the CUDA target's device work cannot read or write}}
  muir_exec.route %logits into %idx, %w, %send {n_group = 1 : i64, scaling = 1.0 : f64, scoring = #muir_exec.scoring<softmax>, topk_group = 1 : i64} : memref<4x2xf32> -> memref<4x1xi64>, memref<4x1xf32>, memref<2xi64, #muir_exec.host>
  muir_exec.all_to_allv %in, %send, %out, %recv {group = #muir_exec.group<@w, ["dp"]>} : memref<8xf32>, memref<2xi64, #muir_exec.host>, memref<8xf32>, memref<2xi64, #muir_exec.host>
  return
}

// -----

// A copy between host and device memory is not placed either.
func.func @mixed_copy(%in: memref<2xi64>) {
  %h = memref.alloc() : memref<2xi64, #muir_exec.host>
  // expected-error @+1 {{'memref.copy' op operand #1 is a buffer in host memory (#muir_exec.host), which the CUDA target's device work cannot read or write}}
  memref.copy %in, %h : memref<2xi64> to memref<2xi64, #muir_exec.host>
  memref.dealloc %h : memref<2xi64, #muir_exec.host>
  return
}

// -----

// A normalisation: the runtime's sums of squares into a double buffer of the
// step, then a generated kernel, one thread per element, scaling by
// f32(1 / (sqrt(ss) + eps)) with the reciprocal in double (correctly
// rounded sqrt) and eps rounded to f32 first; an all-reduced f32 sum of
// squares is widened first.
// CHECK-LABEL: func.func @normalize
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x4x8xf32>, %[[Y:[^:]+]]: memref<2x4x8xf32>, %[[S:[^:]+]]: memref<2xf32>)
func.func @normalize(%x: memref<2x4x8xf32>, %y: memref<2x4x8xf32>, %ss: memref<2xf32>) {
  // CHECK: %[[D:.+]] = gpu.alloc () : memref<2xf64>
  // CHECK: muir_exec.sum_squares %[[X]], %[[D]] : memref<2x4x8xf32>, memref<2xf64>
  // CHECK: gpu.launch {{.*}} function(@muir_scale_by_norm)
  // CHECK: %[[ITEM:.+]] = arith.divui %{{.+}}, %c32
  // CHECK: %[[SS:.+]] = memref.load %{{.+}}[%[[ITEM]]] : memref<2xf64>
  // CHECK: %[[EPS:.+]] = arith.constant 1.0000000116860974E-7 : f64
  // CHECK: %[[R:.+]] = llvm.inline_asm "sqrt.rn.f64 $0, $1;", "=d,d" %[[SS]]
  // CHECK: %[[DEN:.+]] = arith.addf %[[R]], %[[EPS]] : f64
  // CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %[[DEN]] : f64
  // CHECK: %[[SC:.+]] = arith.truncf %[[INV]] : f64 to f32
  // CHECK: %[[V:.+]] = memref.load %{{.+}} : memref<64xf32>
  // CHECK: arith.mulf %[[V]], %[[SC]] : f32
  // CHECK: gpu.dealloc %[[D]] : memref<2xf64>
  muir_exec.frobenius_normalize %x, %y {eps = 1.0e-7 : f64} : memref<2x4x8xf32>, memref<2x4x8xf32>
  // CHECK: gpu.launch {{.*}} function(@muir_scale_by_norm)
  // CHECK: memref.load %{{.+}} : memref<2xf32>
  // CHECK-NEXT: arith.extf %{{.+}} : f32 to f64
  // CHECK-NOT: muir_exec.scale_by_norm
  // CHECK-NOT: muir_exec.frobenius_normalize
  muir_exec.scale_by_norm %x, %ss, %y {eps = 1.0e-7 : f64} : memref<2x4x8xf32>, memref<2xf32>, memref<2x4x8xf32>
  return
}

// -----

// The fused SYRK all-reduce's chunks: one packed buffer of the step for C
// (2 items x 6 x 7 / 2 floats), allocated before the first chunk and freed
// after the last wait; each start becomes a generated packing kernel over
// the chunk's rows and the runtime's exchange of the chunk's place in the
// packed buffer (rows [0, r) take r n - r (r - 1) / 2 floats an item), each
// wait the exchange's end on the same place and a generated kernel that
// unpacks and mirrors.
// CHECK-LABEL: func.func @triangles
// CHECK-SAME: (%[[A:[^:]+]]: memref<2x8x6xf32>, %[[C:[^:]+]]: memref<2x6x6xf32>)
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
func.func @triangles(%a: memref<2x8x6xf32>, %c: memref<2x6x6xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  // CHECK: muir_exec.syrk_rows %[[A]], %[[C]] rows[%[[C0:.+]], %[[C4:.+]])
  // CHECK-NEXT: %[[P:.+]] = gpu.alloc () : memref<42xf32>
  // CHECK: gpu.launch {{.*}} function(@muir_triangle_pack)
  // CHECK: arith.cmpi uge
  // CHECK: %[[V:.+]] = memref.load %{{.+}} : memref<72xf32>
  // CHECK-NEXT: memref.store %[[V]], %[[P]][%{{.+}}] : memref<42xf32>
  // CHECK: %[[VIEW0:.+]] = memref.subview %[[P]][%{{.+}}] [%{{.+}}] [1] : memref<42xf32> to memref<?xf32, strided<[1], offset: ?>>
  // CHECK-NEXT: %[[R0:.+]] = muir_exec.packed_all_reduce_start %[[VIEW0]] {group = #muir_exec.group<@world, ["dp"]>}
  // CHECK: muir_exec.syrk_rows %[[A]], %[[C]] rows[%[[C4]], %{{.+}})
  // CHECK: function(@muir_triangle_pack)
  // CHECK: %[[R1:.+]] = muir_exec.packed_all_reduce_start
  // CHECK: muir_exec.packed_all_reduce_wait %[[R0]], %{{.+}} : memref<?xf32, strided<[1], offset: ?>>
  // CHECK: gpu.launch {{.*}} function(@muir_triangle_unpack)
  // CHECK: %[[U:.+]] = memref.load %[[P]][%{{.+}}] : memref<42xf32>
  // CHECK: memref.store %[[U]], %{{.+}} : memref<72xf32>
  // CHECK: memref.store %[[U]], %{{.+}} : memref<72xf32>
  // CHECK: muir_exec.packed_all_reduce_wait %[[R1]]
  // CHECK: function(@muir_triangle_unpack)
  // CHECK: gpu.dealloc %[[P]] : memref<42xf32>
  // CHECK-NEXT: return
  // CHECK-NOT: triangle_all_reduce
  muir_exec.syrk_rows %a, %c rows[%c0, %c4) {alpha = 1.0 : f64, transpose} : memref<2x8x6xf32>, memref<2x6x6xf32>
  %r0 = muir_exec.triangle_all_reduce_start %c rows[%c0, %c4) {group = #muir_exec.group<@world, ["dp"]>} : memref<2x6x6xf32>
  muir_exec.syrk_rows %a, %c rows[%c4, %c6) {alpha = 1.0 : f64, transpose} : memref<2x8x6xf32>, memref<2x6x6xf32>
  %r1 = muir_exec.triangle_all_reduce_start %c rows[%c4, %c6) {group = #muir_exec.group<@world, ["dp"]>} : memref<2x6x6xf32>
  muir_exec.triangle_all_reduce_wait %r0, %c rows[%c0, %c4) : memref<2x6x6xf32>
  muir_exec.triangle_all_reduce_wait %r1, %c rows[%c4, %c6) : memref<2x6x6xf32>
  return
}
