#include "lpdt/quant/stochastic_draws.h"

#include "lpdt/core/rng.h"

namespace lpdt::quant {

std::uint64_t draw_stream(const DrawKey& key, std::int64_t local_node, SiteId site) {
  // Distinct constants keep (node, step, site) triples apart before each mix.
  std::uint64_t h = mix64(key.seed ^ 0x51A7E5C0FFEEull);
  h = mix64(h ^ static_cast<std::uint64_t>(key.first_node + local_node));
  h = mix64(h ^ (static_cast<std::uint64_t>(key.step) * 0xA24BAED4963EE407ull));
  h = mix64(h ^ (static_cast<std::uint64_t>(site) * 0x9FB21C651E98DF25ull));
  return h;
}

}  // namespace lpdt::quant
