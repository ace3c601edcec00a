func.func @grouped_matmul_sizes(%x: tensor<8x16xf32>, %w: tensor<4x16x24xf32>, %s: tensor<3xi64>) {
  %y = muir.grouped_matmul %x, %w, %s : (tensor<8x16xf32>, tensor<4x16x24xf32>, tensor<3xi64>) -> tensor<8x24xf32>
  return
}
