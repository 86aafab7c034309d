#include "lpdt/exp/trainer.h"

#include <torch/cuda.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "lpdt/algo/consensus.h"
#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/algo/link_faults.h"
#include "lpdt/algo/lr_schedule.h"
#include "lpdt/build_info.h"
#include "lpdt/models/safetensors.h"
#include "lpdt/core/error.h"
#include "lpdt/core/interrupt_note.h"
#include "lpdt/core/file_text.h"
#include "lpdt/core/runtime.h"
#include "lpdt/data/dataset_registry.h"
#include "lpdt/data/loader.h"
#include "lpdt/data/partition.h"
#include "lpdt/data/partitioner.h"
#include "lpdt/dist/cluster.h"
#include "lpdt/dist/lone_node_passes.h"
#include "lpdt/dist/placement.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/exp/checkpoint.h"
#include "lpdt/exp/config_difference.h"
#include "lpdt/exp/config_options.h"
#include "lpdt/exp/cost_analysis.h"
#include "lpdt/exp/data_fingerprint.h"
#include "lpdt/exp/graphed_steps.h"
#include "lpdt/exp/progress_meter.h"
#include "lpdt/exp/run_folder.h"
#include "lpdt/exp/settings_without_effect.h"
#include "lpdt/exp/evaluation_cost_warning.h"
#include "lpdt/exp/slow_setting_warnings.h"
#include "lpdt/graph/export.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/spectral.h"
#include "lpdt/graph/topology.h"
#include "lpdt/metrics/byte_ledger.h"
#include "lpdt/models/node_batched_step.h"
#include "lpdt/models/pretrained.h"
#include "lpdt/quant/affine_quantizer_cuda.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

std::string shape_text(const at::IntArrayRef sizes) {
  std::string text;
  for (const std::int64_t d : sizes) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

// The model is built from the training set, so the test set must have its samples' shape (the
// evaluation's centre crop, data.crop_size, makes any image size of at least that fit) and no
// class beyond its classes. Otherwise the mismatch would surface as a LibTorch shape error deep in
// the first evaluation.
void check_test_set_fits(const data::Dataset& train, const data::Dataset& test,
                         const std::string& dataset, const std::string& dir,
                         std::int64_t center_crop) {
  const std::string where = "dataset '" + dataset + "'" + (dir.empty() ? "" : " in '" + dir + "'");
  if (train.is_text() != test.is_text()) {
    throw UserError(where + ": the training and test sets are not of the same kind");
  }
  if (train.is_text()) {
    if (test.sequence_length() != train.sequence_length()) {
      throw UserError(where + ": test rows of " + std::to_string(test.sequence_length()) +
                      " tokens, training rows of " + std::to_string(train.sequence_length()));
    }
  } else {
    const bool cropped = center_crop > 0 && test.height() >= center_crop &&
                         test.width() >= center_crop && train.height() >= center_crop &&
                         train.width() >= center_crop;
    if (test.channels() != train.channels() ||
        (!cropped && (test.height() != train.height() || test.width() != train.width()))) {
      throw UserError(where + ": the test images are " + shape_text(test.images.sizes().slice(1)) +
                      " (channels x height x width) but the training images are " +
                      shape_text(train.images.sizes().slice(1)) +
                      "; both splits must have images of one shape");
    }
  }
  if (test.num_classes > train.num_classes) {
    throw UserError(where + ": the test set has " + std::to_string(test.num_classes) +
                    " classes, the training set " + std::to_string(train.num_classes));
  }
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// The hosted nodes (global indices) whose loss is not finite, dead nodes left out: a dead node
// trains on alone and nobody mixes its rows, and a run resumed from a multi-process checkpoint
// holds zeros for a dead rank's rows (push-sum weight 0, so its loss is not a number) without
// anything having diverged. loss_rows: [k], one entry per hosted node, node first_node + i in
// row i.
std::vector<std::int64_t> nodes_with_nonfinite_loss(const at::Tensor& loss_rows,
                                                    std::int64_t first_node,
                                                    const algo::LinkFaults* faults) {
  const at::Tensor bad = at::logical_not(at::isfinite(loss_rows)).nonzero().view({-1}).cpu();
  std::vector<std::int64_t> nodes;
  for (std::int64_t i = 0; i < bad.numel(); ++i) {
    const std::int64_t node = first_node + bad[i].item<std::int64_t>();
    if (faults == nullptr || !faults->dead(node)) nodes.push_back(node);
  }
  return nodes;
}

// The hosted nodes (global indices) with a parameter that is not finite, dead nodes left out (as
// above). A loss can stay finite after the parameters have not: an 8-bit model quantizes a NaN
// weight to a finite code. rows: [k, P], node first_node + i in row i.
std::vector<std::int64_t> nodes_with_nonfinite_params(const at::Tensor& rows,
                                                      std::int64_t first_node,
                                                      const algo::LinkFaults* faults) {
  const at::Tensor finite = at::isfinite(rows.detach()).all(1);  // [k]
  return nodes_with_nonfinite_loss(
      at::where(finite, at::zeros({}, rows.options()), at::full({}, NAN, rows.options())),
      first_node, faults);
}

// A diverged run stops: every later step would only compute NaN, and the next checkpoint
// would overwrite the last good one. `where` says when it was seen ("at step 37 of 1875 of
// epoch 2" or "in epoch 2"); step is 0 when seen at the epoch's end. Rank 0 records it first.
// `parameters`: the nodes' parameters were found not finite, not their loss.
[[noreturn]] void stop_diverged(const ExperimentConfig& config, bool leader, int epoch,
                                std::int64_t step, const std::string& where,
                                const std::string& nodes, const std::filesystem::path& run_dir,
                                bool parameters = false) {
  std::string advice = "lower optim.lr (now " + format("%g", config.optim.lr) + ")";
  // Weight decay alone scales the weights by 1 - lr wd each step: at lr wd >= 1 it flips or
  // zeroes them every step (with L2 in the gradient, it grows them without bound beyond 2).
  const double decay = config.optim.lr * config.optim.weight_decay;
  if (decay >= 1.0) {
    advice = "lower optim.weight_decay (now " + format("%g", config.optim.weight_decay) +
             "; lr * weight_decay = " + format("%g", decay) +
             " >= 1 overshoots on its own) or " + advice;
  }
  if (config.algo.consensus_step < 1.0) {
    advice += " or algo.consensus_step (now " + format("%g", config.algo.consensus_step) + ")";
  }
  if (config.optim.warmup == OptimConfig::Warmup::kNone) {
    advice += ", or start with optim.warmup = \"official\" (0.1x the learning rate in epoch 1)";
  }
  // Range EvoNorm (either range statistic) scales a group by 1 / (range + 1e-5): 1e5 for a group
  // of equal values, with a gradient of 1e10, which no learning rate tames (small images leave
  // deep models 1x1 feature maps: MobileNetV2 at int8 on 1x1 inputs diverges at lr 1e-4).
  const bool range_norm = config.model.norm == ModelConfig::Norm::kRangeEvonorm ||
                          (config.model.norm == ModelConfig::Norm::kEvonorm &&
                           config.model.precision == ModelConfig::Precision::kInt8);
  if (range_norm && config.quant.range_evonorm != QuantConfig::RangeEvonorm::kStd) {
    advice += ". An 8-bit model can also diverge at any learning rate in its Range EvoNorm "
              "layers, which scale a group by 1 / (range + 1e-5), 1e5 where a group's values "
              "are all equal (as in feature maps of a pixel or two, from small images): "
              "quant.range_evonorm = \"std\" divides by the standard deviation instead";
  }
  // What the folder keeps: only what exists (a run diverging in its first epoch has neither
  // evaluated epochs nor a checkpoint).
  std::string kept = "configuration";
  {
    std::ifstream epochs_table(run_dir / "epochs.csv");
    std::string header, row;
    if (std::getline(epochs_table, header) && std::getline(epochs_table, row) && !row.empty()) {
      kept += ", metrics of the evaluated epochs";
    }
  }
  if (std::filesystem::exists(run_dir / kCheckpointFile)) kept += ", the last checkpoint";
  const std::string message =
      "training diverged " + where + ": the " +
      (parameters ? "parameters" : "training loss") + " of node" +
      (nodes.find(',') == std::string::npos ? " " : "s ") + nodes +
      (parameters ? " are not finite (NaN or infinity)" : " is not finite") + " (the run stopped; " + run_dir.string() + " keeps what was written before: " +
      kept + " and " + kDivergedFile + "). To train stably, " + advice + ".";
  if (leader) {
    nlohmann::json record = {{"config", to_json(config)},
                             {"epoch", epoch},
                             {"step", step > 0 ? nlohmann::json(step) : nlohmann::json()},
                             {"nodes", nodes},
                             {"message", message}};
    write_text_file(run_dir / kDivergedFile, record.dump(2) + "\n");
  }
  throw TrainingDiverged(message);
}

// The first line of an exception's text: LibTorch's messages go on with C++ frames.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string join_nodes(const std::vector<std::int64_t>& nodes) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(nodes.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + std::to_string(nodes[i]);
  if (nodes.size() > shown) text += format(" and %zu more", nodes.size() - shown);
  return text;
}

data::SyntheticOptions synthetic_options(const ExperimentConfig& config) {
  return data::SyntheticOptions()
      .seed(config.run.seed)
      .samples_per_class(config.data.synthetic_samples_per_class)
      .height(config.data.synthetic_size)
      .width(config.data.synthetic_size);
}

data::PartitionOptions partition_options(const ExperimentConfig& config) {
  data::PartitionOptions options;
  options.kind(data::parse_partition_kind(std::string(to_string(config.data.partition))))
      .skew(config.data.skew)
      .skew_mode(data::parse_skew_mode(std::string(to_string(config.data.skew_mode))))
      .shards_per_node(config.data.shards_per_node);
  options.dirichlet(data::DirichletOptions()
                        .alpha(config.data.dirichlet_alpha)
                        .min_samples(config.data.dirichlet_min_samples));
  return options;
}

algo::LrScheduleOptions schedule_options(const ExperimentConfig& config) {
  algo::LrScheduleOptions options;
  options.kind(std::string(to_string(config.optim.schedule)))
      .base_lr(config.optim.lr)
      .milestones(
          std::vector<std::int64_t>(config.optim.milestones.begin(), config.optim.milestones.end()))
      .gamma(config.optim.gamma)
      .total_epochs(config.run.epochs)
      .warmup_epochs(config.optim.warmup == OptimConfig::Warmup::kOfficial ? 1 : 0)
      .warmup_factor(0.1);
  return options;
}

// The cost model of this run's model and algorithm at fp32 and 8 bits (docs/cost.md), for
// `lpdt report`'s memory and energy bars. Analytic and cheap (one traced forward pass each).
void write_cost_json(const std::filesystem::path& path, const ExperimentConfig& config,
                     const models::ModelOptions& model_options) {
  CostOptions options;
  options.config = config;
  options.input = InputShape{model_options.in_channels, model_options.height, model_options.width,
                             model_options.num_classes};
  options.config.data.pad_to = 0;  // the shape above is already padded
  // The paper's cost model: fp32 and int8 side by side (fp32 alone for group norm, which has no
  // 8-bit version; a bf16 run's arithmetic is not modelled, its fp32 column is the closest).
  write_text_file(path, to_json(analyse_cost(options)).dump(1) + "\n");
}

// run.device, checked against what this build and machine have.
at::Device resolve_device(const ExperimentConfig& config) {
  if (config.run.device == RunConfig::Device::kCpu) return at::kCPU;
  if (!torch::cuda::is_available()) {
    throw ConfigError(
        "run.device = 'cuda', but no CUDA device is usable: this lpdt was built against a "
        "LibTorch without CUDA, or the machine has no GPU (README, 'CUDA build'); set "
        "run.device = 'cpu'");
  }
  if (config.model.precision == ModelConfig::Precision::kInt8 &&
      config.quant.backend == QuantConfig::Backend::kInteger) {
    throw ConfigError(
        "quant.backend = 'integer' runs on the CPU only (oneDNN int8 kernels); with run.device "
        "= 'cuda' use quant.backend = 'simulated'");
  }
  at::globalContext().setBenchmarkCuDNN(true);  // static shapes: autotune each convolution once
  return at::kCUDA;
}

// data.on_device: whether the loader makes batches on `device` rather than on the host. Auto puts
// them on a GPU, where the host would otherwise augment and normalise every image and copy the
// floats over, unless the resized crops (CPU-only) are asked for; the config check has already
// refused "on" with those.
bool resolve_batches_on_device(const ExperimentConfig& config, at::Device device,
                               bool resized_crops) {
  switch (config.data.on_device) {
    case DataConfig::OnDevice::kOn:
      return true;
    case DataConfig::OnDevice::kOff:
      return false;
    case DataConfig::OnDevice::kAuto:
      return device.is_cuda() && !resized_crops;
  }
  return false;
}

// What a multi-process run cannot do (yet), as configuration errors every rank detects alike.
// Every rank of a job must train one configuration: an MPMD launch (`mpirun -np 1 lpdt ... :
// -np 1 lpdt ...`) or a config file that differs between hosts would otherwise train some nodes
// with settings other than those the run records (rank 0's). Paths may differ between hosts
// (the same data may lie elsewhere on each), and so may run.threads. Rank 0 compares every
// rank's resolved configuration with its own; all ranks stop together with its verdict.
// What share_start_error sends in place of a configuration or a data fingerprint (JSON never
// starts so): the mark says the error's kind, so that every rank stops as the failing rank would
// have (exit code 2 for a configuration error, 1 for any other).
constexpr std::string_view kConfigErrorMark = "configuration error\n";
constexpr std::string_view kOtherErrorMark = "error\n";

bool is_error_mark(const std::string& text) {
  return text.starts_with(kConfigErrorMark) || text.starts_with(kOtherErrorMark);
}

// A rank's error as rank 0 passes it on: its mark, then "rank R: " before its message.
std::string verdict_naming_rank(const std::string& text, std::size_t rank) {
  const std::string_view mark =
      text.starts_with(kConfigErrorMark) ? kConfigErrorMark : kOtherErrorMark;
  return std::string(mark) + "rank " + std::to_string(rank) + ": " + text.substr(mark.size());
}

// Throws a verdict that every rank received: a marked error as its kind, anything else (the
// ranks' configurations or data differ) as a ConfigError.
[[noreturn]] void throw_verdict(const std::string& verdict) {
  if (verdict.starts_with(kOtherErrorMark)) {
    throw JobWideError(verdict.substr(kOtherErrorMark.size()));
  }
  throw ConfigError(verdict.starts_with(kConfigErrorMark)
                        ? verdict.substr(kConfigErrorMark.size())
                        : verdict);
}

// `resuming`: this rank was started with --resume. Every rank must start alike (all resume or
// none): a rank that resumes reads and checks a checkpoint while a fresh one starts a run folder,
// and the two would wait on each other's messages until their deadlines.
void check_ranks_agree(const ExperimentConfig& config, bool resuming, dist::Cluster& cluster) {
  static const std::set<std::string> kPerHost = {"data.dir", "data.vocab", "model.pretrained",
                                                 "run.out_dir", "run.threads"};
  const nlohmann::json mine = to_json(config);
  const std::vector<std::string> texts =
      cluster.gather_text(nlohmann::json{{"config", mine}, {"resume", resuming}}.dump());
  const auto start_of = [](bool resume) {
    return resume ? std::string("resumes a run (--resume)") : std::string("starts a new run");
  };
  std::string verdict;
  for (std::size_t r = 1; cluster.leader() && r < texts.size() && verdict.empty(); ++r) {
    if (texts[r].empty()) continue;  // a rank that died: the deadlines report it
    if (is_error_mark(texts[r])) {
      verdict = verdict_naming_rank(texts[r], r);
      break;
    }
    const nlohmann::json received = nlohmann::json::parse(texts[r]);
    if (received.at("resume").get<bool>() != resuming) {
      verdict = "the ranks of one job must start alike, but rank 0 " + start_of(resuming) +
                " and rank " + std::to_string(r) + " " + start_of(!resuming) +
                ": give every rank the same --resume folder, or none";
      break;
    }
    const nlohmann::json& theirs = received.at("config");
    std::ostringstream differences;
    int count = 0;
    for (const ConfigDifference& d : config_differences(mine, theirs, kPerHost)) {
      differences << (count++ ? "; " : "") << d.key << " = " << d.ours << " on rank 0, "
                  << d.theirs << " on rank " << r;
    }
    if (count > 0) {
      verdict = "the ranks of one job must train one configuration, but " + differences.str() +
                ": start every rank with the same config file and --set options (only paths and "
                "run.threads may differ between hosts)";
    }
  }
  verdict = cluster.broadcast_text(verdict);
  if (!verdict.empty()) throw_verdict(verdict);
}

// data.dir and data.vocab may differ between hosts, but every rank must have loaded the same
// data: nodes trained on other files would make a run that its folder (rank 0's) misdescribes.
// Rank 0 compares every rank's data fingerprint with its own; all ranks stop with its verdict.
void check_ranks_same_data(const ExperimentConfig& config, const nlohmann::json& fingerprint,
                           dist::Cluster& cluster) {
  const nlohmann::json mine = {{"data", fingerprint},
                               {"dir", config.data.dir},
                               {"vocab", config.data.vocab}};
  const std::vector<std::string> texts = cluster.gather_text(mine.dump());
  std::string verdict;
  for (std::size_t r = 1; cluster.leader() && r < texts.size() && verdict.empty(); ++r) {
    if (texts[r].empty()) continue;  // a rank that died: the deadlines report it
    if (is_error_mark(texts[r])) {  // a rank whose data did not load
      verdict = verdict_naming_rank(texts[r], r);
      break;
    }
    const nlohmann::json theirs = nlohmann::json::parse(texts[r]);
    for (const char* split : {"train", "test"}) {
      const nlohmann::json& a = mine.at("data").at(split);
      const nlohmann::json& b = theirs.at("data").at(split);
      if (a == b) continue;
      const auto where = [&](const nlohmann::json& side, std::size_t rank) {
        std::string text = "rank " + std::to_string(rank) + " (data.dir = '" +
                           side.at("dir").get<std::string>() + "'";
        if (!side.at("vocab").get<std::string>().empty()) {
          text += ", data.vocab = '" + side.at("vocab").get<std::string>() + "'";
        }
        const nlohmann::json& d = side.at("data").at(split);
        return text + "): " + std::to_string(d.at("samples").get<std::int64_t>()) +
               " samples, inputs CRC-32 " + d.at("inputs_crc32").get<std::string>() +
               ", labels CRC-32 " + d.at("labels_crc32").get<std::string>();
      };
      verdict = "the ranks of one job must train on the same data, but their " +
                std::string(split == std::string("train") ? "training" : "test") +
                " sets differ: " + where(mine, 0) + "; " + where(theirs, r) +
                ". data.dir (and data.vocab) may differ between hosts, but must hold the same "
                "files";
      break;
    }
  }
  verdict = cluster.broadcast_text(verdict);
  if (!verdict.empty()) throw_verdict(verdict);
}

// The ranks that started a step every rank takes (reading its own copy of a checkpoint) meet
// here; a rank that failed it calls share_start_error instead, and rank 0 passes its error on
// (naming the rank) to every rank, so that none waits for another that left.
// After a step every rank took alone (reading its copy of a checkpoint): stops every rank if one
// failed, or if the ranks' `state` texts differ (copies of a run folder at different epochs),
// naming both; rank 0 answers for all.
void agree_no_rank_failed(dist::Cluster& cluster, const std::string& state = "") {
  const std::vector<std::string> texts = cluster.gather_text(state);
  std::string verdict;
  for (std::size_t r = 1; cluster.leader() && r < texts.size(); ++r) {
    if (is_error_mark(texts[r])) {
      verdict = verdict_naming_rank(texts[r], r);
      break;
    }
    if (!texts[r].empty() && texts[r] != texts[0]) {
      verdict = std::string(kConfigErrorMark) +
                "the ranks resume different checkpoints: rank 0's is of " + texts[0] +
                ", rank " + std::to_string(r) + "'s of " + texts[r] +
                ": give every rank a copy of the same run folder (--resume)";
      break;
    }
  }
  verdict = cluster.broadcast_text(verdict);
  if (!verdict.empty()) throw_verdict(verdict);
}

void check_multi_process(const ExperimentConfig& config, const dist::Cluster& cluster,
                         bool static_topology) {
  if (!cluster.distributed()) return;
  if (config.run.device != RunConfig::Device::kCpu) {
    throw ConfigError(
        "multi-process (mpirun) runs exchange payloads from CPU tensors: set run.device = 'cpu'");
  }
  if (config.algo.name == AlgoConfig::Name::kChoco && !static_topology && cluster.size() > 1) {
    throw ConfigError(
        "algo.name = 'choco' over a time-varying topology needs every node's public copy "
        "update q_j at every node (the simulator's exact W xh), which a rank only hears from its "
        "current in-neighbours: use a static topology, or deep-squeeze / dpsgd, under mpirun");
  }
  if (config.graph.nodes >= 32767) {
    throw ConfigError("multi-process runs tag messages by node: graph.nodes must be < 32767");
  }
}

// faults.kill_nodes under mpirun. A rank dies as a whole: the killed nodes must be whole blocks,
// and rank 0 (which writes the run) must live. Not checked for a run resumed past kill_step: its
// killed nodes are dead from the checkpoint on whoever hosts them (restore_dead), so it may be
// resumed with another number of ranks.
void check_mpi_kills(const ExperimentConfig& config, const dist::Cluster& cluster) {
  if (!config.faults.kill_nodes.empty() && cluster.size() > 1) {
    const std::set<std::int64_t> kill(config.faults.kill_nodes.begin(),
                                      config.faults.kill_nodes.end());
    for (int r = 0; r < cluster.size(); ++r) {
      const NodeRange block = dist::hosted_nodes(r, cluster.size(), config.graph.nodes);
      std::int64_t killed = 0;
      for (std::int64_t i = block.first; i < block.end(); ++i) killed += kill.count(i);
      if (killed == 0) continue;
      const std::string nodes =
          std::to_string(block.first) + " .. " + std::to_string(block.end() - 1);
      if (r == 0) {
        throw ConfigError("faults.kill_nodes under mpirun kills processes, and rank 0 (nodes " +
                          nodes + ") writes the run: kill nodes of other ranks");
      }
      if (killed != block.count) {
        throw ConfigError("faults.kill_nodes under mpirun kills whole processes: rank " +
                          std::to_string(r) + " hosts nodes " + nodes +
                          "; list all of them or none");
      }
    }
  }
}

// "" when the survivors' graph (edges j -> i where mixing[i][j] > 0) is strongly connected; else
// what is cut. Push-sum averages over a strongly connected graph only: across a cut, the nodes
// upstream keep losing mass and the two sides drift apart.
std::string survivors_cut(const at::Tensor& mixing, const std::vector<std::int64_t>& alive) {
  if (alive.size() < 2) return "";
  const auto w = mixing.accessor<float, 2>();
  const auto reach = [&](bool forward) {
    std::set<std::int64_t> seen{alive.front()};
    std::vector<std::int64_t> todo{alive.front()};
    while (!todo.empty()) {
      const std::int64_t a = todo.back();
      todo.pop_back();
      for (const std::int64_t b : alive) {
        const float edge = forward ? w[b][a] : w[a][b];  // a -> b (forward) or b -> a
        if (b != a && edge > 0 && seen.insert(b).second) todo.push_back(b);
      }
    }
    return seen.size();
  };
  if (reach(true) == alive.size() && reach(false) == alive.size()) return "";
  return "without the dead nodes the graph is no longer strongly connected: push-sum cannot "
         "average across the cut, nodes that hear from no survivor lose their mass, and the "
         "survivors drift apart (use a topology with more paths, docs/faults.md)";
}

algo::FaultOptions fault_options(const ExperimentConfig& config) {
  algo::FaultOptions f;
  f.seed = config.run.seed;
  f.drop_probability = config.faults.drop_probability;
  f.delay_probability = config.faults.delay_probability;
  f.delay_rounds = config.faults.delay_rounds;
  f.kill_nodes.assign(config.faults.kill_nodes.begin(), config.faults.kill_nodes.end());
  f.kill_step = config.faults.kill_step;
  return f;
}

nlohmann::json fault_counts_to_json(const algo::FaultCounts& c) {
  nlohmann::json dead = nlohmann::json::array();
  for (const auto& [node, round] : c.dead_nodes)
    dead.push_back({{"node", node}, {"seen_in_round", round}});
  return {{"messages_lost", c.messages_lost},
          {"messages_late", c.messages_late},
          {"late_rounds", c.late_rounds},
          {"messages_in_flight", c.messages_in_flight},
          {"dead_edge_rounds", c.dead_edge_rounds},
          {"dead_nodes", dead}};
}

algo::FaultCounts fault_counts_from_json(const nlohmann::json& j) {
  algo::FaultCounts c;
  c.messages_lost = j.at("messages_lost").get<std::int64_t>();
  c.messages_late = j.at("messages_late").get<std::int64_t>();
  c.late_rounds = j.at("late_rounds").get<std::int64_t>();
  c.messages_in_flight = j.value("messages_in_flight", std::int64_t{0});
  c.dead_edge_rounds = j.at("dead_edge_rounds").get<std::int64_t>();
  for (const auto& d : j.at("dead_nodes")) {
    c.dead_nodes[d.at("node").get<std::int64_t>()] = d.at("seen_in_round").get<std::int64_t>();
  }
  return c;
}

nlohmann::json epochs_to_json(const std::vector<EpochSummary>& epochs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : epochs) {
    const Evaluation& ev = e.evaluation;
    out.push_back({{"epoch", e.epoch},
                   {"node_ids", ev.node_ids},
                   {"lr", e.lr},
                   {"train_loss", e.train_loss},
                   {"node_accuracy", ev.node_accuracy},
                   {"mean_accuracy", ev.mean_accuracy},
                   {"min_accuracy", ev.min_accuracy},
                   {"max_accuracy", ev.max_accuracy},
                   {"average_model_accuracy", ev.average_model_accuracy},
                   {"consensus_distance", ev.consensus_distance},
                   {"mean_gb_sent_per_node", e.mean_gb_sent_per_node},
                   {"elapsed_s", e.elapsed_s}});
  }
  return out;
}

