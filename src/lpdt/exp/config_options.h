#pragma once
// The library options an experiment configuration stands for (docs/config.md): one place, so
// that training, the cost model and the benchmarks build the same model and algorithm.
#include <cstdint>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/models/model.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::exp {

// The decentralized algorithm of [algo] and [optim], for a process whose first node is
// `first_node` (0 in the simulator).
algo::DecentralizedOptions algorithm_options(const ExperimentConfig& config,
                                             std::int64_t first_node);

// The model's quantization, from [model] and [quant].
quant::QuantOptions quant_options(const ExperimentConfig& config);

// One sample's shape as the dataset gives it (before data.pad_to), and its class count.
struct InputShape {
  std::int64_t channels = 1;
  std::int64_t height = 28;
  std::int64_t width = 28;
  std::int64_t num_classes = 10;
  // Text datasets: the tokenizer's vocabulary size and [PAD] id (0 for image datasets).
  std::int64_t vocab_size = 0;
  std::int64_t pad_id = 0;
};

// The shape of data.dataset's samples without loading it (synthetic: data.synthetic_size).
// ConfigError for a dataset name this build does not know.
InputShape dataset_input_shape(const ExperimentConfig& config);

// [model] and [quant] for inputs of `shape`, padded to data.pad_to when set.
models::ModelOptions model_options_for(const ExperimentConfig& config, const InputShape& shape);

}  // namespace lpdt::exp
