#pragma once
// The identity compressor ("none"): every node sends its whole dense vector.
#include "lpdt/compress/compressor.h"

namespace lpdt::compress {

class IdentityCompressor final : public Compressor {
 public:
  std::string_view name() const override { return "none"; }
  // Returns v itself (no copy) and a dense SendShape with P values.
  Compressed compress(const at::Tensor& v, const LayerLayout& layout, std::int64_t step) override;
};

}  // namespace lpdt::compress
