#include "lpdt/algo/dpsgd.h"

namespace lpdt::algo {

compress::Compressed Dpsgd::mix(at::Tensor& z, const ConsensusStep& step, std::int64_t /*round*/) {
  // D-PSGD: z <- z + eta (W z - z) = z + L z. The message is z before the round (a copy, which
  // also serves as the product's right-hand side).
  compress::Compressed sent;
  sent.dense = z.clone(at::MemoryFormat::Contiguous);
  step.add_product(z, sent.dense);
  sent.sent.sparse = false;
  sent.sent.values = layout_.total_numel;
  for (const auto& seg : layout_.segments) sent.sent.kept_per_segment.push_back(seg.numel);
  sent.kept_index.resize(layout_.segments.size());  // every segment whole
  return sent;
}

}  // namespace lpdt::algo
