#include "lpdt/nn/module.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/param_segments.h"

namespace lpdt::nn {

ParamRef Registry::add_param(const std::string& name, std::vector<std::int64_t> shape,
                             ParamInit init, bool trainable) {
  const std::size_t index = layout_.append(name, std::move(shape));
  inits_.push_back(init);
  trainable_.push_back(trainable);
  return ParamRef{index};
}

BufferRef Registry::add_buffer(const std::string& name, std::vector<std::int64_t> shape,
                               double init_value) {
  buffers_.push_back(BufferSpec{name, std::move(shape), init_value});
  return BufferRef{buffers_.size() - 1};
}

quant::SiteId Registry::add_quant_site(const std::string& name) {
  quant_sites_.push_back(name);
  return static_cast<quant::SiteId>(quant_sites_.size() - 1);
}

at::Tensor Context::param(ParamRef ref) const {
  const LayerSegment& seg = layout->segments.at(ref.index);
  const std::uint32_t version = params._version();
  if (segment_cache.empty() || segment_cache_version != version) {
    segment_cache_version = version;
    if (param_segments_gathered(params)) {
      segment_cache = gather_param_segments(params, *layout);
    } else {
      std::vector<std::int64_t> sizes;
      sizes.reserve(layout->segments.size());
      for (const LayerSegment& s : layout->segments) sizes.push_back(s.numel);
      segment_cache = params.split_with_sizes(sizes, 1);
    }
  }
  std::vector<std::int64_t> shape{k};
  shape.insert(shape.end(), seg.shape.begin(), seg.shape.end());
  // A column range of [k, P] split into the parameter's shape is still a view.
  return segment_cache[ref.index].view(shape);
}

at::Tensor& Context::buffer(BufferRef ref) const {
  LPDT_CHECK(buffers != nullptr && ref.index < buffers->size(), "buffer index out of range");
  return (*buffers)[ref.index];
}

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace lpdt::nn
