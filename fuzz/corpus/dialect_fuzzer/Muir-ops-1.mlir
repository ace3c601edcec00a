muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @line axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
muir.grid @ep2 axes = ["ep"] shape = [2]
muir.grid @hidden axes = ["dp"] shape = [1] {sym_visibility = "private"}
func.func @newton_schulz(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<3x4x8xf32>) {
  %0 = muir.newton_schulz %x steps(5) schedule(simple) : tensor<8x4xf32>
  %1 = muir.newton_schulz %x steps(5) schedule(quintic) : tensor<8x4xf32>
  %2 = muir.newton_schulz %x steps(10) schedule(polar_express) {eps = 1.0e-6} : tensor<8x4xf32>
  %3 = muir.newton_schulz %x steps(2) schedule(custom) coefficients([3.4445, -4.775, 2.0315, 1.875, -1.25, 0.375]) : tensor<8x4xf32>
  %4 = muir.newton_schulz %s steps(1) schedule(custom) coefficients([1.5, -0.5, 0.0]) : tensor<3x4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<3x4x8xf32>
}
func.func @frobenius_normalize(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<8x4xf32>, tensor<3x4x8xf32>) {
  %0 = muir.frobenius_normalize %x : tensor<8x4xf32>
  %1 = muir.frobenius_normalize %s {eps = 1.0e-5} : tensor<3x4x8xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<3x4x8xf32>
}
func.func @transpose(%x: tensor<8x4xf32>, %s: tensor<3x4x8xf32>) -> (tensor<4x8xf32>, tensor<3x8x4xf32>) {
  %0 = muir.transpose %x : tensor<8x4xf32> -> tensor<4x8xf32>
  %1 = muir.transpose %s : tensor<3x4x8xf32> -> tensor<3x8x4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<3x8x4xf32>
}
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %at: tensor<8x4xf32>, %bt: tensor<6x8xf32>, %c: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = muir.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %1 = muir.matmul %at, %b {transpose_a} : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %2 = muir.matmul %a, %bt {transpose_b} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %3 = muir.matmul %at, %bt {alpha = 2.0, transpose_a, transpose_b} : (tensor<8x4xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %4 = muir.matmul %a, %b acc %c {alpha = 0.5, beta = 1.0} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2, %3, %4 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
func.func @matmul_batched(%x: tensor<2x4x8xf32>, %c: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x8xf32>) {
  %0 = muir.matmul %x, %x acc %c {beta = -4.775, transpose_b} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %1 = muir.matmul %0, %x : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0, %1 : tensor<2x4x4xf32>, tensor<2x4x8xf32>
}
func.func @syrk(%a: tensor<4x8xf32>, %c: tensor<4x4xf32>, %s: tensor<2x4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x4x4xf32>) {
  %0 = muir.syrk %a : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %1 = muir.syrk %a acc %c {alpha = 2.0315, beta = -4.775} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = muir.syrk %s : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  return %0, %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x4x4xf32>
}
