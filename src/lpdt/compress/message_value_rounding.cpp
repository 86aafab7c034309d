#include "lpdt/compress/message_value_rounding.h"

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::compress {

MessageValueRounding::MessageValueRounding(std::unique_ptr<Compressor> inner, MessageValues values,
                                           quant::Rounding rounding, std::uint64_t seed,
                                           std::int64_t first_node)
    : inner_(std::move(inner)),
      values_(values),
      rounding_(rounding),
      // Not the model quantizer's draws: a seed of their own, derived from the run's.
      seed_(mix64(seed ^ 0x6D657373616765ull)),
      first_node_(first_node) {
  LPDT_CHECK(inner_ && values_ != MessageValues::kFloat32,
             "MessageValueRounding needs a sparsifier and a rounded value format");
}

Compressed MessageValueRounding::compress(const at::Tensor& v, const LayerLayout& layout,
                                          std::int64_t step) {
  Compressed out = inner_->compress(v, layout, step);
  // The identity returns v itself: round a copy.
  if (out.dense.is_same(v)) out.dense = v.clone(at::MemoryFormat::Contiguous);
  out.values = values_;
  const std::int64_t n = v.size(0);
  if (values_ == MessageValues::kInt8) out.codes.resize(layout.segments.size());
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    at::Tensor dst = out.dense.narrow(1, seg.offset, seg.numel);  // [n, numel] view
    const at::Tensor& index = out.kept_index[s];                  // [n, K] or undefined
    const at::Tensor kept = index.defined() ? dst.gather(1, index) : dst.contiguous();  // [n, K]
    at::Tensor rounded;
    if (values_ == MessageValues::kBfloat16) {
      rounded = kept.to(at::kBFloat16).to(at::kFloat);
    } else {
      // One range per node over its kept values of this segment; the gemmlowp scheme widens it
      // to contain 0, so a value of 0 stays exactly 0.
      const quant::NodeRange range = quant::tensor_range(kept, n);
      quant::QuantizeRequest request;
      request.bits = 8;
      request.scheme = quant::QuantScheme::kGemmlowp;
      request.rounding = rounding_;
      request.key = quant::DrawKey{seed_, step, first_node_};
      request.site = static_cast<quant::SiteId>(s);
      out.codes[s] = quant::quantize(kept, n, range, request);
      rounded = quant::dequantize(out.codes[s], n);
    }
    if (index.defined()) {
      dst.scatter_(1, index, rounded);
    } else {
      dst.copy_(rounded);
    }
  }
  return out;
}

}  // namespace lpdt::compress
