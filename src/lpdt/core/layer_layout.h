#pragma once
// The layout of one node's parameters inside the flat per-node vector.
//
// Every algorithm buffer (parameters, gradients, momentum, Choco copies, error feedback) is one
// tensor shaped [k, P]: row i is node i's whole parameter vector, P the number of parameter
// scalars of one model. A model's parameter tensors are consecutive column ranges of that row,
// described here. Layer-wise compressors and byte accounting work segment by segment; comm/ and
// algo/ see only this, never layers (design.md).
#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt {

struct LayerSegment {
  std::string name;                 // e.g. "layer1.0.conv1.weight"
  std::int64_t offset = 0;          // first column of the segment in the [k, P] buffer
  std::int64_t numel = 0;           // number of scalars (columns)
  std::vector<std::int64_t> shape;  // the parameter's shape for one node
};

struct LayerLayout {
  std::vector<LayerSegment> segments;
  std::int64_t total_numel = 0;  // P

  // Appends a segment after the last one and returns its index. UserError for a dimension
  // below 1 (a segment holds at least one value: top-k keeps at least one of each).
  std::size_t append(std::string name, std::vector<std::int64_t> shape) {
    std::int64_t numel = 1;
    for (auto d : shape) {
      if (d < 1) {
        std::string dims;
        for (auto e : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(e);
        throw UserError("layer layout: segment '" + name + "' has shape [" + dims +
                        "]; every dimension must be at least 1");
      }
      numel *= d;
    }
    segments.push_back(LayerSegment{std::move(name), total_numel, numel, std::move(shape)});
    total_numel += numel;
    return segments.size() - 1;
  }
};

}  // namespace lpdt
