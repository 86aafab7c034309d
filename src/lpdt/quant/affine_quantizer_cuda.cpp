#include "lpdt/quant/affine_quantizer_cuda.h"

#include <ATen/record_function.h>

#include "lpdt/core/error.h"

#if LPDT_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "lpdt/quant/cuda/quantizer_kernels.h"
#endif

namespace lpdt::quant::cuda {

#if LPDT_HAVE_CUDA_KERNELS
namespace {

cuda_kernels::Geometry geometry_of(const NodeView& v) {
  return cuda_kernels::Geometry{v.nodes,       v.samples,       v.rows,      v.cols,
                                v.node_stride, v.sample_stride, v.row_stride};
}

cuda_kernels::Request request_of(const QuantizeRequest& r) {
  return cuda_kernels::Request{r.bits, r.scheme, r.rounding == Rounding::kStochastic, r.key,
                               r.site};
}

void* current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

void check_input(const at::Tensor& x, const QuantizeRequest& request) {
  LPDT_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat,
             "CUDA quantizer: expected a float32 CUDA tensor");
  LPDT_CHECK(request.bits >= 2 && request.bits <= 16, "quantize: bits must be in [2, 16]");
}

// range.min/max as contiguous [k] float32 on x's device (no copy when they already are).
std::pair<at::Tensor, at::Tensor> range_on(const NodeRange& range, std::int64_t k,
                                           const at::Tensor& x) {
  LPDT_CHECK(range.min.numel() == k && range.max.numel() == k, "quantize: range is not [k]");
  const auto on_device = [&](const at::Tensor& t) {
    return t.to(x.device(), at::kFloat).contiguous();
  };
  return {on_device(range.min), on_device(range.max)};
}

NodeRange ranges(const at::Tensor& x, std::int64_t k, cuda_kernels::RangeKind kind,
                 const cuda_kernels::RunningRangeUpdate& running = {}) {
  LPDT_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat,
             "CUDA quantizer: expected a float32 CUDA tensor");
  LPDT_CHECK(x.numel() > 0, "CUDA quantizer: the range of an empty tensor");
  const c10::cuda::CUDAGuard device_guard(x.device());
  const at::Tensor xc = canonical_layout(x);
  const cuda_kernels::Geometry g = geometry_of(node_view(xc, k));
  const at::Tensor scratch = at::empty({cuda_kernels::node_ranges_scratch(g, kind)}, xc.options());
  NodeRange range{at::empty({k}, xc.options()), at::empty({k}, xc.options())};
  cuda_kernels::node_ranges(xc.data_ptr<float>(), g, kind, scratch.data_ptr<float>(),
                            range.min.data_ptr<float>(), range.max.data_ptr<float>(), running,
                            current_stream());
  return range;
}

}  // namespace

bool kernels_built() { return true; }
bool handles(const at::Tensor& x) { return x.is_cuda(); }

NodeRange tensor_range(const at::Tensor& x, std::int64_t k) {
  RECORD_FUNCTION("lpdt::cuda::tensor_range", std::vector<c10::IValue>());
  return ranges(x, k, cuda_kernels::RangeKind::kWholeTensor);
}

NodeRange sample_mean_range(const at::Tensor& x, std::int64_t k) {
  RECORD_FUNCTION("lpdt::cuda::sample_mean_range", std::vector<c10::IValue>());
  return ranges(x, k, cuda_kernels::RangeKind::kSampleMean);
}

NodeRange sample_mean_range_updating(const at::Tensor& x, std::int64_t k,
                                     const at::Tensor& running_min, const at::Tensor& running_max,
                                     double momentum) {
  RECORD_FUNCTION("lpdt::cuda::sample_mean_range_updating", std::vector<c10::IValue>());
  for (const at::Tensor* r : {&running_min, &running_max}) {
    LPDT_CHECK(r->is_cuda() && r->device() == x.device() && r->scalar_type() == at::kFloat &&
                   r->numel() == k && r->dim() >= 1,
               "sample_mean_range_updating: running ranges must be k float32 values on x's device");
  }
  const auto stride_of = [k](const at::Tensor& r) {
    // [k] or [k, 1, ...]: node i's value at i * stride(0).
    return k == 1 ? std::int64_t{1} : r.stride(0);
  };
  LPDT_CHECK(stride_of(running_min) == stride_of(running_max),
             "sample_mean_range_updating: running min and max with different strides");
  cuda_kernels::RunningRangeUpdate running;
  running.min = running_min.data_ptr<float>();
  running.max = running_max.data_ptr<float>();
  running.stride = stride_of(running_min);
  running.keep = static_cast<float>(1.0 - momentum);
  running.take = static_cast<float>(momentum);
  return ranges(x, k, cuda_kernels::RangeKind::kSampleMean, running);
}

at::Tensor fake_quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request) {
  RECORD_FUNCTION("lpdt::cuda::fake_quantize", std::vector<c10::IValue>());
  check_input(x, request);
  const c10::cuda::CUDAGuard device_guard(x.device());
  const at::Tensor xc = canonical_layout(x);
  const auto [lo, hi] = range_on(range, k, xc);
  at::Tensor out = at::empty_like(xc);
  cuda_kernels::fake_quantize(xc.data_ptr<float>(), out.data_ptr<float>(),
                              geometry_of(node_view(xc, k)), lo.data_ptr<float>(),
                              hi.data_ptr<float>(), request_of(request), current_stream());
  return out;
}

