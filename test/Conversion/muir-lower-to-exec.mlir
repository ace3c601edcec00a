// RUN: muir-opt %s --split-input-file --muir-lower-to-exec | FileCheck %s

// Element-wise kernels update state in place: the momentum buffer is read
// and written by the same kernel, the parameter by the last one. The
// intermediate Newton-Schulz buffers are fresh allocations, freed at the end.
// CHECK-LABEL: func.func @muon_step
// CHECK-SAME: (%[[W:[^:]+]]: memref<4x8xf32> {muir.name = "w"}, %[[G:[^:]+]]: memref<4x8xf32> {muir.name = "w.grad"}, %[[M:[^:]+]]: memref<4x8xf32> {muir.name = "w.momentum"})
// CHECK-SAME: attributes {muir.entry}
// CHECK: %[[U:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[G]], %[[M]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[U]], %[[M]] : memref<4x8xf32>, memref<4x8xf32>)
// CHECK: %[[N:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK: muir_exec.frobenius_normalize %[[U]], %[[N]] {eps = 1.000000e-03 : f64}
// CHECK: %[[A:.+]] = memref.alloc() {{.*}} : memref<4x4xf32>
// CHECK: muir_exec.gemm %[[N]], %[[N]], %[[A]] {transpose_b}
// The GEMM reads its accumulator itself (the runtime scales it into C):
// no copy.
// CHECK: %[[B:.+]] = memref.alloc() {{.*}} : memref<4x4xf32>
// CHECK-NEXT: muir_exec.gemm %[[A]], %[[A]], %[[B]] acc %[[A]] {alpha = 2.031500e+00 : f64, beta = -4.775000e+00 : f64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
// CHECK: %[[X:.+]] = memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK-NEXT: muir_exec.gemm %[[B]], %[[N]], %[[X]] acc %[[N]] {beta = 3.444500e+00 : f64}
// CHECK: muir_exec.observe %[[X]] {label = "w", slot = 0 : i64} : memref<4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[X]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[W]] : memref<4x8xf32>)
// CHECK-NOT: memref.copy
// CHECK-COUNT-5: memref.dealloc
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func @muon_step(%w: tensor<4x8xf32> {muir.name = "w"}, %g: tensor<4x8xf32> {muir.name = "w.grad"}, %m: tensor<4x8xf32> {muir.name = "w.momentum"})
    -> (tensor<4x8xf32> {muir.updates = "w"}, tensor<4x8xf32> {muir.updates = "w.momentum"}) {
  %u, %m1 = muir.momentum %g, %m {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<4x8xf32>
  %n = muir.frobenius_normalize %u {eps = 1.0e-3} : tensor<4x8xf32>
  %a = muir.matmul %n, %n {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %b = muir.matmul %a, %a acc %a {alpha = 2.0315, beta = -4.775} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %x = muir.matmul %b, %n acc %n {beta = 3.4445} : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  muir.probe %x {label = "w", slot = 0} : tensor<4x8xf32>
  %w1 = muir.apply_update %w, %x {lr = 0.02, scale = 0.5, weight_decay = 0.1} : tensor<4x8xf32>
  return %w1, %m1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A runtime call must not write the buffer it reads: x <- x^T x x... keeps
// the result in a fresh buffer and copies it into the argument at the end.
// CHECK-LABEL: func.func @not_in_place
// CHECK-SAME: (%[[X:[^:]+]]: memref<4x4xf32> {muir.name = "x"})
// CHECK: %[[Y:.+]] = memref.alloc()
// CHECK: muir_exec.gemm %[[X]], %[[X]], %[[Y]]
// CHECK: memref.copy %[[Y]], %[[X]]
// CHECK: memref.dealloc %[[Y]]
func.func @not_in_place(%x: tensor<4x4xf32> {muir.name = "x"}) -> (tensor<4x4xf32> {muir.updates = "x"}) {
  %y = muir.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// An argument read after the update's producer is not overwritten early.
// CHECK-LABEL: func.func @later_reader
// CHECK-SAME: (%[[P:[^:]+]]: memref<8xf32> {muir.name = "p"}, %[[Q:[^:]+]]: memref<8xf32> {muir.name = "q"})
// CHECK: %[[P1:.+]] = memref.alloc()
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[Q]] : {{.*}}) outs(%[[P1]] : memref<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[P]] : {{.*}}) outs(%[[Q]] : memref<8xf32>)
// CHECK: memref.copy %[[P1]], %[[P]]
func.func @later_reader(%p: tensor<8xf32> {muir.name = "p"}, %q: tensor<8xf32> {muir.name = "q"})
    -> (tensor<8xf32> {muir.updates = "p"}, tensor<8xf32> {muir.updates = "q"}) {
  %p1 = muir.apply_update %p, %q {lr = 1.0, scale = 1.0, weight_decay = 0.0} : tensor<8xf32>
  %q1 = muir.apply_update %q, %p {lr = 1.0, scale = 1.0, weight_decay = 0.0} : tensor<8xf32>
  return %p1, %q1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// AdamW: bias corrections from the run-time step, then one fused kernel
// updating parameter and both moments in place.
// CHECK-LABEL: func.func @adamw
// CHECK-SAME: %[[T:[^:]+]]: i64 {muir.role = #muir.role<step>}
// CHECK: %[[TF:.+]] = arith.sitofp %[[T]] : i64 to f64
// CHECK: math.powf %{{.*}}, %[[TF]] : f64
// CHECK: math.powf %{{.*}}, %[[TF]] : f64
// CHECK: linalg.generic {{.*}} ins(%[[P:[^,]+]], %[[G:[^,]+]], %[[M:[^,]+]], %[[V:[^ ]+]] : {{.*}}) outs(%[[P]], %[[M]], %[[V]] : {{.*}})
// CHECK: math.sqrt
// CHECK-NOT: memref.alloc
func.func @adamw(%p: tensor<16xf32> {muir.name = "b"}, %g: tensor<16xf32> {muir.name = "b.grad"}, %m: tensor<16xf32> {muir.name = "b.exp_avg"}, %v: tensor<16xf32> {muir.name = "b.exp_avg_sq"}, %t: i64 {muir.role = #muir.role<step>})
    -> (tensor<16xf32> {muir.updates = "b"}, tensor<16xf32> {muir.updates = "b.exp_avg"}, tensor<16xf32> {muir.updates = "b.exp_avg_sq"}) {
  %p1, %m1, %v1 = muir.adamw_update %p, %g, %m, %v step %t {lr = 0.001, weight_decay = 0.01} : tensor<16xf32>
  return %p1, %m1, %v1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// On a grid axis of size 1 a collective is a copy.
muir.grid @g axes = ["dp", "tp"] shape = [1, 1]
// CHECK-LABEL: func.func @trivial_collective
// CHECK: %[[R:.+]] = memref.alloc()
// CHECK: memref.copy %{{.*}}, %[[R]]
// CHECK: muir_exec.transpose %[[R]]
func.func @trivial_collective(%x: tensor<4x4xf32> {muir.name = "x"}) -> (tensor<4x4xf32> {muir.updates = "x"}) {
  %r = muir.all_reduce %x on @g axes = ["tp"] : tensor<4x4xf32>
  %t = muir.transpose %r : tensor<4x4xf32> -> tensor<4x4xf32>
  return %t : tensor<4x4xf32>
}

// -----

// Functions without named tensors and without muir ops are not training
// steps: left alone. (One with muir ops is refused, naming it:
// muir-lower-to-exec-invalid.mlir.)
// CHECK-LABEL: func.func @helper
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
func.func @helper(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// -----

// Row slices are views of the parameter, copied into fresh buffers for the
// runtime calls; the concatenation writes straight into the parameter's
// row blocks once nothing reads it any more.
// CHECK-LABEL: func.func @blocks
// CHECK-SAME: (%[[P:[^:]+]]: memref<8x16xf32> {muir.name = "p"})
// CHECK: %[[V0:.+]] = memref.subview %[[P]][0, 0] [4, 16] [1, 1]
// CHECK: %[[V1:.+]] = memref.subview %[[P]][4, 0] [4, 16] [1, 1]
// CHECK: %[[B0:.+]] = memref.alloc() {{.*}} : memref<4x16xf32>
// CHECK: memref.copy %[[V0]], %[[B0]]
// CHECK: muir_exec.frobenius_normalize %[[B0]], %[[T0:[^ ]+]]
// CHECK: %[[B1:.+]] = memref.alloc() {{.*}} : memref<4x16xf32>
// CHECK: memref.copy %[[V1]], %[[B1]]
// CHECK: muir_exec.frobenius_normalize %[[B1]], %[[T1:[^ ]+]]
// CHECK: %[[D0:.+]] = memref.subview %[[P]][0, 0] [4, 16] [1, 1]
// CHECK: memref.copy %[[T0]], %[[D0]]
// CHECK: %[[D1:.+]] = memref.subview %[[P]][4, 0] [4, 16] [1, 1]
// CHECK: memref.copy %[[T1]], %[[D1]]
// CHECK-NOT: memref.copy
// CHECK: return
func.func @blocks(%p: tensor<8x16xf32> {muir.name = "p"}) -> (tensor<8x16xf32> {muir.updates = "p"}) {
  %a = tensor.extract_slice %p[0, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  %b = tensor.extract_slice %p[4, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  %a1 = muir.frobenius_normalize %a : tensor<4x16xf32>
  %b1 = muir.frobenius_normalize %b : tensor<4x16xf32>
  %c = tensor.concat dim(0) %a1, %b1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// A batch's stack: each element-wise kernel writes its slot of the stack
// (a 3-D momentum update as it is, a 2-D one through a collapse_shape of
// its slot), with no buffer of its own copied in afterwards; the stack is
// made before the first kernel.
// CHECK-LABEL: func.func @stack_in_place
// CHECK-SAME: (%[[G1:[^:]+]]: memref<2x4x8xf32> {{.*}}, %[[M1:[^:]+]]: memref<2x4x8xf32> {{.*}}, %[[G2:[^:]+]]: memref<4x8xf32> {{.*}}, %[[M2:[^:]+]]: memref<4x8xf32>
// CHECK: %[[S:.+]] = memref.alloc() {alignment = 64 : i64} : memref<3x4x8xf32>
// CHECK-DAG: %[[V1:.+]] = memref.subview %[[S]][0, 0, 0] [2, 4, 8] [1, 1, 1]
// CHECK-DAG: %[[V2:.+]] = memref.subview %[[S]][2, 0, 0] [1, 4, 8] [1, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[G1]], %[[M1]] : {{.*}}) outs(%[[V1]], %[[M1]] : memref<2x4x8xf32, strided<[32, 8, 1]>>, memref<2x4x8xf32>)
// CHECK: %[[C2:.+]] = memref.collapse_shape %[[V2]] {{\[}}[0, 1], [2]]
// CHECK: linalg.generic {{.*}} ins(%[[G2]], %[[M2]] : {{.*}}) outs(%[[C2]], %[[M2]] : memref<4x8xf32, strided<[8, 1], offset: 64>>, memref<4x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: muir_exec.frobenius_normalize %[[S]]
func.func @stack_in_place(%g1: tensor<2x4x8xf32> {muir.name = "a.grad"}, %m1: tensor<2x4x8xf32> {muir.name = "a.momentum"},
                          %g2: tensor<4x8xf32> {muir.name = "b.grad"}, %m2: tensor<4x8xf32> {muir.name = "b.momentum"})
    -> (tensor<2x4x8xf32> {muir.updates = "a.momentum"}, tensor<4x8xf32> {muir.updates = "b.momentum"}, tensor<2x4x8xf32> {muir.updates = "a.grad"}) {
  %u1, %n1 = muir.momentum %g1, %m1 {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<2x4x8xf32>
  %u2, %n2 = muir.momentum %g2, %m2 {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<4x8xf32>
  %e2 = tensor.expand_shape %u2 [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %c = tensor.concat dim(0) %u1, %e2 : (tensor<2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<3x4x8xf32>
  %x = muir.frobenius_normalize %c {eps = 1.0e-3} : tensor<3x4x8xf32>
  %s = tensor.extract_slice %x[0, 0, 0] [2, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<2x4x8xf32>
  return %n1, %n2, %s : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Collectives over groups of more than one rank become exec collectives
// over the same group: the grid and its axes.
muir.grid @w axes = ["dp", "tp"] shape = [2, 4]
// CHECK-LABEL: func.func @collectives
// CHECK: muir_exec.all_reduce %{{.*}}, %{{.*}} {group = #muir_exec.group<@w, ["tp"]>, reduction = #muir_exec.reduction<avg>} : memref<4x8xf32>, memref<4x8xf32>
// CHECK: muir_exec.all_gather %{{.*}}, %{{.*}} {gather_axis = 1 : i64, group = #muir_exec.group<@w, ["dp", "tp"]>} : memref<4x8xf32>, memref<4x64xf32>
// CHECK: muir_exec.reduce_scatter %{{.*}}, %{{.*}} {group = #muir_exec.group<@w, ["dp"]>, reduction = #muir_exec.reduction<sum>, scatter_axis = 0 : i64} : memref<4x8xf32>, memref<2x8xf32>
// CHECK: muir_exec.broadcast %{{.*}}, %{{.*}} {group = #muir_exec.group<@w, ["tp"]>, root = 3 : i64}
func.func @collectives(%x: tensor<4x8xf32> {muir.name = "x"}) -> (tensor<4x8xf32> {muir.updates = "x"}) {
  %a = muir.all_reduce %x on @w axes = ["tp"] reduction = avg : tensor<4x8xf32>
  %g = muir.all_gather %a on @w axes = ["dp", "tp"] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x64xf32>
  %s = muir.reduce_scatter %a on @w axes = ["dp"] scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %b = muir.broadcast %a on @w axes = ["tp"] root = 3 : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// The counts of ragged exchanges are host buffers (#muir_exec.host), and so
// are the switch results they pass through, what each case yields for them,
// the constants (globals) and the reshapes on the way (views of the same
// buffer); the rows are not.
muir.grid @w axes = ["dp"] shape = [2]
// CHECK: memref.global "private" constant @[[G:.+]] : memref<2xi64, #muir_exec.host> = dense<4>
// CHECK-LABEL: func.func @ragged_counts
// CHECK: %[[SEND:.+]] = memref.get_global @[[G]] : memref<2xi64, #muir_exec.host>
// CHECK: %[[ROWS:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK: %[[RECV:.+]] = memref.alloc() {alignment = 64 : i64} : memref<2xi64, #muir_exec.host>
// CHECK: muir_exec.all_to_allv %{{.+}}, %[[SEND]], %[[ROWS]], %[[RECV]]
// CHECK: %[[E:.+]] = memref.expand_shape %[[RECV]] {{.*}} : memref<2xi64, #muir_exec.host> into memref<2x1xi64, #muir_exec.host>
// CHECK: %[[F:.+]] = memref.collapse_shape %[[E]] {{.*}} : memref<2x1xi64, #muir_exec.host> into memref<2xi64, #muir_exec.host>
// CHECK: %[[BACK:.+]] = memref.alloc() {alignment = 64 : i64} : memref<2xi64, #muir_exec.host>
// CHECK: scf.index_switch
// CHECK: memref.copy %[[F]], %[[BACK]] : memref<2xi64, #muir_exec.host> to memref<2xi64, #muir_exec.host>
// CHECK: default
// CHECK: memref.copy %[[SEND]], %[[BACK]] : memref<2xi64, #muir_exec.host> to memref<2xi64, #muir_exec.host>
// CHECK: muir_exec.all_to_allv %[[ROWS]], %[[BACK]], %{{.+}}, %{{.+}} {group = #muir_exec.group<@w, ["dp"]>} : memref<16xf32>, memref<2xi64, #muir_exec.host>, memref<16xf32>, memref<2xi64, #muir_exec.host>
func.func @ragged_counts(%x: tensor<8xf32> {muir.name = "x"}) -> (tensor<8xf32> {muir.updates = "x"}) {
  %c = arith.constant dense<[4, 4]> : tensor<2xi64>
  %r:2 = muir.all_to_allv %x, %c on @w axes = ["dp"] : (tensor<8xf32>, tensor<2xi64>) -> (tensor<16xf32>, tensor<2xi64>)
  %e = tensor.expand_shape %r#1 [[0, 1]] output_shape [2, 1] : tensor<2xi64> into tensor<2x1xi64>
  %f = tensor.collapse_shape %e [[0, 1]] : tensor<2x1xi64> into tensor<2xi64>
  %rank = muir.group_rank on @w axes = ["dp"] : index
  %back = scf.index_switch %rank -> tensor<2xi64>
  case 0 {
    scf.yield %f : tensor<2xi64>
  }
  default {
    scf.yield %c : tensor<2xi64>
  }
  %y:2 = muir.all_to_allv %r#0, %back on @w axes = ["dp"] : (tensor<16xf32>, tensor<2xi64>) -> (tensor<16xf32>, tensor<2xi64>)
  %z = tensor.extract_slice %y#0[0] [8] [1] : tensor<16xf32> to tensor<8xf32>
  return %z : tensor<8xf32>
}

// -----

// An integer constant of any rank is a constant global, its values in
// row-major order.
// CHECK: memref.global "private" constant @[[C:.+]] : memref<2x2xi64> = dense<{{\[\[}}10, 20], [30, 40]]>
// CHECK-LABEL: func.func @int_constant
// CHECK: memref.get_global @[[C]] : memref<2x2xi64>
func.func @int_constant(%x: tensor<4xf32> {muir.name = "x"}) -> (tensor<4xf32> {muir.updates = "x"}) {
  %c = arith.constant dense<[[10, 20], [30, 40]]> : tensor<2x2xi64>
  return %x : tensor<4xf32>
}

// -----

// A second grid folds the same ranks into other axes (MoE: edp x ep): its
// collectives and group ranks name it.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
muir.grid @moe axes = ["edp", "ep"] shape = [1, 4] folds @world
// CHECK-LABEL: func.func @second_folding
// CHECK: muir_exec.all_reduce %{{.*}}, %{{.*}} {group = #muir_exec.group<@moe, ["ep"]>, reduction = #muir_exec.reduction<sum>} : memref<4x4xf32>, memref<4x4xf32>
// CHECK: muir_exec.group_rank {group = #muir_exec.group<@moe, ["ep"]>} : index
// The switch writes one buffer made before it, in every case; the default
// case reads x, so the result is copied into x after the switch.
// CHECK: %[[OUT:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
// CHECK: scf.index_switch
// CHECK: memref.copy %{{.+}}, %[[OUT]]
// CHECK: default
// CHECK: memref.copy %[[X:[^,]+]], %[[OUT]]
// CHECK: memref.copy %[[OUT]], %[[X]]
func.func @second_folding(%x: tensor<4x4xf32> {muir.name = "x"}) -> (tensor<4x4xf32> {muir.updates = "x"}) {
  %y = muir.all_reduce %x on @moe axes = ["ep"] : tensor<4x4xf32>
  %r = muir.group_rank on @moe axes = ["ep"] : index
  %z = scf.index_switch %r -> tensor<4x4xf32>
  case 0 {
    scf.yield %y : tensor<4x4xf32>
  }
  default {
    scf.yield %x : tensor<4x4xf32>
  }
  return %z : tensor<4x4xf32>
}

// -----

// A case computes its result in the switch's buffer: the concatenation
// writes into it (no buffer of its own copied afterwards), and its padding
// (a tensor.empty) is not copied at all.
muir.grid @w2 axes = ["dp"] shape = [2]
// CHECK-LABEL: func.func @case_in_place
// CHECK-SAME: (%[[X:[^:]+]]: memref<4xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK: case 0 {
// CHECK-NEXT: %[[Y:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK-NEXT: muir_exec.all_reduce %[[X]], %[[Y]]
// CHECK-NEXT: %[[V:.+]] = memref.subview %[[OUT]][0] [4] [1]
// CHECK-NEXT: memref.copy %[[Y]], %[[V]]
// CHECK-NEXT: memref.dealloc %[[Y]]
// CHECK-NEXT: scf.yield
// CHECK: default {
// CHECK-NEXT: }
func.func @case_in_place(%x: tensor<4xf32> {muir.name = "x"}) -> (tensor<4xf32> {muir.updates = "x"}) {
  %r = muir.group_rank on @w2 axes = ["dp"] : index
  %z = scf.index_switch %r -> tensor<8xf32>
  case 0 {
    %y = muir.all_reduce %x on @w2 axes = ["dp"] : tensor<4xf32>
    %pad = tensor.empty() : tensor<4xf32>
    %c = tensor.concat dim(0) %y, %pad : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
    scf.yield %c : tensor<8xf32>
  }
  default {
    %e = tensor.empty() : tensor<8xf32>
    scf.yield %e : tensor<8xf32>
  }
  %s = tensor.extract_slice %z[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Padding along columns: the computed block is copied into its strided
// view of the argument (linalg.copy), the padding (a tensor.empty) not at
// all.
// CHECK-LABEL: func.func @pad_columns
// CHECK-SAME: (%[[X:[^:]+]]: memref<4x2xf32> {{.*}}, %[[Z:[^:]+]]: memref<4x4xf32>
// CHECK: muir_exec.scale_by_norm %[[X]], %{{.+}}, %[[S:[^ ]+]]
// CHECK-NEXT: %[[V:.+]] = memref.subview %[[Z]][0, 0] [4, 2] [1, 1]
// CHECK-NEXT: linalg.copy ins(%[[S]] : memref<4x2xf32>) outs(%[[V]] : memref<4x2xf32, strided<[4, 1]>>)
// CHECK-NOT: copy
// CHECK: return
func.func @pad_columns(%x: tensor<4x2xf32> {muir.name = "x"}, %z: tensor<4x4xf32> {muir.name = "z"}) -> (tensor<4x4xf32> {muir.updates = "z"}) {
  %n = muir.sum_squares %x : tensor<4x2xf32> -> tensor<1xf32>
  %s = muir.scale_by_norm %x, %n : tensor<4x2xf32>, tensor<1xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %c = tensor.concat dim(1) %s, %e : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}

// -----

// The fused SYRK + packed all-reduce becomes a pipeline of row chunks: chunk
// j's rows are computed and their exchange started before chunk j - 1's is
// waited for, so each exchange is in flight during the next chunk's SYRK.
// 12 rows in chunks of 5: [0, 5) first, then [5, 10) and [10, 12) in the
// loop, then the last wait.
muir.grid @t axes = ["tp"] shape = [2]
// CHECK-LABEL: func.func @fused_chunks
// CHECK-SAME: (%[[X:[^:]+]]: memref<8x12xf32> {{.*}}, %[[Y:[^:]+]]: memref<12x12xf32> {{.*}}, %[[Z:[^:]+]]: memref<12x12xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C5:.+]] = arith.constant 5 : index
// CHECK-DAG: %[[C12:.+]] = arith.constant 12 : index
// CHECK: muir_exec.syrk_rows %[[X]], %[[Y]] rows[%[[C0]], %[[C5]]) {alpha = 1.000000e+00 : f64, transpose} : memref<8x12xf32>, memref<12x12xf32>
// CHECK: %[[R0:.+]] = muir_exec.triangle_all_reduce_start %[[Y]] rows[%[[C0]], %[[C5]]) {group = #muir_exec.group<@t, ["tp"]>} : memref<12x12xf32>
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK: %[[LAST:.+]] = scf.for %[[J:.+]] = %[[C1]] to %[[C3]] step %[[C1]] iter_args(%[[PREV:.+]] = %[[R0]]) -> (!muir_exec.request) {
// CHECK:   %[[B:.+]] = arith.muli %[[J]], %[[C5]] : index
// CHECK:   %[[E0:.+]] = arith.addi %[[B]], %[[C5]] : index
// CHECK:   %[[E:.+]] = arith.minsi %[[E0]], %[[C12]] : index
// CHECK:   muir_exec.syrk_rows %[[X]], %[[Y]] rows[%[[B]], %[[E]])
// CHECK:   %[[R:.+]] = muir_exec.triangle_all_reduce_start %[[Y]] rows[%[[B]], %[[E]])
// The wait names its chunk's rows: the previous chunk's in the loop.
// CHECK:   %[[P0:.+]] = arith.subi %[[B]], %[[C5]] : index
// CHECK:   muir_exec.triangle_all_reduce_wait %[[PREV]], %[[Y]] rows[%[[P0]], %[[B]]) : memref<12x12xf32>
// CHECK:   scf.yield %[[R]] : !muir_exec.request
// CHECK: }
// CHECK: %[[C10:.+]] = arith.constant 10 : index
// CHECK: muir_exec.triangle_all_reduce_wait %[[LAST]], %[[Y]] rows[%[[C10]], %[[C12]]) : memref<12x12xf32>
// One chunk of every row: no loop.
// CHECK: muir_exec.syrk_rows %[[X]], %[[Z]] rows[%{{.+}}, %{{.+}})
// CHECK-NEXT: %[[W:.+]] = muir_exec.triangle_all_reduce_start %[[Z]]
// CHECK-NEXT: muir_exec.triangle_all_reduce_wait %[[W]], %[[Z]]
func.func @fused_chunks(%x: tensor<8x12xf32> {muir.name = "x"}, %y: tensor<12x12xf32> {muir.name = "y"}, %z: tensor<12x12xf32> {muir.name = "z"}) -> (tensor<12x12xf32> {muir.updates = "y"}, tensor<12x12xf32> {muir.updates = "z"}) {
  %g = muir.syrk_all_reduce %x on @t axes = ["tp"] {chunk_rows = 5 : i64, transpose} : tensor<8x12xf32> -> tensor<12x12xf32>
  %h = muir.syrk_all_reduce %x on @t axes = ["tp"] {chunk_rows = 0 : i64, transpose} : tensor<8x12xf32> -> tensor<12x12xf32>
  return %g, %h : tensor<12x12xf32>, tensor<12x12xf32>
}

// -----

// Routing: the indices, weights and counts are buffers the runtime call
// fills (i64 indices and counts), the bias an optional operand.
muir.grid @g axes = ["dp"] shape = [1]
// CHECK-LABEL: func.func @route
// CHECK-SAME: (%[[L:[^:]+]]: memref<6x8xf32> {{.*}}, %[[B:[^:]+]]: memref<8xf32> {{.*}}, %[[W:[^:]+]]: memref<6x2xf32>
// CHECK: %[[I:.+]] = memref.alloc() {{.*}} : memref<6x2xi64>
// CHECK: %[[C:.+]] = memref.alloc() {{.*}} : memref<8xi64>
// CHECK: muir_exec.route %[[L]] bias %[[B]] into %[[I]], %[[W]], %[[C]] {n_group = 4 : i64, normalize, scaling = 2.500000e+00 : f64, scoring = #muir_exec.scoring<sigmoid>, topk_group = 2 : i64} : memref<6x8xf32>, memref<8xf32> -> memref<6x2xi64>, memref<6x2xf32>, memref<8xi64>
func.func @route(%l: tensor<6x8xf32> {muir.name = "l"}, %b: tensor<8xf32> {muir.name = "b"}, %w: tensor<6x2xf32> {muir.name = "w"}) -> (tensor<6x2xf32> {muir.updates = "w"}) {
  %i, %r, %c = muir.route %l bias %b {top_k = 2, scoring = #muir<route_scoring sigmoid>, n_group = 4, topk_group = 2, normalize, scaling = 2.5} : (tensor<6x8xf32>, tensor<8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return %r : tensor<6x2xf32>
}

// -----

// A layer called on %n of its 6 rows: the rows after the count are filled
// as dropped (-1, 0) before the runtime routes %n tokens; an i64 tensor
// (tokens_per_expert) is an argument like any other.
muir.grid @g axes = ["dp"] shape = [1]
// CHECK-LABEL: func.func @route_tokens
// CHECK-SAME: %[[C:[^:]+]]: memref<8xi64> {{.*}}, %[[N:[^:]+]]: i64
// CHECK: linalg.generic {{.*}} outs(%[[I:.+]] : memref<6x2xi64>)
// CHECK: arith.constant -1 : i64
// CHECK: linalg.generic {{.*}} outs(%[[W:[^ ]+]] : memref<6x2xf32>)
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: muir_exec.route %{{.+}} into %[[I]], %[[W]], %[[C]] tokens(%[[N]])
func.func @route_tokens(%l: tensor<6x8xf32> {muir.name = "l"}, %w: tensor<6x2xf32> {muir.name = "w"}, %c: tensor<8xi64> {muir.name = "c"}, %n: i64 {muir.name = "tokens", muir.role = #muir.role<tokens>}) -> (tensor<6x2xf32> {muir.updates = "w"}, tensor<8xi64> {muir.updates = "c"}) {
  %i, %r, %k = muir.route %l tokens(%n) {top_k = 2} : (tensor<6x8xf32>, i64) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return %r, %k : tensor<6x2xf32>, tensor<8xi64>
}

// -----

// A grouped matmul reads the routed counts from their i64 buffer.
muir.grid @g axes = ["dp"] shape = [1]
// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[L:[^:]+]]: memref<6x4xf32> {{.*}}, %[[X:[^:]+]]: memref<6x8xf32> {{.*}}, %[[W:[^:]+]]: memref<4x5x8xf32> {{.*}}, %[[Y:[^:]+]]: memref<6x5xf32>
// CHECK: %[[C:.+]] = memref.alloc() {{.*}} : memref<4xi64>
// CHECK: muir_exec.route %[[L]] into %{{.+}}, %{{.+}}, %[[C]]
// CHECK: muir_exec.grouped_gemm %[[X]], %[[W]], %[[C]] into %[[Y]] {transpose_b} : memref<6x8xf32>, memref<4x5x8xf32>, memref<4xi64> -> memref<6x5xf32>
func.func @grouped(%l: tensor<6x4xf32> {muir.name = "l"}, %x: tensor<6x8xf32> {muir.name = "x"}, %w: tensor<4x5x8xf32> {muir.name = "w"}, %y: tensor<6x5xf32> {muir.name = "y"}) -> (tensor<6x5xf32> {muir.updates = "y"}) {
  %i, %r, %c = muir.route %l {top_k = 1} : (tensor<6x4xf32>) -> (tensor<6x1xi64>, tensor<6x1xf32>, tensor<4xi64>)
  %z = muir.grouped_matmul %x, %w, %c {transpose_b} : (tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi64>) -> tensor<6x5xf32>
  return %z : tensor<6x5xf32>
}

// -----

// Dispatch and combine on ep = 2 become runtime calls over the group and
// with the layer's name; the i64 counts and plan are buffers.
muir.grid @g axes = ["ep"] shape = [2]
// CHECK-LABEL: func.func @moe
// CHECK: %[[C:.+]] = memref.alloc() {{.*}} : memref<2xi64>
// CHECK: %[[P:.+]] = memref.alloc() {{.*}} : memref<24xi64>
// CHECK: muir_exec.moe_dispatch %{{.+}}, %{{.+}} into %[[R:.+]], %[[C]], %[[P]] {group = #muir_exec.group<@g, ["ep"]>, layer = "l3", num_experts = 4 : i64}
// CHECK: muir_exec.grouped_gemm %[[R]], %{{.+}}, %[[C]] into %[[Y:[^ ]+]]
// CHECK: muir_exec.moe_combine %[[Y]], %{{.+}}, %[[P]] weights %{{.+}} into %{{.+}} {group = #muir_exec.group<@g, ["ep"]>, layer = "", num_experts = 4 : i64}
func.func @moe(%l: tensor<2x4xf32> {muir.name = "l"}, %x: tensor<2x8xf32> {muir.name = "x"}, %w: tensor<2x8x8xf32> {muir.name = "w"}, %y: tensor<2x8xf32> {muir.name = "y"}) -> (tensor<2x8xf32> {muir.updates = "y"}) {
  %i, %r, %c = muir.route %l {top_k = 2} : (tensor<2x4xf32>) -> (tensor<2x2xi64>, tensor<2x2xf32>, tensor<4xi64>)
  %rows, %cnt, %plan = muir.dispatch %x, %i on @g axes = ["ep"] {num_experts = 4, layer = "l3"} : (tensor<2x8xf32>, tensor<2x2xi64>) -> (tensor<8x8xf32>, tensor<2xi64>, tensor<24xi64>)
  %o = muir.grouped_matmul %rows, %w, %cnt : (tensor<8x8xf32>, tensor<2x8x8xf32>, tensor<2xi64>) -> tensor<8x8xf32>
  %z = muir.combine %o, %i, %plan weights %r on @g axes = ["ep"] {num_experts = 4} : (tensor<8x8xf32>, tensor<2x2xi64>, tensor<24xi64>, tensor<2x2xf32>) -> tensor<2x8xf32>
  return %z : tensor<2x8xf32>
}

// -----

// A kernel that reads its init is not element-wise for the in-place plan:
// the init is copied into a fresh buffer, so x is read before it is
// overwritten (x + y, not y + y).
// CHECK-LABEL: func.func @reads_init
// CHECK-SAME: (%[[X:[^:]+]]: memref<8xf32> {muir.name = "x"}, %[[Y:[^:]+]]: memref<8xf32> {muir.name = "y"})
// CHECK: %[[T:.+]] = memref.alloc()
// CHECK-NEXT: memref.copy %[[Y]], %[[T]]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[X]] : memref<8xf32>) outs(%[[T]] : memref<8xf32>)
// CHECK: memref.copy %[[T]], %[[X]]
func.func @reads_init(%x: tensor<8xf32> {muir.name = "x"}, %y: tensor<8xf32> {muir.name = "y"}) -> (tensor<8xf32> {muir.updates = "x"}) {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%y : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Results that are other arguments (a swap) are read before any argument is
// written: y goes through a copy, and x is copied into y before the copy is
// copied into x.
// CHECK-LABEL: func.func @swap
// CHECK-SAME: (%[[X:[^:]+]]: memref<8xf32> {muir.name = "x"}, %[[Y:[^:]+]]: memref<8xf32> {muir.name = "y"})
// CHECK-NEXT: %[[T:.+]] = memref.alloc()
// CHECK-NEXT: memref.copy %[[Y]], %[[T]]
// CHECK-NEXT: memref.copy %[[X]], %[[Y]]
// CHECK-NEXT: memref.copy %[[T]], %[[X]]
// CHECK-NEXT: memref.dealloc %[[T]]
func.func @swap(%x: tensor<8xf32> {muir.name = "x"}, %y: tensor<8xf32> {muir.name = "y"}) -> (tensor<8xf32> {muir.updates = "x"}, tensor<8xf32> {muir.updates = "y"}) {
  return %y, %x : tensor<8xf32>, tensor<8xf32>
}

// -----

// The same through views of the arguments (reshapes): each is copied from
// before either argument is written.
// CHECK-LABEL: func.func @swap_views
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x4xf32> {muir.name = "x"}, %[[Y:[^:]+]]: memref<8xf32> {muir.name = "y"})
// CHECK: %[[EY:.+]] = memref.expand_shape %[[Y]]
// CHECK: %[[CX:.+]] = memref.collapse_shape %[[X]]
// CHECK: %[[T:.+]] = memref.alloc()
// CHECK-NEXT: memref.copy %[[EY]], %[[T]]
// CHECK-NEXT: memref.copy %[[CX]], %[[Y]]
// CHECK-NEXT: memref.copy %[[T]], %[[X]]
func.func @swap_views(%x: tensor<2x4xf32> {muir.name = "x"}, %y: tensor<8xf32> {muir.name = "y"}) -> (tensor<2x4xf32> {muir.updates = "x"}, tensor<8xf32> {muir.updates = "y"}) {
  %ey = tensor.expand_shape %y [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %cx = tensor.collapse_shape %x [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  return %ey, %cx : tensor<2x4xf32>, tensor<8xf32>
}

// -----

// A pass-through result (y takes x's value before the step) is copied
// before x is overwritten.
// CHECK-LABEL: func.func @pass_through
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x4xf32> {muir.name = "x"}, %[[Y:[^:]+]]: memref<2x4xf32> {muir.name = "y"})
// CHECK: muir_exec.scale_by_norm %[[X]], %{{.+}}, %[[S:[^ ]+]]
// CHECK-NEXT: memref.copy %[[X]], %[[Y]]
// CHECK-NEXT: memref.copy %[[S]], %[[X]]
func.func @pass_through(%x: tensor<2x4xf32> {muir.name = "x"}, %y: tensor<2x4xf32> {muir.name = "y"}) -> (tensor<2x4xf32> {muir.updates = "x"}, tensor<2x4xf32> {muir.updates = "y"}) {
  %n = muir.sum_squares %x : tensor<2x4xf32> -> tensor<1xf32>
  %s = muir.scale_by_norm %x, %n : tensor<2x4xf32>, tensor<1xf32>
  return %s, %x : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Constants become globals; where the module already has a symbol of a
// global's name, the global (and its use) is renamed, and each exchange
// still reads its own counts.
muir.grid @w2 axes = ["dp"] shape = [2]
memref.global "private" constant @__constant_2xi64 : memref<2xi64> = dense<7>
// CHECK-DAG: memref.global "private" constant @[[A:[^ ]+]] : memref<2xi64, #muir_exec.host> = dense<1>
// CHECK-DAG: memref.global "private" constant @[[B:[^ ]+]] : memref<2xi64, #muir_exec.host> = dense<2>
// CHECK-DAG: memref.global "private" constant @__constant_2xi64 : memref<2xi64> = dense<7>
// CHECK-LABEL: func.func @renamed
// CHECK: %[[GA:.+]] = memref.get_global @[[A]]
// CHECK: muir_exec.all_to_allv %{{.+}}, %[[GA]],
// CHECK: %[[GB:.+]] = memref.get_global @[[B]]
// CHECK: muir_exec.all_to_allv %{{.+}}, %[[GB]],
func.func @renamed(%x: tensor<8xf32> {muir.name = "x"}) -> (tensor<8xf32> {muir.updates = "x"}) {
  %a = arith.constant dense<1> : tensor<2xi64>
  %r:2 = muir.all_to_allv %x, %a on @w2 axes = ["dp"] : (tensor<8xf32>, tensor<2xi64>) -> (tensor<4xf32>, tensor<2xi64>)
  %b = arith.constant dense<2> : tensor<2xi64>
  %s:2 = muir.all_to_allv %r#0, %b on @w2 axes = ["dp"] : (tensor<4xf32>, tensor<2xi64>) -> (tensor<8xf32>, tensor<2xi64>)
  return %s#0 : tensor<8xf32>
}

// -----

// A loop carrying a tensor that each step computes anew (a Newton-Schulz
// iterate): each step's other buffer (the Gram matrix) is allocated once,
// before the loop, and the iterate alternates between two buffers made
// before it; the step writes the one it does not read, and the loop yields
// the pair swapped. The initial value (read again after the loop) keeps
// its own buffer: the first of the pair is one-shot's copy of it.
// Everything is freed after the loop.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[X:.+]]: memref<4x8xf32> {muir.name = "x"}, %[[S:.+]]: f64 {muir.name = "s"})
// CHECK: %[[N:.+]] = memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK: muir_exec.frobenius_normalize %[[X]], %[[N]]
// CHECK: %[[FIRST:.+]] = memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK-NEXT: memref.copy %[[N]], %[[FIRST]]
// CHECK-NEXT: %[[G:.+]] = memref.alloc() {{.*}} : memref<4x4xf32>
// CHECK-NEXT: %[[SPARE:.+]] = memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK: %[[R:.+]]:2 = scf.for {{.*}} iter_args(%[[CUR:.+]] = %[[FIRST]], %[[NEXT:.+]] = %[[SPARE]]) -> (memref<4x8xf32>, memref<4x8xf32>) {
// CHECK-NOT: memref.alloc
// CHECK: muir_exec.gemm %[[CUR]], %[[CUR]], %[[G]]
// CHECK: muir_exec.gemm %[[G]], %[[CUR]], %[[NEXT]] acc %[[CUR]] beta(%[[S]])
// CHECK-NEXT: scf.yield %[[NEXT]], %[[CUR]]
// CHECK: linalg.generic {{.*}} ins(%[[R]]#0, %[[N]] : {{.*}}) outs(%[[X]] :
// CHECK-DAG: memref.dealloc %[[G]]
// CHECK-DAG: memref.dealloc %[[SPARE]]
// CHECK-DAG: memref.dealloc %[[FIRST]]
// CHECK-DAG: memref.dealloc %[[N]]
func.func @loop(%x: tensor<4x8xf32> {muir.name = "x"}, %s: f64 {muir.name = "s"}) -> (tensor<4x8xf32> {muir.updates = "x"}) {
  %n = muir.frobenius_normalize %x : tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %k = %c0 to %c3 step %c1 iter_args(%xk = %n) -> (tensor<4x8xf32>) {
    %g = muir.matmul %xk, %xk {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
    %x1 = muir.matmul %g, %xk acc %xk beta(%s) : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, f64) -> tensor<4x8xf32>
    scf.yield %x1 : tensor<4x8xf32>
  }
  %y = muir.add %r, %n : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
