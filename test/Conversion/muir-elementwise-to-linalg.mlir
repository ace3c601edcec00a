// RUN: muir-opt %s --split-input-file --muir-elementwise-to-linalg | FileCheck %s
// RUN: muir-opt %s --split-input-file --muir-elementwise-to-linalg --linalg-fuse-elementwise-ops | FileCheck %s --check-prefix=FUSED

// Momentum (EMA, Nesterov): one generic with two results over unread
// tensor.empty inits; the coefficients are f32 constants outside it.
// CHECK-LABEL: func.func @momentum
// CHECK-SAME: (%[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>)
// CHECK-DAG: %[[BETA:.+]] = arith.constant 0.949999988 : f32
// CHECK-DAG: %[[ONEMB:.+]] = arith.constant 5.000000e-02 : f32
// CHECK-DAG: %[[E0:.+]] = tensor.empty() : tensor<4x8xf32>
// CHECK-DAG: %[[E1:.+]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[R:.+]]:2 = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[G]], %[[M]] : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[E0]], %[[E1]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[g:[^:]+]]: f32, %[[m:[^:]+]]: f32, %{{[^:]+}}: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[GT:.+]] = arith.mulf %[[ONEMB]], %[[g]] : f32
// CHECK-NEXT: %[[BM:.+]] = arith.mulf %[[BETA]], %[[m]] : f32
// CHECK-NEXT: %[[NEWM:.+]] = arith.addf %[[BM]], %[[GT]] : f32
// CHECK-NEXT: %[[BN:.+]] = arith.mulf %[[BETA]], %[[NEWM]] : f32
// CHECK-NEXT: %[[U:.+]] = arith.addf %[[GT]], %[[BN]] : f32
// CHECK-NEXT: linalg.yield %[[U]], %[[NEWM]] : f32, f32
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @momentum(%g: tensor<4x8xf32>, %m: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %u, %m1 = muir.momentum %g, %m {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<4x8xf32>
  return %u, %m1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Run-time hyperparameters: lr * scale and 1 - lr * wd in f64, each
// rounded to f32 once, before the kernel.
// CHECK-LABEL: func.func @apply_update
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8xf32>, %[[X:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: f64, %[[WD:[^:]+]]: f64)
// CHECK: %[[LRWD:.+]] = arith.mulf %[[LR]], %[[WD]] : f64
// CHECK: %[[KEEP64:.+]] = arith.subf %{{.+}}, %[[LRWD]] : f64
// CHECK: %[[KEEP:.+]] = arith.truncf %[[KEEP64]] : f64 to f32
// CHECK: %[[STEP64:.+]] = arith.mulf %[[LR]], %{{.+}} : f64
// CHECK: %[[STEP:.+]] = arith.truncf %[[STEP64]] : f64 to f32
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[X]] : tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[w:[^:]+]]: f32, %[[x:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[KEPT:.+]] = arith.mulf %[[w]], %[[KEEP]] : f32
// CHECK-NEXT: %[[DELTA:.+]] = arith.mulf %[[STEP]], %[[x]] : f32
// CHECK-NEXT: %[[NEW:.+]] = arith.subf %[[KEPT]], %[[DELTA]] : f32
// CHECK-NEXT: linalg.yield %[[NEW]] : f32
func.func @apply_update(%w: tensor<8xf32>, %x: tensor<8xf32>, %lr: f64, %wd: f64) -> tensor<8xf32> {
  %w1 = muir.apply_update %w, %x hyper(%lr, %wd) {lr = 0.02, scale = 0.5, weight_decay = 0.1} : tensor<8xf32>
  return %w1 : tensor<8xf32>
}

// -----

// The diagonal shift reads the element's indices; a precision change of a
// whole tensor takes upstream's pattern.
// CHECK-LABEL: func.func @diagonal
// CHECK: %[[XD:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<2x3x3xf32>) outs(%{{.+}} : tensor<2x3x3xf64>)
// CHECK: arith.extf %{{.+}} : f32 to f64
// CHECK: linalg.generic {{.*}} ins(%[[XD]] : tensor<2x3x3xf64>) outs(%{{.+}} : tensor<2x3x3xf64>)
// CHECK: %[[R:.+]] = linalg.index 1 : index
// CHECK: %[[C:.+]] = linalg.index 2 : index
// CHECK: %[[ON:.+]] = arith.cmpi eq, %[[R]], %[[C]] : index
// CHECK: %[[V:.+]] = arith.constant 2.500000e-01 : f64
// CHECK: %[[S:.+]] = arith.addf %{{.+}}, %[[V]] : f64
// CHECK: arith.select %[[ON]], %[[S]], %{{.+}} : f64
func.func @diagonal(%x: tensor<2x3x3xf32>) -> tensor<2x3x3xf64> {
  %xd = arith.extf %x : tensor<2x3x3xf32> to tensor<2x3x3xf64>
  %y = muir.add_diagonal %xd, 0.25 : tensor<2x3x3xf64>
  return %y : tensor<2x3x3xf64>
}

// -----

// SwiGLU of a sum: two kernels, which linalg's element-wise fusion turns
// into one.
// CHECK-LABEL: func.func @add_swiglu
// CHECK-COUNT-2: linalg.generic
// FUSED-LABEL: func.func @add_swiglu
// FUSED: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<8x24xf32>, tensor<8x24xf32>, tensor<8x24xf32>)
// FUSED: arith.addf
// FUSED: math.exp
// FUSED-NOT: linalg.generic
func.func @add_swiglu(%a: tensor<8x24xf32>, %b: tensor<8x24xf32>, %u: tensor<8x24xf32>) -> tensor<8x24xf32> {
  %g = muir.add %a, %b : tensor<8x24xf32>
  %h = muir.swiglu %g, %u : tensor<8x24xf32>
  return %h : tensor<8x24xf32>
}

// -----

// Renumbered experts: a compare and a select per index the map moves (2
// and 4 swap places; 0, 1, 3 and -1, a dropped slot, stay).
// CHECK-LABEL: func.func @renumber
// FUSED-LABEL: func.func @renumber
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<6x2xi64>)
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: i64, %{{[^:]+}}: i64):
// CHECK-NEXT: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[IS2:.+]] = arith.cmpi eq, %[[X]], %[[C2]] : i64
// CHECK-NEXT: %[[TO4:.+]] = arith.constant 4 : i64
// CHECK-NEXT: %[[S2:.+]] = arith.select %[[IS2]], %[[TO4]], %[[X]] : i64
// CHECK-NEXT: %[[C4:.+]] = arith.constant 4 : i64
// CHECK-NEXT: %[[IS4:.+]] = arith.cmpi eq, %[[X]], %[[C4]] : i64
// CHECK-NEXT: %[[TO2:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[S4:.+]] = arith.select %[[IS4]], %[[TO2]], %[[S2]] : i64
// CHECK-NEXT: linalg.yield %[[S4]] : i64
func.func @renumber(%i: tensor<6x2xi64>) -> tensor<6x2xi64> {
  %r = muir.renumber %i map = [0, 1, 4, 3, 2] : tensor<6x2xi64>
  return %r : tensor<6x2xi64>
}

