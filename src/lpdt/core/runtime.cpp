#include "lpdt/core/runtime.h"

#include <malloc.h>
#include <sched.h>
#include <omp.h>
#include <sys/resource.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "lpdt/core/cpu_dispatch.h"

namespace lpdt {
namespace {

// The value in kB of the line "key: <value> kB" of a /proc file, 0 when absent.
std::uint64_t proc_kib(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::uint64_t kib = 0;
    fields >> kib;
    return kib;
  }
  return 0;
}

// The job's processes on this host: Open MPI's (OMPI_COMM_WORLD_LOCAL_SIZE) or MPICH's
// (MPI_LOCALNRANKS) count under mpirun, else 1.
int processes_on_this_host() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* value = std::getenv(name)) {
      const int count = std::atoi(value);
      if (count >= 1) return count;
    }
  }
  return 1;
}

// run.threads = 0: the CPUs this process may run on. A launcher that binds each process to its
// own cores has divided them already; processes that may all run everywhere (mpirun
// --oversubscribe, or no binding) share the host's CPUs, as they share its memory.
int automatic_threads() {
  const int host = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int allowed = host;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) allowed = std::max(1, CPU_COUNT(&set));
  if (allowed < host) return allowed;
  return std::max(1, host / processes_on_this_host());
}

std::string gib_text(std::uint64_t bytes) {
  std::ostringstream out;
  out.precision(3);
  out << static_cast<double>(bytes) / static_cast<double>(1ull << 30) << " GiB";
  return out.str();
}

}  // namespace

std::string RuntimeInfo::description() const {
  return std::to_string(intra_op_threads) + " intra-op threads" +
         (malloc_tuned ? ", malloc mmap threshold 1 GiB" : "") +
         (data_limit_bytes > 0 ? ", memory cap " + gib_text(data_limit_bytes) : "") + ", " +
         cpu_kernels + " CPU kernels";
}

std::uint64_t limit_data_to_available_memory(int processes_on_host) {
  static std::once_flag once;
  static std::uint64_t cap = 0;
  std::call_once(once, [&] {
    const std::uint64_t available = proc_kib("/proc/meminfo", "MemAvailable") * 1024;
    const std::uint64_t held = proc_kib("/proc/self/status", "VmData") * 1024;
    if (available == 0 || held == 0) return;
    rlimit limit{};
    if (getrlimit(RLIMIT_DATA, &limit) != 0) return;
    // A tenth of what is available is left to the rest of the machine, whose own use may grow
    // while the run does: the cap should be met before the out-of-memory killer acts.
    const std::uint64_t wanted =
        held + available / 10 * 9 / static_cast<std::uint64_t>(std::max(1, processes_on_host));
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur <= wanted) {
      cap = limit.rlim_cur;  // a lower cap set by the user: kept
      return;
    }
    rlimit lowered = limit;
    lowered.rlim_cur = static_cast<rlim_t>(wanted);
    if (setrlimit(RLIMIT_DATA, &lowered) == 0) cap = wanted;
  });
  return cap;
}

RuntimeInfo configure_runtime(int threads, bool on_cuda) {
  RuntimeInfo info;
  info.cpu_kernels = simd_level_name(simd_level());
  info.intra_op_threads = threads > 0 ? threads : automatic_threads();
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
  if (!on_cuda) info.data_limit_bytes = limit_data_to_available_memory(processes_on_this_host());
  return info;
}

}  // namespace lpdt
