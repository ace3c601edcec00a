// A syntax error (missing ')' after the step count) must give exactly one
// error at <file>:line:col, a non-zero exit without a crash, and no output:
// neither a --dump directory from muir-run nor an -o file from muir-opt.
//
// RUN: rm -rf %t %t.stdout && mkdir %t
// RUN: not muir-run %s --dump %t/out 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: not muir-opt %s -o %t/out.mlir 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: ls -A %t | count 0

func.func @step(%x: tensor<4x4xf32> {muir.name = "x"})
    -> (tensor<4x4xf32> {muir.updates = "x"}) {
  // CHECK: [[FILE]]:[[@LINE+1]]:37: error: expected ')'
  %y = muir.newton_schulz %x steps(5 schedule(simple) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
