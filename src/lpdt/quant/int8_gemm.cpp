#include "lpdt/quant/int8_gemm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/quant/int16_pair_conv.h"

#if LPDT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace lpdt::quant {

bool have_int8_gemm() { return LPDT_HAVE_DNNL != 0; }

bool int8_gemm_is_exact_in_onednn() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  return vnni;
#else
  return false;
#endif
}

std::string int8_gemm_kernel() {
  if (!have_int8_gemm()) return "none (no oneDNN)";
  if (int8_gemm_is_exact_in_onednn()) {
    return "oneDNN int8 direct convolution (dense convolutions) and u8s8s32 GEMM (AVX-512 VNNI)";
  }
  const std::string gemm = "float32 GEMM over K-chunks of " + std::to_string(kExactFloatChunk) +
                           " (exact; no AVX-512 VNNI)";
  return int16_pair_conv_runs_here()
             ? "int16 pair products, vpmaddwd (dense convolutions, AVX2) and " + gemm
             : "float32 direct convolutions over input-channel chunks (dense convolutions) and " +
                   gemm;
}

void gemm_u8s8s32_exact_float(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                              std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b,
                              std::int64_t ldb, bool b_transposed, std::int8_t b_zero,
                              std::int32_t* c, std::int64_t ldc) {
  // Every factor (a - a_zero), (b - b_zero) lies in [-255, 255], so a product is an integer of
  // magnitude <= 65,025 and a sum of kExactFloatChunk of them stays below 2^24: float32 holds
  // each partial sum exactly, in any summation order, FMA or not. Chunks add up in int32.
  static_assert(kExactFloatChunk * 255 * 255 < (1 << 24), "a chunk's sum must stay below 2^24");
  const at::Tensor a_codes = at::from_blob(const_cast<std::uint8_t*>(a), {m, k}, {lda, 1},
                                           at::TensorOptions().dtype(at::kByte));
  const at::Tensor b_codes = b_transposed
                                 ? at::from_blob(const_cast<std::int8_t*>(b), {n, k}, {ldb, 1},
                                                 at::TensorOptions().dtype(at::kChar))
                                       .t()
                                 : at::from_blob(const_cast<std::int8_t*>(b), {k, n}, {ldb, 1},
                                                 at::TensorOptions().dtype(at::kChar));
  const at::Tensor a_real = a_codes.to(at::kFloat) - static_cast<float>(a_zero);  // [m, k]
  const at::Tensor b_real = b_codes.to(at::kFloat) - static_cast<float>(b_zero);  // [k, n]
  at::Tensor sum = at::zeros({m, n}, at::TensorOptions().dtype(at::kInt));
  for (std::int64_t p = 0; p < k; p += kExactFloatChunk) {
    const std::int64_t len = std::min<std::int64_t>(kExactFloatChunk, k - p);
    sum += at::mm(a_real.narrow(1, p, len), b_real.narrow(0, p, len)).to(at::kInt);
  }
  at::from_blob(c, {m, n}, {ldc, 1}, at::TensorOptions().dtype(at::kInt)).copy_(sum);
}

void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b, std::int64_t ldb,
                  bool b_transposed, std::int8_t b_zero, std::int32_t* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
#if LPDT_HAVE_DNNL
  // Without AVX-512 VNNI, oneDNN adds pairs of u8 x s8 products in int16 with saturation
  // (vpmaddubsw; dev_guide_int8_computations), which is not this product: take the exact float
  // path there.
  if (!int8_gemm_is_exact_in_onednn()) {
    gemm_u8s8s32_exact_float(m, n, k, a, lda, a_zero, b, ldb, b_transposed, b_zero, c, ldc);
    return;
  }
  const std::int32_t no_offset = 0;
  const dnnl_status_t status =
      dnnl_gemm_u8s8s32('N', b_transposed ? 'T' : 'N', 'F', m, n, k, 1.0f, a, lda, a_zero, b, ldb,
                        b_zero, 0.0f, c, ldc, &no_offset);
  if (status != dnnl_success) {
    throw UserError("oneDNN int8 GEMM (" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                    std::to_string(k) + ") failed with status " + std::to_string(status));
  }
#else
  (void)a, (void)lda, (void)a_zero, (void)b, (void)ldb, (void)b_transposed, (void)b_zero, (void)c,
      (void)ldc, (void)k;
  throw ConfigError(
      "quant.backend = 'integer' needs oneDNN, and this build has none (install libdnnl-dev and "
      "rebuild), or use quant.backend = 'simulated'");
#endif
}

void gemm_u8s8s32_reference(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                            std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b,
                            std::int64_t ldb, bool b_transposed, std::int8_t b_zero,
                            std::int32_t* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const std::int64_t bv = b_transposed ? b[j * ldb + p] : b[p * ldb + j];
        sum += (std::int64_t{a[i * lda + p]} - a_zero) * (bv - b_zero);
      }
      c[i * ldc + j] = static_cast<std::int32_t>(sum);
    }
  }
}

}  // namespace lpdt::quant
