func.func @matmul_result_shape(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) {
  %0 = muir.matmul %a, %b {transpose_b} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<6x4xf32>
  return
}
