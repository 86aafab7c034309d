#pragma once
// How a residual branch starts (models with residual blocks; nn::LayerFactory).

namespace lpdt::nn {

// gamma of the last norm of each residual branch at the start (model.residual_init):
//   kReference: as the official code, 0 in 8-bit models (a zero-initialised residual branch,
//               reference spec 7.5) and 1 in full-precision ones;
//   kOne:       1 at every precision, so that an 8-bit model starts where the full-precision one
//               does (docs/quantization.md: the zero branches barely learn in the 0.1x warm-up).
enum class ResidualInit { kReference, kOne };

}  // namespace lpdt::nn
