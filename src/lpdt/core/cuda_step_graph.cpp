#include "lpdt/core/cuda_step_graph.h"

#include <torch/cuda.h>

#include "lpdt/core/error.h"

#if LPDT_HAVE_CUDA_KERNELS
#include "lpdt/core/cuda/profiler_range.h"
#endif
#if LPDT_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lpdt {

#if LPDT_HAVE_CUDA
struct CudaStepGraph::Impl {
  at::cuda::CUDAGraph graph;
  bool captured = false;
};

bool cuda_graphs_available() { return torch::cuda::is_available(); }

CudaStepGraph::CudaStepGraph() : impl_(std::make_unique<Impl>()) {}
CudaStepGraph::~CudaStepGraph() = default;

void CudaStepGraph::capture(const std::function<void()>& step,
                            const CudaStepGraph* share_memory_with) {
  LPDT_CHECK(!impl_->captured, "CudaStepGraph: already captured");
  if (!torch::cuda::is_available()) throw ConfigError("CUDA graphs need a CUDA device");
  torch::cuda::synchronize();
  // Capture may not run on the legacy default stream.
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    if (share_memory_with != nullptr && share_memory_with->impl_->captured) {
      impl_->graph.capture_begin(share_memory_with->impl_->graph.pool());
    } else {
      impl_->graph.capture_begin();
    }
    try {
      step();
    } catch (...) {
      // Leave the stream out of capture mode, so that later work on the device still runs.
      try {
        impl_->graph.capture_end();
      } catch (...) {
      }
      throw;
    }
    impl_->graph.capture_end();
  }
  torch::cuda::synchronize();
  impl_->captured = true;
}

void CudaStepGraph::replay() {
  LPDT_CHECK(impl_->captured, "CudaStepGraph: replay before capture");
  impl_->graph.replay();
}
#else
struct CudaStepGraph::Impl {};

bool cuda_graphs_available() { return false; }

CudaStepGraph::CudaStepGraph() = default;
CudaStepGraph::~CudaStepGraph() = default;

void CudaStepGraph::capture(const std::function<void()>&, const CudaStepGraph*) {
  throw ConfigError(
      "CUDA graphs need lpdt built against a CUDA-enabled LibTorch (README, 'CUDA build')");
}
void CudaStepGraph::replay() { throw ConfigError("CUDA graphs are not available in this build"); }
#endif

void cuda_synchronize() {
  if (torch::cuda::is_available()) torch::cuda::synchronize();
}

bool cuda_profiler_range_available() {
  return LPDT_HAVE_CUDA_KERNELS && torch::cuda::is_available();
}

namespace {
void check_profiler_range() {
  if (!cuda_profiler_range_available()) {
    throw ConfigError(
        "a CUDA profiler range needs a CUDA device and lpdt's CUDA kernels (a build against a "
        "CUDA-enabled LibTorch with nvcc found: README, 'CUDA build')");
  }
}
}  // namespace

void cuda_profiler_start() {
  check_profiler_range();
#if LPDT_HAVE_CUDA_KERNELS
  cuda_kernels::profiler_start();
#endif
}

void cuda_profiler_stop() {
  check_profiler_range();
#if LPDT_HAVE_CUDA_KERNELS
  cuda_kernels::profiler_stop();
#endif
}

}  // namespace lpdt
