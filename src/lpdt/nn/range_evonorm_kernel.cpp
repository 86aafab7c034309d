#include "lpdt/nn/range_evonorm_kernel.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstring>
#include <limits>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One (sample, node) slice of a channels-last tensor: element (pixel p, channel c) at
// base[p * pixel_stride + c].
struct Slice {
  std::int64_t pixels;        // H * W
  std::int64_t pixel_stride;  // k * C
  std::int64_t channels;      // C
};

// The extremes of one chunk as the reference's torch.max / torch.min(dim) pick them: the first
// element that beats the running value under `!(v <= hi)` (resp. `!(v >= lo)`), from -inf (+inf)
// and the chunk's first element. Without NaN that is the max (min) and its first occurrence.
struct ChunkExtremes {
  float hi, lo;
  std::int64_t hi_at, lo_at;
};

// The sequential rule, element by element: what the reference computes in every case, NaN
// included (a NaN always takes over, the next larger value takes over from it).
ChunkExtremes sequential_extremes(const float* run, std::int64_t m) {
  ChunkExtremes e{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                  0, 0};
  for (std::int64_t t = 0; t < m; ++t) {
    const float v = run[t];
    if (!(v <= e.hi)) e.hi = v, e.hi_at = t;
    if (!(v >= e.lo)) e.lo = v, e.lo_at = t;
  }
  return e;
}

// The same result in two vectorised passes when the chunk holds no NaN: max and min over 16
// lanes (GCC vectors: vmaxps / vminps), then the first position of each. A chunk with a NaN (a
// diverged step) takes the sequential rule.
LPDT_CPU_CLONES ChunkExtremes chunk_extremes(const float* __restrict run, std::int64_t m) {
  using Lanes = float __attribute__((vector_size(64)));
  using Mask = std::int32_t __attribute__((vector_size(64)));
  constexpr int kLanes = 16;
  Lanes hi, lo;
  Mask nan{};
  for (int j = 0; j < kLanes; ++j) {
    hi[j] = -std::numeric_limits<float>::infinity();
    lo[j] = std::numeric_limits<float>::infinity();
  }
  std::int64_t t = 0;
  for (; t + kLanes <= m; t += kLanes) {
    Lanes v;
    std::memcpy(&v, run + t, sizeof v);
    hi = v > hi ? v : hi;
    lo = v < lo ? v : lo;
    nan |= v != v;
  }
  float h = -std::numeric_limits<float>::infinity(), l = std::numeric_limits<float>::infinity();
  bool has_nan = false;
  for (; t < m; ++t) {
    h = run[t] > h ? run[t] : h;
    l = run[t] < l ? run[t] : l;
    has_nan |= run[t] != run[t];
  }
  for (int j = 0; j < kLanes; ++j) {
    h = hi[j] > h ? hi[j] : h;
    l = lo[j] < l ? lo[j] : l;
    has_nan |= nan[j] != 0;
  }
  if (has_nan) return sequential_extremes(run, m);
  ChunkExtremes e{h, l, 0, 0};
  // First occurrences (an all -inf chunk keeps position 0, as the sequential rule does). The
  // value is taken back from that element so that +0 and -0 come out as the sequential rule's.
  while (e.hi_at < m && !(run[e.hi_at] == h)) ++e.hi_at;
  while (e.lo_at < m && !(run[e.lo_at] == l)) ++e.lo_at;
  if (e.hi_at == m) e.hi_at = 0;
  if (e.lo_at == m) e.lo_at = 0;
  e.hi = run[e.hi_at] == h ? run[e.hi_at] : h;
  e.lo = run[e.lo_at] == l ? run[e.lo_at] : l;
  return e;
}

