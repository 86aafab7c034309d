#include "lpdt/algo/dpsgd.h"

namespace lpdt::algo {

compress::Compressed Dpsgd::prepare(at::Tensor& z, std::int64_t /*round*/) {
  // D-PSGD: the message is z before the round (a copy, which also serves as the product's
  // right-hand side).
  compress::Compressed sent;
  sent.dense = z.clone(at::MemoryFormat::Contiguous);
  sent.sent.sparse = false;
  sent.sent.values = layout_.total_numel;
  for (const auto& seg : layout_.segments) sent.sent.kept_per_segment.push_back(seg.numel);
  sent.kept_index.resize(layout_.segments.size());  // every segment whole
  return sent;
}

void Dpsgd::combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) {
  step.add_product(z, messages);  // z <- z + eta (W z - z) = z + L z
}

}  // namespace lpdt::algo
