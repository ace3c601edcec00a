func.func @transpose_rank(%v: tensor<8xf32>) {
  %0 = muir.transpose %v : tensor<8xf32> -> tensor<8xf32>
  return
}
