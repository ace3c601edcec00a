// RUN: muir-opt %s --muir-to-exec | FileCheck %s
// RUN: muir-opt %s --muir-to-exec --muir-exec-to-llvm | FileCheck %s --check-prefix=LLVM

// A step whose tensors are f64 is computed in f64 throughout: the
// momentum, Newton-Schulz (normalised by the f64 runtime entry, its
// products double-precision SYRK and GEMM) and the update, and AdamW.
// (Descriptions and muir-run keep their tensors f32 for now; this is the
// compiler's path.)
// CHECK-LABEL: func.func @step
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : memref<16x8xf64>, memref<16x8xf64>)
// CHECK: muir_exec.frobenius_normalize %{{.+}}, %{{.+}} {{.*}} : memref<16x8xf64>, memref<16x8xf64>
// CHECK: muir_exec.syrk %{{.+}}, %{{.+}} {{.*}} : memref<16x8xf64>, memref<8x8xf64>
// CHECK: muir_exec.gemm {{.*}} : memref<16x8xf64>, memref<8x8xf64>, memref<16x8xf64>, memref<16x8xf64>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : memref<8xf64>, memref<8xf64>, memref<8xf64>, memref<8xf64>)
// CHECK-NOT: f32
// LLVM: llvm.call @muirrt_frobenius_normalize_f64(
// LLVM: llvm.call @muirrt_dsyrk(
// LLVM: llvm.call @muirrt_dgemm(
// LLVM-NOT: llvm.call @muirrt_ssyrk
// LLVM-NOT: llvm.call @muirrt_sgemm
func.func @step(%w: tensor<16x8xf64> {muir.name = "w"}, %g: tensor<16x8xf64> {muir.name = "w.grad"}, %m: tensor<16x8xf64> {muir.name = "w.momentum"},
                %b: tensor<8xf64> {muir.name = "b"}, %bg: tensor<8xf64> {muir.name = "b.grad"}, %bm: tensor<8xf64> {muir.name = "b.exp_avg"}, %bv: tensor<8xf64> {muir.name = "b.exp_avg_sq"}, %t: i64 {muir.role = #muir.role<step>})
    -> (tensor<16x8xf64> {muir.updates = "w"}, tensor<16x8xf64> {muir.updates = "w.momentum"}, tensor<8xf64> {muir.updates = "b"}, tensor<8xf64> {muir.updates = "b.exp_avg"}, tensor<8xf64> {muir.updates = "b.exp_avg_sq"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<16x8xf64>
  %b1, %bm1, %bv1 = muir.adamw_update %b, %bg, %bm, %bv step %t {lr = 0.001} : tensor<8xf64>
  return %w1, %m1, %b1, %bm1, %bv1 : tensor<16x8xf64>, tensor<16x8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>
}
