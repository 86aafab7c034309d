#include "lpdt/compress/identity.h"

#include "lpdt/core/error.h"

namespace lpdt::compress {

Compressed IdentityCompressor::compress(const at::Tensor& v, const LayerLayout& layout,
                                        std::int64_t /*step*/) {
  detail::check_buffer(v, layout, "identity compressor");
  Compressed out;
  out.dense = v;
  out.sent.sparse = false;
  out.sent.values = layout.total_numel;
  out.kept_index.resize(layout.segments.size());  // every segment whole
  out.sent.kept_per_segment.reserve(layout.segments.size());
  for (const auto& seg : layout.segments) out.sent.kept_per_segment.push_back(seg.numel);
  return out;
}

}  // namespace lpdt::compress
