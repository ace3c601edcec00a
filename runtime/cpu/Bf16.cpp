//===- Bf16.cpp - products on bf16 buffers (a bf16 Newton-Schulz) ---------===//
//
// muirrt_bgemm and muirrt_bsyrk: the operands widened to f32 (exactly), the
// product accumulated in f32 by muirrt_sgemm / muirrt_ssyrk, the result
// rounded to bf16 to nearest even. Debian's OpenBLAS has no sbgemm, so the
// CPU runs bf16 steps at the f32 rate; what it gives is the bf16 numerics,
// which the CUDA runtime's tensor cores share (bf16 inputs, f32
// accumulation, one rounding of the result).
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include <cstring>
#include <vector>

namespace {

float widen(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::vector<float> widened(const uint16_t *in, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = widen(in[i]);
  return out;
}

void narrowInto(const std::vector<float> &in, uint16_t *out) {
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = muirrt_bf16_round(in[i]);
}

/// The f32 accumulator of a product into `c`: `acc` (or c) widened, or
/// zeros when beta is 0 (which ignores the accumulator).
std::vector<float> accumulator(const uint16_t *c, const uint16_t *acc,
                               float beta, int64_t count) {
  if (beta == 0.0f)
    return std::vector<float>(static_cast<size_t>(count), 0.0f);
  return widened(acc ? acc : c, count);
}

} // namespace

extern "C" void muirrt_bgemm(int64_t batch, int32_t trans_a, int32_t trans_b,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const uint16_t *a, const uint16_t *b, float beta,
                             uint16_t *c, const uint16_t *acc) {
  if (batch <= 0 || m <= 0 || n <= 0 || k < 0)
    return;
  std::vector<float> fa = widened(a, batch * m * k);
  // X X^T reads one buffer twice: widen it once.
  bool same = b == a && k * n == m * k;
  std::vector<float> fb =
      same ? std::vector<float>() : widened(b, batch * k * n);
  std::vector<float> fc = accumulator(c, acc, beta, batch * m * n);
  muirrt_sgemm(batch, trans_a, trans_b, m, n, k, alpha, fa.data(),
               same ? fa.data() : fb.data(), beta, fc.data(), nullptr);
  narrowInto(fc, c);
}

extern "C" void muirrt_bsyrk(int64_t batch, int32_t trans, int64_t n, int64_t k,
                             float alpha, const uint16_t *a, float beta,
                             uint16_t *c, const uint16_t *acc) {
  if (batch <= 0 || n <= 0 || k < 0)
    return;
  std::vector<float> fa = widened(a, batch * n * k);
  std::vector<float> fc = accumulator(c, acc, beta, batch * n * n);
  muirrt_ssyrk(batch, trans, n, k, alpha, fa.data(), beta, fc.data(), nullptr);
  narrowInto(fc, c);
}
