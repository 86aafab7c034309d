#pragma once
// The CUDA profiler's capture range (cudaProfilerStart / cudaProfilerStop), so that an external
// profiler started with its collection off (`ncu --profile-from-start off`, `nsys profile
// --capture-range=cudaProfilerApi`) records only the steps a benchmark times, not the warm-up's
// cuDNN autotuning. Plain C++; defined in profiler_range.cu (nvcc-compiled, linked with cudart).
namespace lpdt::cuda_kernels {

void profiler_start();
void profiler_stop();

}  // namespace lpdt::cuda_kernels
