#pragma once
// Checkpoints of a training run (docs/results.md, "Checkpoints and resume"): the complete state
// of every node at an epoch boundary, so that a resumed run continues bit for bit as the
// uninterrupted run would have.
//
// One file, RUN_DIR/checkpoint.lpdt, replaced atomically (written to a temporary file, synced,
// renamed): a run killed while writing keeps its previous checkpoint intact. Layout:
//   u8[8] magic "LPDTCKPT" | u32 format version | u64 n | n bytes of JSON (scalars, the byte
//   ledger, the epoch summaries, the resolved configuration) | u64 m | m bytes of tensors |
//   u32 CRC-32 of every preceding byte.
// The tensors are a safetensors section (models/safetensors.h) in format version 2, named
// "params", "buffer.<i>", "optimizer.<name>" and "torch_rng_state"; version 1 (checkpoints
// written before 2026-11-29) held a LibTorch archive instead, which is still read.
#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lpdt::exp {

inline constexpr const char* kCheckpointFile = "checkpoint.lpdt";

struct TrainingState {
  int epochs_done = 0;
  std::int64_t rounds_done = 0;  // training steps taken (= batches each node has drawn)
  double train_time_s = 0;
  double elapsed_s = 0;
  at::Tensor params;                              // [n, P] float32
  std::vector<at::Tensor> buffers;                // the model's buffers, each [n, ...]
  std::map<std::string, at::Tensor> optimizer;    // DecentralizedOptimizer::state()
  at::Tensor torch_rng_state;                     // LibTorch's default CPU generator (dropout)
  nlohmann::json ledger;                          // ByteLedger::to_json
  nlohmann::json epochs;                          // the EpochSummary list so far
  nlohmann::json fault_counts;                    // all nodes' FaultCounts; null without faults
  nlohmann::json config;                          // to_json(ExperimentConfig) of the run
  nlohmann::json data;  // data_fingerprint (exp/data_fingerprint.h); null in older checkpoints
};

// Sets the rows of `nodes` to zero in the parameters [n, P], every buffer [n, ...] and every
// optimizer tensor [n, ...] of `state` (n = params.size(0)): a dead node's rows in a checkpoint
// (docs/results.md). Those tensors are replaced by zeroed copies: the tensors `state` held
// before (an in-process run's live training state) are not written to. An internal error
// (LPDT_CHECK) for a node outside 0 .. n-1.
void zero_node_rows(TrainingState& state, const std::set<std::int64_t>& nodes);

// Writes `state` to `file` atomically. UserError if it cannot be written.
void write_checkpoint(const std::filesystem::path& file, const TrainingState& state);

// Reads a checkpoint; tensors on the CPU. UserError naming the file for a missing, truncated or
// corrupt file (checksum), another format, or a newer version.
TrainingState read_checkpoint(const std::filesystem::path& file);

// The configuration keys a resumed run may change (they do not touch the trajectory of the
// training that is already done or to come): run.epochs (to extend a run), run.log_every,
// run.threads, run.eval_every, run.checkpoint_every, run.out_dir, run.name; and, where
// `data_checked` (the checkpoint records the data it trained on, which the resume compares with
// the data it reads), the paths data.dir and data.vocab (a dataset moved, or named by its path
// where the run took the default folder). ConfigError naming every other key that differs
// between the checkpoint's configuration and `now`, with both values.
void check_resumable(const nlohmann::json& saved, const nlohmann::json& now,
                     const std::filesystem::path& file, bool data_checked);

}  // namespace lpdt::exp
