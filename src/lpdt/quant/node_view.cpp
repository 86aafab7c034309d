#include "lpdt/quant/node_view.h"

#include "lpdt/core/error.h"

namespace lpdt::quant {

at::Tensor canonical_layout(const at::Tensor& x) {
  if (x.dim() == 4) return x.contiguous(at::MemoryFormat::ChannelsLast);
  return x.contiguous();
}

NodeView node_view(const at::Tensor& x, std::int64_t k) {
  LPDT_CHECK(k >= 1, "node_view: k must be positive");
  NodeView v;
  v.nodes = k;
  if (x.dim() == 4) {
    LPDT_CHECK(x.is_contiguous(at::MemoryFormat::ChannelsLast),
               "node_view: 4-D tensors must be channels-last (call canonical_layout)");
    LPDT_CHECK(x.size(1) % k == 0, "node_view: channels not divisible by the node count");
    v.samples = x.size(0);
    v.rows = x.size(2) * x.size(3);
    v.cols = x.size(1) / k;
    v.node_stride = v.cols;
    v.row_stride = x.size(1);
    v.sample_stride = v.rows * x.size(1);
    return v;
  }
  LPDT_CHECK(x.is_contiguous(), "node_view: node-leading tensors must be contiguous");
  LPDT_CHECK(x.dim() >= 1 && x.size(0) == k, "node_view: expected a [k, ...] tensor");
  v.samples = x.dim() >= 2 ? x.size(1) : 1;
  v.rows = 1;
  const std::int64_t per_node = x.numel() / k;
  v.cols = v.samples > 0 ? per_node / v.samples : 0;
  v.node_stride = per_node;
  v.sample_stride = v.cols;
  v.row_stride = v.cols;
  return v;
}

}  // namespace lpdt::quant
