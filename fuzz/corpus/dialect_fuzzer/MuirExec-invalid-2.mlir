func.func @syrk_batch(%a: memref<2x4x8xf32>, %c: memref<3x4x4xf32>) {
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<2x4x8xf32>, memref<3x4x4xf32>
  return
}
