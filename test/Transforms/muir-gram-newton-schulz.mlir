// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz=ns-form=gram | FileCheck %s --check-prefix=GRAM
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz | FileCheck %s --check-prefix=AUTO
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz=ns-form=standard | FileCheck %s --check-prefix=STD
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz="ns-form=gram syrk=false" | FileCheck %s --check-prefix=NOSYRK
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz=ns-form=gram --muir-expand-newton-schulz --muir-lower-to-exec | FileCheck %s --check-prefix=EXEC

// A wide 24x4096 matrix, 3 quintic steps: A0 = X X^T with its products
// summed in f64 (an f32 operand, an f64 result), normalised on the small
// matrix (trace(A0) = ||X||_F^2); per step B = b A + c A A (SYRK with
// accumulator), Q = a I + B first and a Q + B Q after, A = A P^2 with
// P^2 = B B + 2 a B + a^2 I (not after the last step); then s Q in f32
// times X. The first step is written out; steps 1 and 2 are one loop whose
// body begins with the previous step's A = A P^2 and reads the previous
// and its own step's coefficients from the table. The products of
// commuting symmetric matrices are marked symmetric. Auto picks it.
// GRAM-LABEL: func.func @wide
// GRAM: %[[A0:.+]] = muir.syrk %arg0 : (tensor<24x4096xf32>) -> tensor<24x24xf64>
// GRAM: %[[A:.+]], %[[S:.+]] = muir.trace_normalize %[[A0]] : tensor<24x24xf64> -> tensor<24x24xf64>, tensor<1xf64>
// GRAM: %[[T:.+]] = arith.constant dense<{{\[}}[4.084800e+00, -6.894600e+00, 2.927000e+00], [3.950500e+00, -6.302900e+00, 2.637700e+00], [3.741800e+00, -5.591300e+00, 2.303700e+00]]> : tensor<3x3xf64>
// GRAM: %[[B0:.+]] = muir.syrk %[[A]] acc %[[A]] {alpha = 2.927000e+00 : f64, beta = -6.894600e+00 : f64}
// GRAM: %[[Q0:.+]] = muir.add_diagonal %[[B0]], 4.084800e+00 : tensor<24x24xf64>
// GRAM: %[[HI:.+]] = arith.constant 3 : index
// GRAM: %[[R:.+]]:3 = scf.for %[[K:.+]] = %{{.+}} to %[[HI]] step %{{.+}} iter_args(%[[AK:.+]] = %[[A]], %[[BP:.+]] = %[[B0]], %[[QK:.+]] = %[[Q0]])
// GRAM: %[[KP:.+]] = arith.subi %[[K]], %{{.+}} : index
// GRAM: %[[RP:.+]] = arith.minui %[[KP]], %{{.+}} : index
// GRAM: %[[AP:.+]] = tensor.extract %[[T]][%[[RP]], %{{.+}}] : tensor<3x3xf64>
// GRAM: %[[RK:.+]] = arith.minui %[[K]], %{{.+}} : index
// GRAM: %[[CA:.+]] = tensor.extract %[[T]][%[[RK]], %{{.+}}] : tensor<3x3xf64>
// GRAM: %[[CB:.+]] = tensor.extract %[[T]][%[[RK]], %{{.+}}] : tensor<3x3xf64>
// GRAM: %[[CC:.+]] = tensor.extract %[[T]][%[[RK]], %{{.+}}] : tensor<3x3xf64>
// GRAM: %[[TWOA:.+]] = arith.addf %[[AP]], %[[AP]] : f64
// GRAM: %[[ASQ:.+]] = arith.mulf %[[AP]], %[[AP]] : f64
// GRAM: %[[P2:.+]] = muir.syrk %[[BP]] acc %[[BP]] beta(%[[TWOA]])
// GRAM: %[[P2I:.+]] = muir.add_diagonal %[[P2]], %[[ASQ]] : tensor<24x24xf64>
// GRAM: %[[A1:.+]] = muir.matmul %[[AK]], %[[P2I]] {symmetric}
// GRAM: %[[B1:.+]] = muir.syrk %[[A1]] acc %[[A1]] alpha(%[[CC]]) beta(%[[CB]])
// GRAM: %[[Q1:.+]] = muir.matmul %[[B1]], %[[QK]] acc %[[QK]] beta(%[[CA]]) {symmetric}
// GRAM: scf.yield %[[A1]], %[[B1]], %[[Q1]]
// GRAM: %[[QF:.+]] = muir.scale_matrices %[[R]]#2, %[[S]] : tensor<24x24xf64>, tensor<1xf64> -> tensor<24x24xf32>
// GRAM: %[[X:.+]] = muir.matmul %[[QF]], %arg0 {muir.ns_form = #muir.ns_form<gram>, muir.ns_form_cost = #muir.ns_form_cost<standard = {{.*}} s, gram = {{.*}} s>} : (tensor<24x24xf32>, tensor<24x4096xf32>) -> tensor<24x4096xf32>
// GRAM: return %[[X]]
// AUTO-LABEL: func.func @wide
// AUTO-NOT: muir.newton_schulz
// AUTO: muir.ns_form = #muir.ns_form<gram>
// STD-LABEL: func.func @wide
// STD: muir.newton_schulz %arg0 steps(3) schedule(quintic) {muir.ns_form = #muir.ns_form<standard>, muir.ns_form_cost = #muir.ns_form_cost<standard = {{.*}} s, gram = {{.*}} s>} : tensor<24x4096xf32>
// NOSYRK-LABEL: func.func @wide
// NOSYRK-NOT: muir.syrk
// NOSYRK: %[[XD:.+]] = arith.extf %arg0 : tensor<24x4096xf32> to tensor<24x4096xf64>
// NOSYRK: muir.matmul %[[XD]], %[[XD]] {transpose_b} : (tensor<24x4096xf64>, tensor<24x4096xf64>) -> tensor<24x24xf64>
// NOSYRK-NOT: muir.syrk
// EXEC-LABEL: func.func @wide
// EXEC: muir_exec.syrk {{.*}}: memref<24x4096xf32>, memref<24x24xf64>
// EXEC: muir_exec.trace_normalize %{{.*}} : memref<24x24xf64>, memref<24x24xf64>, memref<1xf64>
// EXEC: linalg.index 0
// EXEC: linalg.index 1
// EXEC: muir_exec.gemm {{.*}}symmetric{{.*}} : memref<24x24xf64>, memref<24x24xf64>, memref<24x24xf64>
// EXEC: muir_exec.scale_matrices %{{.*}} : memref<24x24xf64>, memref<1xf64>, memref<24x24xf32>
// EXEC: muir_exec.gemm {{.*}} : memref<24x24xf32>, memref<24x4096xf32>, memref<24x4096xf32>
func.func @wide(%w: tensor<24x4096xf32> {muir.name = "w"}) -> (tensor<24x4096xf32> {muir.updates = "w"}) {
  %0 = muir.newton_schulz %w steps(3) schedule(quintic) : tensor<24x4096xf32>
  return %0 : tensor<24x4096xf32>
}

