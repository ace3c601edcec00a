muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @line axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
muir.grid @ep2 axes = ["ep"] shape = [2]
muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}
func.func @probe(%x: tensor<8x4xf32>, %v: tensor<16xf32>) {
  muir.probe %x {label = "ns_out", slot = 0} : tensor<8x4xf32>
  muir.probe %v {label = "", slot = 7} : tensor<16xf32>
  return
}
func.func @all_reduce(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = muir.all_reduce %x on @world axes = ["dp"] : tensor<8x4xf32>
  %1 = muir.all_reduce %x on @world axes = ["dp"] reduction = sum : tensor<8x4xf32>
  %2 = muir.all_reduce %x on @world axes = ["tp"] reduction = max : tensor<8x4xf32>
  %3 = muir.all_reduce %x on @world axes = ["dp", "tp"] reduction = min : tensor<8x4xf32>
  %4 = muir.all_reduce %x on @line axes = ["x"] reduction = avg : tensor<8x4xf32>
  %5 = muir.all_reduce %x on @world axes = ["tp", "dp"] reduction = avg : tensor<8x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
func.func @all_gather(%x: tensor<8x4xf32>) -> (tensor<64x4xf32>, tensor<8x8xf32>) {
  %0 = muir.all_gather %x on @world axes = ["dp", "tp"] gather_axis = 0 : tensor<8x4xf32> -> tensor<64x4xf32>
  %1 = muir.all_gather %x on @world axes = ["dp"] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return %0, %1 : tensor<64x4xf32>, tensor<8x8xf32>
}
func.func @all_gatherv(%x: tensor<3x4xf32>) -> (tensor<7x4xf32>, tensor<3x4xf32>) {
  %0 = muir.all_gatherv %x on @world axes = ["tp"] gather_axis = 0 sizes = [3, 2, 2, 0] : tensor<3x4xf32> -> tensor<7x4xf32>
  %1 = muir.all_gatherv %x on @cube axes = ["dp"] gather_axis = 1 sizes = [4] : tensor<3x4xf32> -> tensor<3x4xf32>
  return %0, %1 : tensor<7x4xf32>, tensor<3x4xf32>
}
func.func @reduce_scatter(%x: tensor<8x6xf32>) -> (tensor<2x6xf32>, tensor<8x1xf32>) {
  %0 = muir.reduce_scatter %x on @world axes = ["tp"] scatter_axis = 0 : tensor<8x6xf32> -> tensor<2x6xf32>
  %1 = muir.reduce_scatter %x on @cube axes = ["ep", "tp"] scatter_axis = 1 reduction = avg : tensor<8x6xf32> -> tensor<8x1xf32>
  return %0, %1 : tensor<2x6xf32>, tensor<8x1xf32>
}
func.func @all_to_all(%x: tensor<8x6xf32>, %s: tensor<2x8x6xf32>) -> (tensor<2x24xf32>, tensor<2x8x6xf32>) {
  %0 = muir.all_to_all %x on @world axes = ["tp"] split_axis = 0 concat_axis = 1 : tensor<8x6xf32> -> tensor<2x24xf32>
  %1 = muir.all_to_all %s on @world axes = ["dp"] split_axis = 0 concat_axis = 0 : tensor<2x8x6xf32> -> tensor<2x8x6xf32>
  return %0, %1 : tensor<2x24xf32>, tensor<2x8x6xf32>
}
