#include <CLI/CLI.hpp>
#include <iostream>
#include <unistd.h>

#include "lpdt/cli/commands.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/sweep.h"

namespace lpdt::cli {

void add_sweep_command(CLI::App& app) {
  struct Args {
    std::string sweep_file;
    bool dry_run = false;
    bool tables_only = false;
    std::string shard = "1/1";
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run a grid of experiments (docs/sweeps.md): every combination of the sweep file's [grid] "
      "values and seeds. Finished runs are skipped and unfinished ones resumed from their "
      "checkpoints, so a killed sweep continues where it stopped. Writes tables (markdown and "
      "CSV, mean and spread over seeds) to the sweep's out_dir.");
  cmd->add_option("sweep_file", args->sweep_file, "Sweep TOML file (see configs/sweeps/)")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::Option* dry_run =
      cmd->add_flag("--dry-run", args->dry_run, "List what would run, run nothing");
  // --tables-only writes the tables: with --dry-run, which writes nothing, one would be ignored.
  cmd->add_flag("--tables-only", args->tables_only,
                "Only (re)write the tables from the runs finished so far")
      ->excludes(dry_run);
  cmd->add_option("--shard", args->shard,
                  "I/N: run only every N-th point, starting at the I-th, so that N processes "
                  "(e.g. one per core with run.threads = 1, or machines sharing out_dir) run the "
                  "sweep side by side; each writes the tables of what is finished when it ends")
      ->default_str("1/1")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              exp::parse_sweep_shard(text);
            } catch (const UserError& e) {
              return std::string(e.what());
            }
            return std::string();
          },
          "I/N"));
  cmd->callback([args]() {
    const exp::SweepSpec spec = exp::load_sweep(args->sweep_file);
    const exp::SweepShard shard = exp::parse_sweep_shard(args->shard);
    const auto say = [](const std::string& line) { std::cout << line << std::endl; };
    if (args->tables_only) {
      for (const auto& path : exp::write_sweep_tables(spec)) say("table: " + path.string());
      // Tables of '-' cells only are what a sweep not run yet (or run into another out_dir)
      // has: said, not left for the reader to puzzle over.
      std::size_t done = 0, points = 0;
      for (const exp::SweepPoint& point : exp::expand_sweep(spec)) {
        ++points;
        if (exp::find_sweep_run(spec, point).kind == exp::SweepRunState::Kind::kDone) ++done;
      }
      say(std::to_string(done) + " of the " + std::to_string(points) + " runs have finished" +
          (done == 0 ? ": every cell is '-' (run the sweep first, or check its out_dir " +
                           spec.out_dir.string() + ")"
                     : std::string()));
      return;
    }
    const exp::SweepOutcome outcome = exp::run_sweep(spec, say, args->dry_run, isatty(fileno(stderr)) != 0, shard);
    const bool dry = args->dry_run;
    say("sweep " + std::string(dry ? "(dry run) " : "") + spec.out_dir.string() + ": " +
        std::to_string(outcome.trained) + (dry ? " to train, " : " trained, ") +
        std::to_string(outcome.resumed) + (dry ? " to resume, " : " resumed, ") +
        std::to_string(outcome.skipped) + " already done, diverged or in use" +
        (outcome.diverged > 0 ? ", " + std::to_string(outcome.diverged) + " diverged now" : "") +
        (outcome.other_shards > 0
             ? ", " + std::to_string(outcome.other_shards) + " left to the other shards"
             : ""));
  });
}

}  // namespace lpdt::cli
