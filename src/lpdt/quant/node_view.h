#pragma once
// How the quantizers see a node-batched tensor: per node, [samples, rows, cols] with unit-stride
// cols. Ranges and statistics are per node (design.md: one node's range never leaks into
// another's), and the element index used for stochastic-rounding draws is the position in that
// node's own [samples, rows, cols] order, whatever the number of nodes in the tensor.
#include <ATen/ATen.h>

#include <cstdint>

namespace lpdt::quant {

struct NodeView {
  std::int64_t nodes = 1;
  std::int64_t samples = 1;
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  std::int64_t node_stride = 0;    // elements between node i and node i+1 (same sample/row/col)
  std::int64_t sample_stride = 0;  // between consecutive samples of one node
  std::int64_t row_stride = 0;     // between consecutive rows of one sample
  std::int64_t node_numel() const { return samples * rows * cols; }
  // Offset of (node, sample, row, col 0).
  std::int64_t offset(std::int64_t node, std::int64_t sample, std::int64_t row) const {
    return node * node_stride + sample * sample_stride + row * row_stride;
  }
};

// The layouts quantizers accept, made dense: a 4-D activation [b, k*C, H, W] becomes
// channels-last (rows = H*W positions, cols = a node's C channels, samples = b); anything else
// is node-leading [k, ...] and becomes contiguous (samples = size(1), e.g. the batch of a linear
// layer's [k, b, F] input; 1 for 1-D). Returns x itself when already dense in that layout.
at::Tensor canonical_layout(const at::Tensor& x);
// x in canonical layout (checked), k nodes.
NodeView node_view(const at::Tensor& x, std::int64_t k);

}  // namespace lpdt::quant
