#pragma once
// The model an image benchmark measures (throughput, precision, scaling, wire), from the options
// every one of them shares; a benchmark sets its precision on the result.
#include <string>

#include "lpdt/exp/experiment_config.h"
#include "lpdt/models/model.h"

namespace lpdt::exp {

template <typename ImageBenchOptions>
models::ModelOptions image_bench_model(const ImageBenchOptions& options) {
  models::ModelOptions model;
  model.arch = options.arch;
  model.depth = options.depth;
  model.norm = options.norm;
  model.in_channels = options.channels;
  model.height = model.width = options.size;
  return model;
}

// ", norm <model.norm>" for a model with a normalisation, "" for one without (LeNet-5, the MLP),
// for a benchmark's title line.
template <typename ImageBenchOptions>
std::string image_bench_norm_text(const ImageBenchOptions& options) {
  return arch_uses_model_norm(options.arch) ? ", norm " + options.norm : std::string();
}

}  // namespace lpdt::exp
