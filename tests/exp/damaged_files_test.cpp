// Damaged copies of the files lpdt reads back (tests/lib/byte_mutations.h): checkpoints, run
// summaries, experiment and sweep configurations. Each is read or refused with a UserError
// (ConfigError for configurations) naming the problem; never a crash, a LibTorch or JSON
// exception, or an allocation a damaged size field only claims.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lib/byte_mutations.h"
#include "lpdt/exp/checkpoint.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/summary_file.h"
#include "lpdt/exp/sweep.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;
using mutation_testing::Bytes;
using mutation_testing::expect_damage_read_or_refused;

class DamagedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lpdt_damaged_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TrainingState small_state() {
  TrainingState state;
  state.epochs_done = 2;
  state.rounds_done = 40;
  state.train_time_s = 1.5;
  state.elapsed_s = 2.0;
  torch::manual_seed(5);
  state.params = torch::randn({3, 7});
  state.buffers = {torch::randn({3, 2}), torch::zeros({3}, torch::kLong)};
  state.optimizer = {{"momentum", torch::randn({3, 7})}, {"ps_weight", torch::ones({3})}};
  state.torch_rng_state = torch::zeros({16}, torch::kByte);
  state.ledger = {{"bytes_sent", {1, 2, 3}}};
  state.epochs = nlohmann::json::array({{{"epoch", 1}}, {{"epoch", 2}}});
  state.config = {{"run", {{"epochs", 4}}}};
  return state;
}

// The last four bytes are the CRC-32 of all before them (exp/checkpoint.h): most damage is
// caught by it, so damage that also rewrites the checksum (a file a faulty tool rewrote, or
// damage the CRC happens to miss) checks the parsing behind it.
TEST_F(DamagedFiles, Checkpoints) {
  const fs::path valid_path = dir_ / "valid.lpdt";
  write_checkpoint(valid_path, small_state());
  const Bytes valid = mutation_testing::read_file_bytes(valid_path);
  const fs::path path = dir_ / kCheckpointFile;
  const auto read = [&](const Bytes& bytes) {
    mutation_testing::write_file_bytes(path, bytes);
    read_checkpoint(path);
  };
  constexpr int kTrials = 1500;
  const auto raw = expect_damage_read_or_refused("checkpoint", valid, kTrials, 40, read);
  EXPECT_GT(raw.refused, kTrials * 9 / 10);
  const auto resummed = expect_damage_read_or_refused(
      "checkpoint, checksum rewritten", valid, kTrials, 41, [&](const Bytes& damaged) {
        Bytes bytes = damaged;
        if (bytes.size() >= 4) {
          bytes.resize(bytes.size() - 4);
          const auto crc = static_cast<std::uint32_t>(
              crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(bytes.size())));
          for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(crc >> (8 * i)));
        }
        read(bytes);
      });
  EXPECT_GT(resummed.refused, kTrials / 4);
}

TEST_F(DamagedFiles, RunSummaries) {
  const std::string text = R"({
  "config": {"run": {"name": "ring8", "epochs": 2}, "graph": {"nodes": 2}},
  "final": {"average_model_accuracy": 81.5, "mean_node_accuracy": 80.25,
            "min_node_accuracy": 79.0, "max_node_accuracy": 81.5, "consensus_distance": 0.0125,
            "mean_gb_sent_per_node": 0.5, "steps": 120, "wall_time_s": 12.5,
            "train_images_per_s": 640.0, "node_accuracy": [79.0, 81.5],
            "bytes_sent_per_node": [1000, 2000]}
})";
  const fs::path path = dir_ / "summary.json";
  mutation_testing::write_file_bytes(path, Bytes(text.begin(), text.end()));
  ASSERT_NO_THROW(read_run_summary(path));
  constexpr int kTrials = 1500;
  const auto out = expect_damage_read_or_refused("summary.json", Bytes(text.begin(), text.end()),
                                                 kTrials, 42, [&](const Bytes& bytes) {
                                                   mutation_testing::write_file_bytes(path, bytes);
                                                   read_run_summary(path);
                                                 });
  EXPECT_GT(out.refused, kTrials / 4);
}

// The project's own configurations, damaged: a ConfigError (a UserError) or a configuration
// that resolves.
TEST_F(DamagedFiles, ExperimentAndSweepConfigurations) {
  const fs::path configs = fs::path(LPDT_SOURCE_DIR) / "configs";
  const fs::path path = dir_ / "config.toml";
  constexpr int kTrials = 400;
  std::uint64_t seed = 50;
  for (const char* name : {"quickstart.toml", "fmnist_resnet20_lp_vs_fp.toml"}) {
    const auto out =
        expect_damage_read_or_refused(name, mutation_testing::read_file_bytes(configs / name),
                                      kTrials, seed++, [&](const Bytes& bytes) {
                                        mutation_testing::write_file_bytes(path, bytes);
                                        load_experiment_config(path.string(), {});
                                      });
    EXPECT_GT(out.refused, kTrials / 10) << name;
  }
  const fs::path sweep_path = dir_ / "sweep.toml";
  const auto out = expect_damage_read_or_refused(
      "sweep", mutation_testing::read_file_bytes(configs / "sweeps" / "lp_vs_fp_fmnist_ring8.toml"),
      kTrials, seed, [&](const Bytes& bytes) {
        mutation_testing::write_file_bytes(sweep_path, bytes);
        load_sweep(sweep_path);
      });
  EXPECT_GT(out.refused, kTrials / 10);
}

}  // namespace
}  // namespace lpdt::exp
