// End to end: a small run on synthetic data writes a complete run folder and learns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/types.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/checkpoint.h"
#include "lpdt/exp/config_options.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/report/report_page.h"
#include "lpdt/exp/report/run_results.h"
#include "lpdt/exp/trainer.h"
#include "lpdt/models/model.h"
#include "lpdt/models/safetensors.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("lpdt_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

ExperimentConfig small_synthetic_run(const fs::path& out) {
  return load_experiment_config(
      std::nullopt,
      {"run.out_dir=\"" + out.string() + "\"", "run.name=\"synthetic\"", "run.epochs=3",
       "run.log_every=0", "data.dataset=\"synthetic\"", "data.synthetic_samples_per_class=64",
       "data.synthetic_size=12", "data.batch_size=16", "data.augment=false",
       "data.eval_batch_size=128", "model.arch=\"mlp\"", "model.norm=\"none\"", "graph.nodes=4",
       "optim.lr=0.05", "optim.warmup=\"none\"", "optim.schedule=\"constant\"", "data.skew=0.5"});
}

// Per-node evaluation that outweighs the training is said when the run starts and kept with the
// run's warnings; a run whose nodes train on enough batches has no such warning.
TEST(Train, PerNodeEvaluationThatOutweighsTrainingIsAWarning) {
  const fs::path out = fresh_dir("eval-cost");
  ExperimentConfig config = small_synthetic_run(out);  // 640 training and 640 test samples
  config.run.epochs = 1;
  const auto warned = [](const TrainResult& result) {
    std::ifstream in(result.run_dir / "summary.json");
    const nlohmann::json summary = nlohmann::json::parse(in);
    for (const auto& w : summary.at("warnings")) {
      if (w.get<std::string>().find("eval.per_node = true") != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_FALSE(warned(train(config, [](const std::string&) {})))
      << "4 nodes: 10 batches a node, the evaluation under half the training";
  config.graph.nodes = 32;  // 20 samples a node: one batch of 16, 640 test samples
  std::vector<std::string> lines;
  const TrainResult many = train(config, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_TRUE(warned(many));
  bool said = false;
  for (const auto& line : lines) said = said || line.find("warning: eval.per_node") == 0;
  EXPECT_TRUE(said);
  fs::remove_all(out);
}

TEST(Train, SyntheticRunWritesRunFolderAndLearns) {
  const fs::path out = fresh_dir("train");
  std::vector<std::string> lines;
  const TrainResult result =
      train(small_synthetic_run(out), [&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(fs::exists(result.run_dir));
  for (const char* file : {"config.toml", "metrics.csv", "epochs.csv", "summary.json",
                           "partition.json", "class_histogram.csv"}) {
    EXPECT_TRUE(fs::exists(result.run_dir / file)) << file;
  }
  ASSERT_EQ(result.epochs.size(), 3u);
  // 10 classes of synthetic prototypes: chance is 10%.
  EXPECT_GT(result.final_evaluation.average_model_accuracy, 60.0);
  EXPECT_EQ(result.final_evaluation.node_accuracy.size(), 4u);
  EXPECT_GT(result.mean_gb_sent_per_node, 0.0);

  std::ifstream in(result.run_dir / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["seed"], 1234);
  EXPECT_TRUE(summary["build"].contains("git_revision"));
  EXPECT_EQ(summary["backend"]["cpu_kernels"], simd_level_name(cpu_simd_level()));
  EXPECT_TRUE(summary["warnings"].is_array());
  EXPECT_EQ(summary["config"]["graph"]["nodes"], 4);
  EXPECT_NEAR(summary["final"]["average_model_accuracy"].get<double>(),
              result.final_evaluation.average_model_accuracy, 1e-9);
  // metrics.csv: a header and one row per (evaluated epoch, node).
  std::ifstream metrics(result.run_dir / "metrics.csv");
  int rows = 0;
  for (std::string line; std::getline(metrics, line);) ++rows;
  EXPECT_EQ(rows, 1 + 3 * 4);
  // layers.csv: one row per (evaluated epoch, parameter tensor); each epoch's distances sum to
  // the epoch's consensus distance.
  std::ifstream layers(result.run_dir / "layers.csv");
  std::string header;
  std::getline(layers, header);
  EXPECT_EQ(header, "epoch,layer,numel,distance,relative_distance,mean_node_norm,average_norm");
  std::map<int, double> distance_sum;
  std::map<int, int> layer_rows;
  for (std::string line; std::getline(layers, line);) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    ASSERT_EQ(fields.size(), 7u) << line;
    const int epoch = std::stoi(fields[0]);
    distance_sum[epoch] += std::stod(fields[3]);
    ++layer_rows[epoch];
    EXPECT_GT(std::stod(fields[5]), 0.0) << line;  // no layer of the MLP is all zeros
  }
  ASSERT_EQ(distance_sum.size(), 3u);
  for (const auto& [epoch, sum] : distance_sum) {
    const double whole = result.epochs[epoch - 1].evaluation.consensus_distance;
    EXPECT_GT(whole, 0.0);
    EXPECT_NEAR(sum, whole, 1e-6 * whole) << "epoch " << epoch;
    EXPECT_EQ(layer_rows[epoch], layer_rows[1]);
  }
  EXPECT_GE(layer_rows[1], 4);  // an MLP: at least two weights and two biases
  fs::remove_all(out);
}

// eval.per_node = false: the nodes' own models are not evaluated, so their accuracies are absent
// from every file (an empty CSV field, a JSON null), never written as 0%; such a run resumes, and
// its report draws no line for the nodes' mean.
TEST(Train, WithoutPerNodeEvaluationNodeAccuraciesAreAbsentNotZero) {
  const fs::path out = fresh_dir("no-per-node");
  const auto quiet = [](const std::string&) {};
  const auto config = [&](int epochs) {
    ExperimentConfig c = small_synthetic_run(out);
    c.run.epochs = epochs;
    c.eval.per_node = false;
    return c;
  };
  const TrainResult part = train(config(1), quiet);
  TrainOptions resume;
  resume.resume_dir = part.run_dir;
  const TrainResult result = train(config(2), quiet, resume);
  ASSERT_EQ(result.epochs.size(), 2u);
  for (const EpochSummary& e : result.epochs) {
    EXPECT_TRUE(e.evaluation.node_accuracy.empty());
    EXPECT_TRUE(std::isnan(e.evaluation.mean_accuracy)) << "epoch " << e.epoch;
    EXPECT_TRUE(std::isnan(e.evaluation.min_accuracy));
    EXPECT_TRUE(std::isnan(e.evaluation.max_accuracy));
    EXPECT_GT(e.evaluation.average_model_accuracy, 20.0);
  }
  std::ifstream in(result.run_dir / "summary.json");
  const nlohmann::json final = nlohmann::json::parse(in).at("final");
  EXPECT_TRUE(final.at("node_accuracy").empty());
  for (const char* key : {"mean_node_accuracy", "min_node_accuracy", "max_node_accuracy"}) {
    EXPECT_TRUE(final.at(key).is_null()) << key << " = " << final.at(key).dump();
  }
  EXPECT_TRUE(final.at("average_model_accuracy").is_number());
  // epochs.csv: the three node columns empty, the others numbers.
  std::ifstream epochs_csv(result.run_dir / "epochs.csv");
  std::string line;
  std::getline(epochs_csv, line);
  int rows = 0;
  while (std::getline(epochs_csv, line)) {
    ++rows;
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    ASSERT_EQ(fields.size(), 10u) << line;
    EXPECT_EQ(fields[3] + fields[4] + fields[5], "") << line;
    EXPECT_GT(std::stod(fields[6]), 20.0) << line;
  }
  EXPECT_EQ(rows, 2);
  const report::RunResults run = report::read_run(result.run_dir);
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_TRUE(std::isnan(run.epochs[1].mean_accuracy));
  EXPECT_NEAR(run.epochs[1].average_model_accuracy,
              result.epochs[1].evaluation.average_model_accuracy, 1e-3);
  const std::string html = report::run_report_html(run);
  EXPECT_EQ(html.find("mean-line"), std::string::npos);
  EXPECT_NE(html.find("average-line"), std::string::npos);
  fs::remove_all(out);
}

// 8-bit messages end to end (docs/wire.md): Choco and DeepSqueeze with top-10% int8 messages still
// learn, and send fewer bytes than with float32 messages.
TEST(Train, Int8MessagesLearnAndSendFewerBytes) {
  const fs::path out = fresh_dir("int8_messages");
  const auto quiet = [](const std::string&) {};
  for (const char* algorithm : {"choco", "deep-squeeze"}) {
    SCOPED_TRACE(algorithm);
    auto run = [&](const char* values) {
      ExperimentConfig config = small_synthetic_run(out);
      config.algo.name = std::string(algorithm) == "choco" ? AlgoConfig::Name::kChoco
                                                           : AlgoConfig::Name::kDeepSqueeze;
      config.algo.compressor = AlgoConfig::Compressor::kTopK;
      config.algo.keep_fraction = 0.1;
      config.algo.consensus_step = 0.5;
      config.algo.message_values = std::string(values) == "int8" ? AlgoConfig::MessageValues::kInt8
                                                                 : AlgoConfig::MessageValues::kFp32;
      return train(config, quiet);
    };
    const TrainResult fp32 = run("fp32");
    const TrainResult int8 = run("int8");
    EXPECT_GT(int8.final_evaluation.average_model_accuracy, 60.0);
    EXPECT_GT(int8.final_evaluation.average_model_accuracy,
              fp32.final_evaluation.average_model_accuracy - 10.0);
    // Values: 1 byte instead of 4; indices and headers unchanged.
    EXPECT_LT(int8.mean_gb_sent_per_node, 0.7 * fp32.mean_gb_sent_per_node);
    std::ifstream in(int8.run_dir / "summary.json");
    const nlohmann::json summary = nlohmann::json::parse(in);
    EXPECT_EQ(summary["config"]["algo"]["message_values"], "int8");
  }
  fs::remove_all(out);
}

TEST(Train, SameSeedGivesBitIdenticalResults) {
  const fs::path out = fresh_dir("repro");
  const auto quiet = [](const std::string&) {};
  const TrainResult a = train(small_synthetic_run(out), quiet);
  const TrainResult b = train(small_synthetic_run(out), quiet);
  EXPECT_NE(a.run_dir, b.run_dir) << "a second run must not reuse the first run's folder";
  EXPECT_EQ(a.final_evaluation.node_accuracy, b.final_evaluation.node_accuracy);
  EXPECT_EQ(a.final_evaluation.consensus_distance, b.final_evaluation.consensus_distance);
  EXPECT_EQ(a.bytes_sent_per_node, b.bytes_sent_per_node);
  fs::remove_all(out);
}

// Injected faults in the simulator: messages lost, late, and a node that dies at step 20. The run
// completes, reports what happened, leaves the dead node out of its evaluations, and still learns
// (graceful degradation: within 15 points of the fault-free run).
TEST(Train, SurvivesInjectedFaultsAndReportsThem) {
  const fs::path out = fresh_dir("faults");
  const auto quiet = [](const std::string&) {};
  ExperimentConfig config = small_synthetic_run(out);
  config.graph.topology = GraphConfig::Topology::kExponential;
  config.algo.compressor = AlgoConfig::Compressor::kTopK;
  config.algo.keep_fraction = 0.2;
  config.algo.consensus_step = 0.5;
  const TrainResult clean = train(config, quiet);
  config.faults.drop_probability = 0.2;
  config.faults.delay_probability = 0.2;
  config.faults.delay_rounds = 2;
  config.faults.kill_nodes = {2};
  config.faults.kill_step = 4;
  std::vector<std::string> lines;
  const TrainResult faulty = train(config, [&](const std::string& line) { lines.push_back(line); });
  ASSERT_EQ(faulty.final_evaluation.node_accuracy.size(), 3u);  // node 2 is left out
  EXPECT_GT(faulty.final_evaluation.average_model_accuracy,
            clean.final_evaluation.average_model_accuracy - 15.0);
  std::ifstream in(faulty.run_dir / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  const auto& faults = summary.at("faults");
  EXPECT_GT(faults.at("messages_lost").get<int>(), 0);
  EXPECT_GT(faults.at("messages_late").get<int>(), faults.at("messages_lost").get<int>() / 2);
  ASSERT_EQ(faults.at("dead_nodes").size(), 1u);
  EXPECT_EQ(faults.at("dead_nodes")[0].at("node").get<int>(), 2);
  EXPECT_EQ(faults.at("dead_nodes")[0].at("seen_in_round").get<int>(), 4);
  EXPECT_EQ(faults.at("survivors").get<int>(), 3);
  // summary.json's node_accuracy is by node id: null for dead node 2, the others in place.
  const auto& by_node = summary.at("final").at("node_accuracy");
  ASSERT_EQ(by_node.size(), 4u);
  EXPECT_TRUE(by_node[2].is_null());
  EXPECT_EQ(by_node[3].get<double>(), faulty.final_evaluation.node_accuracy[2]);
  EXPECT_EQ(by_node[1].get<double>(), faulty.final_evaluation.node_accuracy[1]);
  // The dead node's bytes stop at its death: fewer than any survivor's.
  const auto& bytes = summary.at("final").at("bytes_sent_per_node");
  for (const int survivor : {0, 1, 3}) {
    EXPECT_LT(bytes[2].get<std::int64_t>(), bytes[survivor].get<std::int64_t>()) << survivor;
  }
  bool reported = false;
  for (const auto& line : lines)
    reported |= line.find("round 4: node 2 is dead") != std::string::npos;
  EXPECT_TRUE(reported);
  fs::remove_all(out);
}

TEST(Train, MissingDatasetFileIsAClearError) {
  const fs::path out = fresh_dir("missing");
  ExperimentConfig config = small_synthetic_run(out);
  config.data.dataset = DataConfig::Dataset::kFashionMnist;
  config.data.dir = (out / "no-such-folder").string();
  try {
    train(config, [](const std::string&) {});
    FAIL() << "a missing dataset folder was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-folder"), std::string::npos) << e.what();
  }
  fs::remove_all(out);
}

// Nodes dying together that cut the survivors' graph: one warning (not one per dead node), with
// the round, recorded in summary.json's warnings (before, only printed, and once per node).
TEST(Train, ACutGraphIsWarnedOnceAndRecorded) {
  const fs::path out = fresh_dir("cut");
  ExperimentConfig config = small_synthetic_run(out);
  config.run.epochs = 1;
  config.graph.nodes = 5;  // a directed ring: 0 -> 1 -> ... -> 4 -> 0
  config.faults.kill_nodes = {1, 2, 3};
  config.faults.kill_step = 2;
  std::vector<std::string> lines;
  const TrainResult run = train(config, [&](const std::string& line) { lines.push_back(line); });
  const std::string cut = "round 2: without the dead nodes the graph is no longer strongly connected";
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& line) {
                            return line.find("no longer strongly connected") != std::string::npos;
                          }),
            1);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.find("warning: " + cut) != std::string::npos;
  }));
  std::ifstream in(run.run_dir / "summary.json");
  const auto warnings =
      nlohmann::json::parse(in).at("warnings").get<std::vector<std::string>>();
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) {
    return w.find(cut) != std::string::npos;
  }));
  fs::remove_all(out);
}

