#include "lpdt/algo/deep_squeeze.h"

namespace lpdt::algo {

DeepSqueeze::DeepSqueeze(std::unique_ptr<compress::Compressor> compressor, std::int64_t num_nodes,
                         const LayerLayout& layout, at::Device device)
    : compressor_(std::move(compressor)),
      layout_(layout),
      error_(at::zeros({num_nodes, layout.total_numel},
                       at::TensorOptions().dtype(at::kFloat).device(device))) {}

compress::Compressed DeepSqueeze::prepare(at::Tensor& z, std::int64_t round) {
  // DeepSqueeze (Tang et al. 2019); reference spec 5.2.
  const at::Tensor v = z + error_;                                    // v_i = z_i + e_i
  compress::Compressed c = compressor_->compress(v, layout_, round);  // c_i = C(v_i)
  at::sub_out(error_, v, c.dense);                                    // e_i = v_i - c_i
  return c;
}

void DeepSqueeze::combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) {
  step.add_product(z, messages);  // z_i += eta (sum_j W_ij c_j - c_i)
}

std::map<std::string, at::Tensor> DeepSqueeze::state() { return {{"error_feedback", error_}}; }

}  // namespace lpdt::algo
