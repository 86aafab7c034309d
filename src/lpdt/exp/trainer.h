#pragma once
// One decentralized training run, end to end: data, partition, topology, node-batched model,
// algorithm, evaluation, and the run folder (docs/results.md).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "lpdt/core/error.h"
#include "lpdt/exp/evaluation.h"
#include "lpdt/exp/experiment_config.h"

namespace lpdt::dist {
class Cluster;  // dist/cluster.h
}

namespace lpdt::exp {

struct EpochSummary {
  int epoch = 0;  // 1-based: the number of epochs done
  double lr = 0;
  double train_loss = 0;  // mean over the epoch's steps and nodes
  Evaluation evaluation;
  double mean_gb_sent_per_node = 0;  // cumulative
  double elapsed_s = 0;
};

struct TrainResult {
  std::filesystem::path run_dir;
  std::vector<EpochSummary> epochs;
  Evaluation final_evaluation;
  std::vector<std::int64_t> bytes_sent_per_node;
  double mean_gb_sent_per_node = 0;
  double wall_time_s = 0;
  double train_images_per_s = 0;
  std::int64_t steps = 0;
};

// A node's training loss stopped being finite (docs/results.md, "A diverged run"). Before it is
// thrown, rank 0 records the run's configuration and where it diverged in RUN_DIR/diverged.json
// (kDivergedFile): {"config", "epoch", "step" (null when seen at the epoch's end), "nodes",
// "message"}. Under mpirun every rank throws it with the same message (the ranks agree on the
// diverged nodes first), so it is a JobWideError: rank 0 alone reports it.
class TrainingDiverged : public JobWideError {
 public:
  using JobWideError::JobWideError;
};
inline constexpr const char* kDivergedFile = "diverged.json";
// The averaged model of a finished run (docs/results.md): RUN_DIR/model.safetensors.
inline constexpr const char* kModelFile = "model.safetensors";

// Where progress goes: one line at a time (stdout in the CLI, captured in tests).
using ProgressSink = std::function<void(const std::string& line)>;

struct TrainOptions {
  // Continue the run in this folder from its checkpoint (exp/checkpoint.h) instead of starting
  // a new one: the configuration must be the checkpoint's (check_resumable), run.epochs may grow.
  std::filesystem::path resume_dir;
  // The processes of the run (dist/cluster.h): null = this one process hosts every node (the
  // simulator). Under MPI each rank trains its block of nodes, and rank 0 alone evaluates,
  // writes the run folder and reports progress; the result is bit for bit the simulator's.
  dist::Cluster* cluster = nullptr;
  // Draw a progress bar with the time left on stderr, in place (the CLI: when stderr is a
  // terminal). Either way the periodic log lines carry the estimate. Changes no result.
  bool progress_bar = false;
  // The run folder's config.toml when not empty: the resolved configuration with the origin of
  // each value set by a file or --set (the CLI's Config::to_toml()); it must describe `config`
  // (ConfigError otherwise, before anything is written).
  // Empty: to_toml(config), without origins (a resumed run rewrites its file so).
  std::string config_toml;
  // What the note of an interrupted run (Ctrl-C, SIGTERM, SIGHUP; core/interrupt_note.h) tells
  // the user to run to go on. Empty: lpdt train --resume with the run folder (or, before the
  // first checkpoint, lpdt train --config with its config.toml); a sweep gives its own command,
  // which resumes or restarts the run itself.
  std::string continue_command;
};

// Runs the experiment and writes its run folder (under config.run.out_dir; or resume_dir). The
// resolved configuration is written as config.toml. Throws UserError/ConfigError for bad input;
// whatever was already written to the run folder stays. On ranks other than 0 of a
// multi-process run the result holds the run folder, steps and bytes only.
TrainResult train(const ExperimentConfig& config, const ProgressSink& progress,
                  const TrainOptions& options = {});

// Under mpirun, for a rank that cannot start training (a config file or --set option that
// differs between the ranks, a --resume folder missing on its host): it takes part in train()'s
// comparison of the ranks' configurations with its error instead, so that rank 0 reports it
// (naming the rank) and no rank waits for another that left. Throws the error that every rank
// of the job throws: a ConfigError where the first failing rank's error was one, else a
// JobWideError.
[[noreturn]] void share_start_error(const UserError& error, dist::Cluster& cluster);

}  // namespace lpdt::exp
