// Slow settings for the CPU: said for the CPUs that run them slowly, never for those that do not
// or for a GPU run.
#include "lpdt/exp/slow_setting_warnings.h"

#include <gtest/gtest.h>

namespace lpdt::exp {
namespace {

ExperimentConfig with_precision(ModelConfig::Precision precision, QuantConfig::Backend backend) {
  ExperimentConfig config;
  config.model.precision = precision;
  config.quant.backend = backend;
  return config;
}

constexpr CpuCapabilities kAvx512Vnni{SimdLevel::kAvx512, true};
constexpr CpuCapabilities kAvx512NoVnni{SimdLevel::kAvx512, false};
constexpr CpuCapabilities kAvx2{SimdLevel::kAvx2, false};

TEST(SlowSettingWarnings, Bfloat16WithoutAvx512) {
  const ExperimentConfig bf16 =
      with_precision(ModelConfig::Precision::kBf16, QuantConfig::Backend::kSimulated);
  const std::vector<std::string> warned = slow_setting_warnings(bf16, kAvx2);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_NE(warned[0].find("model.precision = 'bf16'"), std::string::npos) << warned[0];
  EXPECT_NE(warned[0].find("avx2"), std::string::npos) << warned[0];
  EXPECT_TRUE(slow_setting_warnings(bf16, kAvx512NoVnni).empty());
}

TEST(SlowSettingWarnings, IntegerBackendWithoutVnni) {
  const ExperimentConfig integer =
      with_precision(ModelConfig::Precision::kInt8, QuantConfig::Backend::kInteger);
  for (const CpuCapabilities& cpu : {kAvx2, kAvx512NoVnni}) {
    const std::vector<std::string> warned = slow_setting_warnings(integer, cpu);
    ASSERT_EQ(warned.size(), 1u);
    EXPECT_NE(warned[0].find("quant.backend = 'integer'"), std::string::npos) << warned[0];
    EXPECT_NE(warned[0].find("'simulated'"), std::string::npos) << warned[0];
  }
  EXPECT_TRUE(slow_setting_warnings(integer, kAvx512Vnni).empty());
  // The simulated backend and the integer one with a float32 model are not slow anywhere.
  EXPECT_TRUE(slow_setting_warnings(
                  with_precision(ModelConfig::Precision::kInt8, QuantConfig::Backend::kSimulated),
                  kAvx2)
                  .empty());
  EXPECT_TRUE(slow_setting_warnings(
                  with_precision(ModelConfig::Precision::kFp32, QuantConfig::Backend::kInteger),
                  kAvx2)
                  .empty());
}

TEST(SlowSettingWarnings, NoneForAGpuRun) {
  ExperimentConfig bf16 =
      with_precision(ModelConfig::Precision::kBf16, QuantConfig::Backend::kSimulated);
  bf16.run.device = RunConfig::Device::kCuda;
  EXPECT_TRUE(slow_setting_warnings(bf16, kAvx2).empty());
}

TEST(SlowSettingWarnings, ThisMachineIsDescribedByItsLevel) {
  const CpuCapabilities here = CpuCapabilities::of_this_machine();
  EXPECT_EQ(here.simd, cpu_simd_level());
  // oneDNN's exact int8 kernels need AVX-512 VNNI, which needs AVX-512.
  if (here.exact_int8_kernels) {
    EXPECT_EQ(here.simd, SimdLevel::kAvx512);
  }
}

}  // namespace
}  // namespace lpdt::exp
