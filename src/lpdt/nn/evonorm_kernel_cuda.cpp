// EvoNorm-S0's fused operation on CUDA tensors: checks, layouts and the current stream around the
// kernels of cuda/evonorm_s0_kernels.h.
#include <ATen/record_function.h>

#include "lpdt/core/error.h"
#include "lpdt/nn/evonorm_kernel.h"
#include "lpdt/nn/node_layout.h"

#if LPDT_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "lpdt/nn/cuda/evonorm_s0_kernels.h"
#endif

namespace lpdt::nn {

#if LPDT_HAVE_CUDA_KERNELS
namespace {

// [samples, channels, pixels] strides of a dense 4-D tensor, from its sizes (a size-1 dimension's
// stride says nothing about the layout).
cuda_kernels::Strides strides_of(const at::Tensor& dense) {
  const std::int64_t c = dense.size(1), pixels = dense.size(2) * dense.size(3);
  if (is_channels_last(dense)) return {pixels * c, 1, c};
  return {c * pixels, pixels, 1};
}

// x itself when channels-last or contiguous NCHW, else a contiguous NCHW copy.
at::Tensor dense(const at::Tensor& x) { return is_channels_last(x) ? x : x.contiguous(); }

at::MemoryFormat format_of(const at::Tensor& t) {
  return is_channels_last(t) ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

cuda_kernels::EvoNormShape shape_of(const at::Tensor& x, std::int64_t channels_per_group) {
  LPDT_CHECK(evonorm_s0_cuda_kernel_supports(x, channels_per_group),
             "EvoNorm-S0 CUDA kernel: x must be a 4-D float32 CUDA tensor whose channels per "
             "group divide 256 and the channel count");
  return {x.size(0), x.size(1), x.size(2) * x.size(3), channels_per_group};
}

at::Tensor per_channel(const at::Tensor& t, std::int64_t channels, const char* name) {
  LPDT_CHECK(t.numel() == channels && t.scalar_type() == at::kFloat,
             std::string("EvoNorm-S0 CUDA kernel: ") + name + " must be [K*C] float32");
  return t.contiguous();
}

void* current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

}  // namespace

bool evonorm_s0_cuda_kernel_supports(const at::Tensor& x, std::int64_t channels_per_group) {
  return x.defined() && x.dim() == 4 && x.scalar_type() == at::kFloat && x.is_cuda() &&
         channels_per_group >= 1 && x.size(1) % channels_per_group == 0 &&
         cuda_kernels::evonorm_s0_supports(channels_per_group);
}

EvoNormForward evonorm_s0_forward_cuda(const at::Tensor& x_in, const at::Tensor& v_in,
                                       const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                       std::int64_t channels_per_group, double eps) {
  RECORD_FUNCTION("lpdt::evonorm_s0_forward_cuda", std::vector<c10::IValue>());
  const cuda_kernels::EvoNormShape shape = shape_of(x_in, channels_per_group);
  const c10::cuda::CUDAGuard device_guard(x_in.device());
  const at::Tensor x = dense(x_in);
  const at::Tensor v = per_channel(v_in, shape.channels, "v");
  const at::Tensor gamma = per_channel(gamma_in, shape.channels, "gamma");
  const at::Tensor beta = per_channel(beta_in, shape.channels, "beta");
  const std::int64_t groups = shape.channels / channels_per_group;
  EvoNormForward out;
  out.y = at::empty(x.sizes(), x.options().memory_format(format_of(x)));
  out.mean = at::empty({shape.samples, groups}, x.options());
  out.rstd = at::empty({shape.samples, groups}, x.options());
  const at::Tensor scratch =
      at::empty({cuda_kernels::evonorm_s0_forward_scratch(shape)}, x.options().dtype(at::kDouble));
  cuda_kernels::evonorm_s0_forward(
      x.data_ptr<float>(), strides_of(x), v.data_ptr<float>(), gamma.data_ptr<float>(),
      beta.data_ptr<float>(), out.y.data_ptr<float>(), out.mean.data_ptr<float>(),
      out.rstd.data_ptr<float>(), scratch.data_ptr<double>(), shape, eps, current_stream());
  return out;
}

EvoNormGradients evonorm_s0_backward_cuda(const at::Tensor& dy_in, const at::Tensor& x_in,
                                          const at::Tensor& v_in, const at::Tensor& gamma_in,
                                          const at::Tensor& mean_in, const at::Tensor& rstd_in,
                                          std::int64_t channels_per_group) {
  RECORD_FUNCTION("lpdt::evonorm_s0_backward_cuda", std::vector<c10::IValue>());
  const cuda_kernels::EvoNormShape shape = shape_of(x_in, channels_per_group);
  LPDT_CHECK(dy_in.sizes() == x_in.sizes() && dy_in.scalar_type() == at::kFloat &&
                 dy_in.device() == x_in.device(),
             "EvoNorm-S0 CUDA kernel: dy must be float32 shaped like x, on its device");
  const std::int64_t groups = shape.channels / channels_per_group;
  LPDT_CHECK(mean_in.numel() == shape.samples * groups && rstd_in.numel() == shape.samples * groups,
             "EvoNorm-S0 CUDA kernel: mean and rstd must be [b, groups]");
  const c10::cuda::CUDAGuard device_guard(x_in.device());
  const at::Tensor x = dense(x_in);
  // dy arrives in whatever layout the next layer's backward produced (a broadcast for a sum, or
  // NCHW from some convolutions' data gradient). It is put in x's layout: the channel-tiled
  // kernels need both channels-last, and the per-group kernel they fall back to otherwise took
  // 43 us a call for stage 3 of a 16-node ResNet-20 (docs/benchmarks.md, GPU, item 22).
  const at::Tensor dy =
      format_of(dy_in) == format_of(x) && (is_channels_last(dy_in) || dy_in.is_contiguous())
          ? dy_in
          : dy_in.contiguous(format_of(x));
  const at::Tensor v = per_channel(v_in, shape.channels, "v");
  const at::Tensor gamma = per_channel(gamma_in, shape.channels, "gamma");
  const at::Tensor mean = mean_in.contiguous(), rstd = rstd_in.contiguous();
  EvoNormGradients out;
  out.dx = at::empty(x.sizes(), x.options().memory_format(format_of(x)));
  out.dv = at::empty({shape.channels}, x.options());
  out.dgamma = at::empty({shape.channels}, x.options());
  out.dbeta = at::empty({shape.channels}, x.options());
  const at::Tensor scratch =
      at::empty({cuda_kernels::evonorm_s0_backward_scratch(shape)}, x.options().dtype(at::kDouble));
  cuda_kernels::evonorm_s0_backward(
      dy.data_ptr<float>(), strides_of(dy), x.data_ptr<float>(), strides_of(x), v.data_ptr<float>(),
      gamma.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
      out.dx.data_ptr<float>(), out.dv.data_ptr<float>(), out.dgamma.data_ptr<float>(),
      out.dbeta.data_ptr<float>(), scratch.data_ptr<double>(), shape, current_stream());
  return out;
}

#else  // a build without the CUDA kernels: CUDA tensors take the composite ATen code

bool evonorm_s0_cuda_kernel_supports(const at::Tensor&, std::int64_t) { return false; }

namespace {
[[noreturn]] void not_built() {
  throw InternalError(
      "the CUDA EvoNorm-S0 kernels are not in this build (a CUDA LibTorch and nvcc are needed); "
      "callers check evonorm_s0_cuda_kernel_supports first");
}
}  // namespace

EvoNormForward evonorm_s0_forward_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       const at::Tensor&, std::int64_t, double) {
  not_built();
}
EvoNormGradients evonorm_s0_backward_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                          const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                          std::int64_t) {
  not_built();
}

#endif

}  // namespace lpdt::nn
