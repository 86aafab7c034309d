#include "lpdt/comm/message_codec.h"

#include <cstring>
#include <limits>
#include <sstream>

#include "lpdt/core/error.h"

namespace lpdt::comm {

namespace {

// Bytes of one value on the wire.
std::int64_t value_bytes(compress::MessageValues values) {
  switch (values) {
    case compress::MessageValues::kFloat32:
      return 4;
    case compress::MessageValues::kBfloat16:
      return 2;
    case compress::MessageValues::kInt8:
      return 1;
  }
  return 4;
}

ValueFormat wire_format(compress::MessageValues values) {
  switch (values) {
    case compress::MessageValues::kFloat32:
      return ValueFormat::kFloat32;
    case compress::MessageValues::kBfloat16:
      return ValueFormat::kBfloat16;
    case compress::MessageValues::kInt8:
      return ValueFormat::kInt8;
  }
  return ValueFormat::kFloat32;
}

// A layer record's fixed part: value format, index format, numel, count (wire_payload.h), plus
// the int8 scale and zero point.
constexpr std::int64_t kLayerFixedBytes = 1 + 1 + 4 + 4;
constexpr std::int64_t kInt8ParamBytes = 4 + 1;

// Bytes of the delta + LEB128 varint encoding of each row of sorted positions: the first gap is
// the position itself, then differences; a gap g takes 1 + [g >= 2^7] + [g >= 2^14] +
// [g >= 2^21] + [g >= 2^28] bytes. index: [n, K] int64 increasing along rows. Returns [n] int64.
at::Tensor delta_varint_bytes_per_row(const at::Tensor& index) {
  at::Tensor gaps = index.clone();
  if (index.size(1) > 1) {
    gaps.narrow(1, 1, index.size(1) - 1)
        .sub_(index.narrow(1, 0, index.size(1) - 1));
  }
  at::Tensor bytes = at::ones_like(gaps);
  for (int shift : {7, 14, 21, 28}) bytes.add_(gaps.ge(std::int64_t{1} << shift).to(at::kLong));
  return bytes.sum(1);
}

void check_message(const compress::Compressed& message, const LayerLayout& layout) {
  LPDT_CHECK(message.dense.defined() && message.dense.dim() == 2 &&
                 message.dense.size(1) == layout.total_numel,
             "compressed message must be [n, P]");
  LPDT_CHECK(message.kept_index.size() == layout.segments.size(),
             "compressed message must have one kept_index entry per layout segment");
  LPDT_CHECK(message.values != compress::MessageValues::kInt8 ||
                 message.codes.size() == layout.segments.size(),
             "an int8 message must have codes for every layout segment");
}

}  // namespace

std::vector<std::uint32_t> layout_numels(const LayerLayout& layout) {
  std::vector<std::uint32_t> numels;
  numels.reserve(layout.segments.size());
  for (const auto& seg : layout.segments) {
    LPDT_CHECK(seg.numel <= std::numeric_limits<std::uint32_t>::max(),
               "a layer of more than 2^32 - 1 scalars cannot be sent");
    numels.push_back(static_cast<std::uint32_t>(seg.numel));
  }
  return numels;
}

at::Tensor payload_bytes(const compress::Compressed& message, const LayerLayout& layout) {
  check_message(message, layout);
  const std::int64_t n = message.dense.size(0);
  const std::int64_t per_value = value_bytes(message.values);
  const std::int64_t per_layer =
      kLayerFixedBytes + (message.values == compress::MessageValues::kInt8 ? kInt8ParamBytes : 0);
  // Every node's fixed part, on the host; the index parts that depend on the kept positions are
  // added with tensor operations on the buffers' device.
  std::int64_t fixed = static_cast<std::int64_t>(kHeaderBytes);
  at::Tensor varying;  // [n] int64 on the device, or undefined
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    const at::Tensor& index = message.kept_index[s];
    fixed += per_layer;
    if (!index.defined()) {
      fixed += seg.numel * per_value;
      continue;
    }
    const std::int64_t k = index.size(1);
    fixed += k * per_value;
    // The encoder's choice: the smallest of 4 K, the varint bytes, ceil(numel / 8).
    const std::int64_t u32 = 4 * k;
    const std::int64_t bitmap = (seg.numel + 7) / 8;
    const at::Tensor varint = delta_varint_bytes_per_row(index);  // [n]
    const at::Tensor chosen = varint.clamp_max(std::min(u32, bitmap));
    varying = varying.defined() ? varying.add_(chosen) : chosen;
  }
  at::Tensor total = at::full({n}, fixed, message.dense.options().dtype(at::kLong));
  if (varying.defined()) total.add_(varying);
  return total;
}

