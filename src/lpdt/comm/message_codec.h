#pragma once
// Between the node-batched compressed buffers of the simulator and the wire payloads of single
// nodes (docs/wire.md): the exact payload size of every node's message, computed with tensor
// operations on the buffers' device (what the byte ledger counts), and the conversion of one
// node's message to and from a wire Message (what a transport sends). A test checks that the
// counted size equals the encoded size for every compressor and value format.
#include <ATen/ATen.h>

#include <cstdint>

#include "lpdt/comm/wire_payload.h"
#include "lpdt/compress/compressor.h"
#include "lpdt/core/layer_layout.h"

namespace lpdt::comm {

// Bytes of each node's encoded message (header, layer records, indices in the smallest format,
// values): [n] int64 on message.dense's device, equal to message_bytes(node_message(...)).
at::Tensor payload_bytes(const compress::Compressed& message, const LayerLayout& layout);
// The size of a message that sends every layer whole, which depends on nothing but the layout
// and the value format (no device work).
std::int64_t dense_payload_bytes(compress::MessageValues values, const LayerLayout& layout);

// Node `node`'s message (row `node` of the buffers) as a wire Message.
Message node_message(const compress::Compressed& message, const LayerLayout& layout,
                     std::int64_t node, WireAlgorithm algorithm, std::uint64_t round,
                     std::uint32_t sender, float push_sum_weight);

// The receiver's side: the values of a decoded message written into a [P] float32 CPU row
// (the positions it does not carry are set to 0). The message must match the layout (decode
// with Expectations::layer_numels from layout_numels()).
void read_message_values(const Message& message, const LayerLayout& layout, at::Tensor& row);

// The segment sizes of a layout, for Expectations::layer_numels.
std::vector<std::uint32_t> layout_numels(const LayerLayout& layout);

}  // namespace lpdt::comm
