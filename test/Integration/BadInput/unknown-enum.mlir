// An unknown enum value (schedule(foo)) must give exactly one error at the
// value's <file>:line:col listing the valid schedules, a non-zero exit
// without a crash, and no output.
//
// RUN: rm -rf %t %t.stdout && mkdir %t
// RUN: not muir-run %s --dump %t/out 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: not muir-opt %s -o %t/out.mlir 2>&1 >%t.stdout \
// RUN:   | FileCheck %s -DFILE=%s --implicit-check-not=error:
// RUN: count 0 < %t.stdout
// RUN: ls -A %t | count 0

func.func @step(%x: tensor<16x16xf32> {muir.name = "x"})
    -> (tensor<16x16xf32> {muir.updates = "x"}) {
  // CHECK: [[FILE]]:[[@LINE+1]]:48: error: {{.*}}'foo'{{.*}}simple{{.*}}quintic{{.*}}polar_express{{.*}}custom
  %y = muir.newton_schulz %x steps(5) schedule(foo) : tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