QuantizedTensor quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request) {
  RECORD_FUNCTION("lpdt::cuda::quantize", std::vector<c10::IValue>());
  check_input(x, request);
  LPDT_CHECK(request.bits <= 8, "quantize: codes are 8-bit (bits <= 8)");
  LPDT_CHECK(request.scheme == QuantScheme::kGemmlowp,
             "quantize: integer codes need the gemmlowp scheme (an integer zero point)");
  const c10::cuda::CUDAGuard device_guard(x.device());
  const at::Tensor xc = canonical_layout(x);
  const auto [lo, hi] = range_on(range, k, xc);
  QuantizedTensor q;
  q.codes = at::empty_like(xc, xc.options().dtype(at::kByte));
  q.scale = at::empty({k}, xc.options());
  q.zero_point = at::empty({k}, xc.options());
  cuda_kernels::quantize_codes(xc.data_ptr<float>(), q.codes.data_ptr<std::uint8_t>(),
                               q.scale.data_ptr<float>(), q.zero_point.data_ptr<float>(),
                               geometry_of(node_view(xc, k)), lo.data_ptr<float>(),
                               hi.data_ptr<float>(), request_of(request), current_stream());
  return q;
}

at::Tensor dequantize(const QuantizedTensor& q, std::int64_t k) {
  RECORD_FUNCTION("lpdt::cuda::dequantize", std::vector<c10::IValue>());
  LPDT_CHECK(q.codes.is_cuda() && q.codes.scalar_type() == at::kByte,
             "CUDA dequantize: expected uint8 CUDA codes");
  const c10::cuda::CUDAGuard device_guard(q.codes.device());
  const NodeView v = node_view(q.codes, k);
  const auto [scale, zero_point] = range_on(NodeRange{q.scale, q.zero_point}, k, q.codes);
  at::Tensor out = at::empty_like(q.codes, q.codes.options().dtype(at::kFloat));
  cuda_kernels::dequantize(q.codes.data_ptr<std::uint8_t>(), out.data_ptr<float>(), geometry_of(v),
                           scale.data_ptr<float>(), zero_point.data_ptr<float>(), current_stream());
  return out;
}

// Runs the segments kernel on refs (all on device's current stream).
void quantize_segment_refs(const std::vector<cuda_kernels::SegmentRef>& refs, std::int64_t k,
                           int bits, QuantScheme scheme) {
  LPDT_CHECK(bits >= 2 && bits <= 16, "quantize: bits must be in [2, 16]");
  cuda_kernels::fake_quantize_segments_nearest(refs.data(), static_cast<std::int64_t>(refs.size()),
                                               k, bits, scheme, current_stream());
}

std::vector<at::Tensor> fake_quantize_each_nearest(const std::vector<at::Tensor>& tensors,
                                                   std::int64_t k, int bits, QuantScheme scheme) {
  RECORD_FUNCTION("lpdt::cuda::fake_quantize_each_nearest", std::vector<c10::IValue>());
  std::vector<at::Tensor> out;
  std::vector<cuda_kernels::SegmentRef> refs;
  out.reserve(tensors.size());
  refs.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    LPDT_CHECK(t.is_cuda() && t.scalar_type() == at::kFloat,
               "CUDA quantizer: expected float32 CUDA tensors");
    out.push_back(at::empty_like(t));  // t's strides (each node's values one dense block)
    refs.push_back(
        {t.data_ptr<float>(), out.back().data_ptr<float>(), t.numel() / k, t.numel() / k});
  }
  if (!tensors.empty()) {
    const c10::cuda::CUDAGuard device_guard(tensors.front().device());
    quantize_segment_refs(refs, k, bits, scheme);
  }
  return out;
}

#else  // a build without the CUDA kernels: CUDA tensors take the tensor operations

bool kernels_built() { return false; }
bool handles(const at::Tensor&) { return false; }

namespace {
[[noreturn]] void not_built() {
  throw InternalError(
      "the CUDA quantizer kernels are not in this build (a CUDA LibTorch and nvcc are needed); "
      "callers check quant::cuda::handles first");
}
}  // namespace

NodeRange tensor_range(const at::Tensor&, std::int64_t) { not_built(); }
NodeRange sample_mean_range(const at::Tensor&, std::int64_t) { not_built(); }
NodeRange sample_mean_range_updating(const at::Tensor&, std::int64_t, const at::Tensor&,
                                     const at::Tensor&, double) {
  not_built();
}
at::Tensor fake_quantize(const at::Tensor&, std::int64_t, const NodeRange&,
                         const QuantizeRequest&) {
  not_built();
}
QuantizedTensor quantize(const at::Tensor&, std::int64_t, const NodeRange&,
                         const QuantizeRequest&) {
  not_built();
}
at::Tensor dequantize(const QuantizedTensor&, std::int64_t) { not_built(); }
std::vector<at::Tensor> fake_quantize_each_nearest(const std::vector<at::Tensor>&, std::int64_t,
                                                   int, QuantScheme) {
  not_built();
}

#endif

}  // namespace lpdt::quant::cuda
