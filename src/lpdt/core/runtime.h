#pragma once
// Process-wide runtime settings. Every value chosen here is returned so that the run records it.
#include <cstdint>
#include <string>

namespace lpdt {

struct RuntimeInfo {
  int intra_op_threads = 1;
  bool malloc_tuned = false;
  // The vector level the project's CPU kernels run at (core/cpu_dispatch.h): "avx512", "avx2" or
  // "baseline". Runs at different levels agree up to the last bits of float sums (oneDNN's
  // kernels and fused multiply-adds differ by level); runs at one level are bit-identical.
  std::string cpu_kernels = "baseline";
  // The cap on this process's data (heap and private mappings) in bytes, 0 for none: see
  // limit_data_to_available_memory.
  std::uint64_t data_limit_bytes = 0;
  std::string description() const;
};

// Sets LibTorch's intra-op threads (0 = every core; LibTorch defaults to 1 on these machines)
// and stops glibc malloc from mapping and unmapping the large per-step buffers (design.md: one
// mallopt call cut page faults per run 7x and a ResNet-20 step from 46 to 35.5 ms). For a run on
// the CPU (on_cuda false) it also caps the process's data at the memory available
// (limit_data_to_available_memory).
RuntimeInfo configure_runtime(int threads, bool on_cuda);

// The kernel's out-of-memory killer ends a process that touches more memory than the machine has
// with SIGKILL, without a word and before anything reports it (a batch size or node count too
// large for the machine). Capping the process's data segment (RLIMIT_DATA: heap and private
// writable mappings, where every tensor lives) at the memory available turns that into an
// allocation that fails, which lpdt reports as an out-of-memory error naming the sizes to lower.
// The cap is the data the process holds now plus 90% of the host's available memory
// (MemAvailable of /proc/meminfo) divided among the job's processes on this host
// (processes_on_host, >= 1); a
// lower limit already set (`ulimit -d`) is kept. Set once per process: later calls return the
// first call's cap. Returns the cap in bytes, 0 where none could be set (no /proc, or the
// system refused). CUDA runs are left uncapped (the CUDA driver's own mappings were not
// measured against it).
std::uint64_t limit_data_to_available_memory(int processes_on_host);

}  // namespace lpdt
