#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "lpdt/cli/commands.h"
#include "lpdt/cli/option_checks.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/cost_analysis.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/run_folder.h"

namespace lpdt::cli {

void add_cost_command(CLI::App& app) {
  struct Args {
    std::string config_path;
    std::vector<std::string> overrides;
    std::string energy_table;
    std::string json_path;
    bool per_layer = false;
    bool measure = false;
    bool table10 = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "cost",
      "The paper's hardware cost model (docs/cost.md) for an experiment's model and algorithm, "
      "fp32 and 8-bit side by side: additions and multiplications per layer (Tables 7 and 9), "
      "energy, and per-node memory (weights, activations, gradients, optimizer, communication).");
  auto* config_option =
      cmd->add_option("-c,--config", args->config_path, "Experiment TOML file (see configs/)")
          ->check(CLI::ExistingFile);
  auto* set_option =
      cmd->add_option("-s,--set", args->overrides, "Override a key: --set section.key=value");
  cmd->add_option("--energy-table", args->energy_table,
                  "TOML file of per-operation energies in pJ (name, fp32_add_pj, fp32_mult_pj, "
                  "int8_add_pj, int8_mult_pj); default: Horowitz 2014, 45 nm")
      ->check(CLI::ExistingFile);
  auto* json_option = cmd->add_option("--json", args->json_path,
                                      "Also write the report as JSON (cost.json format)")
                         ->check(non_empty_path());
  auto* per_layer_option = cmd->add_flag("--per-layer", args->per_layer, "Print every layer's row");
  auto* measure_option =
      cmd->add_flag("--measure", args->measure,
                    "Also run real training steps and measure the memory they hold");
  // The table is the paper's fixed models: options of an experiment's report do not apply.
  cmd->add_flag("--table10", args->table10, "Recompute the paper's Table 10 next to its numbers")
      ->excludes(config_option)
      ->excludes(set_option)
      ->excludes(json_option)
      ->excludes(per_layer_option)
      ->excludes(measure_option);
  cmd->callback([args]() {
    exp::check_output_file(args->json_path, "cost --json");
    exp::check_replaces_only_own_json(args->json_path, "cost --json",
                                      {"model", "precisions", "energy_table"},
                                      "an earlier lpdt cost result");
    metrics::EnergyTable energy;
    if (!args->energy_table.empty()) energy = exp::load_energy_table(args->energy_table);
    if (args->table10) {
      std::cout << exp::paper_table10(energy);
      return;
    }
    std::optional<std::string> path =
        args->config_path.empty() ? std::nullopt : std::optional<std::string>(args->config_path);
    exp::CostOptions options;
    options.config = load_experiment_config(path, args->overrides);
    options.input = exp::dataset_input_shape(options.config);
    options.energy = energy;
    options.measure = args->measure;
    const exp::CostReport report = exp::analyse_cost(options);
    // The file first: a write that fails (a path the early check could not see through) stops the
    // command before it prints a report that seems to have succeeded.
    if (!args->json_path.empty()) {
      exp::write_text_file(args->json_path, exp::to_json(report).dump(1) + "\n");
    }
    std::cout << exp::describe(report, args->per_layer);
    if (!args->json_path.empty()) std::cout << "json: " << args->json_path << "\n";
  });
}

}  // namespace lpdt::cli
