// Range EvoNorm's fused operation on CUDA tensors: the autograd function around the kernels of
// cuda/range_evonorm_kernels.h, saving what the CPU operation saves (range_evonorm_kernel.cpp).
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include "lpdt/core/error.h"
#include "lpdt/nn/flat_group_scales.h"
#include "lpdt/nn/range_evonorm_kernel.h"
#include "lpdt/nn/range_evonorm_saved_shape.h"

#if LPDT_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "lpdt/nn/cuda/range_evonorm_kernels.h"
#endif

namespace lpdt::nn {

#if LPDT_HAVE_CUDA_KERNELS
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr std::int64_t kMaxChunks = 16;

cuda_kernels::RangeEvoNormGeometry geometry_of(const at::Tensor& x, std::int64_t k,
                                               std::int64_t channels, std::int64_t groups,
                                               std::int64_t chunks, double range_factor) {
  return {x.size(0),
          k,
          channels,
          x.size(2) * x.size(3),
          groups,
          chunks,
          static_cast<float>(range_factor)};
}

void* current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

// The layer input as the kernels read it: its codes with each node's scale and zero point (8-bit
// models; the kernels dequantize as they read), or x's floats (fp32). values: x channels-last,
// kept alive by the caller.
cuda_kernels::RangeEvoNormInput input_of(const at::Tensor& values,
                                         const quant::QuantizedTensor& q) {
  cuda_kernels::RangeEvoNormInput in;
  if (q.codes.defined()) {
    LPDT_CHECK(q.codes.is_contiguous(at::MemoryFormat::ChannelsLast) && q.scale.is_contiguous() &&
                   q.zero_point.is_contiguous() && q.scale.scalar_type() == at::kFloat,
               "range_evonorm_fused_cuda: codes must be channels-last with [k] float32 scales");
    in.codes = q.codes.data_ptr<std::uint8_t>();
    in.scale = q.scale.data_ptr<float>();
    in.zero_point = q.zero_point.data_ptr<float>();
  } else {
    in.values = values.data_ptr<float>();
  }
  return in;
}

struct RangeEvoNormCudaFunction : torch::autograd::Function<RangeEvoNormCudaFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& qv,
                            const at::Tensor& qgamma, const at::Tensor& qbeta,
                            const at::Tensor& codes, const at::Tensor& code_scale,
                            const at::Tensor& code_zero, const RangeEvoNormShape& shape) {
    const c10::cuda::CUDAGuard device_guard(x_in.device());
    const std::int64_t k = shape.k, b = x_in.size(0), g = shape.groups, j = shape.chunks;
    const quant::QuantizedTensor q{codes.numel() > 0 ? codes : at::Tensor(), code_scale, code_zero};
    const at::Tensor x = q.codes.defined()
                             ? x_in.detach()
                             : x_in.detach().contiguous(at::MemoryFormat::ChannelsLast);
    const cuda_kernels::RangeEvoNormInput input = input_of(x, q);
    const auto geo = geometry_of(x, k, shape.channels, g, j, shape.range_factor);
    const auto options = x.options();
    const at::Tensor s = at::empty({b, k, g}, options);
    const at::Tensor arg_max = at::empty({b, k, g, j}, options.dtype(at::kInt));
    const at::Tensor arg_min = at::empty_like(arg_max);
    cuda_kernels::range_statistic(input, geo, s.data_ptr<float>(), arg_max.data_ptr<std::int32_t>(),
                                  arg_min.data_ptr<std::int32_t>(), current_stream());
    // As the CPU operation: flat groups take their node's largest other scale
    // (flat_group_scales.h), and the backward pass sees 0 for them.
    const SettledGroupScales settled = settle_flat_group_scales(s);
    const at::Tensor qs = shape.scale_bits > 0 ? quantize_group_scales(settled.forward, k,
                                                                      shape.scale_bits,
                                                                      shape.scale_scheme)
                                               : settled.forward;
    const at::Tensor v = qv.contiguous(), gamma = qgamma.contiguous(), beta = qbeta.contiguous();
    at::Tensor out = at::empty(x.sizes(), options.memory_format(at::MemoryFormat::ChannelsLast));
    cuda_kernels::range_evonorm_output(input, v.data_ptr<float>(), qs.data_ptr<float>(),
                                       gamma.data_ptr<float>(), beta.data_ptr<float>(),
                                       out.data_ptr<float>(), geo, current_stream());
    // 8-bit models keep the input's codes (1 byte per element); fp32 keeps x itself.
    ctx->save_for_backward(
        {q.codes.defined() ? codes : x, code_scale, code_zero, v, gamma, settled.backward, qs,
         arg_max, arg_min});
    save_shape(ctx, shape);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    RECORD_FUNCTION("lpdt::range_evonorm_backward_cuda", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const RangeEvoNormShape shape = load_shape(ctx);
    const std::int64_t k = shape.k, c = shape.channels, g = shape.groups, j = shape.chunks;
    const double factor = shape.range_factor;
    const bool codes = saved[0].scalar_type() == at::kByte;
    const quant::QuantizedTensor q{codes ? saved[0] : at::Tensor(), saved[1], saved[2]};
    const at::Tensor &v = saved[3], &gamma = saved[4], &s = saved[5], &qs = saved[6],
                     &arg_max = saved[7], &arg_min = saved[8];
    const c10::cuda::CUDAGuard device_guard(s.device());
    at::Tensor dy = grad[0].contiguous(at::MemoryFormat::ChannelsLast);
    // 8-bit models: the output gradient at grad_bits (per node [min, max], stochastic), the
    // reference's quantize_grad after the norm.
    if (shape.quantize_output_grad) {
      dy = quant::fake_quantize(dy, k, quant::tensor_range(dy, k), shape.output_grad_request);
    }
    const auto geo = geometry_of(dy, k, c, g, j, factor);
    const std::int64_t b = dy.size(0), kc = k * c;
    at::Tensor dx = at::empty_like(dy);
    const at::Tensor partial = at::empty({4, b, kc}, dy.options());  // dv, dgamma, dbeta, ds_c
    cuda_kernels::range_evonorm_backward(dy.data_ptr<float>(), input_of(saved[0], q),
                                         v.data_ptr<float>(), qs.data_ptr<float>(),
                                         gamma.data_ptr<float>(), dx.data_ptr<float>(),
                                         partial.data_ptr<float>(), geo, current_stream());
    const at::Tensor sums = partial.narrow(0, 0, 3).sum(1);  // [3, k*C]: dv, dgamma, dbeta
    // The group scale's gradient (straight through Q(s)) back to the range statistic, in the
    // statistic's kernel: s = 1 / (R f + eps) -> dR = -ds s^2 f; R = mean_j (max_j - min_j).
    cuda_kernels::range_statistic_backward(
        arg_max.data_ptr<std::int32_t>(), arg_min.data_ptr<std::int32_t>(),
        partial[3].data_ptr<float>(), s.contiguous().data_ptr<float>(), dx.data_ptr<float>(), geo,
        current_stream());
    return {dx, sums[0], sums[1], sums[2], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool range_evonorm_cuda_supports(const at::Tensor& x, const RangeEvoNormShape& shape) {
  if (!(x.defined() && x.dim() == 4 && x.scalar_type() == at::kFloat && x.is_cuda())) return false;
  const std::int64_t group_numel =
      shape.groups > 0 ? shape.channels / shape.groups * x.size(2) * x.size(3) : 0;
  return shape.statistic == GroupStatistic::kChunkRanges && shape.chunks >= 1 &&
         shape.chunks <= kMaxChunks && shape.groups >= 1 && shape.channels % shape.groups == 0 &&
         group_numel % shape.chunks == 0 && x.size(1) == shape.k * shape.channels &&
         x.size(0) <= 65535 && x.numel() / std::max<std::int64_t>(x.size(0), 1) < (1LL << 31);
}

at::Tensor range_evonorm_fused_cuda(const at::Tensor& x, const quant::QuantizedTensor& x_codes,
                                    const at::Tensor& qv, const at::Tensor& qgamma,
                                    const at::Tensor& qbeta, const RangeEvoNormShape& shape) {
  RECORD_FUNCTION("lpdt::range_evonorm_forward_cuda", std::vector<c10::IValue>());
  LPDT_CHECK(range_evonorm_cuda_supports(x, shape),
             "range_evonorm_fused_cuda: x must be a 4-D float32 CUDA tensor [b, k*C, H, W] and "
             "the statistic chunk ranges (at most 16 chunks dividing a group)");
  const at::Tensor empty = at::empty({0}, x.options());
  const bool codes = x_codes.codes.defined();
  return RangeEvoNormCudaFunction::apply(x, qv, qgamma, qbeta, codes ? x_codes.codes : empty,
                                         codes ? x_codes.scale : empty,
                                         codes ? x_codes.zero_point : empty, shape);
}

#else  // a build without the CUDA kernels: CUDA tensors take the composite ATen code

bool range_evonorm_cuda_supports(const at::Tensor&, const RangeEvoNormShape&) { return false; }

at::Tensor range_evonorm_fused_cuda(const at::Tensor&, const quant::QuantizedTensor&,
                                    const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const RangeEvoNormShape&) {
  throw InternalError(
      "the CUDA Range EvoNorm kernels are not in this build (a CUDA LibTorch and nvcc are "
      "needed); callers check range_evonorm_cuda_supports first");
}

#endif

}  // namespace lpdt::nn