// JSON writes NaN as null: the node accuracies of a run that did not evaluate its nodes.
double number_or_nan(const nlohmann::json& value) {
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

// A CSV field that is empty when the figure was not computed (NaN), never a made-up 0.
struct CsvNumber {
  double value;
};
std::ostream& operator<<(std::ostream& out, CsvNumber n) {
  if (!std::isnan(n.value)) out << n.value;
  return out;
}

std::vector<EpochSummary> epochs_from_json(const nlohmann::json& j) {
  std::vector<EpochSummary> out;
  for (const auto& e : j) {
    EpochSummary s;
    s.epoch = e.at("epoch").get<int>();
    s.lr = e.at("lr").get<double>();
    s.train_loss = e.at("train_loss").get<double>();
    s.evaluation.node_accuracy = e.at("node_accuracy").get<std::vector<double>>();
    if (e.contains("node_ids")) {  // checkpoints before node ids were recorded: every node
      s.evaluation.node_ids = e.at("node_ids").get<std::vector<std::int64_t>>();
    }
    s.evaluation.mean_accuracy = number_or_nan(e.at("mean_accuracy"));
    s.evaluation.min_accuracy = number_or_nan(e.at("min_accuracy"));
    s.evaluation.max_accuracy = number_or_nan(e.at("max_accuracy"));
    s.evaluation.average_model_accuracy = e.at("average_model_accuracy").get<double>();
    s.evaluation.consensus_distance = e.at("consensus_distance").get<double>();
    s.mean_gb_sent_per_node = e.at("mean_gb_sent_per_node").get<double>();
    s.elapsed_s = e.at("elapsed_s").get<double>();
    out.push_back(std::move(s));
  }
  return out;
}

// "nodes mean M% [min A, max B]", or a note when the nodes were not evaluated (eval.per_node =
// false leaves their accuracies empty, not 0%).
// The run.epochs of a run folder's summary.json; nullopt when there is none or it is unreadable
// (a summary is written whole, by rename, so an unreadable one was edited: the checkpoint rules).
std::optional<int> summary_epochs(const std::filesystem::path& file) {
  const std::optional<std::string> text = read_file_text(file);  // (a folder: UserError)
  if (!text) return std::nullopt;
  const nlohmann::json summary = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded()) return std::nullopt;
  const nlohmann::json::json_pointer epochs("/config/run/epochs");
  if (!summary.contains(epochs) || !summary[epochs].is_number_integer()) return std::nullopt;
  return summary[epochs].get<int>();
}

