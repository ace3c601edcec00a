// RUN: muir-opt %s --split-input-file --muir-lower-to-exec -verify-diagnostics

// expected-error@+1 {{result 0: expected a 'muir.updates' attribute naming the argument it updates}}
func.func @no_target(%x: tensor<4xf32> {muir.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{result 0 updates 'y', which is not an argument's muir.name}}
func.func @unknown_target(%x: tensor<4xf32> {muir.name = "x"}) -> (tensor<4xf32> {muir.updates = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{argument 1: expected a 'muir.name' attribute naming the tensor}}
func.func @unnamed(%x: tensor<4xf32> {muir.name = "x"}, %y: tensor<4xf32>) -> (tensor<4xf32> {muir.updates = "x"}) {
  return %y : tensor<4xf32>
}

// -----

// expected-error@+1 {{argument 1: expected a static f32, f64 or i64 tensor, the i64 step or an f64 hyperparameter, got 'tensor<?xf32>'}}
func.func @dynamic(%x: tensor<4xf32> {muir.name = "x"}, %y: tensor<?xf32> {muir.name = "y"}) {
  return
}

// -----

// expected-error@+1 {{argument 'x' is updated by two results}}
func.func @twice(%x: tensor<4xf32> {muir.name = "x"}) -> (tensor<4xf32> {muir.updates = "x"}, tensor<4xf32> {muir.updates = "x"}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @unexpanded(%x: tensor<4x4xf32> {muir.name = "x"}) -> (tensor<4x4xf32> {muir.updates = "x"}) {
  // expected-error@+1 {{muir-lower-to-exec expects planned IR (distributed, optimizers decomposed, Newton-Schulz expanded); found op 'muir.newton_schulz': run muir-expand-newton-schulz first}}
  %y = muir.newton_schulz %x steps(1) schedule(simple) : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// A kernel whose body reads a whole tensor from outside is refused.
func.func @captures(%x: tensor<8xf32> {muir.name = "x"}, %y: tensor<8xf32> {muir.name = "y"}) -> (tensor<8xf32> {muir.updates = "x"}) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'linalg.generic' op expected a linalg.generic on tensors whose body reads only its operands' elements}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = tensor.extract %y[%c0] : tensor<8xf32>
    %s = arith.addf %a, %e : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Counts are host buffers, and upstream bufferizes no concatenation there.
muir.grid @w axes = ["dp"] shape = [2]
func.func @concat_counts(%x: tensor<8xf32> {muir.name = "x"}) -> (tensor<8xf32> {muir.updates = "x"}) {
  %a = arith.constant dense<4> : tensor<1xi64>
  // expected-error@+1 {{concatenates the counts of a ragged exchange}}
  %c = tensor.concat dim(0) %a, %a : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r:2 = muir.all_to_allv %x, %c on @w axes = ["dp"] : (tensor<8xf32>, tensor<2xi64>) -> (tensor<16xf32>, tensor<2xi64>)
  %z = tensor.extract_slice %r#0[0] [8] [1] : tensor<16xf32> to tensor<8xf32>
  return %z : tensor<8xf32>
}

// -----

// A function of muir ops with no named argument is no step: refused, naming
// it, not left for the next pass to fail on.
// expected-error@+1 {{function @anonymous holds muir ops but none of its arguments has a 'muir.name': muir-lower-to-exec lowers step functions}}
func.func @anonymous(%x: tensor<8x4xf32>) -> tensor<8x8xf32> {
  // expected-note@+1 {{its first muir op}}
  %0 = muir.matmul %x, %x {transpose_b} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
