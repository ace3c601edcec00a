// A Muon matrix and an AdamW vector, learning rates and weight decays as
// the ops' constant attributes (hyper-arguments.test).
func.func @step(
    %w: tensor<48x32xf32> {muir.name = "w"},
    %w_g: tensor<48x32xf32> {muir.name = "w.grad"},
    %w_m: tensor<48x32xf32> {muir.name = "w.momentum"},
    %n: tensor<32xf32> {muir.name = "n"},
    %n_g: tensor<32xf32> {muir.name = "n.grad"},
    %n_m: tensor<32xf32> {muir.name = "n.exp_avg"},
    %n_v: tensor<32xf32> {muir.name = "n.exp_avg_sq"},
    %t: i64 {muir.role = #muir.role<step>})
    -> (tensor<48x32xf32> {muir.updates = "w"},
        tensor<48x32xf32> {muir.updates = "w.momentum"},
        tensor<32xf32> {muir.updates = "n"},
        tensor<32xf32> {muir.updates = "n.exp_avg"},
        tensor<32xf32> {muir.updates = "n.exp_avg_sq"}) {
  %w1, %w_m1 = muir.muon_update %w, %w_g, %w_m
      {lr = 0.023, weight_decay = 0.13} : tensor<48x32xf32>
  %n1, %n_m1, %n_v1 = muir.adamw_update %n, %n_g, %n_m, %n_v step %t
      {lr = 0.0011, beta2 = 0.95, weight_decay = 0.07} : tensor<32xf32>
  return %w1, %w_m1, %n1, %n_m1, %n_v1
      : tensor<48x32xf32>, tensor<48x32xf32>, tensor<32xf32>, tensor<32xf32>,
        tensor<32xf32>
}
