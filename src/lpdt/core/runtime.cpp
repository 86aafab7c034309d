#include "lpdt/core/runtime.h"

#include <malloc.h>
#include <omp.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <thread>

#include "lpdt/core/cpu_dispatch.h"

namespace lpdt {

std::string RuntimeInfo::description() const {
  return std::to_string(intra_op_threads) + " intra-op threads" +
         (malloc_tuned ? ", malloc mmap threshold 1 GiB" : "") + ", " + cpu_kernels +
         " CPU kernels";
}

RuntimeInfo configure_runtime(int threads) {
  RuntimeInfo info;
  info.cpu_kernels = simd_level_name(simd_level());
  info.intra_op_threads =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  torch::set_num_threads(info.intra_op_threads);
  // The project's own parallel loops run on the OpenMP runtime this binary links. That is
  // LibTorch's (Debian's libgomp), which the line above set; a PyTorch wheel's LibTorch brings its
  // own copy of libgomp, so the team size is set here as well.
  omp_set_num_threads(info.intra_op_threads);
  // Keep large blocks on the heap and never trim it: activations of every step are reused
  // instead of being mmap'ed and page-faulted in again.
  constexpr int kOneGiB = 1 << 30;
  info.malloc_tuned =
      mallopt(M_MMAP_THRESHOLD, kOneGiB) == 1 && mallopt(M_TRIM_THRESHOLD, kOneGiB) == 1;
  return info;
}

}  // namespace lpdt
