#include <CLI/CLI.hpp>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/cli/option_checks.h"
#include "lpdt/exp/report/report_page.h"
#include "lpdt/exp/run_folder.h"

namespace lpdt::cli {

void add_report_command(CLI::App& app) {
  struct Args {
    std::string dir;
    std::string out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write one self-contained HTML page with SVG plots (docs/reports.md) of a run folder "
      "(accuracy per epoch and node, bytes sent, consensus distance, class distribution, "
      "topology, memory and energy) or of a sweep folder (accuracy against skew, the tables, "
      "every run). Opens in any browser; needs no network and runs no scripts.");
  cmd->add_option("dir", args->dir, "Run folder (runs/<run>) or sweep folder (its out_dir)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-o,--out", args->out, "HTML file to write (default: DIR/report.html)")
      ->check(non_empty_path());
  cmd->callback([args]() {
    exp::check_output_file(args->out, "report --out");
    exp::check_replaces_only_own_output(args->out, "report --out", "<!DOCTYPE html",
                                        "an HTML page");
    const auto path = exp::report::write_report(
        args->dir,
        args->out.empty() ? std::nullopt : std::optional<std::filesystem::path>(args->out));
    std::cout << "report: " << path.string() << std::endl;
  });
}

}  // namespace lpdt::cli
