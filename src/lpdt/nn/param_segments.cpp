#include "lpdt/nn/param_segments.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>

#include "lpdt/core/error.h"

#if LPDT_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "lpdt/nn/cuda/param_segments_kernels.h"
#endif

namespace lpdt::nn {

bool segment_channels_last(const LayerSegment& segment) {
  return segment.shape.size() == 4 && segment.shape[2] * segment.shape[3] > 1;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<std::int64_t> node_shape(const LayerSegment& segment, std::int64_t k) {
  std::vector<std::int64_t> shape{k};
  shape.insert(shape.end(), segment.shape.begin(), segment.shape.end());
  return shape;
}

// An empty [k, shape...] tensor for the segment, in the layout gather_param_segments promises.
at::Tensor segment_tensor(const LayerSegment& segment, std::int64_t k,
                          const at::TensorOptions& options) {
  if (!segment_channels_last(segment)) return at::empty(node_shape(segment, k), options);
  const std::int64_t out = segment.shape[0], in = segment.shape[1], kh = segment.shape[2],
                     kw = segment.shape[3];
  return at::empty_strided({k, out, in, kh, kw}, {segment.numel, in * kh * kw, 1, kw * in, in},
                           options);
}

// Whether t ([k, shape...]) is laid out as segment_tensor lays the segment out.
[[maybe_unused]] bool in_segment_layout(const at::Tensor& t, const LayerSegment& segment) {
  if (t.scalar_type() != at::kFloat) return false;
  if (!segment_channels_last(segment)) return t.is_contiguous();
  const std::int64_t in = segment.shape[1], kh = segment.shape[2], kw = segment.shape[3];
  const std::vector<std::int64_t> expected{segment.numel, in * kh * kw, 1, kw * in, in};
  return t.strides().vec() == expected;
}

// The columns of one segment in params' rows, viewed as [k, shape...].
at::Tensor columns_of(const at::Tensor& rows, const LayerSegment& segment, std::int64_t k) {
  return rows.narrow(1, segment.offset, segment.numel).view(node_shape(segment, k));
}

#if LPDT_HAVE_CUDA_KERNELS
std::vector<cuda_kernels::SegmentSlot> slots_of(const LayerLayout& layout,
                                                const std::vector<at::Tensor>& tensors) {
  std::vector<cuda_kernels::SegmentSlot> slots;
  slots.reserve(layout.segments.size());
  for (std::size_t i = 0; i < layout.segments.size(); ++i) {
    const LayerSegment& s = layout.segments[i];
    cuda_kernels::SegmentSlot slot;
    slot.offset = s.offset;
    slot.numel = s.numel;
    if (segment_channels_last(s)) {
      slot.in_channels = static_cast<std::int32_t>(s.shape[1]);
      slot.positions = static_cast<std::int32_t>(s.shape[2] * s.shape[3]);
    }
    slot.tensor = tensors[i].defined() ? tensors[i].data_ptr<float>() : nullptr;
    slots.push_back(slot);
  }
  return slots;
}
#endif

struct GatherParamSegments : torch::autograd::Function<GatherParamSegments> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& params,
                               const LayerLayout* layout) {
    RECORD_FUNCTION("lpdt::gather_param_segments", std::vector<c10::IValue>());
    ctx->set_materialize_grads(false);
    // The layout is the model's, which outlives the pass and its backward.
    ctx->saved_data["layout"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(layout));
    ctx->saved_data["k"] = params.size(0);
    const std::int64_t k = params.size(0);
    const at::Tensor rows = params.detach().contiguous();
    std::vector<at::Tensor> tensors;
    tensors.reserve(layout->segments.size());
    for (const LayerSegment& s : layout->segments) {
      tensors.push_back(segment_tensor(s, k, rows.options()));
    }
#if LPDT_HAVE_CUDA_KERNELS
    if (rows.is_cuda()) {
      const c10::cuda::CUDAGuard device_guard(rows.device());
      const auto slots = slots_of(*layout, tensors);
      cuda_kernels::gather_param_segments(rows.data_ptr<float>(), k, rows.size(1), slots.data(),
                                          static_cast<std::int64_t>(slots.size()),
                                          c10::cuda::getCurrentCUDAStream().stream());
      return tensors;
    }
#endif
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      tensors[i].copy_(columns_of(rows, layout->segments[i], k));
    }
    return tensors;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    RECORD_FUNCTION("lpdt::gather_param_segments_backward", std::vector<c10::IValue>());
    const auto* layout = reinterpret_cast<const LayerLayout*>(
        static_cast<std::intptr_t>(ctx->saved_data["layout"].toInt()));
    const std::int64_t k = ctx->saved_data["k"].toInt();
    at::Tensor defined;
    for (const at::Tensor& g : grad) {
      if (g.defined()) defined = g;
    }
    if (!defined.defined()) return {at::Tensor(), at::Tensor()};
    at::Tensor rows = at::empty({k, layout->total_numel}, defined.options());
#if LPDT_HAVE_CUDA_KERNELS
    if (rows.is_cuda()) {
      // Each gradient in its segment's layout (as the gather wrote it): as it is when it already
      // is (cuDNN's weight gradients next to channels-last activations), else a copy.
      std::vector<at::Tensor> dense(grad.size());
      for (std::size_t i = 0; i < grad.size(); ++i) {
        if (!grad[i].defined()) continue;
        const LayerSegment& s = layout->segments[i];
        if (in_segment_layout(grad[i], s)) {
          dense[i] = grad[i];
        } else {
          dense[i] = segment_tensor(s, k, rows.options());
          dense[i].copy_(grad[i]);
        }
      }
      const c10::cuda::CUDAGuard device_guard(rows.device());
      const auto slots = slots_of(*layout, dense);
      cuda_kernels::scatter_param_segments(rows.data_ptr<float>(), k, rows.size(1), slots.data(),
                                           static_cast<std::int64_t>(slots.size()),
                                           c10::cuda::getCurrentCUDAStream().stream());
      return {rows, at::Tensor()};
    }
#endif
    for (std::size_t i = 0; i < grad.size(); ++i) {
      const at::Tensor target = columns_of(rows, layout->segments[i], k);
      if (grad[i].defined()) {
        target.copy_(grad[i]);
      } else {
        target.zero_();
      }
    }
    return {rows, at::Tensor()};
  }
};

}  // namespace

bool param_segments_gathered(const at::Tensor& params) {
#if LPDT_HAVE_CUDA_KERNELS
  return params.is_cuda() && params.scalar_type() == at::kFloat && params.dim() == 2;
#else
  (void)params;
  return false;
#endif
}

std::vector<at::Tensor> gather_param_segments(const at::Tensor& params, const LayerLayout& layout) {
  LPDT_CHECK(params.dim() == 2 && params.scalar_type() == at::kFloat &&
                 params.size(1) == layout.total_numel,
             "gather_param_segments: expected [k, P] float32 parameters of the layout's P = " +
                 std::to_string(layout.total_numel) + " columns");
  return GatherParamSegments::apply(params, &layout);
}

}  // namespace lpdt::nn
