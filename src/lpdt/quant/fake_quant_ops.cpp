#include "lpdt/quant/fake_quant_ops.h"

#include <torch/torch.h>

#include "lpdt/quant/request_io.h"

namespace lpdt::quant {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct FakeQuantizeSte : torch::autograd::Function<FakeQuantizeSte> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, std::int64_t k,
                            const at::Tensor& min, const at::Tensor& max,
                            const QuantizeRequest& request) {
    return fake_quantize(x.detach(), k, NodeRange{min, max}, request);
  }
  static variable_list backward(AutogradContext*, variable_list grad) {
    return {grad[0], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct QuantizeGradient : torch::autograd::Function<QuantizeGradient> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::int64_t k,
                            const QuantizeRequest& request) {
    ctx->saved_data["k"] = k;
    save_request(ctx, request);
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const std::int64_t k = ctx->saved_data["k"].toInt();
    const at::Tensor g = canonical_layout(grad[0]);
    const at::Tensor q = fake_quantize(g, k, tensor_range(g, k), load_request(ctx));
    return {q, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor fake_quantize_ste(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                             const QuantizeRequest& request) {
  return FakeQuantizeSte::apply(x, k, range.min, range.max, request);
}

at::Tensor quantize_gradient(const at::Tensor& x, std::int64_t k, const QuantizeRequest& request) {
  return QuantizeGradient::apply(x, k, request);
}

}  // namespace lpdt::quant
