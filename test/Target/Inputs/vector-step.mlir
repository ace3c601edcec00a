func.func @step(%x: f32) -> vector<4xf32> {
  %v = vector.broadcast %x : f32 to vector<4xf32>
  return %v : vector<4xf32>
}
