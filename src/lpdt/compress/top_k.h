#pragma once
// Layer-wise top-k sparsification ("topk"), reference spec 5.5: in every segment of every row keep
// the K = max(1, int(numel * keep)) values of largest magnitude (sign kept), zero the rest.
#include "lpdt/compress/compressor.h"

namespace lpdt::compress {

class TopKCompressor final : public Compressor {
 public:
  // keep_fraction in (0, 1] (ConfigError otherwise).
  explicit TopKCompressor(double keep_fraction);

  std::string_view name() const override { return "topk"; }
  double keep_fraction() const { return keep_fraction_; }

  // Per segment: one torch::topk(|seg|, K, dim=1) over all n rows, then a scatter. K == 1 takes
  // the first maximum of |x| (argmax), as the official code does; K == numel copies the segment.
  // Ties at the K-th magnitude for K > 1 are broken by torch::topk (unspecified order).
  Compressed compress(const at::Tensor& v, const LayerLayout& layout, std::int64_t step) override;

 private:
  double keep_fraction_;
};

}  // namespace lpdt::compress
