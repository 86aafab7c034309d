#include <CLI/CLI.hpp>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/exp/throughput_bench.h"

namespace lpdt::cli {

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<exp::ThroughputBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Training throughput (images/s) of the node-batched engine vs one model per node run in "
      "turn, measured in the same run");
  cmd->add_option("--arch", options->arch, "Model")->capture_default_str();
  cmd->add_option("--depth", options->depth, "ResNet depth")->capture_default_str();
  cmd->add_option("--nodes", options->nodes, "Node counts to measure")->capture_default_str();
  cmd->add_option("--batch", options->batch_size, "Images per node per step")
      ->capture_default_str();
  cmd->add_option("--steps", options->steps, "Timed steps per measurement")->capture_default_str();
  cmd->add_option("--warmup", options->warmup_steps, "Untimed steps first")->capture_default_str();
  cmd->add_option("--threads", options->threads, "Intra-op threads (0 = all cores)")
      ->capture_default_str();
  cmd->add_option("--channels", options->channels, "Input channels")->capture_default_str();
  cmd->add_option("--size", options->size, "Input height and width")->capture_default_str();
  cmd->add_option("--nodes-per-pass", options->nodes_per_pass,
                  "The engine's nodes per forward/backward pass (0 = all)")
      ->capture_default_str();
  cmd->add_option("--json", options->json_path, "Also write the results as JSON");
  cmd->callback([options]() {
    exp::run_throughput_bench(*options,
                              [](const std::string& line) { std::cout << line << std::endl; });
  });
}

}  // namespace lpdt::cli
