#pragma once
// Settings that this CPU runs far slower than the alternative computing the same thing, each with
// what to do instead. A run says them when it starts and keeps them in summary.json ("warnings");
// they never stop a run, since the results are right, only slow.
#include <string>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/exp/experiment_config.h"

namespace lpdt::exp {

// What the warnings are decided from: this CPU's vector level. A struct so that tests can ask
// about other CPUs.
struct CpuCapabilities {
  SimdLevel simd = SimdLevel::kBaseline;
  static CpuCapabilities of_this_machine();
};

// The warnings for `config` training on the CPU (none for a GPU run): bfloat16 convolutions
// without AVX-512 (oneDNN has no bfloat16 kernels below it and takes its reference
// implementation: 16x slower than float32 on an AVX2 CPU, docs/benchmarks.md, "AVX2 CPUs").
std::vector<std::string> slow_setting_warnings(const ExperimentConfig& config,
                                               const CpuCapabilities& cpu);

}  // namespace lpdt::exp