// A learning rate that overflows the weights in the first steps: the run stops at the step where
// a loss stops being finite, names it and the nodes, says what to change, and keeps what it wrote.
TEST(Train, ADivergedRunStopsAndSaysWhatToChange) {
  const fs::path out = fresh_dir("diverged");
  ExperimentConfig config = small_synthetic_run(out);
  config.optim.lr = 1e30;
  config.algo.name = AlgoConfig::Name::kChoco;
  config.algo.consensus_step = 0.5;
  try {
    train(config, [](const std::string&) {});
    FAIL() << "a run whose loss is not finite went on";
  } catch (const TrainingDiverged& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("training diverged at step "), std::string::npos) << message;
    EXPECT_NE(message.find("of epoch 1"), std::string::npos) << message;
    EXPECT_NE(message.find("is not finite"), std::string::npos) << message;
    EXPECT_NE(message.find("optim.lr (now 1e+30)"), std::string::npos) << message;
    EXPECT_NE(message.find("algo.consensus_step (now 0.5)"), std::string::npos) << message;
    // The default weight decay 1e-4 at this lr overshoots on its own: named too.
    EXPECT_NE(message.find("lower optim.weight_decay (now 0.0001; lr * weight_decay = 1e+26"),
              std::string::npos)
        << message;
  }
  // The run folder keeps what was written at the start; no summary of a run that did not finish.
  ASSERT_TRUE(fs::exists(out));
  const fs::path run_dir = fs::directory_iterator(out)->path();
  EXPECT_TRUE(fs::exists(run_dir / "config.toml"));
  EXPECT_TRUE(fs::exists(run_dir / "epochs.csv"));
  EXPECT_FALSE(fs::exists(run_dir / "summary.json"));
  std::ifstream in(run_dir / kDivergedFile);
  const nlohmann::json record = nlohmann::json::parse(in);
  EXPECT_EQ(record.at("epoch").get<int>(), 1);
  EXPECT_NE(record.at("message").get<std::string>().find("diverged"), std::string::npos);
  // Resuming it would replay the same steps: refused, naming diverged.json and what to change.
  TrainOptions resume;
  resume.resume_dir = run_dir;
  try {
    config.run.epochs = 4;
    train(config, [](const std::string&) {}, resume);
    FAIL() << "a diverged run was resumed";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("the run diverged"), std::string::npos) << message;
    EXPECT_NE(message.find("diverged.json"), std::string::npos) << message;
    EXPECT_NE(message.find("optim.lr"), std::string::npos) << message;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace lpdt::exp

