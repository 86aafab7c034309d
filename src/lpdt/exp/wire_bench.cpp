#include "lpdt/exp/wire_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lpdt/build_info.h"
#include "lpdt/comm/message_codec.h"
#include "lpdt/comm/wire_payload.h"
#include "lpdt/compress/compressor.h"
#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/exp/image_bench_model.h"
#include "lpdt/metrics/byte_ledger.h"
#include "lpdt/models/model.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

struct CompressorSpec {
  std::string name;
  double keep = 1.0;
};

// "none", "topk:0.01", "randomk:0.1".
CompressorSpec parse_compressor(const std::string& spec) {
  const auto colon = spec.find(':');
  CompressorSpec out{spec.substr(0, colon), 1.0};
  const auto refuse = [&](const std::string& why) -> void {
    throw ConfigError("bench --wire: compressor '" + spec + "' " + why +
                      " (must be none, topk:<keep fraction> or randomk:<keep fraction>)");
  };
  if (out.name != "none" && out.name != "topk" && out.name != "randomk") {
    refuse("is not a compressor");
  }
  if (out.name == "none" && colon != std::string::npos) refuse("takes no keep fraction");
  // A sparsifier without its fraction would silently keep everything.
  if ((out.name == "topk" || out.name == "randomk") && colon == std::string::npos) {
    throw ConfigError("bench --wire: compressor '" + spec + "' needs its keep fraction, e.g. " +
                      out.name + ":0.01 (must be none, topk:<keep fraction> or "
                      "randomk:<keep fraction>)");
  }
  if (colon != std::string::npos) {
    try {
      std::size_t used = 0;
      out.keep = std::stod(spec.substr(colon + 1), &used);
      if (used != spec.size() - colon - 1) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw ConfigError("bench --wire: compressor '" + spec +
                        "' must be none, topk:<keep fraction> or randomk:<keep fraction>");
    }
    if (!(out.keep > 0 && out.keep <= 1)) refuse("keeps a fraction outside (0, 1]");
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<WireBenchRow> run_wire_bench(const WireBenchOptions& options,
                                         const std::function<void(const std::string&)>& progress) {
  if (options.nodes < 1 || options.repeats < 1) {
    throw ConfigError("bench --wire: --nodes and --steps must be positive");
  }
  // Every compressor and value format is checked before anything runs or prints.
  std::vector<CompressorSpec> specs;
  for (const std::string& spec : options.compressors) specs.push_back(parse_compressor(spec));
  for (const std::string& values_name : options.values) compress::parse_message_values(values_name);
  const auto model = models::make_model(image_bench_model(options));
  const LayerLayout& layout = model->layout();
  std::vector<at::Tensor> rows;
  for (std::int64_t i = 0; i < options.nodes; ++i) {
    rows.push_back(model->init_params(static_cast<std::uint64_t>(i + 1)));
  }
  const at::Tensor messages = at::stack(rows);  // [nodes, P]
  const double fp32_dense = static_cast<double>(
      comm::dense_payload_bytes(compress::MessageValues::kFloat32, layout));

  char line[320];
  std::snprintf(line, sizeof line,
                "lpdt bench --wire: %s%s, %lld params in %zu layers, first Choco round's "
                "messages of %lld nodes; median of %lld encodes/decodes; lpdt %s (%s)",
                model->name().c_str(), image_bench_norm_text(options).c_str(),
                static_cast<long long>(layout.total_numel),
                layout.segments.size(), static_cast<long long>(options.nodes),
                static_cast<long long>(options.repeats), build_info::kGitRevision,
                build_info::kCompiler);
  progress(line);
  progress(
      "compressor     values    kept   bytes/msg  official  B/kept  fp32-dense/this  "
      "encode MB/s  decode MB/s");
  progress("(bytes/msg: the mean over the nodes' messages, which differ in size where the kept "
           "entries do)");

  std::vector<WireBenchRow> results;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const CompressorSpec& c = specs[k];
    const std::string& spec = options.compressors[k];
    for (const std::string& values_name : options.values) {
      const auto values = compress::parse_message_values(values_name);
      auto compressor = compress::make_compressor(compress::CompressorOptions()
                                                      .name(c.name)
                                                      .keep_fraction(c.keep)
                                                      .seed(1)
                                                      .values(values));
      const compress::Compressed message = compressor->compress(messages, layout, 0);
      const at::Tensor counted = comm::payload_bytes(message, layout);
      WireBenchRow row;
      row.compressor = spec;
      row.values = values_name;
      row.kept_values = message.sent.values;
      row.reference_bytes =
          metrics::reference_payload_bytes(message.sent.values, message.sent.sparse);
      std::vector<double> encode_s, decode_s;
      double total_bytes = 0;
      for (std::int64_t node = 0; node < options.nodes; ++node) {
        const comm::Message m = comm::node_message(message, layout, node,
                                                   comm::WireAlgorithm::kChoco, 0,
                                                   static_cast<std::uint32_t>(node), 1.0f);
        std::vector<std::uint8_t> bytes;
        for (std::int64_t r = 0; r < options.repeats; ++r) {
          const auto t0 = Clock::now();
          bytes = comm::encode(m);
          const auto t1 = Clock::now();
          const comm::Message back = comm::decode(bytes);
          const auto t2 = Clock::now();
          encode_s.push_back(std::chrono::duration<double>(t1 - t0).count());
          decode_s.push_back(std::chrono::duration<double>(t2 - t1).count());
          LPDT_CHECK(back.layers.size() == m.layers.size(), "decoded message lost layers");
        }
        // The simulator's count is the encoder's size (tests/comm/message_codec_test.cpp).
        LPDT_CHECK(counted[node].item<std::int64_t>() == static_cast<std::int64_t>(bytes.size()),
                   "counted payload size differs from the encoded size");
        total_bytes += static_cast<double>(bytes.size());
      }
      row.bytes = total_bytes / static_cast<double>(options.nodes);
      row.bytes_per_kept_value = row.bytes / static_cast<double>(row.kept_values);
      row.fp32_dense_ratio = fp32_dense / row.bytes;
      row.encode_mb_per_s = row.bytes / median(encode_s) / 1e6;
      row.decode_mb_per_s = row.bytes / median(decode_s) / 1e6;
      std::snprintf(line, sizeof line, "%-14s %-6s %7lld %11.1f %9lld %7.2f %16.2f %12.0f %12.0f",
                    spec.c_str(), values_name.c_str(), static_cast<long long>(row.kept_values),
                    row.bytes, static_cast<long long>(row.reference_bytes),
                    row.bytes_per_kept_value, row.fp32_dense_ratio, row.encode_mb_per_s,
                    row.decode_mb_per_s);
      progress(line);
      results.push_back(row);
    }
  }
  if (!options.json_path.empty()) {
    nlohmann::json j;
    j["model"] = model->name();
    j["params"] = layout.total_numel;
    j["layers"] = layout.segments.size();
    j["options"] = {{"arch", options.arch},
                    {"depth", options.depth},
                    {"norm", options.norm},
                    {"channels", options.channels},
                    {"size", options.size},
                    {"nodes", options.nodes},
                    {"repeats", options.repeats},
                    {"compressors", options.compressors},
                    {"values", options.values}};
    for (const auto& r : results) {
      j["rows"].push_back({{"compressor", r.compressor},
                           {"values", r.values},
                           {"kept_values", r.kept_values},
                           {"bytes", r.bytes},
                           {"reference_bytes", r.reference_bytes},
                           {"bytes_per_kept_value", r.bytes_per_kept_value},
                           {"fp32_dense_ratio", r.fp32_dense_ratio},
                           {"encode_mb_per_s", r.encode_mb_per_s},
                           {"decode_mb_per_s", r.decode_mb_per_s}});
    }
    // This bench leaves LibTorch's threads as they are: record what they are.
    RuntimeInfo runtime;
    runtime.intra_op_threads = at::get_num_threads();
    runtime.cpu_kernels = simd_level_name(simd_level());
    write_bench_json(options.json_path, std::move(j), runtime, "bench --wire");
  }
  return results;
}

}  // namespace lpdt::exp
