#pragma once
// A training step captured once as a CUDA graph and replayed: every kernel of the step (forward,
// backward, optimizer, gossip) launched by one call, with no per-kernel launch cost. What the
// step computes on the host (Python-free here, but still: control flow, scalars such as the
// learning rate, host-side counters) is frozen at capture: replay only steps whose host-side
// inputs do not change (the bench's constant-rate steps). Tensors the step reads must keep their
// addresses: write new inputs into the captured input tensors before a replay.
//
// Available when lpdt is built against a CUDA-enabled LibTorch (cuda_graphs_available()); other
// builds throw ConfigError from capture().
#include <functional>
#include <memory>

namespace lpdt {

bool cuda_graphs_available();

class CudaStepGraph {
 public:
  CudaStepGraph();
  ~CudaStepGraph();
  CudaStepGraph(const CudaStepGraph&) = delete;
  CudaStepGraph& operator=(const CudaStepGraph&) = delete;

  // Runs the host code of `step` once on a side stream while recording its kernels; the device
  // work is not done until replay(). Run `step` eagerly a few times first: lazy initialisation
  // (cuDNN algorithm search, allocator growth) must not happen during capture. share_memory_with:
  // another captured graph whose memory pool this one shares (graphs replayed one at a time).
  void capture(const std::function<void()>& step, const CudaStepGraph* share_memory_with = nullptr);
  // Launches the recorded kernels on the current stream (asynchronous).
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Waits for all work queued on the current CUDA device (no-op without CUDA).
void cuda_synchronize();

// True when this build can bracket work for an external CUDA profiler (a CUDA-enabled LibTorch
// and lpdt's CUDA kernels, which link the CUDA runtime).
bool cuda_profiler_range_available();
// cudaProfilerStart / cudaProfilerStop: an external profiler started with collection off
// (`ncu --profile-from-start off`, `nsys profile --capture-range=cudaProfilerApi`) records only
// the work between the two. ConfigError when !cuda_profiler_range_available().
void cuda_profiler_start();
void cuda_profiler_stop();

}  // namespace lpdt
