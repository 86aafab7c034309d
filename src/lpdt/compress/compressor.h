#pragma once
// Compression operators over node-batched buffers (docs/algorithms.md, "Compression").
//
// A compressor sees one [n, P] float32 tensor (row i = node i's flat vector, columns grouped into
// the segments of a LayerLayout) and compresses every row layer by layer, as the official code
// does per parameter tensor (reference spec 5.5). All n rows are compressed by a few batched
// tensor ops per segment, never by a loop over nodes.
#include <ATen/ATen.h>
#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lpdt/core/layer_layout.h"
#include "lpdt/quant/affine_quantizer.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::compress {

// What every node puts on the wire in one round, for the byte ledger (metrics/byte_ledger.h).
// All our compressors keep a count per segment that depends only on the segment's size, so the
// shape is the same for every node.
struct SendShape {
  bool sparse = false;                         // values + indices; false: the dense vector
  std::vector<std::int64_t> kept_per_segment;  // values kept in each LayerLayout segment
  std::int64_t values = 0;                     // sum of kept_per_segment (dense: P)
};

// How the kept values of a message travel (docs/wire.md): as computed (float32), rounded to
// bfloat16 (round to nearest even), or as 8-bit codes of the gemmlowp affine quantizer with one
// scale and zero point per node and layer. The receiver sees the rounded values, so the sender's
// algorithm must too: Choco's public copies and DeepSqueeze's error feedback then absorb the
// rounding error exactly as they absorb the sparsifier's.
enum class MessageValues { kFloat32, kBfloat16, kInt8 };
// "fp32" | "bf16" | "int8"; ConfigError otherwise.
MessageValues parse_message_values(std::string_view name);
std::string_view to_string(MessageValues values);

// The result of compressing one [n, P] buffer.
struct Compressed {
  at::Tensor dense;  // [n, P] float32, the values the receivers see, zeros where dropped
  SendShape sent;    // what each node sends
  // Per LayerLayout segment: the kept columns, [n, K] int64 relative to the segment, increasing
  // along each row; undefined when the whole segment is sent (dense).
  std::vector<at::Tensor> kept_index;
  MessageValues values = MessageValues::kFloat32;
  // kInt8 only, per segment: the codes ([n, K] uint8 in kept_index's order, or [n, numel] when
  // dense) with each node's scale and zero point ([n] float32).
  std::vector<quant::QuantizedTensor> codes;
};

// A compression operator C (Choco-SGD's Q, DeepSqueeze's C).
class Compressor {
 public:
  virtual ~Compressor() = default;
  // The registry name: "none", "topk", "randomk".
  virtual std::string_view name() const = 0;
  // Compresses every row of v ([n, P] float32, P == layout.total_numel) segment by segment.
  // `step` is the gossip round; random compressors derive their stream from (seed, node, step).
  // The result may alias v (the identity does); callers must not write into it.
  virtual Compressed compress(const at::Tensor& v, const LayerLayout& layout,
                              std::int64_t step) = 0;
};

// ---- kept counts (layer-wise sparsifiers) ----

// Values kept in a segment of `numel` scalars at keep fraction f: K = max(1, int(numel * f)),
// the official rule K = max(1, int(numel * (1 - k))) with f = 1 - k (reference spec 5.5).
// numel * f is computed in double and truncated, exactly as Python's int() does.
std::int64_t kept_count(std::int64_t numel, double keep_fraction);

// The official code's flag --k is the fraction DROPPED; keep = 1 - k, computed in double exactly
// as the official `1 - k`, so kept_count(numel, keep_from_drop(0.99)) == the official K.
inline double keep_from_drop(double drop_fraction) { return 1.0 - drop_fraction; }

// K for every segment of a layout.
std::vector<std::int64_t> kept_per_segment(const LayerLayout& layout, double keep_fraction);

// V = sum over segments of K: the number of values a layer-wise sparsifier sends per round
// (reference spec 3.4; ResNet-20 at keep 1 - 0.99: V = 2,767).
std::int64_t kept_values(const LayerLayout& layout, double keep_fraction);

// ---- factory ----

struct CompressorOptions {
  // "none" (identity), "topk" (layer-wise top-k), "randomk" (layer-wise random-k).
  TORCH_ARG(std::string, name) = "none";
  // Fraction of each segment's values kept, in (0, 1]. Ignored by "none".
  TORCH_ARG(double, keep_fraction) = 1.0;
  // Root seed of random-k's streams.
  TORCH_ARG(std::uint64_t, seed) = 0;
  // random-k only: scale kept values by numel / K so that E[C(x)] = x.
  TORCH_ARG(bool, unbiased) = false;
  // How kept values travel, and how int8 codes round (stochastic: unbiased, the draws keyed on
  // (seed, node, round, segment) as the model's quantizer's, quant/stochastic_draws.h).
  TORCH_ARG(MessageValues, values) = MessageValues::kFloat32;
  TORCH_ARG(quant::Rounding, rounding) = quant::Rounding::kStochastic;
  // Global id of row 0's node (a rank of a multi-process run hosts nodes first_node ...), so that
  // a node's draws do not depend on where it runs.
  TORCH_ARG(std::int64_t, first_node) = 0;
};

// Builds a compressor (the sparsifier, then the value rounding of options.values); ConfigError
// for an unknown name or a keep fraction outside (0, 1].
std::unique_ptr<Compressor> make_compressor(const CompressorOptions& options);

// Throws ConfigError unless keep_fraction is in (0, 1].
void check_keep_fraction(double keep_fraction);

namespace detail {
// Internal invariant of every compressor: v is [n, P] float32 with P = layout.total_numel and the
// layout's segments tile [0, P).
void check_buffer(const at::Tensor& v, const LayerLayout& layout, std::string_view who);
}  // namespace detail

}  // namespace lpdt::compress