// -----

// A tall matrix iterates as its transpose, without transposing: A0 =
// X^T X (SYRK with transpose) and X (s Q).
// GRAM-LABEL: func.func @tall
// GRAM: muir.syrk %arg0 {transpose} : (tensor<512x16xf32>) -> tensor<16x16xf64>
// GRAM: %[[QF:.+]] = muir.scale_matrices
// GRAM: muir.matmul %arg0, %[[QF]] {muir.ns_form = #muir.ns_form<gram>{{.*}}} : (tensor<512x16xf32>, tensor<16x16xf32>) -> tensor<512x16xf32>
// AUTO-LABEL: func.func @tall
// AUTO: muir.ns_form = #muir.ns_form<gram>
func.func @tall(%t: tensor<512x16xf32> {muir.name = "t"}) -> (tensor<512x16xf32> {muir.updates = "t"}) {
  %0 = muir.newton_schulz %t steps(5) schedule(simple) : tensor<512x16xf32>
  return %0 : tensor<512x16xf32>
}

// -----

// A batch (an expert stack, or matrices muir-batch-newton-schulz joined)
// keeps its batch dimension through the Gram form.
// GRAM-LABEL: func.func @stack
// GRAM: muir.syrk %arg0 : (tensor<4x16x256xf32>) -> tensor<4x16x16xf64>
// GRAM: muir.trace_normalize %{{.*}} -> tensor<4x16x16xf64>, tensor<4xf64>
// GRAM: muir.add_diagonal %{{.*}}, 3.444500e+00 : tensor<4x16x16xf64>
// GRAM: muir.matmul %{{.*}}, %{{.*}} {muir.ns_form = #muir.ns_form<gram>{{.*}}} : (tensor<4x16x16xf32>, tensor<4x16x256xf32>) -> tensor<4x16x256xf32>
func.func @stack(%s: tensor<4x16x256xf32> {muir.name = "s"}) -> (tensor<4x16x256xf32> {muir.updates = "s"}) {
  %0 = muir.newton_schulz %s steps(5) schedule(simple) : tensor<4x16x256xf32>
  return %0 : tensor<4x16x256xf32>
}

