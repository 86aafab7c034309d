#pragma once
// 8-bit integer matrix products with zero points, the integer backend's one arithmetic kernel:
//   C[M, N] = (A[M, K] - a_zero) * (op(B)[K, N] - b_zero)        exactly, in int32
// A: uint8 codes (activations, gradients), B: int8 (weight codes shifted by -128, see
// int8_conv.h). oneDNN's dnnl_gemm_u8s8s32 runs it on CPUs with AVX-512 VNNI (int32 sums); on
// others, whose oneDNN int8 GEMM saturates intermediate int16 sums (dev_guide_int8_computations),
// an exact float32 formulation runs instead (gemm_u8s8s32_exact_float).
#include <cstdint>
#include <string>

namespace lpdt::quant {

// Whether this build has oneDNN (the integer backend needs it).
bool have_int8_gemm();
// Whether oneDNN's u8s8s32 GEMM computes the exact product on this CPU: with AVX-512 VNNI (int32
// sums). Elsewhere (e.g. AVX2 only) it saturates pairs of products in int16, and gemm_u8s8s32
// takes gemm_u8s8s32_exact_float instead: the same int32 result, at float GEMM speed.
bool int8_gemm_is_exact_in_onednn();
// The integer kernels this machine runs (int8_direct_conv.h, gemm_u8s8s32), for the run record
// (summary.json backend.integer_kernels).
std::string int8_gemm_kernel();

// K-chunk of the exact float path: kExactFloatChunk * 255 * 255 < 2^24.
constexpr std::int64_t kExactFloatChunk = 256;

// Row-major; b_transposed: B is stored [N, K] (ldb = its row length), else [K, N].
// A ConfigError when the build has no oneDNN; a UserError naming oneDNN's status on failure.
void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b, std::int64_t ldb,
                  bool b_transposed, std::int8_t b_zero, std::int32_t* c, std::int64_t ldc);

// The product as float32 GEMMs over K-chunks of kExactFloatChunk, each chunk's sum exact (every
// partial sum an integer below 2^24), added in int32: bit for bit the product, on any CPU.
void gemm_u8s8s32_exact_float(std::int64_t m, std::int64_t n, std::int64_t k,
                              const std::uint8_t* a, std::int64_t lda, std::uint8_t a_zero,
                              const std::int8_t* b, std::int64_t ldb, bool b_transposed,
                              std::int8_t b_zero, std::int32_t* c, std::int64_t ldc);

// The same product with plain loops: what the tests hold the fast one to.
void gemm_u8s8s32_reference(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                            std::int64_t lda, std::uint8_t a_zero, const std::int8_t* b,
                            std::int64_t ldb, bool b_transposed, std::int8_t b_zero,
                            std::int32_t* c, std::int64_t ldc);

}  // namespace lpdt::quant
