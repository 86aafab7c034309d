#pragma once
// Point-to-point MPI with deadlines (the building block of dist/): non-blocking sends and
// receives, completed by polling until done or until the deadline, when PeerTimeout names what
// was awaited from whom. Only compiled when lpdt is built with MPI.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lpdt::dist {

class MpiComm {
 public:
  // comm: a communicator this object owns (MPI_Comm_dup'ed by the caller), errors returned
  // (not fatal). timeout_s: the deadline of every wait.
  MpiComm(MPI_Comm comm, double timeout_s);
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  ~MpiComm();

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm handle() const { return comm_; }
  double timeout_s() const { return timeout_s_; }

  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline() const;

  // Starts a send / receive (the buffer must live until the request completes).
  MPI_Request start_send(std::span<const std::uint8_t> bytes, int dest, int tag);
  MPI_Request start_receive(std::span<std::uint8_t> buffer, int source, int tag);
  // Waits for every request; PeerTimeout after the deadline, naming `what`.
  void wait_all(std::vector<MPI_Request>& requests, Clock::time_point deadline,
                const std::string& what);
  // Blocking send with a deadline.
  void send(std::span<const std::uint8_t> bytes, int dest, int tag, const std::string& what);
  // Receives one message of any size from `source` (probed), with a deadline.
  std::vector<std::uint8_t> receive(int source, int tag, const std::string& what);

  // Throws UserError for an MPI error code, naming the call.
  static void check(int code, const char* call);

 private:
  MPI_Comm comm_;
  double timeout_s_;
  int rank_ = 0, size_ = 1;
};

// Sleeps a little between polls, so that oversubscribed ranks (more ranks than cores) leave the
// cores to the ranks that compute.
void poll_pause();

}  // namespace lpdt::dist
