// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz=ns-form=gram | FileCheck %s --check-prefix=GRAM
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz | FileCheck %s --check-prefix=AUTO
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz=ns-form=standard | FileCheck %s --check-prefix=STD
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz="ns-form=gram syrk=false" | FileCheck %s --check-prefix=NOSYRK
// RUN: muir-opt %s --split-input-file --muir-gram-newton-schulz=ns-form=gram --muir-expand-newton-schulz --muir-lower-to-exec | FileCheck %s --check-prefix=EXEC

// A wide 24x4096 matrix, 3 quintic steps: A0 = X0 X0^T in f64, per step
// B = b A + c A A (SYRK with accumulator), Q = a I + B first and a Q + B Q
// after, A = P A P as R = a A + B A, a R + B R (not after the last step),
// then Q in f32 times X0. Auto picks it (the model: about 5x cheaper).
// GRAM-LABEL: func.func @wide
// GRAM: %[[X0:.+]] = muir.frobenius_normalize %arg0 : tensor<24x4096xf32>
// GRAM: %[[XD:.+]] = arith.extf %[[X0]] : tensor<24x4096xf32> to tensor<24x4096xf64>
// GRAM: %[[A0:.+]] = muir.syrk %[[XD]] : (tensor<24x4096xf64>) -> tensor<24x24xf64>
// GRAM: %[[B0:.+]] = muir.syrk %[[A0]] acc %[[A0]] {alpha = 2.927000e+00 : f64, beta = -6.894600e+00 : f64}
// GRAM: %[[Q0:.+]] = muir.add_diagonal %[[B0]], 4.084800e+00 : tensor<24x24xf64>
// GRAM: %[[R0:.+]] = muir.matmul %[[B0]], %[[A0]] acc %[[A0]] {beta = 4.084800e+00 : f64}
// GRAM: %[[A1:.+]] = muir.matmul %[[B0]], %[[R0]] acc %[[R0]] {beta = 4.084800e+00 : f64}
// GRAM: %[[B1:.+]] = muir.syrk %[[A1]] acc %[[A1]] {alpha = 2.637700e+00 : f64, beta = -6.302900e+00 : f64}
// GRAM: %[[Q1:.+]] = muir.matmul %[[B1]], %[[Q0]] acc %[[Q0]] {beta = 3.950500e+00 : f64}
// GRAM: %[[R1:.+]] = muir.matmul %[[B1]], %[[A1]] acc %[[A1]] {beta = 3.950500e+00 : f64}
// GRAM: %[[A2:.+]] = muir.matmul %[[B1]], %[[R1]] acc %[[R1]] {beta = 3.950500e+00 : f64}
// GRAM: %[[B2:.+]] = muir.syrk %[[A2]] acc %[[A2]] {alpha = 2.303700e+00 : f64, beta = -5.591300e+00 : f64}
// GRAM: %[[Q2:.+]] = muir.matmul %[[B2]], %[[Q1]] acc %[[Q1]] {beta = 3.741800e+00 : f64}
// GRAM-NOT: muir.matmul %[[B2]]
// GRAM: %[[QF:.+]] = arith.truncf %[[Q2]] : tensor<24x24xf64> to tensor<24x24xf32>
// GRAM: %[[X:.+]] = muir.matmul %[[QF]], %[[X0]] {muir.ns_form = #muir.ns_form<gram>, muir.ns_form_cost = array<f64: {{.*}}>} : (tensor<24x24xf32>, tensor<24x4096xf32>) -> tensor<24x4096xf32>
// GRAM: return %[[X]]
// AUTO-LABEL: func.func @wide
// AUTO-NOT: muir.newton_schulz
// AUTO: muir.ns_form = #muir.ns_form<gram>
// STD-LABEL: func.func @wide
// STD: muir.newton_schulz %arg0 steps(3) schedule(quintic) {muir.ns_form = #muir.ns_form<standard>, muir.ns_form_cost = array<f64: {{.*}}>} : tensor<24x4096xf32>
// NOSYRK-LABEL: func.func @wide
// NOSYRK-NOT: muir.syrk
// NOSYRK: muir.matmul %{{.*}}, %{{.*}} {transpose_b} : (tensor<24x4096xf64>, tensor<24x4096xf64>) -> tensor<24x24xf64>
// NOSYRK-NOT: muir.syrk
// EXEC-LABEL: func.func @wide
// EXEC: muir_exec.frobenius_normalize
// EXEC: linalg.generic
// EXEC: arith.extf %{{.*}} : f32 to f64
// EXEC: muir_exec.syrk %{{.*}}, %{{.*}} {{.*}} : memref<24x4096xf64>, memref<24x24xf64>
// EXEC: linalg.index 0
// EXEC: linalg.index 1
// EXEC: muir_exec.gemm {{.*}} : memref<24x24xf64>, memref<24x24xf64>, memref<24x24xf64>, memref<24x24xf64>
// EXEC: arith.truncf %{{.*}} : f64 to f32
// EXEC: muir_exec.gemm {{.*}} : memref<24x24xf32>, memref<24x4096xf32>, memref<24x4096xf32>
func.func @wide(%w: tensor<24x4096xf32> {muir.name = "w"}) -> (tensor<24x4096xf32> {muir.updates = "w"}) {
  %0 = muir.newton_schulz %w steps(3) schedule(quintic) : tensor<24x4096xf32>
  return %0 : tensor<24x4096xf32>
}

