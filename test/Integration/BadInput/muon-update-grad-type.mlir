// muon_update with a gradient whose type differs from the parameter's
// (32x64 against 64x32), written in the op's custom form: one error at the
// gradient's <file>:line:col naming both types, a non-zero exit without a
// crash, and no output.
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
  // CHECK: [[FILE]]:[[@LINE+1]]:35: error: use of value '%g' expects different type than prior uses: 'tensor<64x32xf32>' vs 'tensor<32x64xf32>'
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<64x32xf32>
  return %w1, %m1 : tensor<64x32xf32>, tensor<64x32xf32>
}
