func.func @muon_unknown_attribute_generic(%p: tensor<8x4xf32>) {
  %0:2 = "muir.muon_update"(%p, %p, %p) <{lr = 0.1 : f64}> {nesterv = false} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  return
}
