#include "lpdt/quant/int8_gemm.h"

#include <string>

#include "lpdt/core/error.h"

#if LPDT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace lpdt::quant {

bool have_int8_gemm() { return LPDT_HAVE_DNNL != 0; }

void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b, std::int64_t ldb,
                  bool b_transposed, std::int8_t b_zero, std::int32_t* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
#if LPDT_HAVE_DNNL
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
