func.func @transpose(%x: memref<8x4xf32>, %xt: memref<4x8xf32>, %s: memref<3x8x4xf32>, %st: memref<3x4x8xf32>) {
  muir_exec.transpose %x, %xt : memref<8x4xf32>, memref<4x8xf32>
  muir_exec.transpose %s, %st : memref<3x8x4xf32>, memref<3x4x8xf32>
  return
}
func.func @observe(%x: memref<8x4xf32>, %v: memref<16xf32>, %s: memref<f32>) {
  muir_exec.observe %x {label = "ns_out", slot = 0} : memref<8x4xf32>
  muir_exec.observe %v {label = "grad", slot = 1} : memref<16xf32>
  muir_exec.observe %s {label = "", slot = 12} : memref<f32>
  return
}
