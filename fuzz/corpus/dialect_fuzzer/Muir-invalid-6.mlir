func.func @unknown_grid(%x: tensor<8x4xf32>) {
  %0 = muir.all_reduce %x on @nope axes = ["dp"] : tensor<8x4xf32>
  return
}