// -----

// A take flag selects, in the kernel, between each computed value and the
// one it replaces (U: 0), so a skipped update writes back the same bits and
// needs no copy of the old tensor.
// CHECK-LABEL: func.func @take_flags
// CHECK-SAME: (%[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>, %[[W:[^:]+]]: tensor<4x8xf32>, %[[V:[^:]+]]: tensor<4x8xf32>, %[[T:[^:]+]]: i1, %[[S:[^:]+]]: i64)
// CHECK: linalg.generic {{.*}} ins(%[[G]], %[[M]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%{{[^:]+}}: f32, %[[m:[^:]+]]: f32, %{{[^:]+}}: f32, %{{[^:]+}}: f32):
// CHECK: %[[NEWM:.+]] = arith.addf
// CHECK: %[[UPD:.+]] = arith.addf
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[U:.+]] = arith.select %[[T]], %[[UPD]], %[[ZERO]] : f32
// CHECK-NEXT: %[[M1:.+]] = arith.select %[[T]], %[[NEWM]], %[[m]] : f32
// CHECK-NEXT: linalg.yield %[[U]], %[[M1]] : f32, f32
// CHECK: linalg.generic {{.*}} ins(%[[W]], %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[w:[^:]+]]: f32, %{{[^:]+}}: f32, %{{[^:]+}}: f32):
// CHECK: %[[NEW:.+]] = arith.subf
// CHECK-NEXT: %[[W1:.+]] = arith.select %[[T]], %[[NEW]], %[[w]] : f32
// CHECK-NEXT: linalg.yield %[[W1]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[G]], %[[M]], %[[V]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[aw:[^:]+]]: f32, %{{[^:]+}}: f32, %[[am:[^:]+]]: f32, %[[av:[^:]+]]: f32, %{{[^:]+}}: f32, %{{[^:]+}}: f32, %{{[^:]+}}: f32):
// CHECK: %[[P:.+]] = arith.subf
// CHECK-NEXT: %[[P1:.+]] = arith.select %[[T]], %[[P]], %[[aw]] : f32
// CHECK-NEXT: %[[M2:.+]] = arith.select %[[T]], %{{.+}}, %[[am]] : f32
// CHECK-NEXT: %[[V2:.+]] = arith.select %[[T]], %{{.+}}, %[[av]] : f32
// CHECK-NEXT: linalg.yield %[[P1]], %[[M2]], %[[V2]] : f32, f32, f32
// FUSED-LABEL: func.func @take_flags
func.func @take_flags(%g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %w: tensor<4x8xf32>, %v: tensor<4x8xf32>, %t: i1, %s: i64) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %u, %m1 = muir.momentum %g, %m take(%t) {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<4x8xf32>
  %w1 = muir.apply_update %w, %u take(%t) {lr = 0.02, scale = 0.5, weight_decay = 0.1} : tensor<4x8xf32>
  %w2, %m2, %v2 = muir.adamw_update %w, %g, %m, %v step %s take(%t) {lr = 1.0e-3} : tensor<4x8xf32>
  return %u, %m1, %w1, %w2, %m2, %v2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// f64 tensors (an f64 parameter, computed in f64): the coefficients are f64
// constants or the f64 hyperparameters as they are, never rounded to f32.
// CHECK-LABEL: func.func @f64_update
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8xf64>, %[[G:[^:]+]]: tensor<8xf64>, %[[M:[^:]+]]: tensor<8xf64>, %[[V:[^:]+]]: tensor<8xf64>, %[[S:[^:]+]]: i64, %[[LR:[^:]+]]: f64, %[[WD:[^:]+]]: f64, %[[B:[^:]+]]: f64)
// CHECK-NOT: arith.truncf
// CHECK: %[[BETA:.+]] = arith.constant 0.94999999999999996 : f64
// CHECK: linalg.generic {{.*}} ins(%[[G]], %[[M]] : tensor<8xf64>, tensor<8xf64>)
// CHECK: arith.mulf %[[BETA]], %{{.+}} : f64
// CHECK-NOT: arith.truncf
// CHECK: linalg.generic {{.*}} ins(%[[W]], %{{.+}} : tensor<8xf64>, tensor<8xf64>)
// CHECK-NOT: arith.truncf
// CHECK: %[[ONEMB:.+]] = arith.subf %{{.+}}, %[[B]] : f64
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[G]], %[[M]], %[[V]] : tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>)
// CHECK: arith.mulf %[[B]], %{{.+}} : f64
// CHECK-NEXT: arith.mulf %[[ONEMB]], %{{.+}} : f64
// CHECK-NOT: arith.truncf
// FUSED-LABEL: func.func @f64_update
func.func @f64_update(%w: tensor<8xf64>, %g: tensor<8xf64>, %m: tensor<8xf64>, %v: tensor<8xf64>, %s: i64, %lr: f64, %wd: f64, %b: f64) -> (tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>) {
  %u, %m1 = muir.momentum %g, %m {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<8xf64>
  %w1 = muir.apply_update %w, %u hyper(%lr, %wd) {lr = 0.02, scale = 0.5, weight_decay = 0.1} : tensor<8xf64>
  %w2, %m2, %v2 = muir.adamw_update %w, %g, %m, %v step %s hyper(%lr, %wd, %b, %b, %b) {lr = 1.0e-3} : tensor<8xf64>
  return %u, %m1, %w1, %w2, %m2, %v2 : tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>
}

// -----

// NorMuon's row statistics: a reduction over the last dimension into a
// zero-filled [B, m] (x * x added in column order), then v' element-wise
// over the rows and P over the matrix, reading each row's v' through a map
// that drops the column.
// CHECK-LABEL: func.func @normuon_rows
// CHECK: %[[Z:.+]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}} : tensor<2x4x8xf32>) outs(%[[Z]] : tensor<2x4xf32>)
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<2x4xf32>)
// CHECK: math.sqrt
// CHECK-NEXT: arith.addf
// CHECK-NEXT: arith.divf
// FUSED-LABEL: func.func @normuon_rows
func.func @normuon_rows(%o: tensor<2x4x8xf32>, %v: tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>) {
  %s = muir.row_sum_squares %o : tensor<2x4x8xf32> -> tensor<2x4xf32>
  %p, %v1 = muir.normuon_normalize %o, %s, %v {beta2 = 0.9, eps2 = 1.0e-8, columns = 8} : tensor<2x4x8xf32>, tensor<2x4xf32>
  return %p, %v1 : tensor<2x4x8xf32>, tensor<2x4xf32>
}

