#pragma once
// A DistilBERT small enough for a test (hidden 8, 2 layers, 2 heads, 30-token vocabulary, 4
// classes), for the tests of pretrained weights: its parameters carry Hugging Face's names.
#include "lpdt/models/model.h"

namespace lpdt::models::testing {

inline ModelOptions tiny_distilbert() {
  ModelOptions options;
  options.arch = "transformer";
  options.num_classes = 4;
  options.transformer.vocab_size = 30;
  options.transformer.max_positions = 12;
  options.transformer.hidden = 8;
  options.transformer.layers = 2;
  options.transformer.heads = 2;
  options.transformer.ffn_hidden = 16;
  return options;
}

}  // namespace lpdt::models::testing
