muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @line axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
muir.grid @ep2 axes = ["ep"] shape = [2]
muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}
func.func @muon_update_defaults(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0:2 = muir.muon_update %p, %g, %m {lr = 2.0e-02} : tensor<8x4xf32>
  return %0#0, %0#1 : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func @muon_update_all_attrs(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0:2 = muir.muon_update %p, %g, %m {lr = 2.0e-02, beta = 0.9, momentum_kind = #muir<momentum_kind accumulate>, nesterov = false, weight_decay = 0.01, scale_mode = #muir<scale_mode unit_rms>, scale_extra = 0.5, ns_steps = 3, schedule = #muir<schedule custom>, coefficients = array<f64: 3.0, -3.2, 1.2, 2.0, -1.5, 0.5>, eps = 1.0e-6} : tensor<8x4xf32>
  return %0#0, %0#1 : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func @muon_update_stack(%p: tensor<2x8x4xf32>, %g: tensor<2x8x4xf32>, %m: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %0:2 = muir.muon_update %p, %g, %m {lr = 0.0, beta = 0.0, scale_mode = #muir<scale_mode shape>, schedule = #muir<schedule polar_express>, ns_steps = 8} : tensor<2x8x4xf32>
  %1:2 = muir.muon_update %p, %g, %m {lr = 1.0e-03, schedule = #muir<schedule quintic>} : tensor<2x8x4xf32>
  return %0#0, %1#1 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
}
func.func @adamw_update(%p: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %t: i64) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %0:3 = muir.adamw_update %p, %g, %m, %v step %t {lr = 1.0e-3} : tensor<16xf32>
  %1:3 = muir.adamw_update %0#0, %g, %0#1, %0#2 step %t {lr = 3.0e-4, beta1 = 0.8, beta2 = 0.95, eps = 1.0e-10, weight_decay = 0.1} : tensor<16xf32>
  return %1#0, %1#1, %1#2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @momentum(%g: tensor<8x4xf32>, %m: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0:2 = muir.momentum %g, %m {beta = 0.95, momentum_kind = #muir<momentum_kind ema>, nesterov = true} : tensor<8x4xf32>
  %1:2 = muir.momentum %0#0, %0#1 {beta = 0.0, momentum_kind = #muir<momentum_kind accumulate>, nesterov = false} : tensor<8x4xf32>
  return %1#0, %1#1 : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func @apply_update(%p: tensor<8x4xf32>, %u: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = muir.apply_update %p, %u {lr = 2.0e-02, scale = 0.4, weight_decay = 0.0} : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
