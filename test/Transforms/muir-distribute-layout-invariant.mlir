// RUN: muir-opt %s --split-input-file --muir-distribute=layout-invariant=true --verify-diagnostics | FileCheck %s
// The layout-invariant mode's refusals (muir-distribute's pass option
// layout-invariant, which --deterministic=layout-invariant sets): a sum
// over ranks that feeds the step (the order of its partial results is the
// layout's), and capacity drops counted over each rank's tokens (those
// over fixed blocks of tokens, group_tokens, pass). The importer builds
// neither in this mode (layout-invariant.test); these are the guard for
// other high-level IR.

muir.grid @world axes = ["dp"] shape = [2]
func.func @sum(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{'muir.all_reduce' op adds partial results of the ranks of ["dp"] (such as gradients over each rank's tokens) in an order the layout sets; the layout-invariant mode takes no such sum (the importer builds none)}}
  %s = muir.all_reduce %g on @world axes = ["dp"] : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

// A sum that only a probe prints (a layer's loss) is no part of the step.
// CHECK-LABEL: func.func @printed
// CHECK: muir.all_reduce
muir.grid @world axes = ["dp"] shape = [2]
func.func @printed(%l: tensor<1xf32>) {
  %s = muir.all_reduce %l on @world axes = ["dp"] : tensor<1xf32>
  muir.probe %s {label = "loss l0", slot = 0 : i64} : tensor<1xf32>
  return
}

// -----

muir.grid @world axes = ["dp"] shape = [2]
func.func @capacity(%i: tensor<6x2xi64>, %w: tensor<6x2xf32>) -> tensor<6x2xi64> {
  // expected-error@+1 {{'muir.capacity' op drops pairs beyond each expert's capacity over this rank's tokens, which depend on how the layout spreads them; the layout-invariant mode needs capacity over fixed blocks of tokens (the layer's capacity_tokens) or a dropless MoE layer}}
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 1.0} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return %ki : tensor<6x2xi64>
}

// -----

// Over fixed blocks of 3 tokens: the same drops on any layout whose ranks
// hold whole blocks.
// CHECK-LABEL: func.func @blocks
// CHECK: muir.capacity {{.*}}group_tokens = 3
muir.grid @world axes = ["dp"] shape = [2]
func.func @blocks(%i: tensor<6x2xi64>, %w: tensor<6x2xf32>) -> tensor<6x2xi64> {
  %ki, %kw, %kc = muir.capacity %i, %w {num_experts = 8, capacity_factor = 1.0, group_tokens = 3} : (tensor<6x2xi64>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xf32>, tensor<8xi64>)
  return %ki : tensor<6x2xi64>
}
