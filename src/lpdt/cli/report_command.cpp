#include <CLI/CLI.hpp>
#include <cctype>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/core/error.h"
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
    // The default, DIR/report.html, is checked as a given name is: a file of that name that is
    // not an earlier report is left alone.
    const std::string out =
        args->out.empty() ? (std::filesystem::path(args->dir) / "report.html").string() : args->out;
    const std::string option = args->out.empty() ? "report (its default DIR/report.html)"
                                                 : "report --out";
    exp::check_output_file(out, option);
    exp::check_replaces_only_own_output(out, option, "<!DOCTYPE html", "an HTML page");
    // The page is HTML: a name with another extension is a slip that could take a run file's
    // place (RUN/summary.json of a run still training, which has none yet).
    std::string extension = std::filesystem::path(out).extension().string();
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (extension != ".html" && extension != ".htm") {
      throw ConfigError(option + " " + out +
                        ": expected a file name ending in .html (the report is an HTML page; a "
                        "run folder's own files, summary.json and the CSV tables, are not "
                        "replaced)");
    }
    const auto path = exp::report::write_report(args->dir, std::filesystem::path(out));
    std::cout << "report: " << path.string() << std::endl;
  });
}

}  // namespace lpdt::cli