std::int64_t dense_payload_bytes(compress::MessageValues values, const LayerLayout& layout) {
  const std::int64_t per_layer =
      kLayerFixedBytes + (values == compress::MessageValues::kInt8 ? kInt8ParamBytes : 0);
  return static_cast<std::int64_t>(kHeaderBytes) +
         static_cast<std::int64_t>(layout.segments.size()) * per_layer +
         layout.total_numel * value_bytes(values);
}

Message node_message(const compress::Compressed& message, const LayerLayout& layout,
                     std::int64_t node, WireAlgorithm algorithm, std::uint64_t round,
                     std::uint32_t sender, float push_sum_weight) {
  check_message(message, layout);
  LPDT_CHECK(node >= 0 && node < message.dense.size(0), "node_message: node out of range");
  Message out;
  out.algorithm = algorithm;
  out.round = round;
  out.sender = sender;
  out.push_sum_weight = push_sum_weight;
  const at::Tensor row = message.dense[node].to(at::kCPU).contiguous();  // [P]
  const float* values = row.data_ptr<float>();
  const auto numels = layout_numels(layout);
  out.layers.resize(layout.segments.size());
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    LayerMessage& layer = out.layers[s];
    layer.format = wire_format(message.values);
    layer.numel = numels[s];
    std::vector<std::int64_t> positions;  // segment-relative, increasing
    if (message.kept_index[s].defined()) {
      const at::Tensor index = message.kept_index[s][node].to(at::kCPU).contiguous();
      const auto* p = index.data_ptr<std::int64_t>();
      positions.assign(p, p + index.numel());
      layer.indices.assign(positions.begin(), positions.end());
    } else {
      positions.resize(static_cast<std::size_t>(seg.numel));
      for (std::int64_t i = 0; i < seg.numel; ++i) positions[static_cast<std::size_t>(i)] = i;
    }
    switch (message.values) {
      case compress::MessageValues::kFloat32:
        for (auto p : positions) layer.f32.push_back(values[seg.offset + p]);
        break;
      case compress::MessageValues::kBfloat16:
        for (auto p : positions) {
          std::uint32_t bits = 0;
          std::memcpy(&bits, &values[seg.offset + p], sizeof bits);
          // The rounded values are bfloat16 numbers: the low half is zero.
          LPDT_CHECK((bits & 0xFFFFu) == 0, "bf16 message value is not a bfloat16 number");
          layer.bf16.push_back(static_cast<std::uint16_t>(bits >> 16));
        }
        break;
      case compress::MessageValues::kInt8: {
        const quant::QuantizedTensor& q = message.codes[s];
        const at::Tensor codes = q.codes[node].to(at::kCPU).contiguous();
        const auto* c = codes.data_ptr<std::uint8_t>();
        layer.codes.assign(c, c + codes.numel());
        layer.scale = q.scale[node].item<float>();
        const float zero_point = q.zero_point[node].item<float>();
        LPDT_CHECK(zero_point >= 0 && zero_point <= 255 && zero_point == std::nearbyint(zero_point),
                   "int8 message zero point must be an integer code");
        layer.zero_point = static_cast<std::uint8_t>(zero_point);
        break;
      }
    }
  }
  return out;
}

void read_message_values(const Message& message, const LayerLayout& layout, at::Tensor& row) {
  LPDT_CHECK(row.dim() == 1 && row.size(0) == layout.total_numel && row.is_cpu() &&
                 row.scalar_type() == at::kFloat && row.is_contiguous(),
             "read_message_values: row must be a contiguous [P] float32 CPU tensor");
  if (message.layers.size() != layout.segments.size()) {
    std::ostringstream msg;
    msg << "message from node " << message.sender << " has " << message.layers.size()
        << " layers, the model has " << layout.segments.size();
    throw WireError(msg.str());
  }
  row.zero_();
  float* out = row.data_ptr<float>();
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    const LayerMessage& layer = message.layers[s];
    if (layer.numel != static_cast<std::uint64_t>(seg.numel)) {
      std::ostringstream msg;
      msg << "message from node " << message.sender << ": layer " << s << " has " << layer.numel
          << " scalars, the model's '" << seg.name << "' has " << seg.numel;
      throw WireError(msg.str());
    }
    for (std::size_t e = 0; e < layer.count(); ++e) {
      const std::int64_t position = layer.dense() ? static_cast<std::int64_t>(e)
                                                  : static_cast<std::int64_t>(layer.indices[e]);
      out[seg.offset + position] = layer.value(e);
    }
  }
}

}  // namespace lpdt::comm
