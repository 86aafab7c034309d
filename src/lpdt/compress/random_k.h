#pragma once
// Layer-wise random-k sparsification ("randomk"): in every segment of every row keep K values
// (K as for top-k) at indices drawn uniformly without replacement.
//
// Determinism: node i's indices in round `step` come from the stream
// Rng::stream(step_seed(seed, step), i, StreamPurpose::kCompress), drawn segment by segment in
// layout order with Floyd's algorithm. They depend only on (seed, node, step, layout, keep), never
// on the number of nodes or on earlier rounds, so an MPI layout draws the same indices.
#include "lpdt/compress/compressor.h"
#include "lpdt/core/rng.h"

namespace lpdt::compress {

class RandomKCompressor final : public Compressor {
 public:
  // keep_fraction in (0, 1] (ConfigError otherwise). unbiased: scale kept values by numel / K.
  // first_node: the global id of row 0's node (a rank of a multi-process run).
  RandomKCompressor(double keep_fraction, std::uint64_t seed, bool unbiased,
                    std::int64_t first_node = 0);

  std::string_view name() const override { return "randomk"; }

  Compressed compress(const at::Tensor& v, const LayerLayout& layout, std::int64_t step) override;

  // The seed of round `step`'s streams (mixes the root seed and the round).
  static std::uint64_t step_seed(std::uint64_t seed, std::int64_t step);

  // K distinct indices in [0, numel), uniform over K-subsets (Floyd 1987), drawn from `rng`.
  // Exposed for tests.
  static std::vector<std::int64_t> sample_indices(std::int64_t numel, std::int64_t k, Rng& rng);

 private:
  double keep_fraction_;
  std::uint64_t seed_;
  bool unbiased_;
  std::int64_t first_node_;
};

}  // namespace lpdt::compress
