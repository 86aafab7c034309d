#include "lpdt/quant/fake_quant_ops.h"

#include <torch/torch.h>

namespace lpdt::quant {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void save_request(AutogradContext* ctx, std::int64_t k, const QuantizeRequest& r) {
  ctx->saved_data["k"] = k;
  ctx->saved_data["bits"] = static_cast<std::int64_t>(r.bits);
  ctx->saved_data["scheme"] = static_cast<std::int64_t>(r.scheme);
  ctx->saved_data["seed"] = static_cast<std::int64_t>(r.key.seed);
  ctx->saved_data["step"] = r.key.step;
  ctx->saved_data["first_node"] = r.key.first_node;
  ctx->saved_data["site"] = static_cast<std::int64_t>(r.site);
}

QuantizeRequest load_request(AutogradContext* ctx) {
  QuantizeRequest r;
  r.bits = static_cast<int>(ctx->saved_data["bits"].toInt());
  r.scheme = static_cast<QuantScheme>(ctx->saved_data["scheme"].toInt());
  r.key.seed = static_cast<std::uint64_t>(ctx->saved_data["seed"].toInt());
  r.key.step = ctx->saved_data["step"].toInt();
  r.key.first_node = ctx->saved_data["first_node"].toInt();
  r.site = static_cast<SiteId>(ctx->saved_data["site"].toInt());
  r.rounding = Rounding::kStochastic;
  return r;
}

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
    save_request(ctx, k, request);
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
