// muon_update with a mismatched gradient type in the generic form, which
// the parser accepts and the verifier must reject: one error at the op's
// <file>:line:col, a non-zero exit without a crash, and no output.
//
// RUN: rm -rf %t %t.stdout && mkdir %t
// RUN: not muir-run %s --dump %t/out 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: not muir-opt %s -o %t/out.mlir 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: ls -A %t | count 0

func.func @step(%w: tensor<64x32xf32> {muir.name = "w"},
                %g: tensor<32x64xf32> {muir.name = "w.grad"},
                %m: tensor<64x32xf32> {muir.name = "w.momentum"})
    -> (tensor<64x32xf32> {muir.updates = "w"},
        tensor<64x32xf32> {muir.updates = "w.momentum"}) {
  // CHECK: [[FILE]]:[[@LINE+1]]:14: error: 'muir.muon_update' op failed to verify that all of {param, grad, momentum_buffer, new_param, new_momentum_buffer} have same type
  %w1, %m1 = "muir.muon_update"(%w, %g, %m) {lr = 0.02 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}
      : (tensor<64x32xf32>, tensor<32x64xf32>, tensor<64x32xf32>)
      -> (tensor<64x32xf32>, tensor<64x32xf32>)
  return %w1, %m1 : tensor<64x32xf32>, tensor<64x32xf32>
}
