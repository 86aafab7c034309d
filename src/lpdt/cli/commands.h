#pragma once
// The subcommands of the lpdt executable. Each registers itself on the CLI11 app and runs in its
// callback; errors propagate as exceptions to main, which maps them to exit codes.
#include <string>

namespace CLI {
class App;
}

namespace lpdt::cli {

std::string version_string();
void add_train_command(CLI::App& app);
void add_topo_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_cost_command(CLI::App& app);
// The exit code a subcommand asked for (0 unless it reported a failure itself).
int exit_code();
void set_exit_code(int code);

}  // namespace lpdt::cli
