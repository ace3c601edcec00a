muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @line axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
muir.grid @ep2 axes = ["ep"] shape = [2]
muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}
func.func @all_to_allv(%x: tensor<16x32xf32>, %c: tensor<4xi64>) -> (tensor<64x32xf32>, tensor<4xi64>) {
  %0:2 = muir.all_to_allv %x, %c on @world axes = ["tp"] : (tensor<16x32xf32>, tensor<4xi64>) -> (tensor<64x32xf32>, tensor<4xi64>)
  return %0#0, %0#1 : tensor<64x32xf32>, tensor<4xi64>
}
func.func @broadcast(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = muir.broadcast %x on @world axes = ["dp"] root = 0 : tensor<8x4xf32>
  %1 = muir.broadcast %x on @world axes = ["dp", "tp"] root = 7 : tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func @discardable_attrs(%x: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %0 = muir.transpose %x {test.tag = "keep", test.note = 1 : i32} : tensor<8x4xf32> -> tensor<4x8xf32>
  %1:2 = muir.muon_update %x, %x, %x {lr = 0.1, muir.local, muir.ns_mode = #muir.ns_mode<distributed>} : tensor<8x4xf32>
  return %0, %1#0 : tensor<4x8xf32>, tensor<8x4xf32>
}
func.func @route(%l: tensor<6x8xf32>, %b: tensor<8xf32>) -> (tensor<6x2xi64>, tensor<6x3xf32>, tensor<8xi64>) {
  %i, %w, %c = muir.route %l {top_k = 2, normalize} : (tensor<6x8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  %i2, %w2, %c2 = muir.route %l bias %b {top_k = 3, scoring = #muir<route_scoring sigmoid>, n_group = 4, topk_group = 2, normalize, scaling = 2.5} : (tensor<6x8xf32>, tensor<8xf32>) -> (tensor<6x3xi64>, tensor<6x3xf32>, tensor<8xi64>)
  %i3, %w3, %c3 = muir.route %l {top_k = 2, softmax_after_topk} : (tensor<6x8xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return %i, %w2, %c3 : tensor<6x2xi64>, tensor<6x3xf32>, tensor<8xi64>
}
func.func @grouped_matmul(%x: tensor<8x16xf32>, %w: tensor<4x16x24xf32>, %wt: tensor<4x24x16xf32>, %s: tensor<4xi64>) -> (tensor<8x24xf32>, tensor<8x24xf32>) {
  %y = muir.grouped_matmul %x, %w, %s : (tensor<8x16xf32>, tensor<4x16x24xf32>, tensor<4xi64>) -> tensor<8x24xf32>
  %z = muir.grouped_matmul %x, %wt, %s {transpose_b} : (tensor<8x16xf32>, tensor<4x24x16xf32>, tensor<4xi64>) -> tensor<8x24xf32>
  return %y, %z : tensor<8x24xf32>, tensor<8x24xf32>
}
func.func @swiglu(%g: tensor<8x24xf32>, %u: tensor<8x24xf32>) -> tensor<8x24xf32> {
  %h = muir.swiglu %g, %u : tensor<8x24xf32>
  return %h : tensor<8x24xf32>
}
