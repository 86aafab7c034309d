#include "lpdt/quant/affine_quantizer_tensor_ops.h"

#include <ATen/record_function.h>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::quant::tensor_ops {
namespace {

// x in canonical layout seen as [k, samples, rows, cols] (a strided view, no copy).
at::Tensor node_elements(const at::Tensor& xc, const NodeView& v) {
  return xc.as_strided({v.nodes, v.samples, v.rows, v.cols},
                       {v.node_stride, v.sample_stride, v.row_stride, 1}, xc.storage_offset());
}

// Each node's affine parameters as [k, 1, 1, 1] float32 tensors, computed as affine_params does
// (in double, then float32).
struct ParamTensors {
  at::Tensor scale;
  at::Tensor zero_point;
  at::Tensor min;
};
ParamTensors param_tensors(const NodeRange& range, std::int64_t k, int bits, QuantScheme scheme,
                           at::Device device) {
  LPDT_CHECK(range.min.numel() == k && range.max.numel() == k, "quantize: range is not [k]");
  const double qmax = static_cast<double>((std::int64_t{1} << bits) - 1);
  const at::Tensor mn = range.min.to(device, at::kFloat).to(at::kDouble).reshape({k, 1, 1, 1});
  const at::Tensor mx = range.max.to(device, at::kFloat).to(at::kDouble).reshape({k, 1, 1, 1});
  ParamTensors p;
  if (scheme == QuantScheme::kReference) {
    p.scale = ((mx - mn) / qmax).clamp_min(kMinScale).to(at::kFloat);
    p.min = mn.to(at::kFloat);
    p.zero_point = -p.min / p.scale;
    return p;
  }
  const at::Tensor lo = mn.clamp_max(0.0), hi = mx.clamp_min(0.0);
  p.scale = ((hi - lo) / qmax).clamp_min(kMinScale).to(at::kFloat);
  p.zero_point = (-lo / p.scale.to(at::kDouble)).round().clamp(0.0, qmax).to(at::kFloat);
  p.min = at::zeros_like(p.scale);
  return p;
}

// Logical right shift of int64 lanes holding uint64 bits.
at::Tensor shift_right_logical(const at::Tensor& h, int bits) {
  const std::int64_t mask = static_cast<std::int64_t>(~std::uint64_t{0} >> bits);
  return h.bitwise_right_shift(bits).bitwise_and_(mask);
}

std::int64_t as_int64(std::uint64_t u) { return static_cast<std::int64_t>(u); }

// core/rng.h mix64 (SplitMix64's finaliser) on int64 lanes.
at::Tensor mix64_lanes(at::Tensor x) {
  x = x.add(as_int64(0x9e3779b97f4a7c15ULL));
  x = at::bitwise_xor(x, shift_right_logical(x, 30)).mul_(as_int64(0xbf58476d1ce4e5b9ULL));
  x = at::bitwise_xor(x, shift_right_logical(x, 27)).mul_(as_int64(0x94d049bb133111ebULL));
  return at::bitwise_xor(x, shift_right_logical(x, 31));
}

// draw_stream(key, i, site) for i in [0, k), computed on the device: no host-to-device copy, so
// a step that quantizes stochastically can be captured as a CUDA graph. [k] int64.
at::Tensor draw_streams(std::int64_t k, const DrawKey& key, SiteId site, at::Device device) {
  LPDT_CHECK(key.device_step == nullptr,
             "the tensor-operation quantizer keys its draws on DrawKey::step; device_step needs "
             "the CUDA kernels");
  const at::Tensor seed_part = at::full({k}, as_int64(lpdt::mix64(key.seed ^ 0x51A7E5C0FFEEull)),
                                        at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor nodes = at::arange(key.first_node, key.first_node + k,
                                      at::TensorOptions().dtype(at::kLong).device(device));
  at::Tensor h = mix64_lanes(at::bitwise_xor(seed_part, nodes));
  h = mix64_lanes(
      h.bitwise_xor_(as_int64(static_cast<std::uint64_t>(key.step) * 0xA24BAED4963EE407ull)));
  return mix64_lanes(
      h.bitwise_xor_(as_int64(static_cast<std::uint64_t>(site) * 0x9FB21C651E98DF25ull)));
}

// The quantized codes as float32 values in [0, qmax], [k, samples, rows, cols].
at::Tensor codes_as_float(const at::Tensor& xc, const NodeView& v, const ParamTensors& p,
                          const QuantizeRequest& request) {
  const at::Tensor x = node_elements(xc, v);
  at::Tensor y = request.scheme == QuantScheme::kGemmlowp ? x.div(p.scale).add_(p.zero_point)
                                                          : (x - p.min).div_(p.scale);
  if (request.rounding == Rounding::kStochastic) {
    y.add_(centered_uniform_draws(v, request.key, request.site, xc.device()));
  }
  const double qmax = static_cast<double>((std::int64_t{1} << request.bits) - 1);
  return y.clamp_(0.0, qmax).round_();
}

void check_input(const at::Tensor& x, const QuantizeRequest& request) {
  LPDT_CHECK(x.scalar_type() == at::kFloat, "quantize: expected a float32 tensor");
  LPDT_CHECK(request.bits >= 2 && request.bits <= 16, "quantize: bits must be in [2, 16]");
}

}  // namespace

at::Tensor centered_uniform_draws(const NodeView& v, const DrawKey& key, SiteId site,
                                  at::Device device) {
  const at::Tensor stream = draw_streams(v.nodes, key, site, device).reshape({v.nodes, 1, 1, 1});
  const at::Tensor index =
      at::arange(v.node_numel(), at::TensorOptions().dtype(at::kLong).device(device))
          .reshape({1, v.samples, v.rows, v.cols});
  // stochastic_draws.h, centered_uniform: int64 multiplication wraps as uint64 does; elements
  // 2p and 2p + 1 take the low and high 32-bit halves of pair p's mix.
  at::Tensor h =
      at::bitwise_xor(shift_right_logical(index, 1).mul_(as_int64(kPairMultiplier)), stream);
  for (int round = 0; round < 2; ++round) {
    h.bitwise_xor_(shift_right_logical(h, 32));
    h.mul_(as_int64(0xD6E8FEB86659FD93ull));
  }
  h.bitwise_xor_(shift_right_logical(h, 32));
  const at::Tensor odd = index.bitwise_and(1).to(at::kBool);
  const at::Tensor half =
      at::where(odd, shift_right_logical(h, 32), h.bitwise_and(std::int64_t{0xFFFFFFFF}));
  return half
      .bitwise_right_shift(8)  // non-negative: the shift is logical
      .to(at::kFloat)
      .mul_(static_cast<double>(kTwoToMinus24))
      .sub_(0.5);
}

NodeRange tensor_range(const at::Tensor& x, std::int64_t k) {
  RECORD_FUNCTION("lpdt::tensor_range", std::vector<c10::IValue>());
  const at::Tensor xc = canonical_layout(x);
  const at::Tensor e = node_elements(xc, node_view(xc, k)).reshape({k, -1});
  auto [lo, hi] = at::aminmax(e, 1);
  return NodeRange{lo, hi};
}

NodeRange sample_mean_range(const at::Tensor& x, std::int64_t k) {
  const at::Tensor xc = canonical_layout(x);
  const NodeView v = node_view(xc, k);
  const at::Tensor e = node_elements(xc, v).reshape({k, v.samples, -1});
  auto [lo, hi] = at::aminmax(e, 2);  // [k, samples]
  // The CPU loops sum in double.
  return NodeRange{lo.to(at::kDouble).mean(1).to(at::kFloat),
                   hi.to(at::kDouble).mean(1).to(at::kFloat)};
}

at::Tensor fake_quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request) {
  RECORD_FUNCTION("lpdt::fake_quantize", std::vector<c10::IValue>());
  check_input(x, request);
  const at::Tensor xc = canonical_layout(x);
  const NodeView v = node_view(xc, k);
  const ParamTensors p = param_tensors(range, k, request.bits, request.scheme, xc.device());
  const at::Tensor q = codes_as_float(xc, v, p, request);
  const at::Tensor real = request.scheme == QuantScheme::kGemmlowp
                              ? q.sub_(p.zero_point).mul_(p.scale)
                              : q.mul_(p.scale).add_(p.min);
  at::Tensor out = at::empty_like(xc);
  node_elements(out, v).copy_(real);
  return out;
}

