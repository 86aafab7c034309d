#pragma once
// A small learnable, seeded image dataset for tests, examples and smoke runs: every class has a
// fixed random prototype image and its samples are the prototype plus Gaussian pixel noise.
#include <cstdint>

#include "lpdt/data/dataset.h"

namespace lpdt::data {

// Chained setters: SyntheticOptions().num_classes(10).samples_per_class(100).noise(0.2).
struct SyntheticOptions {
  SyntheticOptions& seed(std::uint64_t v) {
    seed_ = v;
    return *this;
  }
  SyntheticOptions& num_classes(int64_t v) {
    num_classes_ = v;
    return *this;
  }
  SyntheticOptions& samples_per_class(int64_t v) {
    samples_per_class_ = v;
    return *this;
  }
  SyntheticOptions& channels(int64_t v) {
    channels_ = v;
    return *this;
  }
  SyntheticOptions& height(int64_t v) {
    height_ = v;
    return *this;
  }
  SyntheticOptions& width(int64_t v) {
    width_ = v;
    return *this;
  }
  // Standard deviation of the per-pixel noise in [0, 1] pixel units (0.25 = 64 grey levels).
  SyntheticOptions& noise(double v) {
    noise_ = v;
    return *this;
  }
  // Train and test share the prototypes and draw independent noise.
  SyntheticOptions& split(Split v) {
    split_ = v;
    return *this;
  }

  std::uint64_t seed_ = 0;
  int64_t num_classes_ = 10;
  int64_t samples_per_class_ = 100;
  int64_t channels_ = 3;
  int64_t height_ = 32;
  int64_t width_ = 32;
  double noise_ = 0.25;
  Split split_ = Split::kTrain;
};

// Deterministic in the options: prototypes from Rng::stream(seed, 0, kSynthetic), noise and
// the sample order from per-split streams. Labels come out in a shuffled order (not class by
// class). mean/std are the expected per-channel statistics (prototype statistics plus noise
// variance), identical for both splits. Bad options are a ConfigError.
Dataset make_synthetic(const SyntheticOptions& options);

}  // namespace lpdt::data
