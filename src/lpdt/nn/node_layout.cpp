#include "lpdt/nn/node_layout.h"

namespace lpdt::nn {

at::Tensor nodes_to_channels(const at::Tensor& x) {
  const auto k = x.size(0), b = x.size(1), c = x.size(2), h = x.size(3), w = x.size(4);
  return x.transpose(0, 1).reshape({b, k * c, h, w});
}

at::Tensor channels_to_nodes(const at::Tensor& x, std::int64_t k) {
  const auto b = x.size(0);
  return x.reshape({b, k, -1}).transpose(0, 1);
}

}  // namespace lpdt::nn
