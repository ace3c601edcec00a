func.func @frobenius_normalize_dynamic(%x: memref<2x?x4xf32>) {
  muir_exec.frobenius_normalize %x, %x {eps = 1.0e-7} : memref<2x?x4xf32>, memref<2x?x4xf32>
  return
}