// -----

// A square matrix stays standard under auto (the Gram matrix is as large
// as X); with ns-form=gram it is still rewritten, as asked.
// AUTO-LABEL: func.func @square
// AUTO: muir.newton_schulz %arg0 steps(5) schedule(simple) {muir.ns_form = #muir.ns_form<standard>, muir.ns_form_cost = #muir.ns_form_cost<standard = {{.*}} s, gram = {{.*}} s>} : tensor<128x128xf32>
// GRAM-LABEL: func.func @square
// GRAM-NOT: muir.newton_schulz
// GRAM: muir.ns_form = #muir.ns_form<gram>
func.func @square(%s: tensor<128x128xf32> {muir.name = "s"}) -> (tensor<128x128xf32> {muir.updates = "s"}) {
  %0 = muir.newton_schulz %s steps(5) schedule(simple) : tensor<128x128xf32>
  return %0 : tensor<128x128xf32>
}

// -----

// An aspect of 2 at two steps: the model keeps the standard form on the
// CPU profile (the f64 products cost 2.3x the f32 ones here).
// AUTO-LABEL: func.func @near_square
// AUTO: muir.newton_schulz {{.*}} {muir.ns_form = #muir.ns_form<standard>
func.func @near_square(%s: tensor<256x512xf32> {muir.name = "s"}) -> (tensor<256x512xf32> {muir.updates = "s"}) {
  %0 = muir.newton_schulz %s steps(2) schedule(simple) : tensor<256x512xf32>
  return %0 : tensor<256x512xf32>
}

// -----

// A bf16 iterate keeps the standard form even where the Gram form is
// asked for (it iterates in f64).
// GRAM-LABEL: func.func @bf16_standard
// GRAM: muir.newton_schulz {{.*}}muir.ns_form = #muir.ns_form<standard>{{.*}}precision = #muir.ns_precision<bf16>
// GRAM-NOT: muir.trace_normalize
func.func @bf16_standard(%x: tensor<128x1024xf32> {muir.name = "x"}) -> (tensor<128x1024xf32> {muir.updates = "x"}) {
  %y = muir.newton_schulz %x steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<128x1024xf32>
  return %y : tensor<128x1024xf32>
}

// -----

// An f64 matrix iterates in f64 already: the standard form, even where the
// Gram form is asked for.
// GRAM-LABEL: func.func @f64_standard
// GRAM: muir.newton_schulz {{.*}}muir.ns_form = #muir.ns_form<standard>{{.*}} : tensor<128x1024xf64>
// GRAM-NOT: muir.trace_normalize
func.func @f64_standard(%x: tensor<128x1024xf64> {muir.name = "x"}) -> (tensor<128x1024xf64> {muir.updates = "x"}) {
  %y = muir.newton_schulz %x steps(5) schedule(simple) : tensor<128x1024xf64>
  return %y : tensor<128x1024xf64>
}
