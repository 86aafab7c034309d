#include "lpdt/compress/compressor.h"

#include <cmath>
#include <sstream>

#include "lpdt/compress/identity.h"
#include "lpdt/compress/message_value_rounding.h"
#include "lpdt/compress/random_k.h"
#include "lpdt/compress/top_k.h"
#include "lpdt/core/error.h"

namespace lpdt::compress {

void check_keep_fraction(double keep_fraction) {
  if (!(keep_fraction > 0.0 && keep_fraction <= 1.0)) {
    std::ostringstream msg;
    msg << "compressor keep fraction must be in (0, 1], got " << keep_fraction
        << " (the official flag --k is the fraction dropped: keep = 1 - k)";
    throw ConfigError(msg.str());
  }
}

namespace detail {
void check_buffer(const at::Tensor& v, const LayerLayout& layout, std::string_view who) {
  std::ostringstream msg;
  msg << who << ": expected a [n, " << layout.total_numel << "] float32 tensor, got " << v.sizes()
      << " " << v.scalar_type();
  LPDT_CHECK(v.defined() && v.dim() == 2 && v.size(1) == layout.total_numel &&
                 v.scalar_type() == at::kFloat,
             msg.str());
  std::int64_t next = 0;
  for (const auto& seg : layout.segments) {
    LPDT_CHECK(seg.offset == next && seg.numel > 0, "layout segments must tile [0, P) in order");
    next += seg.numel;
  }
  LPDT_CHECK(next == layout.total_numel, "layout segments must tile [0, P)");
}
}  // namespace detail

std::int64_t kept_count(std::int64_t numel, double keep_fraction) {
  LPDT_CHECK(numel > 0, "segment with no scalars");
  // Python: max(1, int(numel * (1 - k))). int() truncates toward zero; the product is >= 0.
  const double product = static_cast<double>(numel) * keep_fraction;
  const auto k = static_cast<std::int64_t>(std::trunc(product));
  return std::min(numel, std::max<std::int64_t>(1, k));
}

std::vector<std::int64_t> kept_per_segment(const LayerLayout& layout, double keep_fraction) {
  std::vector<std::int64_t> kept;
  kept.reserve(layout.segments.size());
  for (const auto& seg : layout.segments) kept.push_back(kept_count(seg.numel, keep_fraction));
  return kept;
}

std::int64_t kept_values(const LayerLayout& layout, double keep_fraction) {
  std::int64_t v = 0;
  for (auto k : kept_per_segment(layout, keep_fraction)) v += k;
  return v;
}

MessageValues parse_message_values(std::string_view name) {
  if (name == "fp32" || name == "float32") return MessageValues::kFloat32;
  if (name == "bf16" || name == "bfloat16") return MessageValues::kBfloat16;
  if (name == "int8") return MessageValues::kInt8;
  throw ConfigError("unknown message value format '" + std::string(name) +
                    "': expected one of fp32, bf16, int8");
}

std::string_view to_string(MessageValues values) {
  switch (values) {
    case MessageValues::kFloat32:
      return "fp32";
    case MessageValues::kBfloat16:
      return "bf16";
    case MessageValues::kInt8:
      return "int8";
  }
  return "?";
}

namespace {
std::unique_ptr<Compressor> make_sparsifier(const CompressorOptions& options) {
  const std::string& name = options.name();
  if (name == "none" || name == "identity") return std::make_unique<IdentityCompressor>();
  if (name == "topk" || name == "top_k")
    return std::make_unique<TopKCompressor>(options.keep_fraction());
  if (name == "randomk" || name == "random_k") {
    return std::make_unique<RandomKCompressor>(options.keep_fraction(), options.seed(),
                                               options.unbiased(), options.first_node());
  }
  throw ConfigError("unknown compressor '" + name + "': expected one of none, topk, randomk");
}
}  // namespace

std::unique_ptr<Compressor> make_compressor(const CompressorOptions& options) {
  auto sparsifier = make_sparsifier(options);
  if (options.values() == MessageValues::kFloat32) return sparsifier;
  return std::make_unique<MessageValueRounding>(std::move(sparsifier), options.values(),
                                                options.rounding(), options.seed(),
                                                options.first_node());
}

}  // namespace lpdt::compress
