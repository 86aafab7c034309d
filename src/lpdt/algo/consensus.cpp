#include "lpdt/algo/consensus.h"

#include "lpdt/core/error.h"

namespace lpdt::algo {

double consensus_distance(const at::Tensor& x) {
  LPDT_CHECK(x.dim() == 2 && x.size(0) > 0, "consensus_distance: x must be [n, P]");
  const at::Tensor xd = x.to(at::kDouble);
  return (xd - xd.mean(0, /*keepdim=*/true)).pow(2).sum(1).mean().item<double>();
}

}  // namespace lpdt::algo
