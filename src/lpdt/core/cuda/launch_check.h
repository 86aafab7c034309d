#pragma once
// The check after each kernel launch of lpdt's CUDA kernels (src/lpdt/*/cuda/*.cu; this header is
// for nvcc-compiled files only): a failed launch throws, naming the kernel, with what to do when
// the build's kernels were compiled for another GPU.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lpdt::cuda_kernels {

// kernel: e.g. "CUDA quantizer kernel quantize".
inline void check_launch(const std::string& kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  const std::string hint =
      status == cudaErrorNoKernelImageForDevice
          ? " (this build's kernels are for another GPU architecture: rebuild with "
            "LPDT_CUDA_ARCHITECTURES set to this GPU's, e.g. 90 for an H100)"
          : "";
  throw std::runtime_error(kernel + " failed: " + cudaGetErrorString(status) + hint);
}

}  // namespace lpdt::cuda_kernels
