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
#include "lpdt/models/safetensors.h"

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
  std::ifstream in(valid_path, std::ios::binary);
  const Bytes valid{std::istreambuf_iterator<char>(in), {}};
  ASSERT_GT(valid.size(), 100u);

  constexpr int kTrials = 3000;
  const auto out = mutation_testing::expect_damage_read_or_refused(
      "safetensors", valid, kTrials, 30, [&](const Bytes& bytes) {
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
        const SafetensorsFile file = read_safetensors(path);
        for (const auto& [name, tensor] : file.tensors) {
          EXPECT_TRUE(tensor.is_contiguous()) << name;
        }
      });
  EXPECT_GT(out.refused, kTrials / 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lpdt::models
