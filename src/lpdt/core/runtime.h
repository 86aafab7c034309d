#pragma once
// Process-wide runtime settings. Every value chosen here is returned so that the run records it.
#include <string>

namespace lpdt {

struct RuntimeInfo {
  int intra_op_threads = 1;
  bool malloc_tuned = false;
  // The vector level the project's CPU kernels run at (core/cpu_dispatch.h): "avx512", "avx2" or
  // "baseline". Runs at different levels agree up to the last bits of float sums (oneDNN's
  // kernels and fused multiply-adds differ by level); runs at one level are bit-identical.
  std::string cpu_kernels = "baseline";
  std::string description() const;
};

// Sets LibTorch's intra-op threads (0 = every core; LibTorch defaults to 1 on these machines)
// and stops glibc malloc from mapping and unmapping the large per-step buffers (design.md: one
// mallopt call cut page faults per run 7x and a ResNet-20 step from 46 to 35.5 ms).
RuntimeInfo configure_runtime(int threads);

}  // namespace lpdt