// -----

// A tall matrix iterates as its transpose, without transposing: A0 =
// X0^T X0 (SYRK with transpose) and X = X0 Q.
// GRAM-LABEL: func.func @tall
// GRAM: %[[X0:.+]] = muir.frobenius_normalize %arg0 : tensor<512x16xf32>
// GRAM: %[[XD:.+]] = arith.extf %[[X0]]
// GRAM: muir.syrk %[[XD]] {transpose} : (tensor<512x16xf64>) -> tensor<16x16xf64>
// GRAM: %[[QF:.+]] = arith.truncf
// GRAM: muir.matmul %[[X0]], %[[QF]] {muir.ns_form = #muir.ns_form<gram>{{.*}}} : (tensor<512x16xf32>, tensor<16x16xf32>) -> tensor<512x16xf32>
// AUTO-LABEL: func.func @tall
// AUTO: muir.ns_form = #muir.ns_form<gram>
func.func @tall(%t: tensor<512x16xf32>) -> tensor<512x16xf32> {
  %0 = muir.newton_schulz %t steps(5) schedule(simple) : tensor<512x16xf32>
  return %0 : tensor<512x16xf32>
}

// -----

// A batch (an expert stack, or matrices muir-batch-newton-schulz joined)
// keeps its batch dimension through the Gram form.
// GRAM-LABEL: func.func @stack
// GRAM: muir.syrk %{{.*}} : (tensor<4x16x256xf64>) -> tensor<4x16x16xf64>
// GRAM: muir.add_diagonal %{{.*}}, 3.444500e+00 : tensor<4x16x16xf64>
// GRAM: muir.matmul %{{.*}}, %{{.*}} {muir.ns_form = #muir.ns_form<gram>{{.*}}} : (tensor<4x16x16xf32>, tensor<4x16x256xf32>) -> tensor<4x16x256xf32>
func.func @stack(%s: tensor<4x16x256xf32>) -> tensor<4x16x256xf32> {
  %0 = muir.newton_schulz %s steps(5) schedule(simple) : tensor<4x16x256xf32>
  return %0 : tensor<4x16x256xf32>
}

// -----

// A square matrix stays standard under auto (the Gram matrix is as large
// as X); with ns-form=gram it is still rewritten, as asked.
// AUTO-LABEL: func.func @square
// AUTO: muir.newton_schulz %arg0 steps(5) schedule(simple) {muir.ns_form = #muir.ns_form<standard>, muir.ns_form_cost = array<f64: {{.*}}>} : tensor<128x128xf32>
// GRAM-LABEL: func.func @square
// GRAM-NOT: muir.newton_schulz
// GRAM: muir.ns_form = #muir.ns_form<gram>
func.func @square(%s: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %0 = muir.newton_schulz %s steps(5) schedule(simple) : tensor<128x128xf32>
  return %0 : tensor<128x128xf32>
}

// -----

// An aspect of 2 at two steps: the model keeps the standard form on the
// CPU profile (the f64 products cost 2.3x the f32 ones here).
// AUTO-LABEL: func.func @near_square
// AUTO: muir.newton_schulz {{.*}} {muir.ns_form = #muir.ns_form<standard>
func.func @near_square(%s: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %0 = muir.newton_schulz %s steps(2) schedule(simple) : tensor<256x512xf32>
  return %0 : tensor<256x512xf32>
}
