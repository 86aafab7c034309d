#pragma once
// Node-batched layers (design.md, "nodes are a batch dimension").
//
// A model is built once, for one node's parameter layout, and runs on any number k of nodes:
// all k replicas' parameters live in ONE tensor shaped [k, P] (row i = node i's flat parameter
// vector, segments given by the LayerLayout). A layer reads its parameters as views of that
// tensor, so gradients land in one [k, P] gradient that algo/ updates with a few tensor ops.
//
// Activation layout inside convolutional networks: [b, k*C, H, W] float32, node-major channels
// (node i owns channels [i*C, (i+1)*C)). A convolution over k nodes is then one grouped
// convolution (groups = k), and per-channel or per-group statistics never mix nodes.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/core/layer_layout.h"
#include "lpdt/quant/quant_options.h"
#include "lpdt/quant/stochastic_draws.h"

namespace lpdt {
struct LayerTrace;
}

namespace lpdt::nn {

// How a parameter is initialised (for one node; every node starts from the same values, as the
// official code's identical per-rank seed gives).
struct ParamInit {
  enum class Kind { kZeros, kOnes, kNormal, kUniform };
  Kind kind = Kind::kZeros;
  double a = 0.0;  // normal: mean; uniform: low
  double b = 0.0;  // normal: std; uniform: high
  static ParamInit zeros() { return {Kind::kZeros, 0, 0}; }
  static ParamInit ones() { return {Kind::kOnes, 0, 0}; }
  static ParamInit normal(double std) { return {Kind::kNormal, 0.0, std}; }
  static ParamInit uniform(double low, double high) { return {Kind::kUniform, low, high}; }
};

// Index of a parameter (segment) or buffer in a model's registry.
struct ParamRef {
  std::size_t index = 0;
};
struct BufferRef {
  std::size_t index = 0;
};

// Non-gossiped per-node state, e.g. BatchNorm running statistics: one tensor [k, shape...] each.
struct BufferSpec {
  std::string name;
  std::vector<std::int64_t> shape;  // for one node
  double init_value = 0.0;
};

// Everything a model registers while it is built.
class Registry {
 public:
  ParamRef add_param(const std::string& name, std::vector<std::int64_t> shape, ParamInit init,
                     bool trainable = true);
  BufferRef add_buffer(const std::string& name, std::vector<std::int64_t> shape, double init_value);
  // A place where stochastic rounding draws (quant/stochastic_draws.h): its id keys the draws.
  quant::SiteId add_quant_site(const std::string& name);

  const LayerLayout& layout() const { return layout_; }
  const std::vector<ParamInit>& inits() const { return inits_; }
  const std::vector<bool>& trainable() const { return trainable_; }
  const std::vector<BufferSpec>& buffers() const { return buffers_; }
  const std::vector<std::string>& quant_sites() const { return quant_sites_; }

 private:
  LayerLayout layout_;
  std::vector<ParamInit> inits_;
  std::vector<bool> trainable_;
  std::vector<BufferSpec> buffers_;
  std::vector<std::string> quant_sites_;
};

// How a convolution over k nodes runs. Both compute the same function (tested).
//  - kGrouped: one grouped convolution (groups = k): one kernel launch, the GPU's choice.
//  - kPerNode: k convolutions over each node's channel slice: on the CPU, oneDNN's grouped
//    convolution with 16-64 channels per group is 1.6x slower than k plain ones
//    (docs/benchmarks.md), while everything around the convolutions stays batched.
enum class ConvAlgorithm { kGrouped, kPerNode };

// The state a forward pass reads: k nodes' parameters and buffers.
struct Context {
  const LayerLayout* layout = nullptr;
  at::Tensor params;                           // [k, P] float32 (usually requires grad)
  std::vector<at::Tensor>* buffers = nullptr;  // each [k, shape...]; updated in training
  std::int64_t k = 1;
  bool training = true;
  ConvAlgorithm conv_algorithm = ConvAlgorithm::kPerNode;
  // Whose stochastic-rounding draws this pass makes (8-bit models): seed, step, and the global
  // id of local node 0.
  quant::DrawKey draws = {};
  // When set, layers append what they ran, with its shapes, for the cost model
  // (core/layer_trace.h, nn/tracing_layer.h); null in training.
  LayerTrace* trace = nullptr;

  // Node-batched view of one parameter: [k, shape...].
  at::Tensor param(ParamRef ref) const;

  // Filled on first use: params split once into its segments: one split's backward writes the whole
  // [k, P] gradient in one pass, where a narrow per parameter would materialise a zero-filled [k,
  // P] gradient for each of them (86 for ResNet-20). On CUDA the segments are gathered into dense
  // tensors instead (param_segments.h), convolution weights channels-last. Made again when params
  // changed in place since (its version counter).
  mutable std::vector<at::Tensor> segment_cache = {};
  mutable std::uint32_t segment_cache_version = 0;
  // Filled on the first quantized_param (nn/quantized_params.h): every parameter fake-quantized at
  // once (one kernel on CUDA, where one at a time took three or four small ones each), split like
  // segment_cache; refilled when params changed in place since (its version).
  struct QuantizedParams {
    int bits = 0;
    quant::QuantScheme scheme = quant::QuantScheme::kGemmlowp;
    std::uint32_t params_version = 0;
    std::vector<at::Tensor> segments;
  };
  mutable QuantizedParams quantized_params = {};
  at::Tensor& buffer(BufferRef ref) const;
};

// Builds a registry name "prefix.name" (or "name" when prefix is empty).
std::string join_name(const std::string& prefix, const std::string& name);

}  // namespace lpdt::nn