// Range statistic of every group of one slice (reference spec 7.3): the groups' elements in
// NCHW order (channel-major), split into `chunks` chunks of m; for each chunk the first max and
// first min in that order (torch.max(dim) picks one element for the gradient). Writes
// scale[g] = 1 / (mean_j (max_j - min_j) * factor + 1e-5) and the offsets of the max/min elements.
void group_ranges(const float* x, const Slice& s, std::int64_t groups, std::int64_t chunks,
                  float factor, float* scale, std::int32_t* arg_max, std::int32_t* arg_min) {
  const std::int64_t cg = s.channels / groups, m = cg * s.pixels / chunks;
  // The slice channel-major, so that every chunk is one contiguous run (the channels-last slice
  // has a channel's pixels k*C apart: a strided, branchy scalar loop took 16% of an 8-bit step).
  std::vector<float> planar(static_cast<std::size_t>(s.channels * s.pixels));
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* pixel = x + p * s.pixel_stride;
    for (std::int64_t c = 0; c < s.channels; ++c) planar[c * s.pixels + p] = pixel[c];
  }
  // Element t of group g in NCHW order: channel g * cg + t / pixels, pixel t % pixels.
  const auto offset_of = [&](std::int64_t g, std::int64_t t) {
    return static_cast<std::int32_t>((t % s.pixels) * s.pixel_stride + g * cg + t / s.pixels);
  };
  for (std::int64_t g = 0; g < groups; ++g) {
    const float* group = planar.data() + g * cg * s.pixels;
    float sum = 0.0f;
    for (std::int64_t j = 0; j < chunks; ++j) {
      const ChunkExtremes e = chunk_extremes(group + j * m, m);
      arg_max[g * chunks + j] = offset_of(g, j * m + e.hi_at);
      arg_min[g * chunks + j] = offset_of(g, j * m + e.lo_at);
      sum += e.hi - e.lo;
    }
    const float range = sum / static_cast<float>(chunks);
    scale[g] = 1.0f / (range * factor + 1e-5f);
  }
}

// out = x * hsig(x * v) * s_c * gamma + beta over one slice; s_c = the channel's group scale.
LPDT_CPU_CLONES void output_pass(const float* __restrict x, float* __restrict out, const Slice& s,
                                 const float* __restrict v, const float* __restrict s_c,
                                 const float* __restrict gamma, const float* __restrict beta) {
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* xp = x + p * s.pixel_stride;
    float* op = out + p * s.pixel_stride;
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const float h = std::min(std::max(xp[c] * v[c] / 6.0f + 0.5f, 0.0f), 1.0f);
      op[c] = xp[c] * h * s_c[c] * gamma[c] + beta[c];
    }
  }
}

// Backward of output_pass (without the range statistic's part): dx, and per-channel partial sums
// of the gradients of v, gamma, beta and of the group scale (summed per group by the caller).
LPDT_CPU_CLONES void backward_pass(const float* __restrict dy, const float* __restrict x,
                                   float* __restrict dx, const Slice& s, const float* __restrict v,
                                   const float* __restrict s_c, const float* __restrict gamma,
                                   float* __restrict dv, float* __restrict dgamma,
                                   float* __restrict dbeta, float* __restrict ds_c) {
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* dyp = dy + p * s.pixel_stride;
    const float* xp = x + p * s.pixel_stride;
    float* dxp = dx + p * s.pixel_stride;
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const float z = xp[c] * v[c] / 6.0f + 0.5f;
      const float h = std::min(std::max(z, 0.0f), 1.0f);
      const float inside = (z >= 0.0f && z <= 1.0f) ? 1.0f : 0.0f;  // clamp's gradient mask
      const float n = xp[c] * h;
      const float d = dyp[c];
      dbeta[c] += d;
      dgamma[c] += d * (n * s_c[c]);
      ds_c[c] += d * gamma[c] * n;
      const float dn = d * gamma[c] * s_c[c];
      const float dz = dn * xp[c] * inside / 6.0f;  // through hsig(z), z = x v
      dxp[c] = dn * h + dz * v[c];
      dv[c] += dz * xp[c];
    }
  }
}

