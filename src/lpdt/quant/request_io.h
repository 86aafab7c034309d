#pragma once
// Keeps a QuantizeRequest in an autograd node between forward and backward.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::quant {

void save_request(torch::autograd::AutogradContext* ctx, const QuantizeRequest& request);
// The saved request, with stochastic rounding (backward quantizers always round stochastically).
QuantizeRequest load_request(torch::autograd::AutogradContext* ctx);

}  // namespace lpdt::quant
