// A run folder whose files were damaged after the run (a hand edit gone wrong, a disk error, a
// copy cut short): `lpdt report` reads it and writes its page, or refuses it with a UserError
// naming the file (tests/lib/byte_mutations.h). Every file the run wrote is damaged in turn.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/byte_mutations.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/report/report_page.h"
#include "lpdt/exp/report/run_results.h"
#include "lpdt/exp/trainer.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;
using mutation_testing::Bytes;

TEST(DamagedRunFolder, ReportPagesAreWrittenOrRefused) {
  const fs::path out =
      fs::temp_directory_path() / ("lpdt_damaged_run_folder_" + std::to_string(::getpid()));
  fs::remove_all(out);
  const ExperimentConfig config = load_experiment_config(
      std::nullopt,
      {"run.out_dir=\"" + out.string() + "\"", "run.name=\"damaged\"", "run.epochs=2",
       "run.log_every=0", "data.dataset=\"synthetic\"", "data.synthetic_samples_per_class=16",
       "data.synthetic_size=8", "data.batch_size=16", "model.arch=\"mlp\"", "model.norm=\"none\"",
       "graph.nodes=3", "eval.per_node=true", "data.skew=0.5"});
  const TrainResult result = train(config, [](const std::string&) {});
  const fs::path dir = result.run_dir;
  ASSERT_NO_THROW(report::run_report_html(report::read_run(dir)));

  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  ASSERT_GE(files.size(), 5u);
  constexpr int kTrials = 150;
  std::uint64_t seed = 60;
  int refused = 0;
  for (const fs::path& file : files) {
    const Bytes valid = mutation_testing::read_file_bytes(file);
    const auto outcomes = mutation_testing::expect_damage_read_or_refused(
        file.filename().string(), valid, kTrials, seed++, [&](const Bytes& bytes) {
          mutation_testing::write_file_bytes(file, bytes);
          report::run_report_html(report::read_run(dir));
        });
    refused += outcomes.refused;
    mutation_testing::write_file_bytes(file, valid);
  }
  // The damage reaches the readers' checks (the report reads every table and JSON file).
  EXPECT_GT(refused, kTrials * static_cast<int>(files.size()) / 10);
  fs::remove_all(out);
}

}  // namespace
}  // namespace lpdt::exp