// -----

// QK-clip: the smallest gamma of each head's group (a reduction over the
// logits seen as [heads, group]), its square root once per row (1 where
// take is false), then the matrix scaled row by row in place (it is the
// last generic's destination: the updated buffer, not a copy).
// CHECK-LABEL: func.func @qk_clip
// CHECK: %[[G:.+]] = tensor.expand_shape %arg1 {{\[\[}}0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
// CHECK: %[[ONES:.+]] = linalg.fill
// CHECK: %[[MIN:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[G]] : tensor<2x4xf32>) outs(%[[ONES]] : tensor<2xf32>)
// CHECK: arith.cmpf ogt
// CHECK-NEXT: arith.divf
// CHECK-NEXT: arith.select
// CHECK-NEXT: arith.minimumf
// CHECK: %[[S:.+]] = linalg.generic {{.*}} ins(%[[MIN]] : tensor<2xf32>) outs(%{{.+}} : tensor<2x8xf32>)
// CHECK: math.sqrt
// CHECK-NEXT: arith.select %arg2
// CHECK: %[[R:.+]] = tensor.collapse_shape %[[S]] {{\[\[}}0, 1]] : tensor<2x8xf32> into tensor<16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[R]] : tensor<16xf32>) outs(%arg0 : tensor<16x16xf32>)
// CHECK: arith.mulf
// FUSED-LABEL: func.func @qk_clip
func.func @qk_clip(%k: tensor<16x16xf32>, %x: tensor<8xf32>, %t: i1) -> tensor<16x16xf32> {
  %c = muir.qk_clip %k, %x take(%t) {tau = 100.0, head_rows = 8, group = 4} : tensor<16x16xf32>, tensor<8xf32>
  return %c : tensor<16x16xf32>
}

