// muir-run's default example (muir-run without an input file; embedded in
// the binary at build time): a slice of a small transformer with real aspect
// ratios (square attention projection, wide and tall MLP matrices) and one
// 1-D norm weight that AdamW takes. The learning rates and weight decays
// are run-time arguments (muir-run --lr-schedule scales the rates).
muir.grid @world axes = ["dp"] shape = [1]
func.func @step(
    %wq: tensor<512x512xf32> {muir.name = "attn.wq"},
    %wq_g: tensor<512x512xf32> {muir.name = "attn.wq.grad"},
    %wq_m: tensor<512x512xf32> {muir.name = "attn.wq.momentum"},
    %up: tensor<2048x512xf32> {muir.name = "mlp.up"},
    %up_g: tensor<2048x512xf32> {muir.name = "mlp.up.grad"},
    %up_m: tensor<2048x512xf32> {muir.name = "mlp.up.momentum"},
    %down: tensor<512x2048xf32> {muir.name = "mlp.down"},
    %down_g: tensor<512x2048xf32> {muir.name = "mlp.down.grad"},
    %down_m: tensor<512x2048xf32> {muir.name = "mlp.down.momentum"},
    %nw: tensor<512xf32> {muir.name = "norm.weight"},
    %nw_g: tensor<512xf32> {muir.name = "norm.weight.grad"},
    %nw_m: tensor<512xf32> {muir.name = "norm.weight.exp_avg"},
    %nw_v: tensor<512xf32> {muir.name = "norm.weight.exp_avg_sq"},
    %t: i64 {muir.role = #muir.role<step>},
    %lr: f64 {muir.name = "muon.lr", muir.role = #muir.role<hyper>, muir.default = 0.02},
    %wd: f64 {muir.name = "muon.weight_decay", muir.role = #muir.role<hyper>,
              muir.default = 0.1},
    %alr: f64 {muir.name = "adamw.lr", muir.role = #muir.role<hyper>,
               muir.default = 0.001},
    %awd: f64 {muir.name = "adamw.weight_decay", muir.role = #muir.role<hyper>,
               muir.default = 0.0})
    -> (tensor<512x512xf32> {muir.updates = "attn.wq"},
        tensor<512x512xf32> {muir.updates = "attn.wq.momentum"},
        tensor<2048x512xf32> {muir.updates = "mlp.up"},
        tensor<2048x512xf32> {muir.updates = "mlp.up.momentum"},
        tensor<512x2048xf32> {muir.updates = "mlp.down"},
        tensor<512x2048xf32> {muir.updates = "mlp.down.momentum"},
        tensor<512xf32> {muir.updates = "norm.weight"},
        tensor<512xf32> {muir.updates = "norm.weight.exp_avg"},
        tensor<512xf32> {muir.updates = "norm.weight.exp_avg_sq"}) {
  %wq1, %wq_m1 = muir.muon_update %wq, %wq_g, %wq_m hyper(%lr, %wd)
      {lr = 0.02, weight_decay = 0.1} : tensor<512x512xf32>
  %up1, %up_m1 = muir.muon_update %up, %up_g, %up_m hyper(%lr, %wd)
      {lr = 0.02, weight_decay = 0.1} : tensor<2048x512xf32>
  %down1, %down_m1 = muir.muon_update %down, %down_g, %down_m hyper(%lr, %wd)
      {lr = 0.02, weight_decay = 0.1} : tensor<512x2048xf32>
  %nw1, %nw_m1, %nw_v1 = muir.adamw_update %nw, %nw_g, %nw_m, %nw_v step %t
      hyper(%alr, %awd) {lr = 0.001, beta2 = 0.95} : tensor<512xf32>
  return %wq1, %wq_m1, %up1, %up_m1, %down1, %down_m1, %nw1, %nw_m1, %nw_v1
      : tensor<512x512xf32>, tensor<512x512xf32>, tensor<2048x512xf32>,
        tensor<2048x512xf32>, tensor<512x2048xf32>, tensor<512x2048xf32>,
        tensor<512xf32>, tensor<512xf32>, tensor<512xf32>
}
