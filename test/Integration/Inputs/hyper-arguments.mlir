// hyper-constants.mlir with the same learning rates and weight decays as
// run-time arguments (their defaults), read through hyper(lr, wd).
func.func @step(
    %w: tensor<48x32xf32> {muir.name = "w"},
    %w_g: tensor<48x32xf32> {muir.name = "w.grad"},
    %w_m: tensor<48x32xf32> {muir.name = "w.momentum"},
    %n: tensor<32xf32> {muir.name = "n"},
    %n_g: tensor<32xf32> {muir.name = "n.grad"},
    %n_m: tensor<32xf32> {muir.name = "n.exp_avg"},
    %n_v: tensor<32xf32> {muir.name = "n.exp_avg_sq"},
    %t: i64 {muir.role = #muir.role<step>},
    %lr: f64 {muir.name = "muon.lr", muir.role = #muir.role<hyper>, muir.default = 0.023},
    %wd: f64 {muir.name = "muon.weight_decay", muir.role = #muir.role<hyper>, muir.default = 0.13},
    %alr: f64 {muir.name = "adamw.lr", muir.role = #muir.role<hyper>, muir.default = 0.0011},
    %awd: f64 {muir.name = "adamw.weight_decay", muir.role = #muir.role<hyper>, muir.default = 0.07})
    -> (tensor<48x32xf32> {muir.updates = "w"},
        tensor<48x32xf32> {muir.updates = "w.momentum"},
        tensor<32xf32> {muir.updates = "n"},
        tensor<32xf32> {muir.updates = "n.exp_avg"},
        tensor<32xf32> {muir.updates = "n.exp_avg_sq"}) {
  %w1, %w_m1 = muir.muon_update %w, %w_g, %w_m hyper(%lr, %wd)
      {lr = 0.5, weight_decay = 0.5} : tensor<48x32xf32>
  %n1, %n_m1, %n_v1 = muir.adamw_update %n, %n_g, %n_m, %n_v step %t
      hyper(%alr, %awd) {lr = 0.5, beta2 = 0.95, weight_decay = 0.5}
      : tensor<32xf32>
  return %w1, %w_m1, %n1, %n_m1, %n_v1
      : tensor<48x32xf32>, tensor<48x32xf32>, tensor<32xf32>, tensor<32xf32>,
        tensor<32xf32>
}
