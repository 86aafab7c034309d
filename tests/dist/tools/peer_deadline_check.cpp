// The rule that keeps a live rank from being taken for dead (dist/mpi_comm.h, PeerDeadline), on
// three real MPI processes: `mpirun -np 3 peer_deadline_check TIMEOUT_S`.
//
// Rank 2 is dead: it sends nothing and, not waiting, gives no sign of life. Rank 0 waits for it
// (its deadline must pass after one timeout, not extended), then is held up half a timeout
// before it sends its message to rank 1 and declares rank 2 dead: a rank descheduled just as it
// goes on after waiting out a death. Rank 1 waits for rank 0's message from the start: its
// deadline passes while rank 0 is still held up, before any death notice; rank 0's signs of life
// (given while it waited) must extend it, so that rank 1 receives the message instead of taking
// rank 0 for dead. Before signs of life rank 1 threw PeerTimeout here.
//
// Prints one line per rank; exits 0 when the rank's check passed, 1 otherwise.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lpdt/dist/cluster.h"
#include "lpdt/dist/mpi_comm.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTag = 5;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const double timeout_s = argc > 1 ? std::atof(argv[1]) : 2.0;
  MPI_Comm data_comm, control_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &data_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_comm);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3) {
    if (rank == 0) std::fprintf(stderr, "peer_deadline_check: run it with mpirun -np 3\n");
    MPI_Finalize();
    return 2;
  }
  bool ok = false;
  std::string what;
  {
    lpdt::dist::MpiComm comm(data_comm, timeout_s);
    lpdt::dist::DeathNotices notices(control_comm, rank, size, timeout_s);
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    if (rank == 2) {
      // Dead: no message, no sign of life, until the others are surely done.
      sleep_s(4 * timeout_s);
      ok = true;
      what = "stayed silent";
    } else if (rank == 0) {
      bool timed_out = false;
      try {
        comm.receive_unless_dead(2, kTag, "a message", notices);
      } catch (const lpdt::dist::PeerTimeout&) {
        timed_out = true;
      }
      const double waited = seconds_since(start);
      // One timeout, not extended (rank 2 gave no sign of life; rank 1's do not count for it).
      ok = timed_out && waited >= timeout_s && waited < 2 * timeout_s;
      what = "waited " + std::to_string(waited) + " s for the dead rank 2 (expected one timeout, " +
             (timed_out ? "timed out" : "did not time out") + ")";
      sleep_s(timeout_s / 2);  // held up before it goes on
      const int payload = 42;
      MPI_Send(&payload, 1, MPI_INT, 1, kTag, data_comm);
      notices.declare(2);
    } else {
      bool received = false;
      try {
        const auto bytes = comm.receive_unless_dead(0, kTag, "rank 0's message", notices);
        received = bytes.has_value();
      } catch (const lpdt::dist::PeerTimeout&) {
      }
      const double waited = seconds_since(start);
      ok = received && waited > timeout_s;
      what = std::string(received ? "received" : "did not receive") + " rank 0's message after " +
             std::to_string(waited) + " s (expected after its deadline, extended by rank 0's " +
             "signs of life)";
    }
  }
  std::printf("rank %d: %s: %s\n", rank, ok ? "ok" : "FAILED", what.c_str());
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return ok ? 0 : 1;
}