// -----

// f64 (an f64 parameter's NorMuon and QK-clip): the norm's sums of squares
// and its scaling are generated loops in f64 (the runtime's are f32): a
// matrix's one sum a scalar reduced over both dimensions, a stack's one per
// matrix; the scale 1 / (sqrt(s) + eps) once per matrix, then a multiply.
// The clip takes f32 logits and computes its factors in f64. f32 sums stay
// runtime calls.
// CHECK-LABEL: func.func @f64_norm
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<f64>)
// CHECK: %[[S:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%arg0 : tensor<4x8xf64>) outs(%[[Z]] : tensor<f64>)
// CHECK: %[[S1:.+]] = tensor.expand_shape %[[S]] [] output_shape [1] : tensor<f64> into tensor<1xf64>
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[S1]] [] : tensor<1xf64> into tensor<f64>
// CHECK: %[[K:.+]] = linalg.generic {{.*}} ins(%[[C]] : tensor<f64>)
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[K]] : tensor<4x8xf64>, tensor<f64>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]} ins(%arg1 : tensor<2x4x8xf64>) outs(%{{.+}} : tensor<2xf64>)
// CHECK: muir.sum_squares %arg2 : tensor<4x8xf32> -> tensor<1xf32>
// CHECK: tensor.expand_shape %arg3 {{\[\[}}0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
// CHECK: arith.extf %{{.+}} : f32 to f64
// FUSED-LABEL: func.func @f64_norm
func.func @f64_norm(%x: tensor<4x8xf64>, %st: tensor<2x4x8xf64>, %y: tensor<4x8xf32>, %l: tensor<4xf32>) -> (tensor<4x8xf64>, tensor<2xf64>, tensor<1xf32>, tensor<4x8xf64>) {
  %s = muir.sum_squares %x : tensor<4x8xf64> -> tensor<1xf64>
  %n = muir.scale_by_norm %x, %s {eps = 1.0e-30} : tensor<4x8xf64>, tensor<1xf64>
  %t = muir.sum_squares %st : tensor<2x4x8xf64> -> tensor<2xf64>
  %u = muir.sum_squares %y : tensor<4x8xf32> -> tensor<1xf32>
  %c = muir.qk_clip %n, %l {tau = 50.0, head_rows = 2, group = 2} : tensor<4x8xf64>, tensor<4xf32>
  return %n, %t, %u, %c : tensor<4x8xf64>, tensor<2xf64>, tensor<1xf32>, tensor<4x8xf64>
}