namespace lpdt::exp {
namespace {

// A file's bytes as text ("" when it cannot be read).
std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A run with every kind of state: Choco's public copies, momentum, push-sum weights on a directed
// ring, top-k with int8 messages (draws keyed on the round), augmentation streams.
ExperimentConfig stateful_run(const fs::path& out, int epochs) {
  ExperimentConfig config = small_synthetic_run(out);
  config.run.epochs = epochs;
  config.data.augment = true;
  config.algo.compressor = AlgoConfig::Compressor::kTopK;
  config.algo.keep_fraction = 0.2;
  config.algo.consensus_step = 0.5;
  config.algo.message_values = AlgoConfig::MessageValues::kInt8;
  return config;
}

// The same with injected faults: messages in flight at the checkpoint, and Choco's newest heard
// push-sum weights, are part of the state.
ExperimentConfig faulty_stateful_run(const fs::path& out, int epochs) {
  ExperimentConfig config = stateful_run(out, epochs);
  config.faults.drop_probability = 0.3;
  config.faults.delay_probability = 0.3;
  config.faults.delay_rounds = 3;
  return config;
}

class ResumeCase : public ::testing::TestWithParam<bool> {};

// Checkpoint after 2 epochs, resume to 3: the same numbers, bit for bit, as 3 epochs in one go.
TEST_P(ResumeCase, ResumedRunIsBitIdenticalToAnUninterruptedOne) {
  const auto make = GetParam() ? faulty_stateful_run : stateful_run;
  const fs::path out = fresh_dir(GetParam() ? "resume-faults" : "resume");
  const auto quiet = [](const std::string&) {};
  const TrainResult full = train(make(out, 3), quiet);
  const TrainResult part = train(make(out, 2), quiet);
  if (GetParam()) {
    const TrainingState mid = read_checkpoint(part.run_dir / kCheckpointFile);
    EXPECT_GT(mid.optimizer.at("fault_held_meta").size(0), 0) << "no message in flight";
  }
  TrainOptions resume;
  resume.resume_dir = part.run_dir;
  const TrainResult resumed = train(make(out, 3), quiet, resume);
  EXPECT_EQ(resumed.run_dir, part.run_dir);
  ASSERT_EQ(resumed.epochs.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(resumed.epochs[e].train_loss, full.epochs[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(resumed.epochs[e].evaluation.node_accuracy, full.epochs[e].evaluation.node_accuracy);
    EXPECT_EQ(resumed.epochs[e].evaluation.consensus_distance,
              full.epochs[e].evaluation.consensus_distance);
  }
  EXPECT_EQ(resumed.bytes_sent_per_node, full.bytes_sent_per_node);
  EXPECT_EQ(resumed.steps, full.steps);
  // The fault counts in summary.json continue the checkpoint's: those of the whole run.
  const auto faults_of = [](const TrainResult& r) {
    std::ifstream in(r.run_dir / "summary.json");
    return nlohmann::json::parse(in).value("faults", nlohmann::json());
  };
  EXPECT_EQ(faults_of(resumed), faults_of(full));
  if (GetParam()) {
    EXPECT_GT(faults_of(full).at("messages_lost").get<int>(), 0);
    EXPECT_GE(faults_of(full).at("messages_in_flight").get<int>(), 0);
  }
  const TrainingState a = read_checkpoint(full.run_dir / kCheckpointFile);
  const TrainingState b = read_checkpoint(resumed.run_dir / kCheckpointFile);
  EXPECT_EQ(b.epochs_done, 3);
  EXPECT_TRUE(torch::equal(a.params, b.params));
  for (const auto& [name, tensor] : a.optimizer) {
    EXPECT_TRUE(torch::equal(tensor, b.optimizer.at(name))) << name;
  }
  // The CSV files hold each epoch once.
  std::ifstream epochs_csv(resumed.run_dir / "epochs.csv");
  int rows = 0;
  for (std::string line; std::getline(epochs_csv, line);) ++rows;
  EXPECT_EQ(rows, 1 + 3);
  std::ifstream full_layers(full.run_dir / "layers.csv"),
      resumed_layers(resumed.run_dir / "layers.csv");
  const std::string full_text((std::istreambuf_iterator<char>(full_layers)), {});
  const std::string resumed_text((std::istreambuf_iterator<char>(resumed_layers)), {});
  EXPECT_EQ(resumed_text, full_text);
  // The resumed run's config.toml is rewritten with its checkpoint: the same file as the
  // uninterrupted run's.
  std::ifstream full_config(full.run_dir / "config.toml"),
      resumed_config(resumed.run_dir / "config.toml");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(resumed_config)), {}),
            std::string((std::istreambuf_iterator<char>(full_config)), {}));
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, ResumeCase, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("WithFaults") : std::string("Plain");
                         });

// Every per-node tensor of `state` ([n, ...]: parameters, buffers, optimizer rows) holds zeros
// in row `node`, and node 0's parameters are not all zero (the check can tell).
void expect_rows_zero(const TrainingState& state, std::int64_t node, const std::string& where) {
  const std::int64_t n = state.params.size(0);
  const auto row_is_zero = [&](const at::Tensor& t) {
    return torch::equal(t.select(0, node), torch::zeros_like(t.select(0, node)));
  };
  EXPECT_TRUE(row_is_zero(state.params)) << where << ": params";
  const at::Tensor node0 = state.params.select(0, 0);
  EXPECT_FALSE(torch::equal(node0, torch::zeros_like(node0)))
      << where << ": node 0's params are all zero too";
  for (std::size_t i = 0; i < state.buffers.size(); ++i) {
    if (state.buffers[i].dim() >= 1 && state.buffers[i].size(0) == n) {
      EXPECT_TRUE(row_is_zero(state.buffers[i])) << where << ": buffer " << i;
    }
  }
  for (const auto& [name, tensor] : state.optimizer) {
    if (name.rfind("fault_", 0) == 0) continue;  // held messages: per edge, not per node
    if (tensor.dim() >= 1 && tensor.size(0) == n) {
      EXPECT_TRUE(row_is_zero(tensor)) << where << ": optimizer '" << name << "'";
    }
  }
}

