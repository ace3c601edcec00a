func.func @apply_update_lr(%p: tensor<8x4xf32>) {
  %0 = muir.apply_update %p, %p {lr = -2.0e-02, scale = 0.4, weight_decay = 0.0} : tensor<8x4xf32>
  return
}
