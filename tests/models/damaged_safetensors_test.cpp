// Damaged copies of a valid safetensors file (tests/lib/byte_mutations.h): read_safetensors reads
// a damaged copy or refuses it with a UserError naming the problem, never allocating what a
// damaged header only claims. Pretrained weights come from other people's files.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "lib/byte_mutations.h"
#include "lpdt/models/model.h"
#include "lpdt/models/pretrained.h"
#include "lpdt/models/safetensors.h"
#include "tiny_distilbert.h"

namespace lpdt::models {
namespace {

using mutation_testing::Bytes;

TEST(DamagedSafetensors, AreReadOrRefused) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("lpdt_damaged_safetensors_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string valid_path = (dir / "valid.safetensors").string();
  const std::string path = (dir / "damaged.safetensors").string();
  torch::manual_seed(3);
  write_safetensors(valid_path,
                    {{"embeddings.weight", torch::randn({4, 3})},
                     {"layer.0.bias", torch::randn({5}).to(torch::kHalf)},
                     {"layer.0.scale", torch::randn({2, 2}).to(torch::kBFloat16)},
                     {"ids", torch::arange(6, torch::kLong)},
                     {"mask", torch::ones({3}, torch::kBool)},
                     {"scalar", torch::tensor(2.5f).reshape({})},
                     {"empty", torch::zeros({0, 2})}},
                    {{"format", "pt"}});
  const Bytes valid = mutation_testing::read_file_bytes(valid_path);
  ASSERT_GT(valid.size(), 100u);

  constexpr int kTrials = 3000;
  const auto out = mutation_testing::expect_damage_read_or_refused(
      "safetensors", valid, kTrials, 30, [&](const Bytes& bytes) {
        mutation_testing::write_file_bytes(path, bytes);
        const SafetensorsFile file = read_safetensors(path);
        for (const auto& [name, tensor] : file.tensors) {
          EXPECT_TRUE(tensor.is_contiguous()) << name;
        }
      });
  EXPECT_GT(out.refused, kTrials / 2);
  std::filesystem::remove_all(dir);
}

// Loading damaged pretrained weights into a tiny DistilBERT: the weights load, or a UserError
// names what does not fit (a shape, a missing tensor, a non-finite value).
TEST(DamagedSafetensors, PretrainedWeightsLoadOrAreRefused) {
  const auto model = make_model(testing::tiny_distilbert());
  std::map<std::string, at::Tensor> tensors;
  torch::manual_seed(2);
  for (const LayerSegment& segment : model->layout().segments) {
    tensors["distilbert." + segment.name] = torch::randn(segment.shape);
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("lpdt_damaged_pretrained_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string valid_path = (dir / "valid.safetensors").string();
  const std::string path = (dir / "model.safetensors").string();
  write_safetensors(valid_path, tensors);
  const Bytes valid = mutation_testing::read_file_bytes(valid_path);
  const at::Tensor fresh = model->init_params(5);

  constexpr int kTrials = 1000;
  const auto out = mutation_testing::expect_damage_read_or_refused(
      "pretrained DistilBERT weights", valid, kTrials, 31, [&](const Bytes& bytes) {
        mutation_testing::write_file_bytes(path, bytes);
        at::Tensor params = fresh.clone();
        load_pretrained(*model, path, params);
        EXPECT_EQ(params.sizes(), fresh.sizes());
      });
  EXPECT_GT(out.refused, kTrials / 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lpdt::models
