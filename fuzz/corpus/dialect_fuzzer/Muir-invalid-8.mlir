muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_to_allv_send_counts_rank(%x: tensor<16x32xf32>, %c: tensor<2x2xi64>) {
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<2x2xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return
}
