func.func @transpose_rank_mismatch_empty_stack(%x: memref<8x4xf32>, %y: memref<0x4x8xf32>) {
  muir_exec.transpose %x, %y : memref<8x4xf32>, memref<0x4x8xf32>
  return
}
