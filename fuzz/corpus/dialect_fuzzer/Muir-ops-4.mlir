muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @line axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
muir.grid @ep2 axes = ["ep"] shape = [2]
muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}
func.func @dispatch_combine(%x: tensor<6x16xf32>, %i: tensor<6x2xi64>, %w: tensor<6x2xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x2xf32>, tensor<24x16xf32>) {
  %r, %c, %p = muir.dispatch %x, %i on @ep2 axes = ["ep"] {num_experts = 8, layer = "l0"} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
  %rw, %c2, %p2 = muir.dispatch %x, %i weights %w on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<24x16xf32>, tensor<4xi64>, tensor<56xi64>)
  %y = muir.combine %r, %i, %p weights %w on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>, tensor<6x2xf32>) -> tensor<6x16xf32>
  %s = muir.combine %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x16xf32>
  %dw = muir.combine_weights_grad %y, %r, %i, %p on @ep2 axes = ["ep"] {num_experts = 8} : (tensor<6x16xf32>, tensor<24x16xf32>, tensor<6x2xi64>, tensor<56xi64>) -> tensor<6x2xf32>
  return %y, %s, %dw, %rw : tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x2xf32>, tensor<24x16xf32>
}
func.func @capacity(%x: tensor<6x16xf32>, %i: tensor<6x2xi64>, %w: tensor<6x2xf32>) -> (tensor<6x2xf32>, tensor<12x16xf32>) {
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 1.25, policy = #muir<drop_policy position>, group_tokens = 3} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  %r, %c, %p = muir.dispatch %x, %ki on @ep2 axes = [] {num_experts = 8} : (tensor<6x16xf32>, tensor<6x2xi64>) -> (tensor<12x16xf32>, tensor<8xi64>, tensor<28xi64>)
  return %kw, %r : tensor<6x2xf32>, tensor<12x16xf32>
}
func.func @moe_grads(%x: tensor<8x16xf32>, %d: tensor<8x24xf32>, %s: tensor<4xi64>, %g: tensor<8x24xf32>, %u: tensor<8x24xf32>, %l: tensor<6x8xf32>, %i: tensor<6x2xi64>, %dw: tensor<6x2xf32>) -> (tensor<4x24x16xf32>, tensor<4x16x24xf32>, tensor<8x24xf32>, tensor<6x8xf32>) {
  %a = muir.grouped_matmul_wgrad %x, %d, %s {transpose_b} : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x24x16xf32>
  %b = muir.grouped_matmul_wgrad %x, %d, %s : (tensor<8x16xf32>, tensor<8x24xf32>, tensor<4xi64>) -> tensor<4x16x24xf32>
  %dg, %du = muir.swiglu_grad %g, %u, %d : tensor<8x24xf32>
  %sum = muir.add %dg, %du : tensor<8x24xf32>
  %dl = muir.route_grad %l, %i, %dw {scoring = #muir<route_scoring sigmoid>, normalize, scaling = 2.5} : (tensor<6x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<6x8xf32>
  return %a, %b, %sum, %dl : tensor<4x24x16xf32>, tensor<4x16x24xf32>, tensor<8x24xf32>, tensor<6x8xf32>
}
