#include "lpdt/dist/cluster.h"

#include <cstdlib>
#include <string>

namespace lpdt::dist {

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* value = std::getenv(name)) {
      try {
        return std::stoi(value);
      } catch (const std::exception&) {
        return -1;
      }
    }
  }
  return -1;
}

#if !LPDT_HAVE_MPI
Cluster& mpi_cluster(double) {
  throw ConfigError(
      "this process was started by mpirun, but this lpdt was built without MPI (CMake did not "
      "find it): install Debian's libopenmpi-dev and rebuild (scripts/setup.sh), or run lpdt "
      "without mpirun (the in-process simulator)");
}

void abort_job(int) {}
int job_rank() { return launcher_rank(); }
#endif

}  // namespace lpdt::dist