// summary.json's node_accuracy: entry i is node i's accuracy, null for a node not evaluated
// (dead); empty when no node was evaluated (eval.per_node = false).
nlohmann::json node_accuracy_by_node(const Evaluation& ev, std::int64_t n) {
  if (ev.node_accuracy.empty() || ev.node_ids.empty()) return ev.node_accuracy;
  nlohmann::json out(static_cast<std::size_t>(n), nullptr);
  for (std::size_t a = 0; a < ev.node_accuracy.size(); ++a) {
    out[static_cast<std::size_t>(ev.node_ids[a])] = ev.node_accuracy[a];
  }
  return out;
}

std::string node_accuracy_text(const Evaluation& ev) {
  if (ev.node_accuracy.empty()) return "nodes not evaluated (eval.per_node = false)";
  return format("nodes mean %.2f%% [min %.2f, max %.2f]", ev.mean_accuracy, ev.min_accuracy,
                ev.max_accuracy);
}

// A resumed run's CSV files keep their header and the rows of the epochs the checkpoint covers;
// rows a killed run wrote after its last checkpoint are dropped (they will be written again).
// The run folder's per-epoch tables (docs/results.md).
constexpr const char* kMetricsHeader = "epoch,node,lr,train_loss,test_accuracy,bytes_sent";
constexpr const char* kEpochsHeader =
    "epoch,lr,train_loss,mean_accuracy,min_accuracy,max_accuracy,average_model_accuracy,"
    "consensus_distance,mean_gb_sent_per_node,elapsed_s";
constexpr const char* kLayersHeader =
    "epoch,layer,numel,distance,relative_distance,mean_node_norm,average_norm";

// Resuming appends to the run's tables, which must hold, for the epochs the checkpoint covers,
// exactly the rows the run wrote: the header, then for each evaluated epoch e the complete rows
// `expected_rows[e]` counts (-1: the same positive count for every epoch). Rows of later epochs
// (written before a kill that came ahead of the checkpoint) and a half-written last line are
// dropped. Anything else is damage, and appending to it would hide it: UserError naming the file
// and what is wrong, raised before any file of the run is written. Returns the text to keep and
// the epochs whose rows are dropped.
struct ResumableTable {
  std::string kept;
  std::set<int> dropped_epochs;
};
ResumableTable resumable_table(const std::filesystem::path& csv, const std::string& header,
                               int epochs_done, const std::map<int, long>& expected_rows) {
  const std::optional<std::string> read = read_file_text(csv);
  if (!read) throw UserError("cannot resume: '" + csv.string() + "' is missing from the run folder");
  const std::string& text = *read;
  const auto damaged = [&](const std::string& what) {
    return UserError("cannot resume: '" + csv.string() + "' " + what +
                     ": the file was cut or edited; restore it, or start a new run");
  };
  std::vector<std::string> lines;
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    lines.push_back(text.substr(begin, end - begin));
  }
  // (text after the last newline: a half-written line, dropped)
  if (lines.empty() || lines[0] != header) {
    throw damaged("does not start with its header '" + header + "'");
  }
  const auto fields_of = [](const std::string& line) {
    return std::count(line.begin(), line.end(), ',') + 1;
  };
  const auto columns = fields_of(header);
  std::string kept = header + "\n";
  std::set<int> dropped;
  std::map<int, long> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    int epoch = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), epoch);
    if (ec != std::errc() || ptr == line.data() || *ptr != ',' || epoch < 1 ||
        fields_of(line) != columns) {
      throw damaged("line " + std::to_string(i + 1) + " is not a row of " +
                    std::to_string(columns) + " fields starting with an epoch ('" +
                    printable_excerpt(line, 60) + "')");
    }
    if (epoch > epochs_done) {
      dropped.insert(epoch);
      continue;
    }
    ++rows[epoch];
    kept += line + "\n";
  }
  long per_epoch = -1;
  for (const auto& [epoch, expected] : expected_rows) {
    const long found = rows.count(epoch) ? rows.at(epoch) : 0;
    const long wanted = expected >= 0 ? expected : per_epoch;
    if ((wanted >= 0 && found != wanted) || found == 0) {
      throw damaged("holds " + std::to_string(found) + " rows of epoch " + std::to_string(epoch) +
                    ", the run wrote " +
                    (wanted >= 0 ? std::to_string(wanted) : std::string("some")));
    }
    if (expected < 0) per_epoch = found;
  }
  for (const auto& [epoch, found] : rows) {
    if (!expected_rows.count(epoch)) {
      throw damaged("holds rows of epoch " + std::to_string(epoch) +
                    ", which the checkpoint's run did not evaluate");
    }
  }
  return {std::move(kept), std::move(dropped)};
}

// Before a resume drops rows of epochs after its checkpoint (a run stopped before it checkpointed
// them, possibly many epochs on with run.checkpoint_every = 0), the tables as they were are kept
// beside them as <name>.before-resume[-N].csv, so that no figure written is lost. Returns the
// kept copies' names.
std::vector<std::string> keep_tables_before_resume(const std::filesystem::path& run_dir,
                                                   const std::vector<std::string>& tables) {
  std::vector<std::string> kept;
  for (const std::string& table : tables) {
    const std::filesystem::path from = run_dir / table;
    const std::string stem = std::filesystem::path(table).stem().string();
    std::filesystem::path to;
    for (int n = 1;; ++n) {
      std::string name = stem + ".before-resume";
      if (n > 1) name += "-" + std::to_string(n);
      to = run_dir / (name + ".csv");
      if (!std::filesystem::exists(to)) break;
    }
    const std::optional<std::string> text = read_file_text(from);
    if (!text) continue;
    write_text_file(to, *text);
    kept.push_back(to.filename().string());
  }
  return kept;
}

std::string epoch_span_text(const std::set<int>& epochs) {
  if (epochs.size() == 1) return "epoch " + std::to_string(*epochs.begin());
  return "epochs " + std::to_string(*epochs.begin()) + "-" + std::to_string(*epochs.rbegin());
}

}  // namespace

// The averaged model of the nodes in `alive` (what "average-model accuracy" measures) as a
// safetensors file any tool reads (docs/results.md): each parameter under its name and shape, each
// buffer likewise, float32. params: [n, P]; buffers: each [n, ...].
void write_averaged_model(const std::filesystem::path& path, const models::Model& model,
                          const at::Tensor& params, const std::vector<at::Tensor>& buffers,
                          const std::vector<std::int64_t>& alive,
                          std::map<std::string, std::string> metadata) {
  const at::Tensor rows = at::tensor(alive, at::kLong).to(params.device());
  const at::Tensor mean = params.detach().index_select(0, rows).mean(0).cpu();  // [P]
  std::map<std::string, at::Tensor> tensors;
  for (const LayerSegment& seg : model.layout().segments) {
    tensors[seg.name] = mean.narrow(0, seg.offset, seg.numel).reshape(seg.shape).clone();
  }
  const auto& specs = model.registry().buffers();
  for (std::size_t i = 0; i < specs.size() && i < buffers.size(); ++i) {
    const at::Tensor b = buffers[i].detach().index_select(0, rows.to(buffers[i].device()));
    tensors[specs[i].name] = b.mean(0).cpu().contiguous();
  }
  metadata["format"] = "pt";
  metadata["lpdt.nodes_averaged"] = std::to_string(alive.size());
  models::write_safetensors(path.string(), tensors, metadata);
}

// An error as one rank sends it to the others: its kind's mark, then its message.
std::string marked_error(const UserError& error) {
  return std::string(dynamic_cast<const ConfigError*>(&error) ? kConfigErrorMark
                                                               : kOtherErrorMark) +
         error.what();
}

void share_start_error(const UserError& error, dist::Cluster& cluster) {
  const std::string marked = marked_error(error);
  cluster.gather_text(marked);
  // Rank 0's own error comes first; otherwise rank 0 names the first rank that had one.
  const std::string verdict = cluster.broadcast_text(cluster.leader() ? marked : "");
  throw_verdict(verdict.empty() ? marked : verdict);
}

