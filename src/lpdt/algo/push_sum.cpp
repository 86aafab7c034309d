#include "lpdt/algo/push_sum.h"

#include "lpdt/algo/gossip.h"

namespace lpdt::algo {

PushSum::PushSum(std::int64_t num_nodes, at::Device device)
    : weights_(at::ones({num_nodes}, at::TensorOptions().dtype(at::kFloat).device(device))) {}

void PushSum::to_numerator(at::Tensor& x) const { x.mul_(weights_.unsqueeze(1)); }

void PushSum::to_params(at::Tensor& z) const { z.div_(weights_.unsqueeze(1)); }

void PushSum::mix(const ConsensusStep& step, const at::Tensor& all_weights) {
  at::Tensor column = weights_.unsqueeze(1);  // [count, 1], a view
  step.add_product(column, all_weights.unsqueeze(1));
}

}  // namespace lpdt::algo
