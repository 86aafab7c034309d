#include <CLI/CLI.hpp>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/cli/option_checks.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/graph/factory.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/conv_forms_bench.h"
#include "lpdt/exp/precision_bench.h"
#include "lpdt/exp/scaling_bench.h"
#include "lpdt/exp/throughput_bench.h"
#include "lpdt/exp/wire_bench.h"

namespace lpdt::cli {

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<exp::ThroughputBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Training throughput (images/s) of the node-batched engine vs one model per node run in "
      "turn, measured in the same run");
  cmd->add_option("--arch", options->arch, "Model")->capture_default_str();
  cmd->add_option("--depth", options->depth, "ResNet depth")
      ->capture_default_str()
      ->check(at_least(1));
  // Counts and sizes are checked here, so that a bad one is named before anything runs (CLI11's
  // message names the option and the value; exit code 2 like every usage error).
  CLI::Option* nodes_option =
      add_list_option(cmd, "--nodes", options->nodes, "Node counts to measure",
                      integer_in(1, graph::kMaxNodes));
  cmd->add_option("--batch", options->batch_size, "Images per node per step")
      ->check(at_least(1))
      ->capture_default_str();
  // A million steps is days of any model here: more is a typo, not a benchmark.
  cmd->add_option("--steps", options->steps, "Timed steps per measurement (1 to 1000000)")
      ->check(integer_in(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup_steps, "Untimed steps first (0 to 1000000)")
      ->check(integer_in(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--threads", options->threads, "Intra-op threads (0 = all cores)")
      ->check(integer_in(0, kMaxThreads))
      ->capture_default_str();
  // Image channels: grayscale, colour, a multispectral stack; thousands would make the stem a
  // silent multi-gigabyte allocation rather than a benchmark.
  cmd->add_option("--channels", options->channels, "Input channels (1 to 256)")
      ->check(integer_in(1, 256))
      ->capture_default_str();
  cmd->add_option("--size", options->size, "Input height and width")
      ->check(integer_in(1, kLargestImageSide))
      ->capture_default_str();
  cmd->add_option("--nodes-per-pass", options->nodes_per_pass,
                  "The engine's nodes per forward/backward pass (0 = automatic: on the CPU as "
                  "many as keep a pass's saved activations within 32 MiB, 1 to 16; all on a GPU)")
      ->check(at_least(0))
      ->capture_default_str();
  auto pass_workers = std::make_shared<std::vector<int>>(std::vector<int>{0});
  add_list_option(cmd, "--pass-workers", *pass_workers,
                  "CPU: the engine's passes side by side on this many worker threads of one "
                  "intra-op thread each (0 = automatic, 1 = in turn on --threads threads; as "
                  "run.pass_workers). With --precision a list, e.g. 1,2: a row each, their "
                  "steps alternating in one process",
                  integer_in(0, kMaxThreads));
  cmd->add_option("--device", options->device, "cpu | cuda")->capture_default_str();
  CLI::Option* model_precision_option =
      cmd->add_option("--model-precision", options->precision,
                      "fp32 | bf16 | int8 (simulated) for the engine-vs-per-node comparison")
          ->capture_default_str();
  // Checked whatever the model (LeNet-5 and the MLP have no normaliser and would ignore it).
  std::vector<std::string> norms;
  for (const auto name : config_names<ModelConfig::Norm>()) norms.emplace_back(name);
  CLI::Option* norm_option =
      cmd->add_option("--norm", options->norm, "Normalisation (model.norm's names)")
          ->check(CLI::IsMember(norms))
          ->capture_default_str();
  cmd->add_option("--json", options->json_path, "Also write the results as JSON")
      ->check(non_empty_path());
  CLI::Option* profiler_range_option =
      cmd->add_option("--cuda-profiler-range", options->cuda_profiler_range,
                      "none | engine | cuda-graph: run that mode's timed steps between "
                      "cudaProfilerStart and cudaProfilerStop, for a profiler started with "
                      "collection off (ncu --profile-from-start off; docs/benchmarks.md, GPU)")
          ->check(CLI::IsMember({"none", "engine", "cuda-graph"}))
          ->capture_default_str();
  auto precision = std::make_shared<bool>(false);
  auto modes = std::make_shared<std::vector<std::string>>(exp::PrecisionBenchOptions().modes);
  CLI::Option* precision_flag = cmd->add_flag(
      "--precision", *precision,
      "Compare precisions instead (fp32, bf16, int8 simulated, int8 integer): step time and "
      "the activation memory a pass holds for backward, in the same run");
  CLI::Option* modes_option =
      add_list_option(cmd, "--modes", *modes,
                      "Precisions compared by --precision (an int8 mode with -bf16wgrad: "
                      "bfloat16 weight gradients, quant.weight_grad)");
  auto profile_rows = std::make_shared<std::size_t>(0);
  cmd->add_option("--profile", *profile_rows,
                  "With --precision: after the timed steps, run as many again observing LibTorch's "
                  "operator ranges (on the pass workers too: then rows are the threads' time) and "
                  "print this many operators by self time per step (0 = off, at most 100000)")
      ->capture_default_str()
      ->check(integer_in(0, 100000));
  auto scaling = std::make_shared<bool>(false);
  CLI::Option* scaling_flag = cmd->add_flag(
      "--scaling", *scaling,
      "Step time, memory, page faults and heap growth of the engine against the node "
      "count instead (e.g. --arch lenet5 --nodes 1,8,64,256,1024 --channels 1 --size 28)");
  auto wire = std::make_shared<bool>(false);
  auto wire_options = std::make_shared<exp::WireBenchOptions>();
  CLI::Option* wire_flag = cmd->add_flag("--wire", *wire,
                "Bytes of one gossip message per compressor and value format for the model's "
                "layout, with encode / decode speed (docs/wire.md)");
  CLI::Option* compressors_option =
      add_list_option(cmd, "--compressors", wire_options->compressors,
                      "Compressors compared by --wire: none, topk:<keep>, randomk:<keep>");
  CLI::Option* values_option =
      add_list_option(cmd, "--values", wire_options->values,
                      "Message value formats compared by --wire");
  auto conv_forms = std::make_shared<bool>(false);
  CLI::Option* conv_forms_flag = cmd->add_flag("--conv-forms", *conv_forms,
                "Time each stride-1 'same' convolution shape of the model in oneDNN's forward "
                "kernel against its backward-data form (what the fp32 layers run on AVX2 CPUs), "
                "then every one-group convolution shape's training-step convolutions through "
                "LibTorch against oneDNN's primitives called directly (what the fp32 layers "
                "run), and those against oneDNN's Winograd primitives where it has them (3x3 "
                "stride 1, AVX-512), alternating, one node; --steps calls of each form");
  // One benchmark per call: a second would be silently skipped.
  const std::vector<CLI::Option*> benchmarks = {precision_flag, scaling_flag, wire_flag,
                                                conv_forms_flag};
  for (CLI::Option* a : benchmarks) {
    for (CLI::Option* b : benchmarks) {
      if (a != b) a->excludes(b);
    }
  }
  // Options of one benchmark are refused without it rather than ignored.
  modes_option->needs(precision_flag);
  // --precision compares its --modes; the others measure one precision's shapes or bytes.
  for (CLI::Option* other : benchmarks) {
    model_precision_option->excludes(other);
    profiler_range_option->excludes(other);  // brackets the throughput comparison's modes
  }
  norm_option->excludes(conv_forms_flag);  // a convolution's shape does not depend on the norm
  compressors_option->needs(wire_flag);
  values_option->needs(wire_flag);
  cmd->callback([options, nodes_option, precision, modes, profile_rows, scaling, wire, wire_options,
                 conv_forms, pass_workers]() {
    const auto print = [](const std::string& line) { std::cout << line << std::endl; };
    exp::check_bench_json_path(options->json_path, "bench");
    if (*profile_rows > 0 && !*precision) {
      throw ConfigError("bench --profile: profiles the steps of --precision; add --precision");
    }
    if (pass_workers->empty() || (pass_workers->size() != 1 && !*precision)) {
      throw ConfigError("bench --pass-workers: expected one value (a list alternates steps in "
                        "--precision only)");
    }
    options->pass_workers = pass_workers->front();
    // An entry given twice (a typo in the list) would measure it twice and another one not, and
    // a mode against itself reads as a ratio.
    const auto refuse_repeats = [](const std::string& option, const auto& values,
                                   const std::string& what) {
      for (std::size_t i = 0; i < values.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          if (values[i] == values[j]) {
            throw ConfigError("bench " + option + ": " + CLI::detail::to_string(values[i]) +
                              " is given twice; give each " + what + " once");
          }
        }
      }
    };
    refuse_repeats("--nodes", options->nodes, "node count");
    refuse_repeats("--modes", *modes, "mode");
    refuse_repeats("--compressors", wire_options->compressors, "compressor");
    refuse_repeats("--values", wire_options->values, "value format");
    refuse_repeats("--pass-workers", *pass_workers, "worker count");
    if (options->arch == "transformer" || options->arch == "distilbert") {
      throw ConfigError("bench --arch " + options->arch +
                        ": bench feeds images [nodes, batch, channels, size, size]; expected an "
                        "image model (resnet, resnet18, resnet34, mobilenetv2, vgg11, lenet5, "
                        "mlp). A transformer's training speed is train_images_per_s in its run's summary.json");
    }
    if (*wire) {
      exp::WireBenchOptions w = *wire_options;
      w.arch = options->arch;
      w.depth = options->depth;
      w.norm = options->norm;
      if (nodes_option->count() > 0) {
        if (options->nodes.size() != 1) {
          throw ConfigError("bench --wire --nodes: the messages of one node count are measured; "
                            "give one value");
        }
        w.nodes = options->nodes.front();
      }
      w.channels = options->channels;
      w.size = options->size;
      w.repeats = options->steps;
      w.json_path = options->json_path;
      exp::run_wire_bench(w, print);
      return;
    }
    if (*conv_forms) {
      exp::ConvFormsBenchOptions c;
      c.arch = options->arch;
      c.depth = options->depth;
      c.batch_size = options->batch_size;
      c.channels = options->channels;
      c.size = options->size;
      c.threads = options->threads;
      c.rounds = options->steps;
      c.warmup_rounds = options->warmup_steps;
      c.json_path = options->json_path;
      exp::run_conv_forms_bench(c, print);
      return;
    }
    if (*scaling) {
      exp::ScalingBenchOptions s;
      s.arch = options->arch;
      s.depth = options->depth;
      s.norm = options->norm;
      s.nodes = options->nodes;
      s.batch_size = options->batch_size;
      s.steps = options->steps;
      s.warmup_steps = options->warmup_steps;
      s.threads = options->threads;
      s.channels = options->channels;
      s.size = options->size;
      s.json_path = options->json_path;
      exp::run_scaling_bench(s, print);
      return;
    }
    if (*precision) {
      exp::PrecisionBenchOptions p;
      p.arch = options->arch;
      p.depth = options->depth;
      p.norm = options->norm;
      p.nodes = options->nodes;
      p.batch_size = options->batch_size;
      p.steps = options->steps;
      p.warmup_steps = options->warmup_steps;
      p.threads = options->threads;
      p.nodes_per_pass = options->nodes_per_pass;
      p.pass_workers = *pass_workers;
      p.channels = options->channels;
      p.size = options->size;
      p.modes = *modes;
      p.profile_rows = *profile_rows;
      p.json_path = options->json_path;
      exp::run_precision_bench(p, print);
      return;
    }
    exp::run_throughput_bench(*options, print);
  });
}

}  // namespace lpdt::cli
