#pragma once
// One node's affine quantization parameters from its [min, max] range (affine_quantizer.h gives
// the formulas). Plain C++ that nvcc compiles too: the CUDA quantizer derives each node's
// parameters in its kernels with this same code, so both devices decide alike.
#include <math.h>

#include <cstdint>

#include "lpdt/core/host_device.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::quant {

constexpr double kMinScale = 1e-8;

struct AffineParams {
  float scale = 1.0f;
  float zero_point = 0.0f;  // gemmlowp: an integer code; reference: -min / scale (not integral)
  float min = 0.0f;         // reference scheme only
  QuantScheme scheme = QuantScheme::kGemmlowp;
  LPDT_HOST_DEVICE float quantize(float x) const {  // before rounding and clamping
    return scheme == QuantScheme::kGemmlowp ? x / scale + zero_point : (x - min) / scale;
  }
  LPDT_HOST_DEVICE float dequantize(float q) const {
    return scheme == QuantScheme::kGemmlowp ? (q - zero_point) * scale : q * scale + min;
  }
};

// Round half to even for 0 <= y < 2^22, branch-free: adding and subtracting 1.5 * 2^23 leaves
// the float rounding of y to an integer in the default rounding mode (no -ffast-math, and no
// fused operations where it is used, so both additions stay). The same result as std::nearbyint
// except for -0, which becomes +0 (on either device), and it vectorises.
LPDT_HOST_DEVICE inline float round_half_even(float y) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (y + kMagic) - kMagic;
}

// The comparisons are written out (std::min/max/clamp are host functions): the same results,
// including the order of the operands.
LPDT_HOST_DEVICE inline AffineParams affine_params(float min, float max, int bits,
                                                   QuantScheme scheme) {
  const double qmax = static_cast<double>((std::int64_t{1} << bits) - 1);
  AffineParams p;
  p.scheme = scheme;
  if (scheme == QuantScheme::kReference) {
    // Reference spec 7.1: the range as given; scale computed in double, used in float32.
    const double scale = (static_cast<double>(max) - min) / qmax;
    p.scale = static_cast<float>(scale < kMinScale ? kMinScale : scale);
    p.min = min;
    p.zero_point = -min / p.scale;
    return p;
  }
  // gemmlowp: widen the range to contain 0, then nudge the zero point to an integer code so that
  // real 0 is exactly representable.
  const double lo = min < 0.0 ? static_cast<double>(min) : 0.0;
  const double hi = max > 0.0 ? static_cast<double>(max) : 0.0;
  const double scale = (hi - lo) / qmax;
  p.scale = static_cast<float>(scale < kMinScale ? kMinScale : scale);
  const double zero_point = nearbyint(-lo / p.scale);
  p.zero_point =
      static_cast<float>(zero_point < 0.0 ? 0.0 : (qmax < zero_point ? qmax : zero_point));
  return p;
}

}  // namespace lpdt::quant
