#pragma once
// `lpdt bench --wire`: the bytes of one gossip message per compressor and value format, for a
// real model's layout, with the time to encode and decode it (docs/wire.md, docs/benchmarks.md).
// The messages are the first Choco-SGD round's (x-hat = 0: each node sends its compressed model),
// for nodes initialised from different seeds. The sizes are those the encoder writes, checked
// against the simulator's count on every row.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lpdt::exp {

struct WireBenchOptions {
  std::string arch = "resnet";
  std::int64_t depth = 20;
  std::string norm = "evonorm";  // model.norm's names (it changes the layout's parameters)
  std::int64_t channels = 3;
  std::int64_t size = 32;
  std::int64_t nodes = 4;    // messages per row (bytes: mean over nodes)
  std::int64_t repeats = 5;  // encode / decode timings per message (median reported)
  // "none" or "topk:<keep>" / "randomk:<keep>".
  std::vector<std::string> compressors = {"none", "topk:0.1", "topk:0.01"};
  std::vector<std::string> values = {"fp32", "bf16", "int8"};
  std::string json_path;
};

struct WireBenchRow {
  std::string compressor;
  std::string values;
  std::int64_t kept_values = 0;       // per message
  double bytes = 0;                   // encoded payload, mean over nodes
  std::int64_t reference_bytes = 0;   // the official code's count (reference spec 3.4)
  double bytes_per_kept_value = 0;
  double fp32_dense_ratio = 0;        // fp32 dense payload / this payload
  double encode_mb_per_s = 0;         // payload MB per second (median)
  double decode_mb_per_s = 0;
};

std::vector<WireBenchRow> run_wire_bench(const WireBenchOptions& options,
                                         const std::function<void(const std::string&)>& progress);

}  // namespace lpdt::exp
