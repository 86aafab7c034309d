#pragma once
// How a low-precision model quantizes (paper section 3; reference spec section 7;
// docs/quantization.md).
#include <cstdint>
#include <string>

namespace lpdt::quant {

// Arithmetic of a model: full precision; full precision with bfloat16 convolutions (inputs and
// weights rounded to bfloat16, products summed in float32, outputs rounded to bfloat16 and
// widened; parameters, gradients, optimizer, norms and everything else float32); or the paper's
// 8-bit training (bits configurable).
enum class Precision { kFp32, kBf16, kInt8 };

// Two backends computing the same function (design.md): quantize-dequantize in float, or real
// int8 x int8 -> int32 arithmetic (CPU, oneDNN).
enum class QuantBackend { kSimulated, kInteger };

// How a [min, max] range becomes codes.
//  - kGemmlowp: the range is widened to contain 0 and the zero point is an integer code, so that
//    real 0 (convolution padding) is exact: real = scale * (q - zero_point). Required by the
//    integer backend. lpdt's default.
//  - kReference: the official code's formula (reference spec 7.1): y = (x - min) / scale,
//    real = q * scale + min; 0 is generally not representable.
enum class QuantScheme { kGemmlowp, kReference };

enum class Rounding { kNearest, kStochastic };

// Precision of the weight gradients g_w of convolutions and linear layers (gradient bifurcation:
// "the weight gradients are either 16-bit or 32-bit float", paper section 3). kFp32: float32, as
// the official code. kBf16: the output gradient and the layer's (quantized) input rounded to
// bfloat16, products summed in float32 and the gradient rounded to bfloat16, then widened; on
// CPUs with AMX or AVX-512 BF16 and on GPUs that runs on bfloat16 kernels. The layer gradients
// passed backwards stay at grad_bits either way.
enum class WeightGrad { kFp32, kBf16 };

struct QuantOptions {
  Precision precision = Precision::kFp32;
  QuantBackend backend = QuantBackend::kSimulated;
  QuantScheme scheme = QuantScheme::kGemmlowp;
  int bits = 8;       // weights, activations, normaliser scales: codes in [0, 2^bits - 1]
  int grad_bits = 8;  // layer gradients passed backwards (gradient bifurcation)
  WeightGrad weight_grad = WeightGrad::kFp32;
  // Activation rounding in evaluation. The reference rounds stochastically even there (a
  // positional-argument quirk, reference spec 7.1 / 11.5); the paper's intent is deterministic.
  Rounding eval_rounding = Rounding::kNearest;
  // Weight of the newest batch in the running activation ranges used in evaluation:
  // r <- (1 - m) r + m batch. The reference's QuantMeasure uses m = 0.9 (momentum 0.1, inverted
  // with respect to BatchNorm's convention).
  double range_momentum = 0.9;
  // Where the running activation ranges live: per-node buffers (lpdt), or, as the official code
  // (reference spec 11.6), non-trainable parameters: gossiped, compressed and counted in bytes.
  bool ranges_as_params = false;
  // Range EvoNorm: "reference" (official code, reference spec 7.3), "paper" (eq. 5 literally) or
  // "std" (EvoNorm-S0's group standard deviation as the statistic; docs/quantization.md).
  std::string range_evonorm = "reference";

  bool low_precision() const { return precision == Precision::kInt8; }
  std::int64_t max_code() const { return (std::int64_t{1} << bits) - 1; }
  // A ConfigError naming the key when a value is out of range or a combination unsupported.
  void validate() const;
};

Precision parse_precision(const std::string& name);
QuantBackend parse_backend(const std::string& name);
QuantScheme parse_scheme(const std::string& name);
Rounding parse_rounding(const std::string& name);
WeightGrad parse_weight_grad(const std::string& name);
std::string to_string(Precision value);
std::string to_string(QuantBackend value);
std::string to_string(QuantScheme value);
std::string to_string(Rounding value);
std::string to_string(WeightGrad value);

}  // namespace lpdt::quant
