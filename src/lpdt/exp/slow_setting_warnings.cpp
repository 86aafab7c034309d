#include "lpdt/exp/slow_setting_warnings.h"

namespace lpdt::exp {

CpuCapabilities CpuCapabilities::of_this_machine() { return {cpu_simd_level()}; }

std::vector<std::string> slow_setting_warnings(const ExperimentConfig& config,
                                               const CpuCapabilities& cpu) {
  std::vector<std::string> warnings;
  if (config.run.device != RunConfig::Device::kCpu) return warnings;
  const std::string level = simd_level_name(cpu.simd);
  // bf16 changes only convolutions: the MLP and the transformers have none, and run as fp32.
  const bool has_convolutions = config.model.arch != ModelConfig::Arch::kMlp &&
                                config.model.arch != ModelConfig::Arch::kTransformer &&
                                config.model.arch != ModelConfig::Arch::kDistilbert;
  if (config.model.precision == ModelConfig::Precision::kBf16 && has_convolutions &&
      cpu.simd != SimdLevel::kAvx512) {
    warnings.push_back(
        "model.precision = 'bf16' on a CPU without AVX-512 (" + level +
        "): oneDNN has no bfloat16 convolution kernels for it and runs its reference "
        "implementation, about 16x slower than float32 (docs/benchmarks.md, \"AVX2 CPUs\"); "
        "set model.precision = 'fp32'");
  }
  if (config.model.precision == ModelConfig::Precision::kInt8 &&
      config.quant.weight_grad == QuantConfig::WeightGrad::kBf16 && cpu.simd != SimdLevel::kAvx512) {
    warnings.push_back(
        "quant.weight_grad = 'bf16' on a CPU without AVX-512 (" + level +
        "): oneDNN has no bfloat16 convolution kernels for it and runs its reference "
        "implementation, many times slower than float32 (docs/benchmarks.md, \"AVX2 CPUs\"); "
        "set quant.weight_grad = 'fp32'");
  }
  return warnings;
}

}  // namespace lpdt::exp
