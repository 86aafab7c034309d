// The CUDA profiler's capture range (profiler_range.h).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "lpdt/core/cuda/profiler_range.h"

namespace lpdt::cuda_kernels {
namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(status));
  }
}

}  // namespace

void profiler_start() { check(cudaProfilerStart(), "cudaProfilerStart"); }
void profiler_stop() { check(cudaProfilerStop(), "cudaProfilerStop"); }

}  // namespace lpdt::cuda_kernels
