#include "lpdt/exp/slow_setting_warnings.h"

#include "lpdt/quant/int8_gemm.h"

namespace lpdt::exp {

CpuCapabilities CpuCapabilities::of_this_machine() {
  return {cpu_simd_level(), quant::int8_gemm_is_exact_in_onednn()};
}

std::vector<std::string> slow_setting_warnings(const ExperimentConfig& config,
                                               const CpuCapabilities& cpu) {
  std::vector<std::string> warnings;
  if (config.run.device != RunConfig::Device::kCpu) return warnings;
  const std::string level = simd_level_name(cpu.simd);
  if (config.model.precision == ModelConfig::Precision::kBf16 && cpu.simd != SimdLevel::kAvx512) {
    warnings.push_back(
        "model.precision = 'bf16' on a CPU without AVX-512 (" + level +
        "): oneDNN has no bfloat16 convolution kernels for it and runs its reference "
        "implementation, about 16x slower than float32 (docs/benchmarks.md, \"AVX2 CPUs\"); "
        "set model.precision = 'fp32'");
  }
  if (config.model.precision == ModelConfig::Precision::kInt8 &&
      config.quant.backend == QuantConfig::Backend::kInteger && !cpu.exact_int8_kernels) {
    warnings.push_back(
        "quant.backend = 'integer' on a CPU without AVX-512 VNNI (" + level +
        "): its exact int32 sums run as float32 GEMMs (docs/quantization.md), 0.3-0.45x "
        "float32's speed on an AVX2 CPU; quant.backend = 'simulated' computes the same function "
        "faster there");
  }
  return warnings;
}

}  // namespace lpdt::exp
