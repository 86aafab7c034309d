// Slow settings for the CPU: said for the CPUs that run them slowly, never for those that do not
// or for a GPU run.
#include "lpdt/exp/slow_setting_warnings.h"

#include <gtest/gtest.h>

namespace lpdt::exp {
namespace {

ExperimentConfig with_precision(ModelConfig::Precision precision) {
  ExperimentConfig config;
  config.model.precision = precision;
  return config;
}

TEST(SlowSettingWarnings, Bfloat16WithoutAvx512) {
  const ExperimentConfig bf16 = with_precision(ModelConfig::Precision::kBf16);
  for (const SimdLevel level : {SimdLevel::kAvx2, SimdLevel::kBaseline}) {
    const std::vector<std::string> warned = slow_setting_warnings(bf16, {level});
    ASSERT_EQ(warned.size(), 1u);
    EXPECT_NE(warned[0].find("model.precision = 'bf16'"), std::string::npos) << warned[0];
    EXPECT_NE(warned[0].find(simd_level_name(level)), std::string::npos) << warned[0];
  }
  EXPECT_TRUE(slow_setting_warnings(bf16, {SimdLevel::kAvx512}).empty());
}

TEST(SlowSettingWarnings, Bfloat16WeightGradientsWithoutAvx512) {
  ExperimentConfig config = with_precision(ModelConfig::Precision::kInt8);
  config.quant.weight_grad = QuantConfig::WeightGrad::kBf16;
  const std::vector<std::string> warned = slow_setting_warnings(config, {SimdLevel::kAvx2});
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_NE(warned[0].find("quant.weight_grad = 'bf16'"), std::string::npos) << warned[0];
  EXPECT_TRUE(slow_setting_warnings(config, {SimdLevel::kAvx512}).empty());
  // Keys that do not apply are ignored: quant.* in a float32 run changes nothing.
  config.model.precision = ModelConfig::Precision::kFp32;
  EXPECT_TRUE(slow_setting_warnings(config, {SimdLevel::kAvx2}).empty());
}

TEST(SlowSettingWarnings, NoneForOtherPrecisions) {
  for (const auto precision : {ModelConfig::Precision::kFp32, ModelConfig::Precision::kInt8}) {
    for (const auto backend : {QuantConfig::Backend::kSimulated, QuantConfig::Backend::kInteger}) {
      ExperimentConfig config = with_precision(precision);
      config.quant.backend = backend;
      EXPECT_TRUE(slow_setting_warnings(config, {SimdLevel::kBaseline}).empty());
    }
  }
}

// bf16 rounds convolutions only: models without any run as fp32 and are not slowed.
TEST(SlowSettingWarnings, NoneForModelsWithoutConvolutions) {
  for (const auto arch :
       {ModelConfig::Arch::kMlp, ModelConfig::Arch::kTransformer, ModelConfig::Arch::kDistilbert}) {
    ExperimentConfig bf16 = with_precision(ModelConfig::Precision::kBf16);
    bf16.model.arch = arch;
    EXPECT_TRUE(slow_setting_warnings(bf16, {SimdLevel::kAvx2}).empty());
  }
  ExperimentConfig lenet = with_precision(ModelConfig::Precision::kBf16);
  lenet.model.arch = ModelConfig::Arch::kLenet5;
  EXPECT_EQ(slow_setting_warnings(lenet, {SimdLevel::kAvx2}).size(), 1u);
}

TEST(SlowSettingWarnings, NoneForAGpuRun) {
  ExperimentConfig bf16 = with_precision(ModelConfig::Precision::kBf16);
  bf16.run.device = RunConfig::Device::kCuda;
  EXPECT_TRUE(slow_setting_warnings(bf16, {SimdLevel::kAvx2}).empty());
}

TEST(SlowSettingWarnings, ThisMachineIsDescribedByItsLevel) {
  EXPECT_EQ(CpuCapabilities::of_this_machine().simd, cpu_simd_level());
}

}  // namespace
}  // namespace lpdt::exp
