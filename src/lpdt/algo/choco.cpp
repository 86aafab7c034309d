#include "lpdt/algo/choco.h"

#include "lpdt/core/error.h"

namespace lpdt::algo {

Choco::Choco(std::unique_ptr<compress::Compressor> compressor, const NodeRange& nodes,
             const LayerLayout& layout, XhatInit xhat_init, at::Device device)
    : compressor_(std::move(compressor)),
      nodes_(nodes),
      layout_(layout),
      xhat_init_(xhat_init),
      xhat_(at::zeros({nodes.total, layout.total_numel},
                      at::TensorOptions().dtype(at::kFloat).device(device))) {}

void Choco::start(const at::Tensor& z) {
  if (xhat_init_ != XhatInit::kModel) return;
  if (nodes_.is_all()) {
    xhat_.copy_(z);
  } else {
    xhat_.copy_(z.narrow(0, 0, 1).expand_as(xhat_));  // every node's z_0 is the same model
  }
}

compress::Compressed Choco::prepare(at::Tensor& z, std::int64_t round) {
  // Choco-SGD (Koloskova et al. 2019, 2020): q_i = C(z_i - xhat_i)
  const at::Tensor own = nodes_.is_all() ? xhat_ : xhat_.narrow(0, nodes_.first, nodes_.count);
  return compressor_->compress(z - own, layout_, round);
}

void Choco::combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) {
  // xhat_j <- xhat_j + q_j (own copy and every neighbour's copy of it)
  xhat_.add_(messages);
  // z_i <- z_i + gamma sum_j W_ij (xhat_j - xhat_i) = z_i + eta ((W xh)_i - xh_i)
  step.add_product(z, xhat_);
}

std::map<std::string, at::Tensor> Choco::state() {
  return {{"xhat", nodes_.is_all() ? xhat_ : xhat_.narrow(0, nodes_.first, nodes_.count)}};
}

void Choco::restore(const std::map<std::string, at::Tensor>& all_nodes) {
  const auto it = all_nodes.find("xhat");
  if (it == all_nodes.end()) throw UserError("optimizer checkpoint has no tensor 'xhat'");
  if (it->second.sizes() != xhat_.sizes()) {
    throw UserError("optimizer checkpoint tensor 'xhat' has the wrong shape for this run");
  }
  xhat_.copy_(it->second);
}

}  // namespace lpdt::algo
