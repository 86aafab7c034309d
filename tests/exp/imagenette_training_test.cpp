// The vision pipeline end to end on an Imagenette-style folder the test writes: JPEG files in
// train/<class>/ and val/<class>/, decoded, resized, randomly crop-resized and flipped, then
// trained by Choco-SGD on 2 nodes with the ImageNet-style ResNet-18 (fp32) and an 8-bit
// MobileNetV2 on the integer backend (depthwise int8 kernels). The classes differ in colour, so a
// working pipeline tells them apart well above chance (25%).
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../data/jpeg_test_util.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/trainer.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

// Four classes of 48x40 images: a class colour plus noise, in folders named like Imagenette's.
void write_colour_folder(const fs::path& dir, int images_per_class, std::uint64_t seed) {
  const int colours[4][3] = {{200, 40, 40}, {40, 200, 40}, {40, 40, 200}, {200, 200, 40}};
  const char* classes[4] = {"n01440764", "n02102040", "n02979186", "n03000684"};
  torch::manual_seed(static_cast<std::int64_t>(seed));
  for (int c = 0; c < 4; ++c) {
    fs::create_directories(dir / classes[c]);
    for (int i = 0; i < images_per_class; ++i) {
      const at::Tensor base =
          data::testing::flat_rgb(48, 40, colours[c][0], colours[c][1], colours[c][2]);
      const at::Tensor noisy =
          (base.to(at::kFloat) + 40 * torch::randn({3, 48, 40})).clamp(0, 255).to(at::kByte);
      data::testing::write_jpeg((dir / classes[c] / ("img_" + std::to_string(i) + ".JPEG")).string(),
                                noisy, 90);
    }
  }
}

struct VisionCase {
  std::string arch, precision, backend;
};

void PrintTo(const VisionCase& c, std::ostream* os) {
  *os << c.arch << " " << c.precision << " " << c.backend;
}

class ImagenetteTraining : public ::testing::TestWithParam<VisionCase> {};

TEST_P(ImagenetteTraining, LearnsTheColourClassesFromJpegFolders) {
  const VisionCase c = GetParam();
  if (c.backend == "integer" && !quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const fs::path dir = fs::temp_directory_path() /
                       ("lpdt_imagenette_training_" + std::to_string(::getpid()) + "_" + c.arch);
  fs::remove_all(dir);
  write_colour_folder(dir / "train", 24, 1);
  write_colour_folder(dir / "val", 8, 2);
  const ExperimentConfig config = load_experiment_config(
      std::nullopt,
      {"run.out_dir=\"" + (dir / "runs").string() + "\"", "run.name=\"imagenette\"",
       "run.epochs=6", "run.log_every=0", "data.dataset=\"imagenette\"",
       "data.dir=\"" + dir.string() + "\"", "data.image_size=40", "data.crop_size=32",
       "data.batch_size=8", "model.arch=\"" + c.arch + "\"",
       "model.precision=\"" + c.precision + "\"", "quant.backend=\"" + c.backend + "\"",
       "graph.nodes=2", "algo.name=\"choco\"", "optim.lr=0.01", "optim.schedule=\"constant\"",
       "optim.warmup=\"none\""});
  std::string log;
  const TrainResult result = train(config, [&](const std::string& line) { log += line + "\n"; });
  EXPECT_GT(result.final_evaluation.average_model_accuracy, 60.0) << log;
  std::ifstream in(result.run_dir / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["config"]["data"]["dataset"], "imagenette");
  EXPECT_EQ(summary["config"]["model"]["arch"], c.arch);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, ImagenetteTraining,
                         ::testing::Values(VisionCase{"resnet18", "fp32", "simulated"},
                                           VisionCase{"mobilenetv2", "int8", "integer"}),
                         [](const auto& info) {
                           return info.param.arch + "_" + info.param.precision + "_" +
                                  info.param.backend;
                         });

// What the image reader notices without stopping (images with stray bytes before a JPEG marker)
// and a training set of one class are warnings of the run: said, and kept in summary.json.
TEST(ImagenetteWarnings, StrayBytesAndASingleClassAreSaidAndRecorded) {
  const fs::path dir =
      fs::temp_directory_path() / ("lpdt_imagenette_warnings_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* split : {"train", "val"}) {
    fs::create_directories(dir / split / "n01440764");
    for (int i = 0; i < 4; ++i) {
      data::testing::write_jpeg(
          (dir / split / "n01440764" / ("img_" + std::to_string(i) + ".JPEG")).string(),
          data::testing::flat_rgb(24, 24, 30 * i, 90, 200));
    }
  }
  std::vector<std::uint8_t> padded =
      data::testing::encode_jpeg(data::testing::flat_rgb(24, 24, 1, 2, 3));
  padded.insert(padded.end() - 2, 20, 0x7F);
  const fs::path padded_file = dir / "val" / "n01440764" / "img_1.JPEG";
  data::testing::write_bytes(padded_file.string(), padded);
  const ExperimentConfig config = load_experiment_config(
      std::nullopt,
      {"run.out_dir=\"" + (dir / "runs").string() + "\"", "run.name=\"warnings\"", "run.epochs=1",
       "run.max_steps_per_epoch=1", "run.log_every=0", "data.dataset=\"imagenette\"",
       "data.dir=\"" + dir.string() + "\"", "data.image_size=16", "data.batch_size=2",
       "model.arch=\"mlp\"", "graph.nodes=2"});
  std::string log;
  const TrainResult result = train(config, [&](const std::string& line) { log += line + "\n"; });
  const std::string stray =
      "imagenette: 1 of the 4 test images hold stray bytes before a JPEG "
      "marker (libjpeg's \"extraneous bytes\"): " +
      padded_file.string();
  const std::string one_class = "has one class: every label is the same";
  EXPECT_NE(log.find("warning: " + stray), std::string::npos) << log;
  EXPECT_NE(log.find(one_class), std::string::npos) << log;
  std::ifstream in(result.run_dir / "summary.json");
  const std::string recorded = nlohmann::json::parse(in)["warnings"].dump();
  EXPECT_NE(recorded.find("1 of the 4 test images hold stray bytes"), std::string::npos)
      << recorded;
  EXPECT_NE(recorded.find(one_class), std::string::npos) << recorded;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lpdt::exp
