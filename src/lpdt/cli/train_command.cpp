#include <algorithm>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <optional>
#include <unistd.h>

#include "lpdt/build_info.h"
#include "lpdt/cli/commands.h"
#include "lpdt/cli/option_checks.h"
#include "lpdt/core/error.h"
#include "lpdt/core/string_literal.h"
#include "lpdt/dist/cluster.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/trainer.h"

namespace lpdt::cli {
namespace {
int g_exit_code = 0;

// The run's configuration, resolved and checked: from its config file and --set options, or
// for --resume from the run folder's config.toml (whose folder and name it keeps).
std::pair<Config, ExperimentConfig> resolve_run(const std::string& config_path,
                                                     const std::string& resume_dir,
                                                     std::vector<std::string> overrides,
                                                     const std::string& out_dir) {
  if (!out_dir.empty()) {
    // Both placing the folder: the one given last would win without a word.
    for (const std::string& o : overrides) {
      std::string key = o.substr(0, o.find('='));
      key.erase(0, key.find_first_not_of(" \t"));
      key.erase(key.find_last_not_of(" \t") + 1);
      if (key == "run.out_dir" && resume_dir.empty()) {
        throw ConfigError("train: -o/--out '" + out_dir + "' and --set " + o +
                          " both name the folder for the run folder: give one");
      }
    }
    // As one TOML string literal: the folder is named exactly as given (a backslash stays one).
    overrides.push_back("run.out_dir=" + double_quoted_literal(out_dir));
  }
  std::optional<std::string> path =
      config_path.empty() ? std::nullopt : std::optional<std::string>(config_path);
  if (!resume_dir.empty()) {
    path = resume_dir + "/config.toml";
    const std::filesystem::path dir(resume_dir);
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
      throw ConfigError("train --resume: '" + resume_dir +
                        "' does not exist: name a run folder that lpdt train wrote (runs/<run>)");
    }
    if (!std::filesystem::exists(*path) && !std::filesystem::exists(dir / "checkpoint.lpdt")) {
      throw ConfigError("train --resume: '" + resume_dir +
                        "' is not a run folder: expected the config.toml and checkpoint.lpdt "
                        "that lpdt train writes in runs/<run> (name the run's own folder)");
    }
    // A resumed run stays in its folder under its name: its recorded configuration keeps
    // them, whatever placed a new run's folder.
    const auto places_folder = [](const std::string& o) {
      std::string key = o.substr(0, o.find('='));
      key.erase(0, key.find_first_not_of(" \t"));
      key.erase(key.find_last_not_of(" \t") + 1);
      return key == "run.name" || key == "run.out_dir";
    };
    if (std::any_of(overrides.begin(), overrides.end(), places_folder)) {
      std::cout << "note: run.out_dir and run.name place a new run's folder; a resumed run "
                   "continues in its own, "
                << resume_dir << ", under its name (those settings are ignored)" << std::endl;
      overrides.erase(std::remove_if(overrides.begin(), overrides.end(), places_folder),
                      overrides.end());
    }
  }
  Config resolved = resolve_experiment_config(path, overrides);
  ExperimentConfig config = experiment_config_from(resolved);
  return {std::move(resolved), std::move(config)};
}
}  // namespace

std::string version_string() {
  return std::string("lpdt ") + build_info::kVersion + " (" + build_info::kGitRevision + ", " +
         build_info::kBuildType + ", LibTorch " + build_info::kTorchVersion + ")";
}
int exit_code() { return g_exit_code; }
void set_exit_code(int code) { g_exit_code = code; }

void add_train_command(CLI::App& app) {
  struct Args {
    std::string config_path;
    std::vector<std::string> overrides;
    std::string out_dir;
    bool help_config = false;
    bool print_config = false;
    std::string resume_dir;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train on n simulated nodes. With no arguments: the quickstart (Fashion-MNIST, 8 nodes on a "
      "directed ring, skewed non-IID data, Choco-SGD).");
  // The config file and the run folder are checked once the command runs, not as it is parsed:
  // under mpirun a rank whose host lacks them still joins the job and rank 0 reports it. An
  // empty name is refused at once (every rank alike): it would read as the option not given,
  // and start the quickstart instead of the file or run meant.
  auto* config_option =
      cmd->add_option("-c,--config", args->config_path, "Experiment TOML file (see configs/)")
          ->check(non_empty_path());
  cmd->add_option("--resume", args->resume_dir,
                  "Continue the run in this run folder from its checkpoint (its config.toml; "
                  "--set run.epochs=N to train longer)")
      ->check(non_empty_path())
      ->excludes(config_option);
  cmd->add_option("-s,--set", args->overrides,
                  "Override a key: --set section.key=value (repeatable), e.g. --set optim.lr=0.05");
  cmd->add_option("-o,--out", args->out_dir, "Folder for the run folder (run.out_dir)")
      ->check(non_empty_path());
  cmd->add_flag("--help-config", args->help_config, "Print every configuration key and exit");
  cmd->add_flag("--print-config", args->print_config, "Print the resolved configuration and exit (under mpirun: rank 0)");
  cmd->callback([args]() {
    if (args->help_config) {
      // Under mpirun rank 0 prints it, as --help and --print-config.
      if (dist::launcher_rank() <= 0) std::cout << experiment_schema().help_text();
      return;
    }
    // Under mpirun a rank that cannot start (its configuration fails, its --resume folder is
    // missing on its host) still joins the job, so that rank 0 reports it and no rank waits for
    // it to start.
    const auto [resolved, config] = [&] {
      try {
        return resolve_run(args->config_path, args->resume_dir, args->overrides, args->out_dir);
      } catch (const UserError& e) {
        if (dist::launched_by_mpirun() && !args->print_config) {
          exp::share_start_error(e, dist::mpi_cluster(RunConfig{}.receive_timeout_s));
        }
        throw;
      }
    }();
    if (args->print_config) {
      // Each value set by the file or --set names its origin. Under mpirun rank 0 prints it.
      if (dist::launcher_rank() <= 0) std::cout << resolved.to_toml();
      return;
    }
    exp::TrainOptions options;
    options.resume_dir = args->resume_dir;
    // A new run's config.toml names where each value was set; a resumed run's keeps no origins
    // (they would all point at its own config.toml).
    if (args->resume_dir.empty()) options.config_toml = resolved.to_toml();
    options.progress_bar = isatty(fileno(stderr)) != 0;
    // Under mpirun: one rank of a multi-process run (dist/cluster.h).
    if (dist::launched_by_mpirun()) options.cluster = &dist::mpi_cluster(config.run.receive_timeout_s);
    exp::train(config, [](const std::string& line) { std::cout << line << std::endl; }, options);
  });
}

}  // namespace lpdt::cli
