#include "lpdt/algo/dpsgd.h"

namespace lpdt::algo {

compress::SendShape Dpsgd::mix(at::Tensor& z, const ConsensusStep& step, std::int64_t /*round*/) {
  // D-PSGD: z <- z + eta (W z - z) = z + L z
  step.add_self_product(z);
  compress::SendShape sent;
  sent.sparse = false;
  sent.values = layout_.total_numel;
  for (const auto& seg : layout_.segments) sent.kept_per_segment.push_back(seg.numel);
  return sent;
}

}  // namespace lpdt::algo
