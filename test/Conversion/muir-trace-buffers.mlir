// RUN: muir-opt %s --muir-trace-buffers | FileCheck %s

// Around each op of the entry function, a trace of every whole buffer it
// reads (before) and writes (after), with the op's id, name and location;
// views (strided subviews) are left out.
// CHECK-LABEL: func.func @step
// CHECK: muir_exec.trace %[[A:.+]] {index = 0 : i64, loc = "{{.*}}", op = "muir_exec.gemm", op_id = 0 : i64, output = false}
// CHECK-NEXT: muir_exec.trace %[[B:.+]] {index = 1 : i64, {{.*}}op_id = 0 : i64, output = false}
// CHECK-NEXT: muir_exec.gemm
// CHECK-NEXT: muir_exec.trace %[[C:.+]] {index = 2 : i64, {{.*}}op_id = 0 : i64, output = true}
// CHECK: muir_exec.trace %{{.+}} {index = 0 : i64, {{.*}}op = "memref.copy", op_id = 1 : i64, output = false}
// CHECK-NEXT: memref.copy
// CHECK-NOT: muir_exec.trace
// CHECK: return
func.func @step(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>, %s: memref<2x4x4xf32>) attributes {muir.entry} {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32>
  %v = memref.subview %s[0, 0, 0] [1, 4, 4] [1, 1, 1] : memref<2x4x4xf32> to memref<4x4xf32, strided<[4, 1]>>
  memref.copy %c, %v : memref<4x4xf32> to memref<4x4xf32, strided<[4, 1]>>
  return
}

// Functions other than the entry are not traced.
// CHECK-LABEL: func.func @other
// CHECK-NOT: muir_exec.trace
func.func @other(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32>
  return
}
