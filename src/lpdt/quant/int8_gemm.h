#pragma once
// 8-bit integer matrix products with zero points, the integer backend's one arithmetic kernel:
//   C[M, N] = (A[M, K] - a_zero) * (op(B)[K, N] - b_zero)        exactly, in int32
// A: uint8 codes (activations, gradients), B: int8 (weight codes shifted by -128, see
// int8_conv.h). oneDNN's dnnl_gemm_u8s8s32 runs it with AVX-512 VNNI on CPUs that have it (no
// int16 saturation there; older CPUs may saturate intermediate sums: dev_guide_int8_computations).
#include <cstdint>

namespace lpdt::quant {

// Whether this build has oneDNN (the integer backend needs it).
bool have_int8_gemm();

// Row-major; b_transposed: B is stored [N, K] (ldb = its row length), else [K, N].
// A ConfigError when the build has no oneDNN; a UserError naming oneDNN's status on failure.
void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b, std::int64_t ldb,
                  bool b_transposed, std::int8_t b_zero, std::int32_t* c, std::int64_t ldc);

// The same product with plain loops: what the tests hold the fast one to.
void gemm_u8s8s32_reference(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                            std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b,
                            std::int64_t ldb, bool b_transposed, std::int8_t b_zero,
                            std::int32_t* c, std::int64_t ldc);

}  // namespace lpdt::quant
