func.func @gemm_rank_mismatch_empty_stack(%a: memref<4x8xf32>, %b: memref<0x8x6xf32>, %c: memref<4x6xf32>) {
  muir_exec.gemm %a, %b, %c {alpha = 1.0, beta = 0.0} : memref<4x8xf32>, memref<0x8x6xf32>, memref<4x6xf32>
  return
}