at::Tensor quantize_scales(const at::Tensor& s, std::int64_t k, int bits,
                           quant::QuantScheme scheme) {
  // s: [b, k, G] -> each node's b x G scales share one range (reference spec 7.2).
  const at::Tensor node_leading = s.transpose(0, 1).contiguous();  // [k, b, G]
  quant::QuantizeRequest request;
  request.bits = bits;
  request.scheme = scheme;
  request.rounding = quant::Rounding::kNearest;
  return quant::fake_quantize(node_leading, k, quant::tensor_range(node_leading, k), request)
      .transpose(0, 1)
      .contiguous();
}

struct RangeEvoNormFunction : torch::autograd::Function<RangeEvoNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& qv,
                            const at::Tensor& qgamma, const at::Tensor& qbeta,
                            const at::Tensor& codes, const at::Tensor& code_scale,
                            const at::Tensor& code_zero, const RangeEvoNormShape& shape) {
    const std::int64_t k = shape.k;
    // 8-bit models compute from the codes (what the simulated quantizer's values are exactly).
    const at::Tensor x = codes.numel() > 0
                             ? quant::dequantize({codes, code_scale, code_zero}, k)
                             : x_in.detach().contiguous(at::MemoryFormat::ChannelsLast);
    const std::int64_t b = x.size(0), c = shape.channels, g = shape.groups, j = shape.chunks;
    const Slice slice{x.size(2) * x.size(3), k * c, c};
    at::Tensor s = at::empty({b, k, g}, at::kFloat);
    at::Tensor arg_max = at::empty({b, k, g, j}, at::kInt), arg_min = at::empty_like(arg_max);
    const float* xp = x.data_ptr<float>();
    const auto sample_stride = slice.pixels * slice.pixel_stride;
    at::parallel_for(0, b * k, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t item = begin; item < end; ++item) {
        const std::int64_t n = item / k, node = item % k;
        group_ranges(xp + n * sample_stride + node * c, slice, g, j,
                     static_cast<float>(shape.range_factor), s.data_ptr<float>() + item * g,
                     arg_max.data_ptr<std::int32_t>() + item * g * j,
                     arg_min.data_ptr<std::int32_t>() + item * g * j);
      }
    });
    const at::Tensor qs =
        shape.scale_bits > 0 ? quantize_scales(s, k, shape.scale_bits, shape.scale_scheme) : s;
    // Each channel's group scale: [b, k*C].
    const at::Tensor s_c =
        qs.view({b, k * g, 1}).expand({b, k * g, c / g}).reshape({b, k * c}).contiguous();
    at::Tensor out = at::empty_like(x);
    const at::Tensor v = qv.contiguous(), gamma = qgamma.contiguous(), beta = qbeta.contiguous();
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      const Slice all{slice.pixels, k * c, k * c};  // all nodes' channels at once
      for (std::int64_t n = begin; n < end; ++n) {
        output_pass(xp + n * sample_stride, out.data_ptr<float>() + n * sample_stride, all,
                    v.data_ptr<float>(), s_c.data_ptr<float>() + n * k * c, gamma.data_ptr<float>(),
                    beta.data_ptr<float>());
      }
    });
    // 8-bit models keep the input's codes (1 byte per element); fp32 keeps x itself.
    if (codes.numel() > 0) {
      ctx->save_for_backward({codes, code_scale, code_zero, v, gamma, s, qs, arg_max, arg_min});
    } else {
      ctx->save_for_backward({x, at::Tensor(), at::Tensor(), v, gamma, s, qs, arg_max, arg_min});
    }
    ctx->saved_data["k"] = k;
    ctx->saved_data["channels"] = c;
    ctx->saved_data["groups"] = g;
    ctx->saved_data["chunks"] = j;
    ctx->saved_data["range_factor"] = shape.range_factor;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const std::int64_t k = ctx->saved_data["k"].toInt(), c = ctx->saved_data["channels"].toInt(),
                       g = ctx->saved_data["groups"].toInt(), j = ctx->saved_data["chunks"].toInt();
    const float factor = static_cast<float>(ctx->saved_data["range_factor"].toDouble());
    const at::Tensor x = saved[0].scalar_type() == at::kByte
                             ? quant::dequantize({saved[0], saved[1], saved[2]}, k)
                             : saved[0];
    const at::Tensor &v = saved[3], &gamma = saved[4], &s = saved[5], &qs = saved[6],
                     &arg_max = saved[7], &arg_min = saved[8];
    const at::Tensor dy = grad[0].contiguous(at::MemoryFormat::ChannelsLast);
    const std::int64_t b = x.size(0), kc = k * c;
    const Slice all{x.size(2) * x.size(3), kc, kc};
    const auto sample_stride = all.pixels * all.pixel_stride;
    const at::Tensor s_c =
        qs.view({b, k * g, 1}).expand({b, k * g, c / g}).reshape({b, kc}).contiguous();
    at::Tensor dx = at::empty_like(x);
    // Per-sample partial sums, added in sample order afterwards: deterministic for any threads.
    at::Tensor partial = at::zeros({4, b, kc}, at::kFloat);  // dv, dgamma, dbeta, ds_c
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t n = begin; n < end; ++n) {
        float* base = partial.data_ptr<float>() + n * kc;
        backward_pass(dy.data_ptr<float>() + n * sample_stride,
                      x.data_ptr<float>() + n * sample_stride,
                      dx.data_ptr<float>() + n * sample_stride, all, v.data_ptr<float>(),
                      s_c.data_ptr<float>() + n * kc, gamma.data_ptr<float>(), base, base + b * kc,
                      base + 2 * b * kc, base + 3 * b * kc);
      }
    });
    const at::Tensor sums = partial.sum(1);  // [4, k*C]
    // The group scale's gradient (straight through Q(s)) back to the range statistic:
    // s = 1 / (R f + eps) -> dR = -ds s^2 f; R = mean_j (max_j - min_j).
    const at::Tensor ds = partial[3].view({b, k, g, c / g}).sum(-1);  // [b, k, G]
    const at::Tensor d_chunk = (-ds * s * s * factor / static_cast<double>(j)).contiguous();
    const float* dc = d_chunk.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t n = begin; n < end; ++n) {
        for (std::int64_t node = 0; node < k; ++node) {
          float* slice = dxp + n * sample_stride + node * c;
          const std::int64_t item = n * k + node;
          for (std::int64_t gi = 0; gi < g; ++gi) {
            for (std::int64_t ji = 0; ji < j; ++ji) {
              const std::int64_t at = (item * g + gi) * j + ji;
              slice[arg_max.data_ptr<std::int32_t>()[at]] += dc[item * g + gi];
              slice[arg_min.data_ptr<std::int32_t>()[at]] -= dc[item * g + gi];
            }
          }
        }
      }
    });
    return {dx, sums[0], sums[1], sums[2], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool range_evonorm_fused_supports(const at::Tensor& x) {
  return x.dim() == 4 && x.scalar_type() == at::kFloat && x.device().is_cpu();
}

at::Tensor range_evonorm_fused(const at::Tensor& x, const quant::QuantizedTensor& x_codes,
                               const at::Tensor& qv, const at::Tensor& qgamma,
                               const at::Tensor& qbeta, const RangeEvoNormShape& shape) {
  LPDT_CHECK(range_evonorm_fused_supports(x), "range_evonorm_fused: x must be 4-D float32 CPU");
  const at::Tensor empty = at::empty({0}, x.options());
  const bool codes = x_codes.codes.defined();
  return RangeEvoNormFunction::apply(x, qv, qgamma, qbeta, codes ? x_codes.codes : empty,
                                     codes ? x_codes.scale : empty,
                                     codes ? x_codes.zero_point : empty, shape);
}

}  // namespace lpdt::nn
