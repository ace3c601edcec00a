// hyper-constants.mlir with every hyperparameter a run-time argument (its
// default the constant's value): Muon's hyper(lr, wd, momentum) and AdamW's
// hyper(lr, wd, beta1, beta2, eps). The attributes hold other values
// (momentum 0.5, betas 0.5, eps 1e-3), which would give other bits.
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
    %mom: f64 {muir.name = "muon.momentum", muir.role = #muir.role<hyper>, muir.default = 0.95},
    %alr: f64 {muir.name = "adamw.lr", muir.role = #muir.role<hyper>, muir.default = 0.0011},
    %awd: f64 {muir.name = "adamw.weight_decay", muir.role = #muir.role<hyper>, muir.default = 0.07},
    %b1: f64 {muir.name = "adamw.beta1", muir.role = #muir.role<hyper>, muir.default = 0.9},
    %b2: f64 {muir.name = "adamw.beta2", muir.role = #muir.role<hyper>, muir.default = 0.95},
    %eps: f64 {muir.name = "adamw.eps", muir.role = #muir.role<hyper>, muir.default = 1.0e-8})
    -> (tensor<48x32xf32> {muir.updates = "w"},
        tensor<48x32xf32> {muir.updates = "w.momentum"},
        tensor<32xf32> {muir.updates = "n"},
        tensor<32xf32> {muir.updates = "n.exp_avg"},
        tensor<32xf32> {muir.updates = "n.exp_avg_sq"}) {
  %w1, %w_m1 = muir.muon_update %w, %w_g, %w_m hyper(%lr, %wd, %mom)
      {lr = 0.5, beta = 0.5, weight_decay = 0.5} : tensor<48x32xf32>
  %n1, %n_m1, %n_v1 = muir.adamw_update %n, %n_g, %n_m, %n_v step %t
      hyper(%alr, %awd, %b1, %b2, %eps)
      {lr = 0.5, beta1 = 0.5, beta2 = 0.5, eps = 1.0e-3, weight_decay = 0.5}
      : tensor<32xf32>
  return %w1, %w_m1, %n1, %n_m1, %n_v1
      : tensor<48x32xf32>, tensor<48x32xf32>, tensor<32xf32>, tensor<32xf32>,
        tensor<32xf32>
}
