#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/cli/option_checks.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/run_folder.h"
#include "lpdt/graph/export.h"
#include "lpdt/graph/factory.h"

namespace lpdt::cli {
namespace {

void write_file(const std::string& path, const std::string& text) {
  exp::write_text_file(path, text);
}

}  // namespace

void add_topo_command(CLI::App& app) {
  struct Args {
    std::string name = "directed-ring";
    std::int64_t nodes = 8;
    std::string mixing = "uniform";
    std::uint64_t seed = 1234;
    std::int64_t rows = 0;
    std::int64_t out_degree = 2;
    std::string dot_path, json_path;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "topo", "Print a topology: edges, mixing matrix, in/out degrees, spectral gap; export it");
  cmd->add_option("-t,--topology", args->name,
                  "directed-ring | ring | torus | complete | exponential | random | "
                  "one-peer-exponential")
      ->capture_default_str();
  cmd->add_option("-n,--nodes", args->nodes, "Number of nodes")
      ->capture_default_str()
      ->check(at_least(1));
  cmd->add_option("-m,--mixing", args->mixing, "uniform | metropolis")->capture_default_str();
  CLI::Option* seed_option = cmd->add_option("--seed", args->seed, "Seed of the random digraph")
                                 ->capture_default_str()
                                 ->check(seed_value());
  CLI::Option* rows_option = cmd->add_option("--rows", args->rows, "Torus rows (0 = most square)")
                                 ->capture_default_str()
                                 ->check(at_least(0));
  CLI::Option* out_degree_option =
      cmd->add_option("--out-degree", args->out_degree, "Random digraph out-degree")
          ->capture_default_str()
          ->check(at_least(1));
  cmd->add_option("--dot", args->dot_path, "Write the graph as Graphviz DOT to this file")
      ->check(non_empty_path());
  cmd->add_option("--json", args->json_path, "Write the graph and its mixing matrix as JSON")
      ->check(non_empty_path());
  cmd->callback([args, seed_option, rows_option, out_degree_option]() {
    // An option given for another topology changes nothing: said, so that the graph printed is
    // not taken for one it shaped.
    for (const auto& [option, applies_to] :
         {std::pair{seed_option, "random"}, {rows_option, "torus"}, {out_degree_option, "random"}}) {
      if (option->count() > 0 && args->name != applies_to) {
        std::cout << "note: " << option->get_name() << " shapes the " << applies_to
                  << " topology only; " << args->name << " ignores it\n";
      }
    }
    exp::check_output_file(args->dot_path, "topo --dot");
    exp::check_output_file(args->json_path, "topo --json");
    // Replace only an earlier export of a graph, never another file given by mistake.
    exp::check_replaces_only_own_output(args->dot_path, "topo --dot", "digraph ",
                                        "an earlier lpdt topo --dot graph");
    exp::check_replaces_only_own_json(args->json_path, "topo --json",
                                      {"name", "num_nodes", "edges", "mixing_matrix"},
                                      "an earlier lpdt topology");
    // One file by any two names (x.out and ./x.out, a link): weakly_canonical leaves a relative
    // path whose folder part is empty relative, so both are made absolute first.
    const auto file_of = [](const std::string& path) {
      std::error_code ec;
      return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
    };
    if (!args->dot_path.empty() && !args->json_path.empty() &&
        file_of(args->dot_path) == file_of(args->json_path)) {
      throw ConfigError("topo --dot and --json both name " + args->json_path +
                        ": the JSON would replace the DOT file; give them different names");
    }
    // The rule of lpdt train's graph.mixing, so that topo shows only graphs train would run: a
    // directed kind takes uniform mixing at every size, also where few nodes pair its edges up.
    if (args->mixing == "metropolis") {
      const auto kind = config_enum_from_string<GraphConfig::Topology>(args->name);
      if (kind && GraphConfig::is_directed(*kind)) {
        throw ConfigError("topo --mixing metropolis needs an undirected topology (ring, torus, "
                          "complete), as lpdt train's graph.mixing does, but --topology " +
                          args->name + " is a directed kind; use --mixing uniform");
      }
    }
    graph::TopologyOptions options;
    options.name(args->name).num_nodes(args->nodes).mixing(args->mixing).seed(args->seed);
    if (args->name == "torus") options.rows(args->rows);
    if (args->name == "random") options.random_out_degree(args->out_degree);
    const auto topology = graph::make_topology(options);
    std::cout << graph::describe(*topology);
    if (!args->dot_path.empty()) {
      write_file(args->dot_path, graph::to_dot(*topology));
      std::cout << "wrote " << args->dot_path << "\n";
    }
    if (!args->json_path.empty()) {
      write_file(args->json_path, graph::to_json(*topology));
      std::cout << "wrote " << args->json_path << "\n";
    }
  });
}

}  // namespace lpdt::cli