TrainResult train(const ExperimentConfig& config, const ProgressSink& progress_out,
                  const TrainOptions& options) {
  const auto start = Clock::now();
  // A configuration built in code (a program using lpdt as a library) is checked as a file or
  // --set would be, before anything is read, built or written (a run.name with a '/' made its
  // folder outside run.out_dir before the check at the first write).
  try {
    (void)to_config(config);
  } catch (const std::out_of_range&) {
    throw ConfigError("the configuration holds an enumerated value that is none of its key's "
                      "names (a field of ExperimentConfig set out of range in code)");
  }
  // The text written as the run's config.toml must be this configuration: a folder's config.toml
  // is what reproduces its run (docs/results.md).
  if (!options.config_toml.empty() &&
      experiment_config_from(experiment_schema().resolve_text(
          options.config_toml, "TrainOptions::config_toml", {})) != config) {
    throw ConfigError("TrainOptions::config_toml does not describe the configuration trained "
                      "(its values differ): pass the resolved configuration's to_toml(), or "
                      "leave it empty");
  }
  // The progress bar (rank 0, once the step count is known) is erased before every line.
  std::optional<ProgressMeter> meter;
  const ProgressSink progress = [&](const std::string& line) {
    if (meter) meter->clear();
    progress_out(line);
  };
  dist::SingleProcess single_process;
  dist::Cluster& cluster = options.cluster ? *options.cluster : single_process;
  const bool leader = cluster.leader();
  // Interrupted while starting (reading the data, a checkpoint), the run has written nothing yet:
  // said, until its folder exists and the notes below take over.
  struct ClearInterruptNote {
    ~ClearInterruptNote() { clear_interrupt_note(); }
  } clear_note_at_return;
  if (leader) {
    const std::string& resume_dir = options.resume_dir.string();
    set_interrupt_note(
        "lpdt: interrupted while the run was starting; " +
        (resume_dir.empty()
             ? std::string("nothing was written") +
                   (options.continue_command.empty() ? ""
                                                     : ": " + options.continue_command +
                                                           " starts it again")
             : resume_dir + " is as it was: continue with " +
                   (options.continue_command.empty() ? "lpdt train --resume " + resume_dir
                                                     : options.continue_command)));
  }
  if (cluster.distributed()) check_ranks_agree(config, !options.resume_dir.empty(), cluster);
  // Progress lines come from rank 0 only.
  const ProgressSink say = [&](const std::string& line) {
    if (leader) progress(line);
  };
  // More threads than cores share them and wait on each other; said before the (then slow)
  // thread set-up.
  std::optional<std::string> threads_warning;
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && config.run.threads > static_cast<int>(cores)) {
    threads_warning = "run.threads = " + std::to_string(config.run.threads) +
                      " is more than this machine's " + std::to_string(cores) +
                      " logical cores: the threads share them and wait on each other (much "
                      "slower; 0 takes the cores this process may use)";
    say("warning: " + *threads_warning);
  }
  const at::Device device = resolve_device(config);
  const RuntimeInfo runtime = configure_runtime(config.run.threads, device.is_cuda());
  torch::manual_seed(config.run.seed);  // dropout masks

  // Data: the nodes' partitions of the training set; the shared test set.
  const std::string dataset_name(to_string(config.data.dataset));
  const data::SyntheticOptions synthetic = synthetic_options(config);
  const auto& text_names = data::text_dataset_names();
  const bool text =
      std::find(text_names.begin(), text_names.end(), dataset_name) != text_names.end();
  // Text sets are tokenized here (data.vocab, data.max_length) into token-id Datasets.
  double train_unknown_fraction = 0;  // of the training words, [UNK] (a warning below)
  const auto load = [&](data::Split split) {
    if (!text) {
      return data::load_dataset(dataset_name, config.data.dir, split, synthetic,
                                config.data.image_size);
    }
    const data::TextDataset tokenized = data::load_text_dataset(
        dataset_name, config.data.dir, config.data.vocab, split, config.data.max_length,
        data::SyntheticTextOptions()
            .seed(config.run.seed)
            .samples_per_class(config.data.synthetic_samples_per_class));
    if (split == data::Split::kTrain) {
      train_unknown_fraction = data::unknown_token_fraction(tokenized);
    }
    return data::to_dataset(tokenized);
  };
  // The two splits, checked against each other and cut to data.test_subset.
  const auto load_checked = [&] {
    data::Dataset train = load(data::Split::kTrain);
    data::Dataset test = load(data::Split::kTest);
    check_test_set_fits(train, test, dataset_name, config.data.dir, config.data.crop_size);
    if (config.data.test_subset > test.size()) {
      // Not silently the whole set: the accuracies would be of another test set than asked for.
      throw ConfigError("data.test_subset = " + std::to_string(config.data.test_subset) +
                        " is more than the " + std::to_string(test.size()) +
                        " samples of the test set of dataset '" + dataset_name + "'" +
                        (config.data.dir.empty() ? "" : " in '" + config.data.dir + "'") +
                        "; set it to at most " + std::to_string(test.size()) +
                        ", or to 0 for the whole test set");
    }
    if (config.data.test_subset > 0 && config.data.test_subset < test.size()) {
      test = data::first_samples(test, config.data.test_subset);
    }
    return std::pair{std::move(train), std::move(test)};
  };
  // Under mpirun a rank whose data does not load (files missing on its host) still joins the
  // ranks' comparison of their data with its error, so that rank 0 reports it and no rank waits
  // for it until the comparison's deadline.
  const std::pair<data::Dataset, data::Dataset> loaded = [&] {
    try {
      return load_checked();
    } catch (const UserError& e) {
      if (!cluster.distributed()) throw;
      share_start_error(e, cluster);
    }
  }();
  const data::Dataset& train_set = loaded.first;
  const data::Dataset& test_set = loaded.second;
  const nlohmann::json data_now = data_fingerprint(train_set, test_set);
  if (cluster.distributed()) check_ranks_same_data(config, data_now, cluster);
  const std::int64_t n = config.graph.nodes;
  const data::Partition partition =
      data::make_partition(train_set.labels, n, config.run.seed, partition_options(config));
  // The nodes this process trains: all of them, or a rank's block (dist/placement.h).
  const NodeRange hosted = cluster.hosted(n);
  const std::int64_t k = hosted.count;
  std::vector<std::int64_t> hosted_ids;
  if (!hosted.is_all()) {
    for (std::int64_t i = hosted.first; i < hosted.end(); ++i) hosted_ids.push_back(i);
  }

  data::AugmentOptions augment;
  if (config.data.pad_to > 0) augment.pad_height = augment.pad_width = config.data.pad_to;
  // Imagenette (and any dataset with data.crop_size) trains on random resized crops, torchvision's
  // ImageNet recipe, instead of padded crops; evaluation takes the centre crop of crop_size.
  const bool resized_crops = !text && (config.data.crop_size > 0 ||
                                       config.data.dataset == DataConfig::Dataset::kImagenette);
  augment.center_crop = config.data.crop_size;
  if (config.data.augment) {
    if (resized_crops) {
      augment.random_resized_crop =
          config.data.crop_size > 0 ? config.data.crop_size : train_set.height();
    } else {
      augment.crop_padding = config.data.crop_padding;
    }
    augment.horizontal_flip = true;
  }
  if (text) augment = {};  // image transforms (data.augment, data.pad_to) do not apply to tokens
  const bool batches_on_device = resolve_batches_on_device(config, device, resized_crops);
  data::NodeBatchedLoader loader(
      train_set, partition,
      data::LoaderOptions()
          .batch_size(config.data.batch_size)
          .seed(config.run.seed)
          .augment(augment)
          .nodes(hosted_ids)
          .batches_on(batches_on_device ? std::optional<at::Device>(device) : std::nullopt));
  const data::EvalBatches test_batches(test_set, config.data.eval_batch_size, augment);

  // Topology and model.
  auto topology = graph::make_topology(graph::TopologyOptions()
                                           .name(std::string(to_string(config.graph.topology)))
                                           .num_nodes(n)
                                           .mixing(std::string(to_string(config.graph.mixing)))
                                           .seed(config.run.seed)
                                           .rows(config.graph.torus_rows)
                                           .random_out_degree(config.graph.random_out_degree));
  // Once per run: the start-up line and topology.json both report it.
  const graph::SpectralInfo spectral = graph::spectral_info(*topology);
  const models::ModelOptions model_options = model_options_for(
      config, text ? InputShape{1, 1, train_set.sequence_length(), train_set.num_classes,
                                train_set.vocab_size, train_set.pad_id}
                   : InputShape{train_set.channels(), train_set.height(), train_set.width(),
                                train_set.num_classes});
  const auto model = models::make_model(model_options);
  check_multi_process(config, cluster, topology->is_static());

  // Every node starts from the same model, as the official code's identical per-rank seed.
  at::Tensor initial = model->init_params(config.run.seed);  // [P]
  if (!config.model.pretrained.empty() && !options.resume_dir.empty()) {
    // The checkpoint holds the weights trained from the file: it need not be there any more.
    say("pretrained weights: the checkpoint continues the run started from " +
        config.model.pretrained + " (the file is not read again)");
  } else if (!config.model.pretrained.empty()) {
    const models::PretrainedReport loaded =
        models::load_pretrained(*model, config.model.pretrained, initial);
    say("pretrained weights: " + std::to_string(loaded.loaded.size()) + " tensors from " +
        config.model.pretrained +
        (loaded.fresh.empty()
             ? std::string()
             : ", a fresh head (" + std::to_string(loaded.fresh.size()) + " tensors)") +
        (loaded.unused.empty()
             ? std::string()
             : ", " + std::to_string(loaded.unused.size()) + " tensors of the file unused"));
  }
  at::Tensor x = initial.to(device).unsqueeze(0).repeat({k, 1});  // [k, P]
  std::vector<at::Tensor> buffers = model->init_buffers(k);
  for (auto& b : buffers) b = b.to(device);
  algo::DecentralizedOptimizer optimizer(algorithm_options(config, hosted.first), model->layout(),
                                         device, cluster.make_exchange(hosted, model->layout()));
  optimizer.set_trainable(model->trainable_mask());
  // The simulator (and a one-rank job) kills nodes as the plan says; the ranks of a
  // multi-process job detect their dead peers by deadline (also when no fault is injected).
  const auto make_link_faults = [&] {
    return std::make_unique<algo::LinkFaults>(
        algo::FaultPlan(fault_options(config)), hosted,
        config.algo.name == AlgoConfig::Name::kChoco, /*kills_from_plan=*/cluster.size() == 1);
  };
  if (config.faults.any() || cluster.size() > 1) optimizer.set_faults(make_link_faults());
  // Under mpirun, the rank whose nodes faults.kill_nodes names dies at faults.kill_step.
  const bool killed_rank =
      cluster.size() > 1 && !config.faults.kill_nodes.empty() &&
      std::count_if(config.faults.kill_nodes.begin(), config.faults.kill_nodes.end(),
                    [&](int node) { return hosted.contains(node); }) == k;
  // At or after: a run resumed from a checkpoint written after the death dies at its first
  // round, as its nodes were dead then. Called before every round, training steps and the
  // reference protocol's gossip-only rounds alike (the simulator kills in both).
  const auto kill_if_due = [&](std::int64_t round) {
    if (!killed_rank || round < config.faults.kill_step) return;
    std::fprintf(stderr,
                 "rank %d: injected fault: killing this process (nodes %lld .. %lld) "
                 "at round %lld (faults.kill_nodes)\n",
                 cluster.rank(), static_cast<long long>(hosted.first),
                 static_cast<long long>(hosted.end() - 1), static_cast<long long>(round));
    std::fflush(stderr);
    std::raise(SIGKILL);
  };
  metrics::ByteLedger ledger = optimizer.make_ledger();
  const algo::LrSchedule schedule(schedule_options(config));

  // Resuming: the checkpoint's state replaces the fresh one (exp/checkpoint.h).
  std::optional<TrainingState> resumed;
  if (!options.resume_dir.empty()) {
    // Under mpirun every rank reads its own copy of the checkpoint: an error on one rank alone
    // (a damaged copy on its host) is reported by rank 0 and stops every rank alike.
    try {
      const auto file = options.resume_dir / kCheckpointFile;
      // Resuming replays the same steps (only run.epochs and the like may change), so a run that
      // diverged would diverge again.
      if (std::filesystem::exists(options.resume_dir / kDivergedFile)) {
        throw UserError("cannot resume '" + options.resume_dir.string() + "': the run diverged (" +
                        (options.resume_dir / kDivergedFile).string() +
                        "), and resuming would repeat the same steps: start a new run with a lower "
                        "optim.lr or a warm-up (optim.warmup = \"official\")");
      }
      resumed = read_checkpoint(file);
      check_resumable(resumed->config, to_json(config), file,
                      /*data_checked=*/!resumed->data.is_null());
      // The parts of the header read later (the epochs' records, the byte ledger, the fault
      // counts, the optimizer's state) are checked now, so that damage is named with the file.
      try {
        (void)epochs_from_json(resumed->epochs);
        (void)metrics::ByteLedger::from_json(resumed->ledger);
        if (!resumed->fault_counts.is_null()) (void)fault_counts_from_json(resumed->fault_counts);
      } catch (const std::exception& e) {
        throw UserError("checkpoint '" + file.string() + "' is corrupt (" + e.what() +
                        "); resume from an intact copy or start the run again");
      }
      // The same files, too: a run continued on other data would describe the first in its folder.
      if (!resumed->data.is_null()) {
        std::string differences;
        for (const ConfigDifference& d : config_differences(data_now, resumed->data, {})) {
          differences += (differences.empty() ? "" : "; ") + d.key + " " + d.theirs + " in " +
                         file.filename().string() + ", " + d.ours + " now";
        }
        if (!differences.empty()) {
          throw UserError(
              "cannot resume '" + options.resume_dir.string() + "': the data read now is not the "
              "data the run trained on (" + differences + "); the files under data.dir = \"" +
              (config.data.dir.empty() ? std::string("(the default folder)") : config.data.dir) +
              "\"" +
              (config.data.vocab.empty() ? std::string()
                                         : " or data.vocab = \"" + config.data.vocab + "\"") +
              " changed since: restore them, or start a new run");
        }
      }
      // A run stopped after its last epoch's checkpoint but before summary.json (in the reference
      // protocol's gossip-only rounds, or while writing) resumes to finish: no epochs, then the
      // final evaluation and summary, as the uninterrupted run had them.
      // (A summary of fewer epochs is one a killed extension left behind: not this run's end.)
      const std::optional<int> summary_done = summary_epochs(options.resume_dir / "summary.json");
      const bool summary_covers_checkpoint = summary_done && *summary_done >= resumed->epochs_done;
      const bool unfinished_after_last_epoch =
          resumed->epochs_done == config.run.epochs && !summary_covers_checkpoint;
      const bool summary_past_checkpoint = summary_done && *summary_done > resumed->epochs_done;
      if (resumed->epochs_done >= config.run.epochs && !unfinished_after_last_epoch &&
          !summary_past_checkpoint) {
        throw ConfigError(
            "cannot resume '" + options.resume_dir.string() + "': its checkpoint has " +
            std::to_string(resumed->epochs_done) + " epochs done" +
            (resumed->epochs_done > config.run.epochs
                 ? ", more than run.epochs = " + std::to_string(config.run.epochs)
                 : std::string(", all of run.epochs")) +
            ", and the run is finished; set run.epochs higher than " +
            std::to_string(resumed->epochs_done) + " to continue it");
      }
      // A run extended with run.checkpoint_every = 0 (or past its last checkpoint) finished with a
      // checkpoint older than its summary: it is finished all the same.
      // (Where the checkpoint is older than the summary, a higher run.epochs meets the refusal
      // below: its advice is given at once.)
      if (summary_done && *summary_done >= config.run.epochs && !summary_past_checkpoint) {
        throw ConfigError("cannot resume '" + options.resume_dir.string() + "': its summary.json " +
                          "shows " + std::to_string(*summary_done) +
                          " epochs finished (run.epochs = " + std::to_string(config.run.epochs) +
                          "; its last checkpoint is of epoch " +
                          std::to_string(resumed->epochs_done) +
                          "); set run.epochs higher to continue it from that checkpoint");
      }
      // An extension run with run.checkpoint_every = 0 finished past its folder's last checkpoint:
      // resuming from that checkpoint would train the finished epochs again and replace their
      // recorded results (with a schedule of the new run.epochs, not necessarily the same values).
      if (summary_past_checkpoint) {
        const std::string dir = options.resume_dir.string();
        const int first = resumed->epochs_done + 1;
        const std::string again =
            first == *summary_done
                ? "epoch " + std::to_string(first)
                : "epochs " + std::to_string(first) + "-" + std::to_string(*summary_done);
        throw ConfigError(
            "cannot resume '" + dir + "': its summary.json shows " + std::to_string(*summary_done) +
            " epochs finished, but its last checkpoint is of epoch " +
            std::to_string(resumed->epochs_done) + " (those epochs ran with run.checkpoint_every "
            "= 0), so resuming would train " + again + " again and replace the results. To train "
            "them again and keep these, copy the folder, delete the copy's summary.json and "
            "resume the copy");
      }
      std::ostringstream shapes;
      shapes << "checkpoint '" << file.string() << "' holds parameters " << resumed->params.sizes()
             << " and " << resumed->buffers.size() << " buffers; the model has [" << n << ", "
             << model->num_params() << "] and " << buffers.size();
      // The checkpoint holds every node; this process takes its rows.
      const auto own_rows = [&](const at::Tensor& all) { return all.narrow(0, hosted.first, k); };
      if (resumed->params.dim() != 2 || resumed->params.size(0) != n ||
          resumed->params.size(1) != x.size(1) || resumed->buffers.size() != buffers.size()) {
        throw UserError(shapes.str());
      }
      // A tensor of another type would be converted by copy_ without a word (an int32 table
      // read as float32 numbers trains, then diverges): the file is damaged.
      const auto check_type = [&](const at::Tensor& stored, at::ScalarType expected,
                                  const std::string& what) {
        if (stored.scalar_type() != expected) {
          throw UserError("checkpoint '" + file.string() + "' holds " + what + " as " +
                          std::string(c10::toString(stored.scalar_type())) + ", expected " +
                          std::string(c10::toString(expected)) +
                          ": a damaged file; resume from an intact copy or start the run again");
        }
      };
      check_type(resumed->params, x.scalar_type(), "the parameters");
      torch::NoGradGuard no_grad;
      x.copy_(own_rows(resumed->params));
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        auto expected = buffers[i].sizes().vec();
        expected[0] = n;
        if (resumed->buffers[i].sizes().vec() != expected) throw UserError(shapes.str());
        check_type(resumed->buffers[i], buffers[i].scalar_type(),
                   "buffer " + std::to_string(i));
        buffers[i].copy_(own_rows(resumed->buffers[i]));
      }
      try {
        optimizer.load_state(resumed->optimizer);
      } catch (const std::exception& e) {
        throw UserError("checkpoint '" + file.string() + "' does not hold this run's optimizer " +
                        "state (" + first_line(e.what()) + "); resume from an intact copy or "
                        "start the run again");
      }
      // A checkpoint written under mpirun after a rank died for real (no fault injected) lists
      // dead nodes, whose rows it holds as zeros: they stay dead in any resumed run, in-process
      // and one-rank ones included, which otherwise would have no fault bookkeeping at all.
      if (optimizer.faults() == nullptr && !resumed->fault_counts.is_null() &&
          !fault_counts_from_json(resumed->fault_counts).dead_nodes.empty()) {
        optimizer.set_faults(make_link_faults());
      }
      if (optimizer.faults() != nullptr && resumed->optimizer.count("fault_held_meta")) {
        try {
          const_cast<algo::LinkFaults*>(optimizer.faults())
              ->restore_held(resumed->optimizer, x.size(1));
        } catch (const std::exception& e) {
          throw UserError("checkpoint '" + file.string() +
                          "' does not hold this run's messages in flight (" +
                          first_line(e.what()) +
                          "); resume from an intact copy or start the run again");
        }
      }
      // The counts of all nodes so far: rank 0 carries them on (the ranks' counts are summed).
      if (optimizer.faults() != nullptr && !resumed->fault_counts.is_null()) {
        auto* faults = const_cast<algo::LinkFaults*>(optimizer.faults());
        const algo::FaultCounts counts = fault_counts_from_json(resumed->fault_counts);
        if (leader) faults->restore_counts(counts);
        // Nodes dead at the checkpoint are dead from the first round on, on every rank, as in the
        // uninterrupted run (a rank does not wait a deadline to find them dead again).
        faults->restore_dead(counts);
      }
      ledger = metrics::ByteLedger::from_json(resumed->ledger);
      if (!hosted.is_all()) ledger.keep_only_nodes(hosted.first, k, /*keep_round_totals=*/leader);
      check_type(resumed->torch_rng_state, at::kByte, "the random generator's state");
      try {
        auto generator = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(resumed->torch_rng_state);
      } catch (const c10::Error& e) {
        throw UserError("checkpoint '" + file.string() + "' holds a random generator state " +
                        "LibTorch refuses (" + first_line(e.what_without_backtrace()) +
                        "): a damaged file; resume from an intact copy or start the run again");
      }
      // The run has its state now: the checkpoint's copy of it (all n nodes' rows, the size of
      // the file) is not read again, and would otherwise be held until the run ends.
      resumed->params = at::Tensor();
      resumed->buffers.clear();
      resumed->optimizer.clear();
      resumed->torch_rng_state = at::Tensor();
    } catch (const UserError& e) {
      if (!cluster.distributed()) throw;
      share_start_error(e, cluster);
    }
    if (cluster.distributed()) {
      agree_no_rank_failed(cluster, resumed ? "epoch " + std::to_string(resumed->epochs_done) +
                                                  " (" + std::to_string(resumed->rounds_done) +
                                                  " rounds done)"
                                            : std::string());
    }
  }
  if (!(resumed && resumed->rounds_done > config.faults.kill_step)) {
    check_mpi_kills(config, cluster);
  }

  // The run folder (rank 0 writes it): config first, so even a run that fails later says what
  // it was.
  // Under mpirun the other ranks wait for its name: a folder rank 0 cannot create (run.out_dir
  // unwritable) is sent in its place, and every rank stops with that error, rank 0 reporting it.
  std::filesystem::path run_dir = options.resume_dir;
  std::string run_dir_text = run_dir.string();
  if (!resumed && leader) {
    try {
      run_dir_text = create_run_folder(config.run.out_dir, config.run.name).string();
    } catch (const UserError& e) {
      if (!cluster.distributed()) throw;
      run_dir_text = marked_error(e);
    }
  }
  run_dir_text = cluster.broadcast_text(run_dir_text);
  if (is_error_mark(run_dir_text)) throw_verdict(run_dir_text);
  run_dir = run_dir_text;
  // Rank 0 writes the folder: it alone holds it, for the whole run.
  std::optional<RunFolderLock> folder_lock;
  if (leader) folder_lock.emplace(run_dir);
  // Ctrl-C (or a scheduler's SIGTERM) ends the run where it is: say what the folder keeps, a
  // checkpoint to resume from once one is written (a resumed run has one from the start).
  const std::string resume_note =
      "lpdt: interrupted; " + run_dir.string() +
      " keeps the last checkpoint (every run.checkpoint_every epochs): continue with " +
      (options.continue_command.empty() ? "lpdt train --resume " + run_dir.string()
                                        : options.continue_command);
  if (leader) {
    if (resumed) {
      set_interrupt_note(resume_note);
    } else {
      set_interrupt_note(
          "lpdt: interrupted before the run's first checkpoint (" +
          (config.run.checkpoint_every > 0
               ? "every " + std::to_string(config.run.checkpoint_every) + " epochs"
               : std::string("none: run.checkpoint_every = 0")) +
          "), so there is nothing to resume; " +
          (options.continue_command.empty()
               ? run_dir.string() + " keeps its configuration: start it again with lpdt train " +
                     "--config " + (run_dir / "config.toml").string()
               : options.continue_command + " starts it again"));
    }
  }
  // A resumed run's tables, checked against its checkpoint before anything is written.
  std::string resumed_metrics, resumed_epochs;
  std::optional<std::string> resumed_layers;
  std::string dropped_rows_note;  // recorded with the run's warnings
  std::string threads_changed_note;  // likewise
  if (resumed && leader) {
    // run.threads may change on resume, but LibTorch's float operators (a pass of nodes in turn
    // on all threads) may sum in another order at another thread count (docs/architecture.md).
    const nlohmann::json saved_threads = resumed->config.at("run").value("threads", nlohmann::json());
    if (!saved_threads.is_null() && saved_threads != nlohmann::json(config.run.threads)) {
      threads_changed_note =
          "run.threads = " + saved_threads.dump() + " when the checkpoint was written, " +
          std::to_string(config.run.threads) + " now: the run goes on as the same experiment, "
          "but floating-point sums may run in another order at another thread count, so it "
          "need not be bit for bit the run that never stopped";
      say("note: " + threads_changed_note);
    }
    std::map<int, long> one_row, node_rows, layer_rows;
    for (const EpochSummary& e : epochs_from_json(resumed->epochs)) {
      one_row[e.epoch] = 1;
      // With eval.per_node = false no node was evaluated, and metrics.csv has no rows.
      if (!e.evaluation.node_accuracy.empty()) {
        node_rows[e.epoch] = static_cast<long>(e.evaluation.node_accuracy.size());
      }
      layer_rows[e.epoch] = static_cast<long>(model->layout().segments.size());  // a row a layer
    }
    const int done = resumed->epochs_done;
    const ResumableTable metrics =
        resumable_table(run_dir / "metrics.csv", kMetricsHeader, done, node_rows);
    const ResumableTable epochs = resumable_table(run_dir / "epochs.csv", kEpochsHeader, done, one_row);
    std::optional<ResumableTable> layers;
    if (std::filesystem::exists(run_dir / "layers.csv")) {
      layers = resumable_table(run_dir / "layers.csv", kLayersHeader, done, layer_rows);
    }
    resumed_metrics = metrics.kept;
    resumed_epochs = epochs.kept;
    std::set<int> dropped = epochs.dropped_epochs;
    dropped.insert(metrics.dropped_epochs.begin(), metrics.dropped_epochs.end());
    if (layers) dropped.insert(layers->dropped_epochs.begin(), layers->dropped_epochs.end());
    if (!dropped.empty()) {
      std::vector<std::string> tables = {"epochs.csv", "metrics.csv"};
      if (layers) tables.push_back("layers.csv");
      std::string names;
      for (const std::string& name : keep_tables_before_resume(run_dir, tables)) {
        names += (names.empty() ? "" : ", ") + name;
      }
      dropped_rows_note =
          "the tables held " + epoch_span_text(dropped) + ", written after the checkpoint (epoch " +
          std::to_string(done) + ") by a run that stopped before it checkpointed them; they are "
          "trained again from the checkpoint, and the tables as they were are kept as " + names;
      say("note: " + dropped_rows_note);
    } else {
      // An earlier resume of this folder kept such rows: its note is written in the summary of
      // the run that finishes, whichever resume that is.
      std::vector<std::string> kept;
      for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
        const std::string name = entry.path().filename().string();
        if (name.find(".before-resume") != std::string::npos && entry.path().extension() == ".csv") {
          kept.push_back(name);
        }
      }
      std::sort(kept.begin(), kept.end());
      if (!kept.empty()) {
        std::string names;
        for (const std::string& name : kept) names += (names.empty() ? "" : ", ") + name;
        dropped_rows_note =
            "an earlier resume of this run found rows written after its checkpoint, trained those "
            "epochs again, and kept the tables as they were as " + names;
      }
    }
    if (layers) {
      resumed_layers = layers->kept;
    } else {
      // (a folder written before layers.csv existed, or the file was removed): the checkpoint
      // does not hold the per-layer figures of the epochs done, so the table starts afresh.
      resumed_layers = std::string(kLayersHeader) + "\n";
      say("note: " + (run_dir / "layers.csv").string() + " is missing; it is written again from "
          "epoch " + std::to_string(done + 1) + " on");
    }
  }
  // A resumed run keeps the config.toml of its checkpoint until it writes a checkpoint (or its
  // summary) of its own, so a resume that fails on the way leaves the folder as it found it.
  bool config_written = false;
  const auto write_config = [&] {
    if (!leader || config_written) return;
    write_text_file(run_dir / "config.toml",
                    !resumed && !options.config_toml.empty() ? options.config_toml
                                                             : to_toml(config));
    config_written = true;
  };
  if (!resumed) write_config();
  std::ofstream metrics_csv, epochs_csv, layers_csv;
  // A table that could not be opened or whose rows did not reach the disk (disk full, a file size
  // limit) stops the run there: a cut table would be refused by report and resume later, while
  // the checkpoint rewrites every table on --resume.
  const auto check_table = [&](const std::ofstream& table, const char* name) {
    if (table) return;
    const int error_number = errno;
    const std::filesystem::path path = run_dir / name;
    throw UserError("cannot write '" + path.string() + "': " +
                    why_cannot_write(path, error_number) + "; the run stops here, and lpdt " +
                    "train --resume " + run_dir.string() + " continues it from its last " +
                    "checkpoint (its tables are written again from there)");
  };
  // The files that describe the run's set-up, functions of its configuration and data. A resume
  // writes again those missing from its folder (removed, or a folder copied in part), with a note.
  const auto write_setup_files = [&](bool only_missing) {
    std::vector<std::pair<std::string, std::function<void(const std::filesystem::path&)>>> files = {
        {"partition.json",
         [&](const std::filesystem::path& path) {
           data::write_partition_json(path.string(), partition, train_set.labels,
                                      train_set.num_classes);
         }},
        {"class_histogram.csv",
         [&](const std::filesystem::path& path) {
           data::write_class_histogram_csv(path.string(), partition, train_set.labels,
                                           train_set.num_classes);
         }},
        {"topology.json",
         [&](const std::filesystem::path& path) {
           write_text_file(path, graph::to_json(*topology, spectral) + "\n");
         }}};
    // The cost model (the paper's Tables 7-9) covers the convolutional networks.
    if (!text) {
      files.emplace_back("cost.json", [&](const std::filesystem::path& path) {
        write_cost_json(path, config, model_options);
      });
    }
    for (const auto& [name, write] : files) {
      const std::filesystem::path path = run_dir / name;
      if (only_missing && std::filesystem::exists(path)) continue;
      write(path);
      if (only_missing) say("note: " + path.string() + " was missing; it is written again");
    }
  };
  if (!leader) {
    // Ranks other than 0 write nothing.
  } else if (resumed) {
    write_setup_files(/*only_missing=*/true);
    write_text_file(run_dir / "metrics.csv", resumed_metrics);
    write_text_file(run_dir / "epochs.csv", resumed_epochs);
    metrics_csv.open(run_dir / "metrics.csv", std::ios::app);
    check_table(metrics_csv, "metrics.csv");
    epochs_csv.open(run_dir / "epochs.csv", std::ios::app);
    check_table(epochs_csv, "epochs.csv");
    if (resumed_layers) {
      write_text_file(run_dir / "layers.csv", *resumed_layers);
      layers_csv.open(run_dir / "layers.csv", std::ios::app);
      check_table(layers_csv, "layers.csv");
    }
  } else {
    write_setup_files(/*only_missing=*/false);
    metrics_csv.open(run_dir / "metrics.csv");
    metrics_csv << kMetricsHeader << "\n";
    epochs_csv.open(run_dir / "epochs.csv");
    epochs_csv << kEpochsHeader << "\n";
    layers_csv.open(run_dir / "layers.csv");
    layers_csv << kLayersHeader << "\n";
    // On disk now: a run killed in its first epoch still has tables that report and resume
    // read as empty, not as damaged.
    metrics_csv.flush();
    check_table(metrics_csv, "metrics.csv");
    epochs_csv.flush();
    check_table(epochs_csv, "epochs.csv");
    layers_csv.flush();
    check_table(layers_csv, "layers.csv");
  }

  const double gap = spectral.spectral_gap;
  // Large rings have gaps of 1e-5 and below: four decimals would print them as 0.
  say(format(gap >= 1e-3 ? "lpdt %s (%s): %s, %lld nodes on %s (spectral gap %.4f), %s, %lld "
                           "params/node"
                         : "lpdt %s (%s): %s, %lld nodes on %s (spectral gap %.3g), %s, %lld "
                           "params/node",
             build_info::kVersion, build_info::kGitRevision, dataset_name.c_str(),
             static_cast<long long>(n), topology->label().c_str(), gap, model->name().c_str(),
             static_cast<long long>(model->num_params())));
  say("run folder: " + run_dir.string() + "; " + runtime.description());
  std::vector<std::string> warnings =
      slow_setting_warnings(config, CpuCapabilities::of_this_machine());
  for (std::string& line : settings_without_effect(config)) warnings.push_back(std::move(line));
  for (const data::Dataset* set : {&train_set, &test_set}) {  // what the readers noticed
    warnings.insert(warnings.end(), set->warnings.begin(), set->warnings.end());
  }
  if (train_set.num_classes == 1) {  // an image folder with one class folder, say
    warnings.push_back(dataset_name +
                       (config.data.dir.empty() ? "" : " in '" + config.data.dir + "'") +
                       " has one class: every label is the same, so there is nothing to learn "
                       "and every model scores 100%");
  }
  // A batch larger than every node's data repeats samples within the batch: legal (the loader
  // cycles), but almost always a typo, and a slow one.
  std::size_t largest_share = 0;
  for (const auto& node : partition.node_indices)
    largest_share = std::max(largest_share, node.size());
  if (static_cast<std::size_t>(config.data.batch_size) > largest_share) {
    warnings.push_back("data.batch_size = " + std::to_string(config.data.batch_size) +
                       " is larger than the largest node's share of the training data (" +
                       std::to_string(largest_share) +
                       " samples): every batch repeats a node's samples");
  }
  // A vocabulary that is not the text's tokenizer spells most words as [UNK]; a real one
  // leaves few.
  constexpr double kMostlyUnknown = 0.25;
  if (train_unknown_fraction > kMostlyUnknown) {
    warnings.push_back(
        format("%.0f%% of the training set's words are [UNK] under data.vocab = '%s': it is "
               "probably not this text's tokenizer (a pretrained model's own vocab.txt spells "
               "almost every word)",
               100.0 * train_unknown_fraction, config.data.vocab.c_str()));
  }
  for (const std::string& warning : warnings) say("warning: " + warning);
  if (threads_warning) warnings.push_back(*threads_warning);  // said when the run started
  if (!dropped_rows_note.empty()) warnings.push_back(dropped_rows_note);  // said as a note
  if (!threads_changed_note.empty()) warnings.push_back(threads_changed_note);  // so was this
  if (cluster.distributed()) {
    const std::int64_t fewest = n / cluster.size(), most = (n + cluster.size() - 1) / cluster.size();
    const std::string share = fewest == most ? std::to_string(fewest)
                                             : std::to_string(fewest) + " or " + std::to_string(most);
    say(format("%s: each rank trains %s of the %lld nodes; payloads between ranks are real "
               "messages",
               cluster.description().c_str(), share.c_str(), static_cast<long long>(n)));
  }

  const std::int64_t steps_per_epoch =
      config.run.max_steps_per_epoch > 0
          ? std::min<std::int64_t>(config.run.max_steps_per_epoch, loader.steps_per_epoch())
          : loader.steps_per_epoch();
  // The official warm-up runs the first epoch at 0.1 x lr: a one-epoch run is warm-up only.
  if (config.optim.warmup == OptimConfig::Warmup::kOfficial && config.run.epochs <= 1) {
    const std::string warning =
        "optim.warmup = official runs the first epoch at 0.1 x optim.lr, and run.epochs = 1: the "
        "whole run is warm-up, never at the full rate (more epochs, or optim.warmup = none)";
    say("warning: " + warning);
    warnings.push_back(warning);
  }
  if (const auto warning = evaluation_cost_warning(
          config, static_cast<std::int64_t>(test_set.size()), steps_per_epoch)) {
    say("warning: " + *warning);
    warnings.push_back(*warning);
  }
  // Gossip rounds of the whole run: one per training step, then the reference protocol's
  // gossip-only rounds (eval.gossip_rounds), in which injected faults act too.
  const std::int64_t training_rounds = steps_per_epoch * config.run.epochs;
  const std::int64_t all_rounds =
      training_rounds +
      (config.eval.protocol == EvalConfig::Protocol::kReference ? config.eval.gossip_rounds : 0);
  const std::string rounds_text =
      all_rounds > training_rounds
          ? "the training steps, then " + std::to_string(all_rounds - training_rounds) +
                " gossip-only rounds of eval.protocol = reference"
          : "one per training step";
  if (!config.faults.kill_nodes.empty() && config.faults.kill_step >= all_rounds) {
    const std::string warning = "faults.kill_step = " + std::to_string(config.faults.kill_step) +
                                " is not a round of this run (rounds 0 to " +
                                std::to_string(all_rounds - 1) + ": " + rounds_text +
                                "): faults.kill_nodes never die";
    say("warning: " + warning);
    warnings.push_back(warning);
  }
  // Choco's exact step uses every in-neighbour's public copy x_hat_j, kept in step by the q_j it
  // hears each round; over a time-varying graph a node would need the q_j of every node it will
  // ever hear from, which the simulator's global view supplies but the recorded bytes (the
  // current round's messages) do not count. (Under mpirun it is refused: check_multi_process.)
  if (config.algo.name == AlgoConfig::Name::kChoco && !topology->is_static() && n > 1) {
    const std::string warning =
        "algo.name = choco over the time-varying topology '" + std::string(to_string(config.graph.topology)) +
        "': each node's step uses the public copies of all the nodes it hears from over the "
        "period, kept exact by the simulator's global view; a deployment would have to send "
        "every update to all of them, and the bytes recorded count only each round's messages "
        "(docs/algorithms.md). deep-squeeze and dpsgd need no public copies";
    say("warning: " + warning);
    warnings.push_back(warning);
  }
  // A cosine schedule spans run.epochs: a run extended on resume followed the old span so far.
  if (resumed && config.optim.schedule == OptimConfig::Schedule::kCosine) {
    const int planned = resumed->config.at("run").at("epochs").get<int>();
    if (planned != config.run.epochs) {
      const std::string warning = format(
          "optim.schedule = cosine spans run.epochs: the %d epochs trained so far followed a "
          "cosine over %d epochs (the span of the run that wrote the checkpoint; epochs of an "
          "earlier extension followed the span it had then), the rest follows one over %d, so the "
          "learning rates differ from a run started with run.epochs = %d (multistep and constant "
          "schedules extend exactly)",
          resumed->epochs_done, planned, config.run.epochs, config.run.epochs);
      say("warning: " + warning);
      warnings.push_back(warning);
    }
  }
  // Losses in a row are bounded (algo/fault_plan.h): near p = 1 the links lose fewer messages
  // than the probability says.
  if (const double capped = algo::capped_loss_fraction(config.faults.drop_probability);
      capped > 1e-3) {
    const std::string warning = format(
        "faults.drop_probability = %g: a message is lost at most %lld times in a row and then "
        "goes through (this bounds the messages held in memory); at this probability %.1f%% of "
        "messages reach that bound, so the links lose fewer messages than %g says (at most 0.9 "
        "keeps it under 0.1%%)",
        config.faults.drop_probability, static_cast<long long>(algo::kMaxConsecutiveLosses),
        100 * capped, config.faults.drop_probability);
    say("warning: " + warning);
    warnings.push_back(warning);
  }
  // A delay as long as the run delivers no delayed message at all.
  if (config.faults.delay_probability > 0 && config.faults.delay_rounds >= all_rounds) {
    const std::string warning =
        "faults.delay_rounds = " + std::to_string(config.faults.delay_rounds) +
        " is not less than the run's " + std::to_string(all_rounds) + " gossip rounds (" +
        rounds_text +
        "): no delayed message arrives before the run ends (each is lost, and held in memory "
        "until then)";
    say("warning: " + warning);
    warnings.push_back(warning);
  }
  // Passes of several nodes, each convolution one grouped kernel. Automatic on the CPU: as many
  // nodes as keep a pass's saved activations in cache, from one traced node of an image model
  // (models::automatic_nodes_per_pass); a text model is not traced and takes the cap.
  const bool on_gpu = device.is_cuda();
  // The pass size of a process holding `count` nodes.
  const auto pass_size_for = [&](std::int64_t count) {
    return config.run.nodes_per_pass > 0 ? config.run.nodes_per_pass
           : text                        ? models::automatic_nodes_per_pass(count, on_gpu, 0.0)
                                         : models::automatic_nodes_per_pass(
                                               *model,
                                               at::zeros({1, config.data.batch_size,
                                                          model_options.in_channels,
                                                          model_options.height, model_options.width}),
                                               count, on_gpu);
  };
  const std::int64_t nodes_per_pass = pass_size_for(k);
  // A rank's passes are chunks of its own nodes: where that leaves a node alone in its pass but not
  // in one process (or the reverse), its convolutions sum in another order than the simulator's.
  if (cluster.distributed() && leader && !on_gpu) {
    const std::int64_t one_process_pass = pass_size_for(n);
    const std::vector<std::int64_t> apart = dist::nodes_passed_alone_differently(
        n, cluster.size(), [&](std::int64_t count) { return std::min(count, one_process_pass); });
    if (!apart.empty()) {
      say("note: " + dist::lone_node_pass_note(apart, one_process_pass));
    }
  }
  // Passes side by side on worker threads of one intra-op thread each (run.pass_workers).
  const int pass_workers = models::resolve_pass_workers(
      config.run.pass_workers, *model, (k + nodes_per_pass - 1) / nodes_per_pass, on_gpu,
      runtime.intra_op_threads);
  const int eval_workers =
      models::evaluation_workers(config.run.pass_workers, *model, on_gpu,
                                 runtime.intra_op_threads);
  const nn::ConvAlgorithm conv_algorithm = nn::ConvAlgorithm::kGrouped;
  const bool static_graph = topology->is_static();
  auto mixing_at = [&](std::int64_t r) {
    return topology->at(r).mixing_matrix(at::kFloat).to(device);
  };
  const at::Tensor static_mixing = static_graph ? mixing_at(0) : at::Tensor();

  // CUDA graphs (run.cuda_graph): the step reads its inputs from fixed tensors and writes its
  // losses into fixed tensors, so that a replayed graph sees each new batch.
  std::string graph_obstacle;
  if (on_gpu && config.run.cuda_graph == RunConfig::CudaGraph::kAuto) {
    StepTraits traits;
    traits.int8_model = config.model.precision == ModelConfig::Precision::kInt8;
    traits.draws_on_device = quant::cuda::kernels_built();
    traits.static_topology = static_graph;
    traits.random_compressor = config.algo.compressor == AlgoConfig::Compressor::kRandomK;
    traits.int8_messages = config.algo.message_values == AlgoConfig::MessageValues::kInt8 &&
                           config.algo.message_rounding == QuantConfig::Rounding::kStochastic;
    traits.sparse_wire_size = config.algo.compressor != AlgoConfig::Compressor::kNone &&
                              config.algo.keep_fraction < 1 &&
                              config.ledger.accounting == LedgerConfig::Accounting::kLpdt;
    traits.lr_changes_every_step = config.optim.schedule == OptimConfig::Schedule::kCosine;
    traits.faults = config.faults.any();
    traits.dead_nodes =
        optimizer.faults() != nullptr && !optimizer.faults()->dead_nodes().empty();
    traits.adam = config.optim.optimizer != OptimConfig::Optimizer::kSgd;
    graph_obstacle = cuda_graph_obstacle(traits);
    if (!graph_obstacle.empty()) {
      say("CUDA graphs off (" + graph_obstacle + "): the step runs eagerly");
    }
  }
  const bool use_graphs =
      on_gpu && config.run.cuda_graph == RunConfig::CudaGraph::kAuto && graph_obstacle.empty();
  GraphedSteps graphed(use_graphs);
  at::Tensor step_inputs, step_targets, step_mixing;
  double step_lr = 0;
  std::int64_t step_round = 0;
  const auto device_options = at::TensorOptions().device(device);
  // Summed on the device: no host synchronisation inside the step.
  at::Tensor node_loss_sum = at::zeros({k}, device_options.dtype(at::kDouble));
  at::Tensor last_loss = at::zeros({k}, device_options.dtype(at::kFloat));
  const bool check_every_step = !on_gpu && !cluster.distributed();
  // An 8-bit model on a GPU with the CUDA quantizer kernels: the step that keys the stochastic
  // roundings lives on the device (DrawKey::device_step), set to the first step below and
  // advanced at the end of every step, eager or replayed, so a captured step draws afresh.
  at::Tensor draw_step;
  const auto training_step = [&] {
    quant::DrawKey draws{config.run.seed, step_round, hosted.first};
    if (draw_step.defined()) draws.device_step = draw_step.data_ptr<std::int64_t>();
    const models::GradientResult gradients = models::compute_gradients(
        *model, x, buffers, step_inputs, step_targets, nodes_per_pass, conv_algorithm, draws,
        nullptr, pass_workers);
    torch::NoGradGuard no_grad;
    optimizer.step(x, gradients.grad, step_mixing, step_lr, step_round, ledger);
    node_loss_sum.add_(gradients.loss.to(at::kDouble));
    last_loss.copy_(gradients.loss);
    if (draw_step.defined()) draw_step.add_(1);
  };

  TrainResult result;
  result.run_dir = run_dir;
  std::int64_t round = 0;
  double train_time_s = 0;
  double elapsed_before = 0;  // a resumed run's time before its checkpoint
  int first_epoch = 0;
  if (resumed) {
    // Checkpoints are written at the end of an epoch, so a sound one has taken every step of the
    // epochs it has done (a counter off that would replay a wrong number of batches).
    if (resumed->epochs_done < 0 ||
        resumed->rounds_done != resumed->epochs_done * steps_per_epoch) {
      throw UserError("checkpoint '" + (run_dir / kCheckpointFile).string() + "' is inconsistent: " +
                      std::to_string(resumed->rounds_done) + " steps for " +
                      std::to_string(resumed->epochs_done) + " epochs of " +
                      std::to_string(steps_per_epoch) +
                      " steps: the file was edited; restore it, or start a new run");
    }
    first_epoch = resumed->epochs_done;
    round = resumed->rounds_done;
    result.steps = resumed->rounds_done;
    train_time_s = resumed->train_time_s;
    elapsed_before = resumed->elapsed_s;
    result.epochs = epochs_from_json(resumed->epochs);
    // Every node's batches depend only on how many it has drawn: replay the draws.
    for (std::int64_t r = 0; r < resumed->rounds_done; ++r) loader.skip();
    say(format("resumed from %s after epoch %d (%lld steps)",
               (run_dir / kCheckpointFile).string().c_str(), resumed->epochs_done,
               static_cast<long long>(resumed->rounds_done)));
    const nlohmann::json& saved_run = resumed->config.value("run", nlohmann::json::object());
    if (saved_run.value("out_dir", config.run.out_dir) != config.run.out_dir ||
        saved_run.value("name", config.run.name) != config.run.name) {
      say("note: run.out_dir and run.name place a new run's folder; a resumed run continues in "
          "its own, " +
          run_dir.string());
    }
  }
  const auto elapsed = [&] { return elapsed_before + seconds_since(start); };
  // Whole-run views on rank 0 (every rank calls these; the others get undefined tensors / an
  // empty ledger): every node's rows, and the ranks' byte ledgers added up.
  const auto all_rows = [&](const at::Tensor& rows) { return cluster.gather_rows(rows, n); };
  // A dead rank's nodes count the bytes of the last ledger it reported (an epoch's end or a
  // checkpoint), not 0: what it sent after that died with it (docs/mpi.md).
  std::vector<std::string> last_ledger_texts;
  std::set<int> ledgers_as_last_reported;
  // A resumed run's ranks whose nodes were all dead at the checkpoint: their last report is the
  // checkpoint's ledger of their nodes.
  if (resumed && leader && cluster.distributed() && optimizer.faults() != nullptr) {
    last_ledger_texts.resize(static_cast<std::size_t>(cluster.size()));
    for (int r = 1; r < cluster.size(); ++r) {
      const NodeRange block = dist::hosted_nodes(r, cluster.size(), n);
      bool all_dead = true;
      for (std::int64_t i = block.first; i < block.end(); ++i)
        all_dead = all_dead && optimizer.faults()->dead(i);
      if (!all_dead) continue;
      metrics::ByteLedger last = metrics::ByteLedger::from_json(resumed->ledger);
      last.keep_only_nodes(block.first, block.count, /*keep_round_totals=*/false);
      last_ledger_texts[static_cast<std::size_t>(r)] = last.to_json().dump();
    }
  }
  const auto whole_ledger = [&]() -> std::optional<metrics::ByteLedger> {
    if (!cluster.distributed()) return ledger;
    const auto texts = cluster.gather_text(ledger.to_json().dump());
    if (!leader) return std::nullopt;
    last_ledger_texts.resize(texts.size());
    metrics::ByteLedger sum = metrics::ByteLedger::from_json(nlohmann::json::parse(texts[0]));
    for (std::size_t r = 1; r < texts.size(); ++r) {
      if (!texts[r].empty()) {
        last_ledger_texts[r] = texts[r];
        sum.add(metrics::ByteLedger::from_json(nlohmann::json::parse(texts[r])));
        continue;
      }
      ledgers_as_last_reported.insert(static_cast<int>(r));
      if (last_ledger_texts[r].empty()) continue;  // dead before its first report
      sum.add_node_totals(
          metrics::ByteLedger::from_json(nlohmann::json::parse(last_ledger_texts[r])));
    }
    return sum;
  };
  // Every rank's fault counts, summed on rank 0 (nullopt elsewhere and without faults).
  const auto whole_fault_counts = [&]() -> std::optional<algo::FaultCounts> {
    if (optimizer.faults() == nullptr) return std::nullopt;
    const algo::FaultCounts mine = optimizer.faults()->counts();
    if (!cluster.distributed()) return mine;
    const auto texts = cluster.gather_text(fault_counts_to_json(mine).dump());
    if (!leader) return std::nullopt;
    algo::FaultCounts sum;
    for (const std::string& text : texts) {
      if (!text.empty()) sum.add(fault_counts_from_json(nlohmann::json::parse(text)));
    }
    return sum;
  };
  // Messages in flight (held back by injected faults) at every receiver, on rank 0.
  const auto all_held_messages = [&]() -> std::map<std::string, at::Tensor> {
    std::map<std::string, at::Tensor> mine = optimizer.faults()->held_state();
    if (!cluster.distributed()) return mine;
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(
        std::vector<at::Tensor>{mine["fault_held_meta"], mine["fault_held_weights"],
                                mine["fault_held_values"], mine["fault_known_weights"]}));
    const auto texts = cluster.gather_text(std::string(bytes.begin(), bytes.end()));
    if (!leader) return {};
    std::vector<at::Tensor> meta, weights, values, known;
    for (const std::string& text : texts) {
      if (text.empty()) continue;  // a dead rank
      const auto parts =
          torch::pickle_load(std::vector<char>(text.begin(), text.end())).toTensorVector();
      meta.push_back(parts.at(0));
      weights.push_back(parts.at(1));
      if (parts.at(2).size(0) > 0) values.push_back(parts.at(2));
      known.push_back(parts.at(3));  // rank blocks ascend: (receiver, sender) order kept
    }
    // The simulator's order: by sent round, then receiver, then sender.
    const at::Tensor all_meta = at::cat(meta);
    const at::Tensor key =
        (all_meta.select(1, 2) * n + all_meta.select(1, 0)) * n + all_meta.select(1, 1);
    const at::Tensor order =
        std::get<1>(at::sort(key, c10::optional<bool>(true), /*dim=*/0, /*descending=*/false));
    return {{"fault_known_weights", at::cat(known)},
            {"fault_held_meta", all_meta.index_select(0, order)},
            {"fault_held_weights", at::cat(weights).index_select(0, order)},
            {"fault_held_values", values.empty() ? at::empty({0, 0}, at::kFloat)
                                                 : at::cat(values).index_select(0, order)}};
  };
  // The nodes still alive as rank 0 knows them (the dead ones are left out of evaluations).
  const auto survivors = [&]() {
    std::set<std::int64_t> dead;
    if (optimizer.faults() != nullptr) dead = optimizer.faults()->dead_nodes();
    for (const int r : cluster.dead_ranks()) {
      const NodeRange block = dist::hosted_nodes(r, cluster.size(), n);
      for (std::int64_t i = block.first; i < block.end(); ++i) dead.insert(i);
    }
    std::vector<std::int64_t> alive;
    for (std::int64_t i = 0; i < n; ++i) {
      if (!dead.count(i)) alive.push_back(i);
    }
    return alive;
  };
  // Under MPI, each rank measures the accuracies of the nodes it hosts, side by side with the
  // others, and rank 0 gathers them ([n] float64 there; a dead rank's are 0 and left out with its
  // nodes): rank 0 alone would evaluate every node while the others wait (docs/mpi.md). A node's
  // accuracy is one pass of that node alone wherever it runs, so it is the simulator's. In one
  // process, or without per-node evaluation, undefined: evaluate() measures them.
  // `evaluation` numbers a run's evaluations (the epoch, then run.epochs + 1 for the reference
  // protocol's final one): it keys quant.eval_rounding = stochastic's draws (eval_draws), each
  // node drawing as its global id, wherever it is evaluated.
  const auto gathered_node_accuracies = [&](bool per_node, std::int64_t evaluation) -> at::Tensor {
    if (!cluster.distributed() || !per_node) return at::Tensor();
    const std::vector<double> mine =
        node_accuracies(*model, x.detach(), buffers, test_batches, eval_workers,
                        eval_draws(config.run.seed, evaluation, hosted.first));
    return all_rows(at::tensor(mine, at::kDouble));
  };
  // Evaluation of the survivors' models (every node when none died). all_node_accuracy: as
  // gathered_node_accuracies returns it.
  const auto evaluate_survivors =
      [&](const at::Tensor& all_x, const std::vector<at::Tensor>& all_buffers, bool per_node,
          const at::Tensor& all_node_accuracy, std::vector<std::int64_t>& alive,
          std::int64_t evaluation) {
        const quant::DrawKey draws = eval_draws(config.run.seed, evaluation, 0);
        alive = survivors();
        const bool everyone = static_cast<std::int64_t>(alive.size()) == n;
        at::Tensor alive_x = all_x;
        std::vector<at::Tensor> alive_buffers = all_buffers;
        if (!everyone) {
          const at::Tensor index = at::tensor(alive, at::kLong).to(all_x.device());
          alive_x = all_x.index_select(0, index);
          alive_buffers.clear();
          for (const auto& b : all_buffers)
            alive_buffers.push_back(b.index_select(0, index.to(b.device())));
        }
        Evaluation ev;
        if (all_node_accuracy.defined()) {
          std::vector<double> accuracy;
          for (const std::int64_t i : alive)
            accuracy.push_back(all_node_accuracy[i].item<double>());
          ev = evaluation_with_node_accuracies(*model, alive_x, alive_buffers, test_batches,
                                               std::move(accuracy), eval_workers, draws);
        } else {
          ev = evaluate(*model, alive_x, alive_buffers, test_batches, per_node, eval_workers,
                        draws);
        }
        if (!everyone) ev.node_ids = alive;
        return ev;
      };
  std::set<std::int64_t> deaths_reported;
  // Whether the survivors' graph was found cut (warned once, and recorded with the warnings).
  bool survivors_cut_warned = false;
  const auto report_deaths = [&] {
    if (optimizer.faults() == nullptr) return;
    std::int64_t newest_round = -1;
    for (const auto& [node, seen] : optimizer.faults()->counts().dead_nodes) {
      if (!deaths_reported.insert(node).second) continue;
      newest_round = std::max<std::int64_t>(newest_round, seen);
      const std::string line = format(
          "round %lld: node %lld is dead; its edges are dropped and "
          "its neighbours renormalise (docs/faults.md)",
          static_cast<long long>(seen), static_cast<long long>(node));
      if (leader) {
        progress(line);
      } else {
        std::fprintf(stderr, "rank %d: %s\n", cluster.rank(), line.c_str());
      }
    }
    // Once all of this round's deaths are known: nodes dying together would each repeat it.
    if (newest_round >= 0 && leader && static_graph && !survivors_cut_warned) {
      const std::string cut = survivors_cut(static_mixing.cpu(), survivors());
      if (!cut.empty()) {
        survivors_cut_warned = true;
        const std::string warning =
            format("round %lld: ", static_cast<long long>(newest_round)) + cut;
        progress("warning: " + warning);
        warnings.push_back(warning);
      }
    }
  };
  const auto save_checkpoint = [&](int epochs_done) {
    const bool due =
        config.run.checkpoint_every > 0 &&
        (epochs_done % config.run.checkpoint_every == 0 || epochs_done == config.run.epochs);
    if (!due) return;
    TrainingState state;
    state.epochs_done = epochs_done;
    state.rounds_done = round;
    state.train_time_s = train_time_s;
    state.elapsed_s = elapsed();
    state.params = all_rows(x);
    for (const auto& b : buffers) state.buffers.push_back(all_rows(b));
    for (const auto& [name, tensor] : optimizer.state()) {
      state.optimizer[name] = tensor.dim() == 0 ? tensor.clone() : all_rows(tensor);
    }
    std::map<std::string, at::Tensor> held;
    if (config.faults.any()) held = all_held_messages();  // (without injected faults, none)
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      state.torch_rng_state = generator.get_state();
    }
    const auto ledger_now = whole_ledger();
    const std::optional<algo::FaultCounts> counts_now = whole_fault_counts();
    if (!leader) return;
    // A dead node's rows are zeros in every checkpoint (docs/results.md), whoever computed them:
    // the simulator's dead node trains on alone, a rank started again after a real death trains
    // its dead nodes on rows nobody mixes (possibly no longer finite), and a dead rank sends none.
    // The held messages are per edge, not per node, and stay as they are.
    std::set<std::int64_t> dead_now;
    if (counts_now) {
      for (const auto& [node, seen] : counts_now->dead_nodes) dead_now.insert(node);
    }
    for (std::int64_t i = 0; i < n; ++i) dead_now.insert(i);
    for (const std::int64_t i : survivors()) dead_now.erase(i);
    zero_node_rows(state, dead_now);
    for (auto& [name, tensor] : held) state.optimizer[name] = tensor;
    state.ledger = ledger_now->to_json();
    if (counts_now) state.fault_counts = fault_counts_to_json(*counts_now);
    state.epochs = epochs_to_json(result.epochs);
    state.config = to_json(config);
    state.data = data_now;
    write_checkpoint(run_dir / kCheckpointFile, state);
    write_config();
    set_interrupt_note(resume_note);
    // A resumed finished run's summary.json describes fewer epochs than its checkpoint now holds:
    // it goes, so that a run stopped before its new summary is not taken for the shorter one.
    if (resumed) {
      std::error_code ignored;
      std::filesystem::remove(run_dir / "summary.json", ignored);
    }
  };
  if (leader) {
    meter.emplace(steps_per_epoch * config.run.epochs, steps_per_epoch * first_epoch,
                  config.run.epochs, options.progress_bar);
  }
  if (on_gpu && config.model.precision == ModelConfig::Precision::kInt8 &&
      quant::cuda::kernels_built()) {
    draw_step = at::full({1}, round, device_options.dtype(at::kLong));
  }
  for (int epoch = first_epoch; epoch < config.run.epochs; ++epoch) {
    // Ranks start an epoch together: rank 0's evaluation and checkpoint take time that a peer
    // waiting for its next payload must not take for a death.
    if (cluster.distributed() && epoch != first_epoch) cluster.broadcast_text("");
    const auto epoch_start = Clock::now();
    node_loss_sum.zero_();
    double lr = 0;
    for (std::int64_t step = 0; step < steps_per_epoch; ++step, ++round) {
      lr = schedule.lr(epoch, step, steps_per_epoch);
      const data::Batch batch = loader.next();
      if (use_graphs) {
        if (!step_inputs.defined()) {
          step_inputs = at::empty(batch.inputs.sizes(), device_options.dtype(batch.inputs.dtype()));
          step_targets = at::empty(batch.targets.sizes(), device_options.dtype(at::kLong));
        }
        LPDT_CHECK(step_inputs.sizes() == batch.inputs.sizes(),
                   "a captured step needs batches of one shape");
        step_inputs.copy_(batch.inputs, /*non_blocking=*/true);
        step_targets.copy_(batch.targets, /*non_blocking=*/true);
      } else {
        step_inputs = batch.inputs.to(device, /*non_blocking=*/true);
        step_targets = batch.targets.to(device, /*non_blocking=*/true);
      }
      kill_if_due(round);
      step_lr = lr;
      step_round = round;
      step_mixing = static_graph ? static_mixing : mixing_at(round);
      if (graphed.run(lr, training_step) == GraphedSteps::Run::kReplayed) {
        optimizer.account_replayed_round(step_mixing, round, ledger);
      }
      report_deaths();
      // Checked every step where reading the losses costs no device synchronisation and no
      // agreement between processes; otherwise once per epoch, below.
      if (check_every_step) {
        const auto diverged = nodes_with_nonfinite_loss(last_loss, hosted.first, optimizer.faults());
        if (!diverged.empty()) {
          if (meter) meter->clear();
          stop_diverged(config, leader, epoch + 1, step + 1,
                        format("at step %lld of %lld of epoch %d", static_cast<long long>(step + 1),
                               static_cast<long long>(steps_per_epoch), epoch + 1),
                        join_nodes(diverged), run_dir);
        }
      }
      if (meter) meter->update(epoch * steps_per_epoch + step + 1, epoch + 1);
      if (leader && config.run.log_every > 0 && (step + 1) % config.run.log_every == 0) {
        const double step_loss = last_loss.mean().item<double>();
        progress(format("epoch %d step %lld/%lld  loss %.4f  lr %.4g  %.1f img/s  ETA %s%s",
                        epoch + 1, static_cast<long long>(step + 1),
                        static_cast<long long>(steps_per_epoch), step_loss, lr,
                        static_cast<double>((step + 1) * n * config.data.batch_size) /
                            seconds_since(epoch_start),
                        format_duration(meter->eta_s()).c_str(),
                        cluster.distributed() ? " (loss of rank 0's nodes)" : ""));
      }
    }
    train_time_s += seconds_since(epoch_start);
    result.steps += steps_per_epoch;
    {
      // Every rank reports its nodes and rank 0 answers for all, so that all stop together: first
      // the nodes whose loss is not finite, then those whose parameters are not.
      const auto agreed = [&](const std::vector<std::int64_t>& mine) {
        std::string nodes = join_nodes(mine);
        if (!cluster.distributed()) return nodes;
        std::string all;
        for (const std::string& part : cluster.gather_text(nodes)) {
          if (!part.empty()) all += (all.empty() ? "" : ", ") + part;
        }
        return cluster.broadcast_text(all);
      };
      const std::string loss_nodes =
          agreed(nodes_with_nonfinite_loss(node_loss_sum, hosted.first, optimizer.faults()));
      const std::string param_nodes =
          loss_nodes.empty()
              ? agreed(nodes_with_nonfinite_params(x, hosted.first, optimizer.faults()))
              : std::string();
      if (!loss_nodes.empty() || !param_nodes.empty()) {
        if (meter) meter->clear();
        stop_diverged(config, leader, epoch + 1, 0, format("in epoch %d", epoch + 1),
                      loss_nodes.empty() ? param_nodes : loss_nodes, run_dir,
                      /*parameters=*/loss_nodes.empty());
      }
    }
    if ((epoch + 1) % config.run.eval_every != 0 && epoch + 1 != config.run.epochs) {
      save_checkpoint(epoch + 1);
      continue;
    }

    // Evaluation: every node's rows on rank 0, each node's accuracy where it lives.
    const at::Tensor all_x = all_rows(x);
    std::vector<at::Tensor> all_buffers;
    for (const auto& b : buffers) all_buffers.push_back(all_rows(b));
    const at::Tensor all_loss_sum = all_rows(node_loss_sum);
    const auto ledger_now = whole_ledger();
    const at::Tensor all_node_accuracy = gathered_node_accuracies(config.eval.per_node, epoch + 1);
    EpochSummary summary;
    summary.epoch = epoch + 1;
    summary.lr = lr;
    if (leader) {
      const at::Tensor node_mean_loss = (all_loss_sum / static_cast<double>(steps_per_epoch)).cpu();
      std::vector<std::int64_t> alive;
      summary.evaluation =
          evaluate_survivors(all_x, all_buffers, config.eval.per_node, all_node_accuracy, alive,
                             epoch + 1);
      summary.train_loss =
          node_mean_loss.index_select(0, at::tensor(alive, at::kLong)).mean().item<double>();
      summary.mean_gb_sent_per_node = ledger_now->mean_gb_sent_per_node();
      summary.elapsed_s = elapsed();
      const Evaluation& ev = summary.evaluation;
      for (std::size_t a = 0; a < ev.node_accuracy.size(); ++a) {
        const std::int64_t i = alive[a];
        metrics_csv << summary.epoch << "," << i << "," << lr << ","
                    << node_mean_loss[i].item<double>() << "," << ev.node_accuracy[a] << ","
                    << ledger_now->bytes_sent_per_node()[static_cast<std::size_t>(i)] << "\n";
      }
      metrics_csv.flush();
      check_table(metrics_csv, "metrics.csv");
      epochs_csv << summary.epoch << "," << lr << "," << summary.train_loss << ","
                 << CsvNumber{ev.mean_accuracy} << "," << CsvNumber{ev.min_accuracy} << ","
                 << CsvNumber{ev.max_accuracy} << ","
                 << ev.average_model_accuracy << "," << ev.consensus_distance << ","
                 << summary.mean_gb_sent_per_node << "," << summary.elapsed_s << "\n";
      epochs_csv.flush();
      check_table(epochs_csv, "epochs.csv");
      // Which layers disagree, and whether because their weights grew (docs/results.md).
      if (layers_csv.is_open()) {
        const at::Tensor alive_x =
            static_cast<std::int64_t>(alive.size()) == n
                ? all_x  // (a copy of every row would be as large as the parameters)
                : all_x.index_select(0, at::tensor(alive, at::kLong).to(all_x.device()));
        layers_csv.precision(9);
        for (const algo::LayerConsensus& layer : algo::layer_consensus(alive_x, model->layout())) {
          layers_csv << summary.epoch << "," << layer.name << "," << layer.numel << ","
                     << layer.distance << "," << layer.relative_distance << ","
                     << layer.mean_node_norm << "," << layer.average_norm << "\n";
        }
        layers_csv.flush();
        check_table(layers_csv, "layers.csv");
      }
      progress(format(
          "epoch %d/%d  loss %.4f  acc avg-model %.2f%%  %s  consensus %.3g  sent %.4f "
          "GB/node  %.0f s%s",
          summary.epoch, config.run.epochs, summary.train_loss, ev.average_model_accuracy,
          node_accuracy_text(ev).c_str(), ev.consensus_distance, summary.mean_gb_sent_per_node,
          summary.elapsed_s,
          summary.epoch < config.run.epochs ? ("  ETA " + format_duration(meter->eta_s())).c_str()
                                            : ""));
    }
    result.epochs.push_back(summary);
    save_checkpoint(epoch + 1);
  }

  if (meter) meter->finish();

  // The official code's protocol (spec 5.4): extra gossip-only rounds, then the mean of the
  // nodes' local accuracies. Its loop of 51 forward passes applies the last training round
  // (which lpdt applies in the training step) and 50 gossip-only rounds: eval.gossip_rounds 50.
  Evaluation final_evaluation =
      result.epochs.empty() ? Evaluation{} : result.epochs.back().evaluation;
  if (config.eval.protocol == EvalConfig::Protocol::kReference) {
    torch::NoGradGuard no_grad;
    for (int r = 0; r < config.eval.gossip_rounds; ++r, ++round) {
      kill_if_due(round);
      const at::Tensor mixing = static_graph ? static_mixing : mixing_at(round);
      optimizer.gossip_round(x, mixing, round, ledger);
    }
    // The official loop counts each round it applies, the last training round included (spec
    // 3.4, 5.4): with ledger.accounting = reference, the round still pending is counted now.
    ledger.count_pending();
    report_deaths();  // nodes killed in these rounds, said before the accuracies they change
    const at::Tensor all_x = all_rows(x);
    std::vector<at::Tensor> all_buffers;
    for (const auto& b : buffers) all_buffers.push_back(all_rows(b));
    const at::Tensor all_node_accuracy =
        gathered_node_accuracies(/*per_node=*/true, config.run.epochs + 1);
    if (leader) {
      std::vector<std::int64_t> alive;
      final_evaluation =
          evaluate_survivors(all_x, all_buffers, /*per_node=*/true, all_node_accuracy, alive,
                             config.run.epochs + 1);
      progress(
          format("after %d gossip-only rounds: mean of node accuracies %.2f%% (the official "
                 "code's \"averaged model\"), exact average %.2f%%",
                 config.eval.gossip_rounds, final_evaluation.mean_accuracy,
                 final_evaluation.average_model_accuracy));
    }
  }
  const auto final_ledger = whole_ledger();
  // The trained model, every node's rows on rank 0 (model.safetensors below).
  const at::Tensor final_x = all_rows(x);
  std::vector<at::Tensor> final_buffers;
  for (const auto& b : buffers) final_buffers.push_back(all_rows(b));
  const dist::WireTraffic traffic = cluster.traffic();
  const std::vector<std::string> traffic_texts = cluster.gather_text(nlohmann::json{
      {"payloads_sent", traffic.payloads_sent},
      {"bytes_sent", traffic.bytes_sent},
      {"payloads_received", traffic.payloads_received},
      {"bytes_received", traffic.bytes_received},
      {"wait_s", traffic.wait_s}}.dump());
  report_deaths();
  const std::vector<std::string> fault_texts =
      optimizer.faults() == nullptr
          ? std::vector<std::string>{}
          : cluster.gather_text(fault_counts_to_json(optimizer.faults()->counts()).dump());
  result.final_evaluation = final_evaluation;
  result.wall_time_s = elapsed();
  result.train_images_per_s =
      static_cast<double>(result.steps * n * config.data.batch_size) / std::max(train_time_s, 1e-9);
  if (!leader) {
    result.bytes_sent_per_node = ledger.bytes_sent_per_node();
    return result;
  }
  result.bytes_sent_per_node = final_ledger->bytes_sent_per_node();
  result.mean_gb_sent_per_node = final_ledger->mean_gb_sent_per_node();

  nlohmann::json summary;
  summary["config"] = to_json(config);
  summary["seed"] = config.run.seed;
  summary["warnings"] = warnings;
  summary["backend"] = {
      {"engine", "node-batched"},
      {"device", device.is_cuda() ? "cuda" : "cpu"},
      {"precision", std::string(to_string(config.model.precision))},
      {"quant_backend", config.model.precision == ModelConfig::Precision::kInt8
                            ? std::string(to_string(config.quant.backend))
                            : "none"},
      {"integer_kernels", config.model.precision == ModelConfig::Precision::kInt8 &&
                                  config.quant.backend == QuantConfig::Backend::kInteger
                              ? quant::int8_gemm_kernel()
                              : "none"},
      {"runtime", runtime.description()},
      {"intra_op_threads", runtime.intra_op_threads},
      // The vector level of the project's CPU kernels (core/cpu_dispatch.h).
      {"cpu_kernels", runtime.cpu_kernels},
      // The cap on this process's memory (core/runtime.h), 0 for none.
      {"memory_cap_bytes", runtime.data_limit_bytes},
      {"nodes_per_pass", nodes_per_pass},
      {"pass_workers", pass_workers},
      {"conv_algorithm", "grouped"},
      // On a GPU: whether this build's fused CUDA kernels (quantizer, EvoNorm-S0, Range
      // EvoNorm) ran, or the device-generic tensor operations.
      {"cuda_kernels", device.is_cuda() && quant::cuda::kernels_built()},
      {"cuda_graphs", graphed.graphs()},
      // Where training batches were made (data.on_device): "host" or the device.
      {"batches_on", batches_on_device ? device.str() : "host"},
      {"cuda_graph_obstacle", graph_obstacle}};
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < static_cast<int>(traffic_texts.size()); ++r) {
    nlohmann::json rank = traffic_texts[r].empty() ? nlohmann::json{{"dead", true}}
                                                   : nlohmann::json::parse(traffic_texts[r]);
    const NodeRange block =
        cluster.distributed() ? dist::hosted_nodes(r, cluster.size(), n) : hosted;
    rank["rank"] = r;
    rank["first_node"] = block.first;
    rank["nodes"] = block.count;
    ranks.push_back(rank);
  }
  summary["processes"] = {{"mode", cluster.distributed() ? "mpi" : "in-process"},
                          {"description", cluster.description()},
                          {"ranks", cluster.size()},
                          {"per_rank", ranks}};
  if (config.faults.any() || !fault_texts.empty()) {
    algo::FaultCounts faults;
    for (const std::string& text : fault_texts) {
      if (!text.empty()) faults.add(fault_counts_from_json(nlohmann::json::parse(text)));
    }
    for (const int r : cluster.dead_ranks()) {  // ranks rank 0's gathers found dead
      const NodeRange block = dist::hosted_nodes(r, cluster.size(), n);
      for (std::int64_t i = block.first; i < block.end(); ++i) faults.dead_nodes.emplace(i, round);
    }
    nlohmann::json f = fault_counts_to_json(faults);
    f["injected"] = config.faults.any();
    // The ranks whose bytes in "final" are those of their last report before they died.
    f["bytes_as_last_reported_by_ranks"] = ledgers_as_last_reported;
    f["survivors"] = survivors().size();
    if (leader && !faults.dead_nodes.empty()) {
      std::vector<std::int64_t> alive = survivors();
      // Rank 0 may learn of a death from another rank's counts only: leave those out too.
      alive.erase(std::remove_if(alive.begin(), alive.end(),
                                 [&](std::int64_t i) { return faults.dead_nodes.count(i) > 0; }),
                  alive.end());
      f["survivors"] = alive.size();
    }
    summary["faults"] = f;
    if (faults.messages_late > 0 || !faults.dead_nodes.empty()) {
      progress(format(
          "faults: %lld messages late, %lld rounds late in all (%lld losses, each resent the "
          "next round: a message lost twice counts two), %zu dead nodes, %lld edge-rounds dropped",
          static_cast<long long>(faults.messages_late), static_cast<long long>(faults.late_rounds),
          static_cast<long long>(faults.messages_lost),
          faults.dead_nodes.size(), static_cast<long long>(faults.dead_edge_rounds)));
    }
  }
  summary["build"] = build_record();
  summary["machine"] = machine_record(runtime);
  summary["date"] = utc_timestamp();
  summary["topology"] = {{"label", topology->label()}, {"spectral_gap", gap}};
  summary["model"] = {{"name", model->name()},
                      {"params_per_node", model->num_params()},
                      // What the model's normalisation layers are: "none" for a model without
                      // model.norm's layers, whatever the key says (arch_uses_model_norm).
                      {"norm", arch_uses_model_norm(std::string(to_string(config.model.arch)))
                                   ? std::string(to_string(config.model.norm))
                                   : std::string("none")}};
  summary["final"] = {{"average_model_accuracy", final_evaluation.average_model_accuracy},
                      {"node_accuracy", node_accuracy_by_node(final_evaluation, n)},
                      {"mean_node_accuracy", final_evaluation.mean_accuracy},
                      {"min_node_accuracy", final_evaluation.min_accuracy},
                      {"max_node_accuracy", final_evaluation.max_accuracy},
                      {"consensus_distance", final_evaluation.consensus_distance},
                      {"evaluation_protocol", std::string(to_string(config.eval.protocol))},
                      {"bytes_sent_per_node", result.bytes_sent_per_node},
                      {"mean_gb_sent_per_node", result.mean_gb_sent_per_node},
                      {"byte_accounting", std::string(metrics::to_string(final_ledger->mode()))},
                      {"steps", result.steps},
                      {"wall_time_s", result.wall_time_s},
                      {"train_images_per_s", result.train_images_per_s}};
  write_config();
  write_averaged_model(run_dir / kModelFile, *model, final_x, final_buffers, survivors(),
                       {{"lpdt.model", model->name()},
                        {"lpdt.revision", std::string(build_info::kGitRevision)},
                        {"lpdt.average_model_accuracy",
                         format("%.4f", final_evaluation.average_model_accuracy)}});
  write_text_file(run_dir / "summary.json", summary.dump(2) + "\n");

  progress(
      format("done: average-model accuracy %.2f%%, %s, %.4f GB sent per node, wall time %.1f s "
             "(%.0f training %s/s)",
             final_evaluation.average_model_accuracy, node_accuracy_text(final_evaluation).c_str(),
             result.mean_gb_sent_per_node, result.wall_time_s, result.train_images_per_s,
             text ? "sequences" : "img"));
  progress("results: " + (run_dir / "summary.json").string());
  return result;
}

}  // namespace lpdt::exp
