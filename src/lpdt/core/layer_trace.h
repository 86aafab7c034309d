#pragma once
// A record of the layers one forward pass ran, with the shapes the paper's cost tables need
// (Tables 7-9: b, C_in, C_out, K, S, P, L). Filled by nn/ layers when a pass is given a trace
// (nn::Context::trace); read by the cost model (metrics/cost_model.h). Plain data, no tensors.
#include <cstdint>
#include <string>
#include <vector>

namespace lpdt {

// One row kind of the paper's Tables 7 and 9, plus max pooling (not in the paper's tables).
enum class TracedOp {
  kConv,                    // b, in/out channels, kernel, stride, padding, input height x width
  kLinear,                  // b, in/out features
  kActivationQuantization,  // b, channels (elements per sample), height x width
  kWeightQuantization,      // out/in channels, kernel (kernel 1 for linear layers)
  kBatchNormRelu,           // (Range) BatchNorm (+ ReLU), and GroupNorm: b, channels, h x w
  kEvoNorm,                 // (Range) EvoNorm: b, channels, h x w
  kSkipConnection,          // the residual add: b, channels, h x w
  kAveragePool,             // b, channels, input h x w
  kMaxPool,                 // b, channels, input h x w, kernel = stride = pool size
};

const char* to_string(TracedOp op);

struct TracedLayer {
  TracedOp op = TracedOp::kConv;
  std::string name;
  std::int64_t batch = 0;
  std::int64_t in_channels = 0;  // features for linear layers
  std::int64_t out_channels = 0;
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  // Convolution channel groups (1: dense; in_channels: depthwise): each output sees
  // in_channels / groups inputs, so ops and weights are `groups` times fewer.
  std::int64_t groups = 1;
  std::int64_t height = 1;  // of the input
  std::int64_t width = 1;
  // Elements this layer keeps for its backward pass (one sample's input for conv, linear, norm
  // and max pool layers; 0 for the rest): the activation memory of the cost model.
  std::int64_t saved_per_sample = 0;
};

struct LayerTrace {
  std::vector<TracedLayer> layers;
  void add(TracedLayer layer) { layers.push_back(std::move(layer)); }
};

}  // namespace lpdt
