#include "lpdt/compress/top_k.h"

namespace lpdt::compress {

TopKCompressor::TopKCompressor(double keep_fraction) : keep_fraction_(keep_fraction) {
  check_keep_fraction(keep_fraction);
}

Compressed TopKCompressor::compress(const at::Tensor& v, const LayerLayout& layout,
                                    std::int64_t /*step*/) {
  detail::check_buffer(v, layout, "topk compressor");
  Compressed out;
  out.dense = at::zeros_like(v, at::MemoryFormat::Contiguous);
  out.sent.sparse = true;
  out.sent.kept_per_segment = kept_per_segment(layout, keep_fraction_);
  out.kept_index.resize(layout.segments.size());
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    const std::int64_t k = out.sent.kept_per_segment[s];
    out.sent.values += k;
    const at::Tensor src = v.narrow(1, seg.offset, seg.numel);    // [n, numel] view
    at::Tensor dst = out.dense.narrow(1, seg.offset, seg.numel);  // [n, numel] view
    if (k == seg.numel) {
      dst.copy_(src);
      continue;
    }
    at::Tensor index;  // [n, K] int64
    if (k == 1) {
      // Official code: argmax |x| (the first maximum) when K == 1 (reference spec 5.5).
      index = src.abs().argmax(/*dim=*/1, /*keepdim=*/true);
    } else {
      index = std::get<1>(at::topk(src.abs(), k, /*dim=*/1, /*largest=*/true, /*sorted=*/false));
      // In column order: the wire format's order, and the draws of int8 values then do not
      // depend on the order topk happens to return.
      index = std::get<0>(index.sort(/*dim=*/1));
    }
    out.kept_index[s] = index;
    dst.scatter_(1, index, src.gather(1, index));
  }
  return out;
}

}  // namespace lpdt::compress
