func.func @capacity_factor(%i: tensor<6x2xi64>, %w: tensor<6x2xf32>) {
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 0.0} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return
}
