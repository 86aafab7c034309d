#include "lpdt/algo/push_sum.h"

namespace lpdt::algo {

PushSum::PushSum(std::int64_t num_nodes, at::Device device)
    : weights_(at::ones({num_nodes}, at::TensorOptions().dtype(at::kFloat).device(device))) {}

void PushSum::to_numerator(at::Tensor& x) const { x.mul_(weights_.unsqueeze(1)); }

void PushSum::to_params(at::Tensor& z) const { z.div_(weights_.unsqueeze(1)); }

void PushSum::mix(const at::Tensor& step_matrix) { weights_.add_(at::mv(step_matrix, weights_)); }

}  // namespace lpdt::algo
