muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
func.func @all_gatherv_sizes_count(%x: tensor<3x4xf32>) {
  %0 = muir.all_gatherv %x on @world axes = ["tp"] gather_axis = 0 sizes = [3, 2, 2] : tensor<3x4xf32> -> tensor<7x4xf32>
  return
}
