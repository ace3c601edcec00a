func.func @gemm(%a: memref<4x8xf32>, %b: memref<8x6xf32>, %at: memref<8x4xf32>, %bt: memref<6x8xf32>, %c: memref<4x6xf32>) {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<8x6xf32>, memref<4x6xf32>
  muir_exec.gemm %at, %b, %c {alpha = 2.0, beta = 1.0, transpose_a} : memref<8x4xf32>, memref<8x6xf32>, memref<4x6xf32>
  muir_exec.gemm %a, %bt, %c {alpha = 1.0, beta = 0.0, transpose_b} : memref<4x8xf32>, memref<6x8xf32>, memref<4x6xf32>
  muir_exec.gemm %at, %bt, %c {alpha = -1.0, beta = 0.5, transpose_a, transpose_b} : memref<8x4xf32>, memref<6x8xf32>, memref<4x6xf32>
  return
}
func.func @gemm_batched(%x: memref<2x4x8xf32>, %a: memref<2x4x4xf32>, %y: memref<2x4x8xf32>) {
  muir_exec.gemm %x, %x, %a {alpha = 1.0, beta = 0.0, transpose_b} : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x4xf32>
  muir_exec.gemm %a, %x, %y {alpha = 1.0, beta = 3.4445} : memref<2x4x4xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>
  return
}
func.func @syrk(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %s: memref<3x4x8xf32>, %sc: memref<3x4x4xf32>) {
  muir_exec.syrk %a, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<4x4xf32>
  muir_exec.syrk %s, %sc {alpha = 2.0315, beta = -4.775} : memref<3x4x8xf32>, memref<3x4x4xf32>
  return
}
func.func @with_acc(%a: memref<4x8xf32>, %c: memref<4x4xf32>, %acc: memref<4x4xf32>) {
  muir_exec.syrk %a, %c acc %acc {alpha = 1.0, beta = 0.5} : memref<4x8xf32>, memref<4x4xf32>, memref<4x4xf32>
  muir_exec.gemm %c, %c, %c acc %acc {alpha = 1.0, beta = 2.0} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  return
}
