#include "lpdt/compress/random_k.h"

#include <algorithm>
#include <unordered_set>

namespace lpdt::compress {

RandomKCompressor::RandomKCompressor(double keep_fraction, std::uint64_t seed, bool unbiased,
                                     std::int64_t first_node)
    : keep_fraction_(keep_fraction), seed_(seed), unbiased_(unbiased), first_node_(first_node) {
  check_keep_fraction(keep_fraction);
}

std::uint64_t RandomKCompressor::step_seed(std::uint64_t seed, std::int64_t step) {
  return mix64(mix64(seed) ^ mix64(static_cast<std::uint64_t>(step) + 0x9e3779b97f4a7c15ULL));
}

std::vector<std::int64_t> RandomKCompressor::sample_indices(std::int64_t numel, std::int64_t k,
                                                            Rng& rng) {
  // Floyd's algorithm: for j = numel-k .. numel-1 draw t in [0, j]; take t unless already taken,
  // else take j. Every k-subset is equally likely; O(k) draws and memory.
  std::vector<std::int64_t> picked;
  picked.reserve(static_cast<std::size_t>(k));
  std::unordered_set<std::int64_t> taken;
  taken.reserve(static_cast<std::size_t>(k) * 2);
  for (std::int64_t j = numel - k; j < numel; ++j) {
    const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j + 1)));
    const std::int64_t pick = taken.count(t) ? j : t;
    taken.insert(pick);
    picked.push_back(pick);
  }
  return picked;
}

Compressed RandomKCompressor::compress(const at::Tensor& v, const LayerLayout& layout,
                                       std::int64_t step) {
  detail::check_buffer(v, layout, "randomk compressor");
  const std::int64_t n = v.size(0);
  Compressed out;
  out.dense = at::zeros_like(v, at::MemoryFormat::Contiguous);
  out.sent.sparse = true;
  out.sent.kept_per_segment = kept_per_segment(layout, keep_fraction_);
  for (auto k : out.sent.kept_per_segment) out.sent.values += k;
  out.kept_index.resize(layout.segments.size());

  // Index drawing is scalar work on the CPU (one stream per node, O(V) draws per node); the
  // gather/scatter below is batched over all nodes.
  std::vector<at::Tensor> index(layout.segments.size());  // per segment [n, K] int64
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    index[s] = at::empty({n, out.sent.kept_per_segment[s]}, at::kLong);
  }
  const std::uint64_t seed = step_seed(seed_, step);
  for (std::int64_t node = 0; node < n; ++node) {
    Rng rng = Rng::stream(seed, static_cast<std::uint64_t>(first_node_ + node),
                          StreamPurpose::kCompress);
    for (std::size_t s = 0; s < layout.segments.size(); ++s) {
      const std::int64_t k = out.sent.kept_per_segment[s];
      auto picked = sample_indices(layout.segments[s].numel, k, rng);
      std::sort(picked.begin(), picked.end());  // column order (the wire format's)
      std::copy(picked.begin(), picked.end(), index[s][node].data_ptr<std::int64_t>());
    }
  }
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    const at::Tensor src = v.narrow(1, seg.offset, seg.numel);    // [n, numel]
    at::Tensor dst = out.dense.narrow(1, seg.offset, seg.numel);  // [n, numel]
    if (out.sent.kept_per_segment[s] == seg.numel) {
      // Every entry kept (keep = 1, or one scalar): the segment goes whole, without indices, as
      // top-k's does (its draws above were still made, so later segments' indices are the same).
      dst.copy_(src);
      continue;
    }
    const at::Tensor idx = index[s].to(v.device());
    at::Tensor values = src.gather(1, idx);
    if (unbiased_) {
      // E[C(x)] = x: each index is kept with probability K / numel.
      values.mul_(static_cast<double>(seg.numel) / static_cast<double>(idx.size(1)));
    }
    dst.scatter_(1, idx, values);
    out.kept_index[s] = idx;
  }
  return out;
}

}  // namespace lpdt::compress