// A rank of a multi-process run that dies for real (no fault injected) leaves a checkpoint that
// lists its nodes dead with no faults configured. Resumed in-process (or on one rank), those
// nodes stay dead: the run continues exactly as the uninterrupted one in which they died. Here
// the real death is the injected one's checkpoint with the injection taken out of its config.
TEST(Train, NodesDeadAtTheCheckpointStayDeadWithoutInjectedFaults) {
  const fs::path out = fresh_dir("resume-dead");
  const auto quiet = [](const std::string&) {};
  const auto make = [&](int epochs, bool inject) {
    ExperimentConfig config = stateful_run(out, epochs);
    config.graph.topology = GraphConfig::Topology::kExponential;
    if (inject) {
      config.faults.kill_nodes = {3};
      config.faults.kill_step = 4;
    }
    return config;
  };
  const TrainResult full = train(make(2, true), quiet);
  const TrainResult part = train(make(1, true), quiet);
  const fs::path file = part.run_dir / kCheckpointFile;
  TrainingState state = read_checkpoint(file);
  ASSERT_EQ(state.fault_counts.at("dead_nodes").size(), 1u);
  expect_rows_zero(state, 3, "the checkpoint of the run in which node 3 died");
  state.config = to_json(make(1, false));
  write_checkpoint(file, state);

  TrainOptions resume;
  resume.resume_dir = part.run_dir;
  std::vector<std::string> lines;
  const TrainResult resumed =
      train(make(2, false), [&](const std::string& line) { lines.push_back(line); }, resume);
  ASSERT_EQ(resumed.epochs.size(), 2u);
  EXPECT_EQ(resumed.final_evaluation.node_accuracy.size(), 3u) << "node 3 came back to life";
  EXPECT_EQ(resumed.final_evaluation.node_accuracy, full.final_evaluation.node_accuracy);
  EXPECT_EQ(resumed.final_evaluation.average_model_accuracy,
            full.final_evaluation.average_model_accuracy);
  EXPECT_EQ(resumed.epochs[1].train_loss, full.epochs[1].train_loss);
  EXPECT_EQ(resumed.epochs[1].evaluation.consensus_distance,
            full.epochs[1].evaluation.consensus_distance);
  // The survivors' whole state, bit for bit; the dead node's rows zeros in both, although the
  // resumed run trained them from zeros with a push-sum weight of 0.
  const TrainingState a = read_checkpoint(full.run_dir / kCheckpointFile);
  const TrainingState b = read_checkpoint(resumed.run_dir / kCheckpointFile);
  expect_rows_zero(a, 3, "the uninterrupted run's last checkpoint");
  expect_rows_zero(b, 3, "the resumed run's last checkpoint");
  const auto survivors = [](const at::Tensor& t) { return t.narrow(0, 0, 3); };
  EXPECT_TRUE(torch::equal(survivors(a.params), survivors(b.params)));
  for (const auto& [name, tensor] : a.optimizer) {
    if (tensor.dim() > 0 && tensor.size(0) == 4) {
      EXPECT_TRUE(torch::equal(survivors(tensor), survivors(b.optimizer.at(name)))) << name;
    }
  }
  std::ifstream in(resumed.run_dir / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_TRUE(summary.at("final").at("node_accuracy")[3].is_null());
  ASSERT_EQ(summary.at("faults").at("dead_nodes").size(), 1u);
  EXPECT_EQ(summary.at("faults").at("dead_nodes")[0].at("node").get<int>(), 3);
  fs::remove_all(out);
}

// Every other kind of state a run carries across a checkpoint, one at a time: the 8-bit layers'
// running ranges and their stochastic-rounding streams (both backends), DeepSqueeze's error
// feedback, quasi-global momentum, Adam's moments and step counts, a time-varying topology,
// random-k's index draws, and dropout (LibTorch's generator). Checkpoint after 2 epochs, resume
// to 3: the same numbers and the same final state, bit for bit, as 3 epochs in one go.
struct ResumeKind {
  const char* name;
  std::vector<std::string> overrides;
};
// How ctest and GoogleTest name a case (instead of its bytes).
void PrintTo(const ResumeKind& kind, std::ostream* os) {
  *os << kind.name;
  for (const auto& o : kind.overrides) *os << " --set " << o;
}

class ResumeKindCase : public ::testing::TestWithParam<ResumeKind> {};

TEST_P(ResumeKindCase, ResumedRunIsBitIdenticalToAnUninterruptedOne) {
  const fs::path out = fresh_dir(std::string("resume-kind-") + GetParam().name);
  const auto make = [&](int epochs) {
    std::vector<std::string> overrides = {
        "run.out_dir=\"" + out.string() + "\"", "run.name=\"kind\"",
        "run.epochs=" + std::to_string(epochs), "run.log_every=0", "data.dataset=\"synthetic\"",
        "data.synthetic_samples_per_class=32", "data.synthetic_size=12", "data.batch_size=8",
        "data.eval_batch_size=64", "model.arch=\"mlp\"", "model.norm=\"none\"",
        "graph.nodes=4", "optim.lr=0.05", "optim.schedule=\"constant\"", "data.skew=0.5",
        "data.augment=true"};
    for (const std::string& o : GetParam().overrides) overrides.push_back(o);
    return load_experiment_config(std::nullopt, overrides);
  };
  const auto quiet = [](const std::string&) {};
  const TrainResult full = train(make(3), quiet);
  const TrainResult part = train(make(2), quiet);
  TrainOptions resume;
  resume.resume_dir = part.run_dir;
  const TrainResult resumed = train(make(3), quiet, resume);
  ASSERT_EQ(resumed.epochs.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(resumed.epochs[e].train_loss, full.epochs[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(resumed.epochs[e].evaluation.node_accuracy, full.epochs[e].evaluation.node_accuracy)
        << "epoch " << e + 1;
    EXPECT_EQ(resumed.epochs[e].evaluation.consensus_distance,
              full.epochs[e].evaluation.consensus_distance)
        << "epoch " << e + 1;
  }
  EXPECT_EQ(resumed.bytes_sent_per_node, full.bytes_sent_per_node);
  const TrainingState a = read_checkpoint(full.run_dir / kCheckpointFile);
  const TrainingState b = read_checkpoint(resumed.run_dir / kCheckpointFile);
  EXPECT_TRUE(torch::equal(a.params, b.params));
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    EXPECT_TRUE(torch::equal(a.buffers[i], b.buffers[i])) << "buffer " << i;
  }
  ASSERT_EQ(a.optimizer.size(), b.optimizer.size());
  for (const auto& [name, tensor] : a.optimizer) {
    EXPECT_TRUE(torch::equal(tensor, b.optimizer.at(name))) << name;
  }
  EXPECT_TRUE(torch::equal(a.torch_rng_state, b.torch_rng_state));
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(
    Checkpoint, ResumeKindCase,
    ::testing::Values(
        ResumeKind{"int8_integer",
                   {"model.arch=\"resnet\"", "model.depth=8", "model.norm=\"evonorm\"",
                    "model.precision=\"int8\"", "quant.backend=\"integer\""}},
        ResumeKind{"int8_simulated",
                   {"model.arch=\"resnet\"", "model.depth=8", "model.norm=\"evonorm\"",
                    "model.precision=\"int8\"", "quant.backend=\"simulated\""}},
        ResumeKind{"deep_squeeze_topk",
                   {"algo.name=\"deep-squeeze\"", "algo.compressor=\"topk\"",
                    "algo.keep_fraction=0.2", "algo.consensus_step=0.5"}},
        ResumeKind{"qgm", {"algo.qgm=true"}},
        ResumeKind{"adam", {"optim.optimizer=\"adam\"", "optim.lr=0.003"}},
        ResumeKind{"one_peer_exponential",
                   {"graph.topology=\"one-peer-exponential\"", "algo.name=\"deep-squeeze\""}},
        ResumeKind{"randomk",
                   {"algo.compressor=\"randomk\"", "algo.keep_fraction=0.3",
                    "algo.consensus_step=0.5"}},
        ResumeKind{"transformer_dropout",
                   {"data.dataset=\"synthetic-text\"", "model.arch=\"transformer\"",
                    "model.dropout=0.3", "model.transformer_hidden=32",
                    "model.transformer_layers=1", "model.transformer_ffn=64",
                    "data.max_length=24", "optim.optimizer=\"adamw\"", "optim.lr=0.001"}}),
    [](const ::testing::TestParamInfo<ResumeKind>& info) { return std::string(info.param.name); });

// A finished run leaves its averaged model as model.safetensors: every parameter of the model
// under its name and shape, the mean over the nodes of the run's final parameters (those of its
// last checkpoint), and the buffers likewise.
TEST(Train, AFinishedRunWritesItsAveragedModel) {
  const fs::path out = fresh_dir("model-file");
  ExperimentConfig config = small_synthetic_run(out);
  config.run.epochs = 1;
  config.model.arch = ExperimentConfig{}.model.arch;  // LeNet-5: weights and biases of 5 layers
  const TrainResult result = train(config, [](const std::string&) {});
  const models::SafetensorsFile file = models::read_safetensors((result.run_dir / kModelFile).string());
  const TrainingState state = read_checkpoint(result.run_dir / kCheckpointFile);
  const auto model = models::make_model(model_options_for(config, dataset_input_shape(config)));
  const at::Tensor mean = state.params.mean(0);  // [P]
  ASSERT_EQ(file.tensors.size(), model->layout().segments.size() + state.buffers.size());
  for (const LayerSegment& seg : model->layout().segments) {
    const at::Tensor& stored = file.tensors.at(seg.name);
    EXPECT_EQ(stored.sizes().vec(), seg.shape) << seg.name;
    EXPECT_TRUE(at::equal(stored, mean.narrow(0, seg.offset, seg.numel).reshape(seg.shape)))
        << seg.name;
  }
  EXPECT_EQ(file.metadata.at("lpdt.nodes_averaged"), "4");
  EXPECT_EQ(file.metadata.at("lpdt.model"), model->name());
  fs::remove_all(out);
}

// A configuration built in code is checked before anything is written: a run.name that would
// make its folder outside run.out_dir, or an enumerated field out of range, is a ConfigError and
// leaves no folder behind.
TEST(Train, AConfigBuiltInCodeIsCheckedFirst) {
  const fs::path out = fresh_dir("code-config");
  fs::create_directories(out);
  const auto quiet = [](const std::string&) {};
  ExperimentConfig escaping = small_synthetic_run(out / "runs");
  escaping.run.name = "../escape";
  EXPECT_THROW(train(escaping, quiet), ConfigError);
  ExperimentConfig out_of_range = small_synthetic_run(out / "runs");
  out_of_range.graph.topology = static_cast<GraphConfig::Topology>(99);
  EXPECT_THROW(train(out_of_range, quiet), ConfigError);
  // The text written as config.toml must be this configuration's.
  const ExperimentConfig plain = small_synthetic_run(out / "runs");
  TrainOptions garbage;
  garbage.config_toml = "garbage that is not toml";
  EXPECT_THROW(train(plain, quiet, garbage), ConfigError);
  ExperimentConfig other = plain;
  other.optim.lr = 0.5;
  TrainOptions another;
  another.config_toml = to_toml(other);
  EXPECT_THROW(train(plain, quiet, another), ConfigError);
  EXPECT_FALSE(fs::exists(out / "runs"));
  EXPECT_TRUE(fs::is_empty(out)) << "something was written next to run.out_dir";
  fs::remove_all(out);
}

// The reference protocol counts bytes as the official code's total does (spec 3.4, 5.4): every
// round applied, the last training round and each gossip-only round included; training alone
// (eval.protocol = average) leaves the newest round pending. Dense messages of a fixed size on a
// regular graph make each round the same R bytes a node, so the totals are steps - 1, steps and
// steps + 3 rounds.
TEST(Train, ReferenceProtocolCountsEveryRoundItApplies) {
  const fs::path out = fresh_dir("reference-bytes");
  const auto quiet = [](const std::string&) {};
  ExperimentConfig config = small_synthetic_run(out);
  config.run.epochs = 1;
  config.eval.per_node = false;
  config.ledger.accounting = LedgerConfig::Accounting::kReference;
  const TrainResult averaged = train(config, quiet);
  config.eval.protocol = EvalConfig::Protocol::kReference;
  config.eval.gossip_rounds = 0;
  const TrainResult none = train(config, quiet);
  config.eval.gossip_rounds = 3;
  const TrainResult three = train(config, quiet);
  ASSERT_GT(averaged.steps, 1);
  const std::int64_t round = none.bytes_sent_per_node.at(0) - averaged.bytes_sent_per_node.at(0);
  ASSERT_GT(round, 0);
  for (std::size_t i = 0; i < averaged.bytes_sent_per_node.size(); ++i) {
    EXPECT_EQ(averaged.bytes_sent_per_node[i], (averaged.steps - 1) * round) << "node " << i;
    EXPECT_EQ(none.bytes_sent_per_node[i], none.steps * round) << "node " << i;
    EXPECT_EQ(three.bytes_sent_per_node[i], (three.steps + 3) * round) << "node " << i;
  }
  fs::remove_all(out);
}

// Stopped after its last epoch's checkpoint but before summary.json (here: during the reference
// protocol's gossip-only rounds): --resume finishes it with the uninterrupted run's final figures.
// A finished run (summary.json) is not resumed again.
TEST(Checkpoint, ARunStoppedBeforeItsSummaryResumesToFinish) {
  const fs::path out = fresh_dir("finish");
  const auto quiet = [](const std::string&) {};
  ExperimentConfig config = small_synthetic_run(out);
  config.run.epochs = 2;
  config.eval.protocol = EvalConfig::Protocol::kReference;
  config.eval.gossip_rounds = 20;
  config.algo.compressor = AlgoConfig::Compressor::kTopK;
  config.algo.keep_fraction = 0.1;
  config.algo.consensus_step = 0.2;
  const TrainResult full = train(config, quiet);
  fs::remove(full.run_dir / "summary.json");
  TrainOptions resume;
  resume.resume_dir = full.run_dir;
  const TrainResult finished = train(config, quiet, resume);
  EXPECT_EQ(finished.steps, full.steps);
  EXPECT_EQ(finished.final_evaluation.node_accuracy, full.final_evaluation.node_accuracy);
  EXPECT_EQ(finished.final_evaluation.consensus_distance,
            full.final_evaluation.consensus_distance);
  EXPECT_EQ(finished.bytes_sent_per_node, full.bytes_sent_per_node);
  ASSERT_TRUE(fs::exists(full.run_dir / "summary.json"));
  try {
    train(config, quiet, resume);
    ADD_FAILURE() << "a finished run was resumed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("its checkpoint has 2 epochs done, all of run.epochs, "
                                         "and the run is finished; set run.epochs higher than 2"),
              std::string::npos)
        << e.what();
  }
  // Asked for fewer epochs than it trained: said as such.
  config.run.epochs = 1;
  try {
    train(config, quiet, resume);
    ADD_FAILURE() << "a finished run was resumed to fewer epochs";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("2 epochs done, more than run.epochs = 1"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(out);
}

// data.on_device = "on" on the CPU: the loader's device path (batches gathered, cropped, flipped
// and normalised with tensor operations on the calling thread) trains bit for bit as the host
// loader does, and summary.json records where the batches were made.
TEST(Train, BatchesMadeOnTheDeviceTrainAsHostBatches) {
  const fs::path out = fresh_dir("on-device");
  const auto quiet = [](const std::string&) {};
  ExperimentConfig host = stateful_run(out, 2);
  host.data.on_device = DataConfig::OnDevice::kOff;
  ExperimentConfig on_device = stateful_run(out, 2);
  on_device.data.on_device = DataConfig::OnDevice::kOn;
  const TrainResult a = train(host, quiet);
  const TrainResult b = train(on_device, quiet);
  ASSERT_EQ(a.epochs.size(), 2u);
  ASSERT_EQ(b.epochs.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(b.epochs[e].train_loss, a.epochs[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(b.epochs[e].evaluation.node_accuracy, a.epochs[e].evaluation.node_accuracy);
  }
  const auto batches_on = [](const TrainResult& r) {
    std::ifstream in(r.run_dir / "summary.json");
    return nlohmann::json::parse(in)["backend"]["batches_on"].get<std::string>();
  };
  EXPECT_EQ(batches_on(a), "host");
  EXPECT_EQ(batches_on(b), "cpu");
  // Auto on the CPU: the host loader, prefetched.
  EXPECT_EQ(batches_on(train(stateful_run(out, 1), quiet)), "host");
  fs::remove_all(out);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// A checkpoint whose checksum holds but whose contents are of the wrong type (a writer's bug, or
// an edit): named before anything trains, where copy_ converted an int32 table to floats and the
// run diverged, and LibTorch's own messages named no file.
TEST(Checkpoint, TensorsOfAnotherTypeAreNamedBeforeTraining) {
  const fs::path out = fresh_dir("checkpoint-types");
  const auto quiet = [](const std::string&) {};
  ExperimentConfig config = faulty_stateful_run(out, 1);
  const TrainResult first = train(config, quiet);
  const fs::path file = first.run_dir / kCheckpointFile;
  const TrainingState intact = read_checkpoint(file);
  config.run.epochs = 2;
  TrainOptions resume;
  resume.resume_dir = first.run_dir;
  const auto resume_error = [&](const TrainingState& state) {
    write_checkpoint(file, state);
    return error_of([&] { train(config, quiet, resume); });
  };
  TrainingState int_params = intact;
  int_params.params = intact.params.to(at::kInt);
  EXPECT_THAT(resume_error(int_params),
              ::testing::AllOf(::testing::HasSubstr(file.string()), ::testing::HasSubstr("holds the parameters as Int, expected "
                                                        "Float")));
  TrainingState bad_rng = intact;
  bad_rng.torch_rng_state = intact.torch_rng_state.to(at::kChar);
  EXPECT_THAT(resume_error(bad_rng), ::testing::HasSubstr("holds the random generator's state as Char"));
  ASSERT_TRUE(intact.optimizer.count("fault_held_meta"));
  TrainingState bad_held = intact;
  bad_held.optimizer["fault_held_meta"] = intact.optimizer.at("fault_held_meta").to(at::kDouble);
  EXPECT_THAT(resume_error(bad_held),
              ::testing::AllOf(::testing::HasSubstr(file.string()), ::testing::HasSubstr("does not hold this run's messages in "
                                                        "flight")));
  write_checkpoint(file, intact);
  EXPECT_NO_THROW(train(config, quiet, resume));
  fs::remove_all(out);
}

TEST(Checkpoint, CorruptMissingAndForeignFilesAreClearErrors) {
  const fs::path out = fresh_dir("corrupt");
  const TrainResult run = train(stateful_run(out, 1), [](const std::string&) {});
  const fs::path good = run.run_dir / kCheckpointFile;
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  const auto write = [&](const std::string& text) {
    const fs::path p = out / "bad.lpdt";
    std::ofstream(p, std::ios::binary) << text;
    return p;
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  EXPECT_NE(error_of([&] { read_checkpoint(write(flipped)); }).find("corrupt or truncated"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_checkpoint(write(bytes.substr(0, bytes.size() - 100)));
            }).find("corrupt or truncated"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_checkpoint(write("{\"not\": \"a checkpoint\"}........"));
            }).find("not an lpdt checkpoint"),
            std::string::npos);
  // An empty file is a write cut short, not another format; a flipped bit in the version field
  // is damage (the checksum is checked first), not a newer format.
  EXPECT_NE(error_of([&] { read_checkpoint(write("")); }).find("corrupt or truncated (0 bytes)"),
            std::string::npos);
  std::string version_flipped = bytes;
  version_flipped[8] ^= 0x01;
  const std::string version_error = error_of([&] { read_checkpoint(write(version_flipped)); });
  EXPECT_NE(version_error.find("checksum mismatch"), std::string::npos) << version_error;
  // A run stopped before its first checkpoint is named as one cause, beside checkpoints off.
  const std::string missing = error_of([&] { read_checkpoint(out / "missing.lpdt"); });
  EXPECT_NE(missing.find("no checkpoint"), std::string::npos) << missing;
  EXPECT_NE(missing.find("stopped before its first checkpoint"), std::string::npos) << missing;
  fs::create_directories(out / "folder.lpdt");
  EXPECT_NE(error_of([&] { read_checkpoint(out / "folder.lpdt"); })
                .find("folder.lpdt' cannot be read: it is a folder, not a file"),
            std::string::npos);
  fs::remove_all(out);
}

// A checkpoint whose step counter does not fit its epochs (a file edited, its checksum redone)
// is an error naming both, not a replay of a wrong number of batches.
TEST(Checkpoint, InconsistentCountersAreAnError) {
  const fs::path out = fresh_dir("counters");
  const TrainResult run = train(stateful_run(out, 1), [](const std::string&) {});
  const fs::path file = run.run_dir / kCheckpointFile;
  // (A negative counter is damage read_checkpoint names itself: DamagedHeaderPartsNameTheFile.)
  for (const std::int64_t rounds : {run.steps + 1, std::int64_t{1'000'000'000'000}}) {
    TrainingState state = read_checkpoint(file);
    state.rounds_done = rounds;
    write_checkpoint(file, state);
    ExperimentConfig longer = stateful_run(out, 2);
    TrainOptions resume;
    resume.resume_dir = run.run_dir;
    const std::string message =
        error_of([&] { train(longer, [](const std::string&) {}, resume); });
    EXPECT_NE(message.find("is inconsistent: " + std::to_string(rounds) + " steps for 1 epochs of " +
                           std::to_string(run.steps) + " steps"),
              std::string::npos)
        << message;
  }
  fs::remove_all(out);
}

// A header edited with its checksum redone: impossible times and buffer counts, and records the
// run reads later (the epochs, the byte ledger, the optimizer's state), are named as damage of
// that file when the run is resumed, before anything is written.
TEST(Checkpoint, DamagedHeaderPartsNameTheFile) {
  using ::testing::HasSubstr;
  const fs::path out = fresh_dir("header");
  const TrainResult run = train(stateful_run(out, 1), [](const std::string&) {});
  const fs::path file = run.run_dir / kCheckpointFile;
  const TrainingState intact = read_checkpoint(file);
  const auto resume_error = [&](const std::function<void(TrainingState&)>& damage) {
    TrainingState state = intact;
    damage(state);
    write_checkpoint(file, state);
    TrainOptions resume;
    resume.resume_dir = run.run_dir;
    return error_of([&] { train(stateful_run(out, 2), [](const std::string&) {}, resume); });
  };
  const std::string checkpoint = "checkpoint '" + file.string() + "' ";
  EXPECT_THAT(resume_error([](TrainingState& s) { s.elapsed_s = -1e308; }),
              HasSubstr(checkpoint + "is corrupt or truncated (a negative or non-finite time)"));
  EXPECT_THAT(resume_error([](TrainingState& s) { s.epochs = 5; }),
              HasSubstr(checkpoint + "is corrupt ("));
  EXPECT_THAT(resume_error([](TrainingState& s) { s.ledger = nlohmann::json::object(); }),
              HasSubstr(checkpoint + "is corrupt ("));
  EXPECT_THAT(resume_error([](TrainingState& s) { s.optimizer.clear(); }),
              HasSubstr(checkpoint + "does not hold this run's optimizer state"));
  // Counters and counts that no run writes.
  EXPECT_THAT(resume_error([](TrainingState& s) { s.epochs_done = -1; }),
              HasSubstr(checkpoint + "is corrupt or truncated (epochs_done = -1 (expected a "
                                     "whole number from 0 to 2147483647))"));
  EXPECT_THAT(resume_error([](TrainingState& s) { s.rounds_done = -3; }),
              HasSubstr("rounds_done = -3"));
  EXPECT_THAT(resume_error([](TrainingState& s) {
                // at least two records for one epoch done
                s.epochs.push_back(s.epochs.empty() ? nlohmann::json::object() : s.epochs[0]);
                s.epochs.push_back(s.epochs[0]);
              }),
              HasSubstr("an \"epochs\" record of more epochs than epochs_done = 1"));
  EXPECT_THAT(resume_error([](TrainingState& s) { s.ledger["bytes_sent_per_node"][0] = -5; }),
              HasSubstr("a negative byte count"));
  write_checkpoint(file, intact);
  fs::remove_all(out);
}

// A checkpoint's state of 2 nodes x 5 parameters after `epochs_done` epochs, with empty records.
TrainingState small_training_state(int epochs_done) {
  TrainingState state;
  state.epochs_done = epochs_done;
  state.params = torch::randn({2, 5});
  state.torch_rng_state = torch::zeros({8}, torch::kByte);
  state.ledger = nlohmann::json::object();
  state.epochs = nlohmann::json::array();
  state.config = nlohmann::json::object();
  return state;
}

// A kill while writing leaves a temporary file; the last complete checkpoint is still the one
// that is read, and the next write replaces both.
TEST(Checkpoint, AnInterruptedWriteKeepsThePreviousCheckpoint) {
  const fs::path out = fresh_dir("atomic");
  fs::create_directories(out);
  TrainingState state = small_training_state(4);
  state.optimizer = {{"ps", torch::ones({2})}};
  const fs::path file = out / kCheckpointFile;
  write_checkpoint(file, state);
  std::ofstream(out / (std::string(kCheckpointFile) + ".tmp"), std::ios::binary) << "LPDTCK";
  const TrainingState back = read_checkpoint(file);
  EXPECT_EQ(back.epochs_done, 4);
  EXPECT_TRUE(torch::equal(back.params, state.params));
  state.epochs_done = 5;
  write_checkpoint(file, state);
  EXPECT_EQ(read_checkpoint(file).epochs_done, 5);
  EXPECT_FALSE(fs::exists(out / (std::string(kCheckpointFile) + ".tmp")));
  fs::remove_all(out);
}

// A write that fails part way (a full disk; here the process's file-size limit, which fails the
// write the same way) is an error naming the file and the reason, leaves no partial temporary
// file taking the space, and keeps the previous checkpoint.
TEST(Checkpoint, AFailedWriteLeavesNoPartialFileAndKeepsThePreviousCheckpoint) {
  const fs::path out = fresh_dir("full");
  fs::create_directories(out);
  TrainingState state = small_training_state(4);
  const fs::path file = out / kCheckpointFile;
  write_checkpoint(file, state);
  state.epochs_done = 5;
  state.params = torch::randn({2, 100000});  // 800 KB, beyond the limit below
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    write_checkpoint(file, state);
  } catch (const UserError& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_THAT(message, ::testing::HasSubstr("cannot write checkpoint '" + file.string() +
                                            ".tmp': File too large"));
  EXPECT_THAT(message, ::testing::HasSubstr("the previous checkpoint is kept"));
  EXPECT_FALSE(fs::exists(out / (std::string(kCheckpointFile) + ".tmp")));
  EXPECT_EQ(read_checkpoint(file).epochs_done, 4);
  fs::remove_all(out);
}

TEST(Checkpoint, ResumingAnotherExperimentNamesTheKeys) {
  const fs::path out = fresh_dir("mismatch");
  const TrainResult run = train(stateful_run(out, 1), [](const std::string&) {});
  TrainOptions resume;
  resume.resume_dir = run.run_dir;
  ExperimentConfig other = stateful_run(out, 2);
  other.optim.lr = 0.2;
  other.graph.nodes = 8;
  const std::string error = error_of([&] {
    train(
        other, [](const std::string&) {}, resume);
  });
  EXPECT_NE(error.find("optim.lr = 0.05 in checkpoint.lpdt, 0.2 now"), std::string::npos) << error;
  EXPECT_NE(error.find("graph.nodes = 4 in checkpoint.lpdt, 8 now"), std::string::npos) << error;
  // Nothing left to do: a clear error, not a silent no-op.
  EXPECT_NE(error_of([&] {
              train(
                  stateful_run(out, 1), [](const std::string&) {}, resume);
            }).find("set run.epochs higher"),
            std::string::npos);
  // The data's paths may change (a dataset moved, or named by the path the run took by default):
  // the checkpoint records the data it trained on, and the resume compares what it reads.
  ExperimentConfig moved = stateful_run(out, 2);
  moved.data.dir = (out / "moved-data").string();
  moved.data.vocab = (out / "moved-vocab.txt").string();
  EXPECT_EQ(train(moved, [](const std::string&) {}, resume).epochs.size(), 2u);
  fs::remove_all(out);
}

// A damaged table of the run is refused before any file of the run is written: appending the
// resumed epochs to it would hide the damage.
TEST(Checkpoint, ResumingARunWithADamagedTableNamesItAndWritesNothing) {
  const fs::path out = fresh_dir("damaged_table");
  const TrainResult run = train(stateful_run(out, 1), [](const std::string&) {});
  std::ofstream(run.run_dir / "epochs.csv", std::ios::binary)
      << std::string("garbage\0\n1,2\n", 13);
  const std::string config_before = read(run.run_dir / "config.toml");
  const std::string metrics_before = read(run.run_dir / "metrics.csv");
  TrainOptions resume;
  resume.resume_dir = run.run_dir;
  const std::string error = error_of([&] {
    train(
        stateful_run(out, 2), [](const std::string&) {}, resume);
  });
  EXPECT_NE(error.find("epochs.csv' does not start with its header 'epoch,lr,"), std::string::npos)
      << error;
  EXPECT_EQ(read(run.run_dir / "config.toml"), config_before);
  EXPECT_EQ(read(run.run_dir / "metrics.csv"), metrics_before);
  fs::remove_all(out);
}

// Extending a cosine run changes the schedule's span: the resumed run says so, and records it.
TEST(Checkpoint, ExtendingACosineRunIsAWarning) {
  const fs::path out = fresh_dir("extend_cosine");
  const auto quiet = [](const std::string&) {};
  const auto run = [&](int epochs, OptimConfig::Schedule schedule) {
    ExperimentConfig config = small_synthetic_run(out);
    config.run.epochs = epochs;
    config.optim.schedule = schedule;
    return config;
  };
  const auto warnings_of = [](const TrainResult& r) {
    std::ifstream in(r.run_dir / "summary.json");
    return nlohmann::json::parse(in).at("warnings").dump();
  };
  for (const auto schedule : {OptimConfig::Schedule::kCosine, OptimConfig::Schedule::kMultistep}) {
    const TrainResult first = train(run(1, schedule), quiet);
    EXPECT_EQ(warnings_of(first).find("spans run.epochs"), std::string::npos);
    TrainOptions resume;
    resume.resume_dir = first.run_dir;
    const std::string warnings = warnings_of(train(run(2, schedule), quiet, resume));
    if (schedule == OptimConfig::Schedule::kCosine) {
      EXPECT_NE(warnings.find("optim.schedule = cosine spans run.epochs: the 1 epochs trained so "
                              "far followed a cosine over 1 epochs (the span of the run that "
                              "wrote the checkpoint; epochs of an earlier extension followed the "
                              "span it had then), the rest follows one over 2"),
                std::string::npos)
          << warnings;
    } else {
      EXPECT_EQ(warnings.find("spans run.epochs"), std::string::npos) << warnings;
    }
  }
  fs::remove_all(out);
}

// Tables cut or edited below their header: fewer rows than the checkpoint's epochs wrote, a row cut
// in the middle, a row twice. Each is named and nothing is written;
// rows of epochs after the checkpoint and a half-written last line are dropped, as after a kill.
TEST(Checkpoint, ResumingARunWithTruncatedTablesNamesThemAndWritesNothing) {
  const fs::path out = fresh_dir("truncated_table");
  const TrainResult run = train(stateful_run(out, 2), [](const std::string&) {});
  const fs::path epochs = run.run_dir / "epochs.csv", metrics = run.run_dir / "metrics.csv";
  const std::string epochs_text = read(epochs), metrics_text = read(metrics);
  const std::string epochs_header = epochs_text.substr(0, epochs_text.find('\n') + 1);
  const std::string first_row =
      epochs_text.substr(epochs_header.size(),
                         epochs_text.find('\n', epochs_header.size()) + 1 - epochs_header.size());
  const auto resume_error = [&]() {
    TrainOptions resume;
    resume.resume_dir = run.run_dir;
    return error_of([&] { train(stateful_run(out, 3), [](const std::string&) {}, resume); });
  };
  struct Damage {
    fs::path file;
    std::string text, expected;
  };
  const std::vector<Damage> damages = {
      {epochs, epochs_header, "holds 0 rows of epoch 1, the run wrote 1"},
      {epochs, epochs_header + first_row.substr(0, 12) + "\n", "line 2 is not a row of 10 fields"},
      {epochs, epochs_text + first_row, "holds 2 rows of epoch 1, the run wrote 1"},
      {metrics, metrics_text.substr(0, metrics_text.rfind('\n', metrics_text.size() - 2) + 1),
       "holds 3 rows of epoch 2, the run wrote 4"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.expected);
    std::ofstream(damage.file, std::ios::binary) << damage.text;
    const std::string config_before = read(run.run_dir / "config.toml");
    const std::string error = resume_error();
    EXPECT_NE(error.find(damage.expected), std::string::npos) << error;
    EXPECT_NE(error.find(damage.file.filename().string()), std::string::npos) << error;
    EXPECT_EQ(read(damage.file), damage.text);
    EXPECT_EQ(read(run.run_dir / "config.toml"), config_before);
    std::ofstream(epochs, std::ios::binary) << epochs_text;
    std::ofstream(metrics, std::ios::binary) << metrics_text;
  }
  // A kill after the tables of epoch 3 were half written, before its checkpoint: resumes.
  std::ofstream(epochs, std::ios::binary) << epochs_text << "3,0.1,2.0";
  TrainOptions resume;
  resume.resume_dir = run.run_dir;
  const TrainResult resumed = train(stateful_run(out, 3), [](const std::string&) {}, resume);
  EXPECT_EQ(resumed.epochs.size(), 3u);
  const std::string after = read(epochs);
  EXPECT_EQ(after.substr(0, epochs_text.size()), epochs_text);
  EXPECT_EQ(std::count(after.begin(), after.end(), '\n'), 4);
  fs::remove_all(out);
}

// A resume writes again the set-up files missing from its folder (a folder copied in part), the
// same as the run wrote them, with a note; it used to leave them missing without a word.
TEST(Checkpoint, ResumingWritesMissingSetupFilesAgain) {
  const fs::path out = fresh_dir("missing_setup");
  const TrainResult run = train(stateful_run(out, 1), [](const std::string&) {});
  const std::vector<std::string> names = {"partition.json", "class_histogram.csv",
                                          "topology.json"};
  std::map<std::string, std::string> before;
  for (const std::string& name : names) {
    before[name] = read(run.run_dir / name);
    ASSERT_FALSE(before[name].empty()) << name;
  }
  fs::remove(run.run_dir / "topology.json");
  fs::remove(run.run_dir / "class_histogram.csv");
  const fs::file_time_type partition_time = fs::last_write_time(run.run_dir / "partition.json");
  std::vector<std::string> said;
  TrainOptions resume;
  resume.resume_dir = run.run_dir;
  train(stateful_run(out, 2), [&](const std::string& line) { said.push_back(line); }, resume);
  for (const std::string& name : names) EXPECT_EQ(read(run.run_dir / name), before[name]) << name;
  // Only the missing ones: partition.json is left as it was.
  EXPECT_EQ(fs::last_write_time(run.run_dir / "partition.json"), partition_time);
  for (const char* name : {"topology.json", "class_histogram.csv"}) {
    EXPECT_TRUE(std::any_of(said.begin(), said.end(), [&](const std::string& line) {
      return line.find(std::string(name) + " was missing; it is written again") !=
             std::string::npos;
    })) << name;
  }
  fs::remove_all(out);
}

// Rows of epochs after the checkpoint, complete ones (a run extended with run.checkpoint_every =
// 0 and killed many epochs on), are dropped on resume and trained again; the tables as they were
// are kept beside them, so no figure written is lost, and the run says so and records it.
TEST(Checkpoint, ResumingKeepsTheTablesWhoseLaterEpochsItDrops) {
  const fs::path out = fresh_dir("dropped_epochs");
  const TrainResult run = train(stateful_run(out, 2), [](const std::string&) {});
  // Epoch 2's rows again as epoch 3's: what a run killed after epoch 3 without a checkpoint wrote.
  const auto with_epoch_3 = [](const std::string& text) {
    std::string more;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("2,", 0) == 0) more += "3" + line.substr(1) + "\n";
    }
    return text + more;
  };
  std::map<std::string, std::string> before;
  for (const char* table : {"epochs.csv", "metrics.csv", "layers.csv"}) {
    before[table] = with_epoch_3(read(run.run_dir / table));
    std::ofstream(run.run_dir / table, std::ios::binary) << before[table];
  }
  std::vector<std::string> said;
  TrainOptions resume;
  resume.resume_dir = run.run_dir;
  const TrainResult resumed =
      train(stateful_run(out, 3), [&](const std::string& line) { said.push_back(line); }, resume);
  EXPECT_EQ(resumed.epochs.size(), 3u);
  for (const char* table : {"epochs", "metrics", "layers"}) {
    SCOPED_TRACE(table);
    const fs::path kept = run.run_dir / (std::string(table) + ".before-resume.csv");
    ASSERT_TRUE(fs::exists(kept));
    EXPECT_EQ(read(kept), before[std::string(table) + ".csv"]);
    // The table itself holds epoch 3's rows once (as many as epoch 2's): the resumed run's.
    const std::string now = read(run.run_dir / (std::string(table) + ".csv"));
    const auto rows_of = [&](const std::string& epoch) {
      std::size_t count = 0;
      for (std::size_t at = now.find("\n" + epoch); at != std::string::npos;
           at = now.find("\n" + epoch, at + 1)) {
        ++count;
      }
      return count;
    };
    EXPECT_EQ(rows_of("3,"), rows_of("2,")) << now;
    EXPECT_GT(rows_of("3,"), 0u) << now;
  }
  const std::string note =
      "the tables held epoch 3, written after the checkpoint (epoch 2) by a run that stopped "
      "before it checkpointed them";
  EXPECT_TRUE(std::any_of(said.begin(), said.end(), [&](const std::string& line) {
    return line.find("note: " + note) != std::string::npos;
  }));
  std::ifstream summary_file(run.run_dir / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  const auto warnings = summary.at("warnings").get<std::vector<std::string>>();
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) {
    return w.find(note) != std::string::npos;
  }));
  // A later resume, which drops nothing, still records in its summary that the folder holds the
  // tables an earlier one kept.
  train(stateful_run(out, 4), [](const std::string&) {}, resume);
  std::ifstream later_file(run.run_dir / "summary.json");
  const auto later = nlohmann::json::parse(later_file).at("warnings").dump();
  EXPECT_NE(later.find("an earlier resume of this run found rows written after its checkpoint"),
            std::string::npos)
      << later;
  EXPECT_NE(later.find("epochs.before-resume.csv"), std::string::npos) << later;
  fs::remove_all(out);
}

}  // namespace
}  // namespace lpdt::exp
