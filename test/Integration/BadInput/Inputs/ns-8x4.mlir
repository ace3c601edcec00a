// One 8x4 matrix "x" orthogonalised in place: the smallest module that
// muir-run compiles, loads, runs and dumps. Used by the BadInput tests.
func.func @step(%x: tensor<8x4xf32> {muir.name = "x"})
    -> (tensor<8x4xf32> {muir.updates = "x"}) {
  %y = muir.newton_schulz %x steps(5) schedule(simple) : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
