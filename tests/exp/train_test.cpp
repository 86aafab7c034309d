// End to end: a small run on synthetic data writes a complete run folder and learns.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/trainer.h"

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
  EXPECT_EQ(summary["config"]["graph"]["nodes"], 4);
  EXPECT_NEAR(summary["final"]["average_model_accuracy"].get<double>(),
              result.final_evaluation.average_model_accuracy, 1e-9);
  // metrics.csv: a header and one row per (evaluated epoch, node).
  std::ifstream metrics(result.run_dir / "metrics.csv");
  int rows = 0;
  for (std::string line; std::getline(metrics, line);) ++rows;
  EXPECT_EQ(rows, 1 + 3 * 4);
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

}  // namespace
}  // namespace lpdt::exp
