func.func @muon_beta(%p: tensor<8x4xf32>) {
  %0:2 = muir.muon_update %p, %p, %p {lr = 0.1, beta = 1.0} : tensor<8x4xf32>
  return
}