QuantizedTensor quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request) {
  RECORD_FUNCTION("lpdt::quantize", std::vector<c10::IValue>());
  check_input(x, request);
  LPDT_CHECK(request.bits <= 8, "quantize: codes are 8-bit (bits <= 8)");
  LPDT_CHECK(request.scheme == QuantScheme::kGemmlowp,
             "quantize: integer codes need the gemmlowp scheme (an integer zero point)");
  const at::Tensor xc = canonical_layout(x);
  const NodeView v = node_view(xc, k);
  const ParamTensors p = param_tensors(range, k, request.bits, request.scheme, xc.device());
  QuantizedTensor out;
  out.codes = at::empty_like(xc, xc.options().dtype(at::kByte));
  node_elements(out.codes, v).copy_(codes_as_float(xc, v, p, request));
  out.scale = p.scale.reshape({k});
  out.zero_point = p.zero_point.reshape({k});
  return out;
}

at::Tensor dequantize(const QuantizedTensor& q, std::int64_t k) {
  RECORD_FUNCTION("lpdt::dequantize", std::vector<c10::IValue>());
  const NodeView v = node_view(q.codes, k);
  at::Tensor out = at::empty_like(q.codes, q.codes.options().dtype(at::kFloat));
  const at::Tensor scale = q.scale.to(q.codes.device()).reshape({k, 1, 1, 1});
  const at::Tensor zero_point = q.zero_point.to(q.codes.device()).reshape({k, 1, 1, 1});
  node_elements(out, v).copy_(
      node_elements(q.codes, v).to(at::kFloat).sub_(zero_point).mul_(scale));
  return out;
}

}  // namespace lpdt::quant::tensor_ops
