#include "lpdt/algo/choco.h"

namespace lpdt::algo {

Choco::Choco(std::unique_ptr<compress::Compressor> compressor, std::int64_t num_nodes,
             const LayerLayout& layout, XhatInit xhat_init, at::Device device)
    : compressor_(std::move(compressor)),
      layout_(layout),
      xhat_init_(xhat_init),
      xhat_(at::zeros({num_nodes, layout.total_numel},
                      at::TensorOptions().dtype(at::kFloat).device(device))) {}

void Choco::start(const at::Tensor& z) {
  if (xhat_init_ == XhatInit::kModel) xhat_.copy_(z);
}

compress::Compressed Choco::mix(at::Tensor& z, const ConsensusStep& step, std::int64_t round) {
  // Choco-SGD (Koloskova et al. 2019, 2020): q_i = C(z_i - xhat_i)
  compress::Compressed q = compressor_->compress(z - xhat_, layout_, round);
  // xhat_j <- xhat_j + q_j (own copy and every neighbour's copy of it)
  xhat_.add_(q.dense);
  // z_i <- z_i + gamma sum_j W_ij (xhat_j - xhat_i) = z_i + eta ((W xh)_i - xh_i)
  step.add_product(z, xhat_);
  return q;
}

std::map<std::string, at::Tensor> Choco::state() { return {{"xhat", xhat_}}; }

}  // namespace lpdt::algo
