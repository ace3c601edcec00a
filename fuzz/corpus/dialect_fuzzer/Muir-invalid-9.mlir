func.func @row_blocks_stack(%w: tensor<2x8x16xf32>) {
  %0, %1 = muir.muon_update %w, %w, %w {lr = 0.02, row_blocks = array<i64: 4, 4>} : tensor<2x8x16xf32>
  return
}
