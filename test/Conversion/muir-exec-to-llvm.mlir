// RUN: muir-opt %s --muir-to-exec --muir-exec-to-llvm | FileCheck %s
// No op of muir, muir_exec, memref or linalg is left in any function (a
// CHECK-NOT before the first match covers only the text before it; this
// one, alone under its prefix, covers the whole output; the argument
// attributes `muir.name` and `muir.role` stay):
// RUN: muir-opt %s --muir-to-exec --muir-exec-to-llvm | FileCheck %s --check-prefix=ANYWHERE
// ANYWHERE-NOT: {{ (muir|muir_exec|memref|linalg)\.[a-z_.]+( %| \{|\()}}

// The whole CPU lowering ends in the LLVM dialect; the entry function takes
// one bare pointer per tensor (what muir-run passes) and the step counter.
// CHECK-NOT: muir.
// CHECK-NOT: memref.
// CHECK-NOT: linalg.
// The element-wise loop nests are functions of their own (muir-outline-
// loops), never inlined, before the entry.
// CHECK: llvm.func @step_loop0({{.*}}) attributes {passthrough = ["noinline"], sym_visibility = "private"}
// The AdamW kernel's function computes its bias corrections from the step
// counter it takes (muir-outline-loops copies the scalar math in).
// CHECK: llvm.intr.pow
// CHECK: llvm.intr.sqrt
// CHECK-LABEL: llvm.func @step(
// CHECK-SAME: %{{.*}}: !llvm.ptr {muir.name = "w"}, %{{.*}}: !llvm.ptr {muir.name = "w.grad"}, %{{.*}}: !llvm.ptr {muir.name = "w.momentum"}, %{{.*}}: !llvm.ptr {muir.name = "b"}, %{{.*}}: !llvm.ptr {muir.name = "b.grad"}, %{{.*}}: !llvm.ptr {muir.name = "b.exp_avg"}, %{{.*}}: !llvm.ptr {muir.name = "b.exp_avg_sq"}, %{{.*}}: i64 {muir.role = #muir.role<step>})
// CHECK: llvm.call @muirrt_frobenius_normalize
// The 5 steps are one loop (w is tall: no transposes) whose body is one
// step: the Gram matrix X^T X and A A as SYRK, X B + a X a GEMM (the
// simple schedule's one triple: constants).
// CHECK: llvm.br ^[[HEAD:bb[0-9]+]]
// CHECK: ^[[HEAD]](
// CHECK: llvm.icmp "slt"
// CHECK: llvm.call @muirrt_ssyrk
// CHECK: llvm.call @muirrt_ssyrk
// CHECK: llvm.call @muirrt_sgemm
// CHECK: llvm.br ^[[HEAD]]
// CHECK-NOT: llvm.call @muirrt_ssyrk
// CHECK-NOT: llvm.call @muirrt_sgemm
// CHECK-NOT: llvm.call @muirrt_transpose
// CHECK-NOT: llvm.intr.pow
// CHECK: llvm.call @step_loop2({{.*}}, %{{.*}}) : ({{.*}}, i64) -> ()
// CHECK: llvm.return
// CHECK-DAG: llvm.func @muirrt_sgemm(i64, i32, i32, i64, i64, i64, f32, !llvm.ptr, !llvm.ptr, f32, !llvm.ptr, !llvm.ptr)
func.func @step(%w: tensor<16x8xf32> {muir.name = "w"}, %g: tensor<16x8xf32> {muir.name = "w.grad"}, %m: tensor<16x8xf32> {muir.name = "w.momentum"},
                %b: tensor<8xf32> {muir.name = "b"}, %bg: tensor<8xf32> {muir.name = "b.grad"}, %bm: tensor<8xf32> {muir.name = "b.exp_avg"}, %bv: tensor<8xf32> {muir.name = "b.exp_avg_sq"}, %t: i64 {muir.role = #muir.role<step>})
    -> (tensor<16x8xf32> {muir.updates = "w"}, tensor<16x8xf32> {muir.updates = "w.momentum"}, tensor<8xf32> {muir.updates = "b"}, tensor<8xf32> {muir.updates = "b.exp_avg"}, tensor<8xf32> {muir.updates = "b.exp_avg_sq"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<16x8xf32>
  %b1, %bm1, %bv1 = muir.adamw_update %b, %bg, %bm, %bv step %t {lr = 0.001} : tensor<8xf32>
  return %w1, %m1, %b1, %bm1, %bv1 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
