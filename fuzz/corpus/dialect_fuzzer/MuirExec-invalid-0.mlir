func.func @gemm_dynamic(%a: memref<?x8xf32>, %b: memref<8x6xf32>, %c: memref<4x6xf32>) {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<?x8xf32>, memref<8x6xf32>, memref<4x6xf32>
  return
}
