#pragma once
// The value half of a message's compression (docs/wire.md, "Value formats"): after a sparsifier
// has chosen what to send, the kept values are rounded to what the wire carries (bfloat16, or
// 8-bit codes with one scale and zero point per node and layer), so that the algorithm and the
// receivers see the same numbers. Composed with any sparsifier by make_compressor.
#include <memory>

#include "lpdt/compress/compressor.h"

namespace lpdt::compress {

class MessageValueRounding final : public Compressor {
 public:
  // inner: the sparsifier (or the identity). values: kBfloat16 or kInt8. seed, first_node: the
  // int8 draws' key (quant/stochastic_draws.h: step = the round, site = the segment index).
  MessageValueRounding(std::unique_ptr<Compressor> inner, MessageValues values,
                       quant::Rounding rounding, std::uint64_t seed, std::int64_t first_node);

  std::string_view name() const override { return inner_->name(); }

  // inner's result with every kept value rounded:
  //   bf16: v -> bf16(v) (round to nearest even), widened back to float32;
  //   int8: per node and segment, the gemmlowp quantizer over the kept values (range widened to
  //         contain 0, integer zero point; quant/affine_quantizer.h), v -> scale (q - zp).
  // Dropped positions stay exactly 0. Never writes into v.
  Compressed compress(const at::Tensor& v, const LayerLayout& layout, std::int64_t step) override;

 private:
  std::unique_ptr<Compressor> inner_;
  MessageValues values_;
  quant::Rounding rounding_;
  std::uint64_t seed_;
  std::int64_t first_node_;
};

}  // namespace lpdt::compress
