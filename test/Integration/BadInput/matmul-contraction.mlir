// A matmul whose contraction sizes differ (64x32 times 16x8) is rejected
// with one error at the op's <file>:line:col that gives both shapes, a
// non-zero exit without a crash, and no output.
//
// RUN: rm -rf %t %t.stdout && mkdir %t
// RUN: not muir-run %s --dump %t/out 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: not muir-opt %s -o %t/out.mlir 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: ls -A %t | count 0

func.func @step(%a: tensor<64x32xf32> {muir.name = "a"},
                %b: tensor<16x8xf32> {muir.name = "b"})
    -> (tensor<64x8xf32> {muir.updates = "a"}) {
  // CHECK: [[FILE]]:[[@LINE+1]]:8: error: 'muir.matmul' op expected contraction sizes to match: op(lhs) is 64x32, op(rhs) is 16x8
  %y = muir.matmul %a, %b : (tensor<64x32xf32>, tensor<16x8xf32>) -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}
