#pragma once
// The model an image benchmark measures (throughput, precision, scaling, wire), from the options
// every one of them shares; a benchmark sets its precision on the result.
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

}  // namespace lpdt::exp
