#include "lpdt/quant/fake_quant_ops.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/quant/request_io.h"

namespace lpdt::quant {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// sum[i] += addend[i]: one add per element, as at::add (the sum of two fake-quantized tensors).
LPDT_CPU_CLONES void add_in_place(float* __restrict sum, const float* __restrict addend,
                                  std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) sum[i] += addend[i];
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

struct FakeQuantizeEachSte : torch::autograd::Function<FakeQuantizeEachSte> {
  static variable_list forward(AutogradContext* ctx, at::TensorList tensors, std::int64_t k,
                               int bits, QuantScheme scheme) {
    ctx->set_materialize_grads(false);  // unused outputs pass no gradient, not zeros
    std::vector<at::Tensor> detached;
    detached.reserve(tensors.size());
    for (const at::Tensor& t : tensors) detached.push_back(t.detach());
    return fake_quantize_each_nearest(detached, k, bits, scheme);
  }
  static variable_list backward(AutogradContext*, variable_list grad) {
    grad.insert(grad.end(), {at::Tensor(), at::Tensor(), at::Tensor()});  // k, bits, scheme
    return grad;
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

// Forward: the two summands fake-quantized sample by sample and added; backward: the incoming
// gradient fake-quantized (as QuantizeGradient) to both summands (straight through).
struct FakeQuantizedSum : torch::autograd::Function<FakeQuantizedSum> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& a_min,
                            const at::Tensor& a_max, const QuantizeRequest& a_request,
                            const at::Tensor& b, const at::Tensor& b_min, const at::Tensor& b_max,
                            const QuantizeRequest& b_request, std::int64_t k,
                            const QuantizeRequest& grad_request) {
    ctx->saved_data["k"] = k;
    save_request(ctx, grad_request);
    const at::Tensor ac = canonical_layout(a.detach()), bc = canonical_layout(b.detach());
    const NodeView v = node_view(ac, k);
    const SampleQuantizer qa(v, NodeRange{a_min, a_max}, a_request),
        qb(v, NodeRange{b_min, b_max}, b_request);
    at::Tensor sum = at::empty_like(ac);
    at::parallel_for(0, v.samples, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<float> quantized_b(static_cast<std::size_t>(v.sample_stride));
      for (std::int64_t n = begin; n < end; ++n) {
        float* out = sum.data_ptr<float>() + n * v.sample_stride;
        qa.fake_quantize_sample(ac.data_ptr<float>() + n * v.sample_stride, out, n);
        qb.fake_quantize_sample(bc.data_ptr<float>() + n * v.sample_stride, quantized_b.data(), n);
        add_in_place(out, quantized_b.data(), v.sample_stride);
      }
    });
    return sum;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const std::int64_t k = ctx->saved_data["k"].toInt();
    const at::Tensor g = canonical_layout(grad[0]);
    const at::Tensor q = fake_quantize(g, k, tensor_range(g, k), load_request(ctx));
    return {q,
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            q,
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor fake_quantize_ste(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                             const QuantizeRequest& request) {
  return FakeQuantizeSte::apply(x, k, range.min, range.max, request);
}

std::vector<at::Tensor> fake_quantize_each_ste(const std::vector<at::Tensor>& tensors,
                                               std::int64_t k, int bits, QuantScheme scheme) {
  return FakeQuantizeEachSte::apply(at::TensorList(tensors), k, bits, scheme);
}

at::Tensor quantize_gradient(const at::Tensor& x, std::int64_t k, const QuantizeRequest& request) {
  return QuantizeGradient::apply(x, k, request);
}

at::Tensor fake_quantized_sum(const at::Tensor& a, const NodeRange& a_range,
                              const QuantizeRequest& a_request, const at::Tensor& b,
                              const NodeRange& b_range, const QuantizeRequest& b_request,
                              std::int64_t k, const QuantizeRequest& grad_request) {
  RECORD_FUNCTION("lpdt::fake_quantized_sum", std::vector<c10::IValue>());
  LPDT_CHECK(a.sizes() == b.sizes(), "fake_quantized_sum: summands of different shapes");
  // One sample of every node is contiguous only in the 4-D channels-last layout.
  if (!a.device().is_cpu() || a.dim() != 4) {
    const at::Tensor sum =
        fake_quantize_ste(a, k, a_range, a_request) + fake_quantize_ste(b, k, b_range, b_request);
    return quantize_gradient(sum, k, grad_request);
  }
  return FakeQuantizedSum::apply(a, a_range.min, a_range.max, a_request, b, b_range.min,
                                 b_range.max, b_request, k, grad_request);
}

}  // namespace lpdt::quant
