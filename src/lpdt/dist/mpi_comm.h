#pragma once
// Point-to-point MPI with deadlines (the building block of dist/): non-blocking sends and
// receives, completed by polling until done or until the deadline, when PeerTimeout names what
// was awaited from whom. Only compiled when lpdt is built with MPI.
#include <mpi.h>

#include <chrono>
#include <optional>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace lpdt::dist {

class DeathNotices;

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
  // A synchronous-mode send: it completes only once the receiver has matched it, so a sender
  // that waits for it knows its message was taken (a dead receiver never takes it).
  MPI_Request start_synchronous_send(std::span<const std::uint8_t> bytes, int dest, int tag);
  // Waits for every request until the deadline; the ones still pending then are cancelled and
  // freed (the caller keeps their buffers alive), and their indices returned. No throw.
  std::vector<std::size_t> wait_or_abandon(std::vector<MPI_Request>& requests,
                                           Clock::time_point deadline);
  // Waits for every request; PeerTimeout after the deadline, naming `what`.
  void wait_all(std::vector<MPI_Request>& requests, Clock::time_point deadline,
                const std::string& what);
  // Blocking send with a deadline. `what` names the payload ("its rows"): a timeout says "rank R
  // waited T s for <what> to be taken by rank <dest>".
  void send(std::span<const std::uint8_t> bytes, int dest, int tag, const std::string& what);
  // Receives one message of any size from `source` (probed), with a deadline; `what` names the
  // payload ("rank R waited T s for <what> from rank <source>"). notices: if
  // given, the wait ends early (nullopt) when `source` is found dead, and is extended once after
  // a recent death.
  std::vector<std::uint8_t> receive(int source, int tag, const std::string& what);
  std::optional<std::vector<std::uint8_t>> receive_unless_dead(int source, int tag,
                                                               const std::string& what,
                                                               DeathNotices& notices);

  // Throws UserError for an MPI error code, naming the call.
  static void check(int code, const char* call);

 private:
  // The next message from `source` with `tag`, if one has arrived. Its transfer is waited for
  // until `until` too: a peer that dies while its message is on the way (a large one is read
  // from the sender's memory) would leave a blocking receive waiting forever; PeerTimeout then,
  // naming `what`.
  std::optional<std::vector<std::uint8_t>> try_receive(int source, int tag, Clock::time_point until,
                                                       const std::string& what);

  MPI_Comm comm_;
  // Receives given up on mid-transfer, with their buffers: MPI may still write into them.
  std::vector<std::pair<MPI_Request, std::unique_ptr<std::vector<std::uint8_t>>>> abandoned_;
  double timeout_s_;
  int rank_ = 0, size_ = 1;
};

// Dead ranks, as this process knows them, and the notices that spread that knowledge: a rank
// that finds a peer dead tells every other rank at once (a small message on the control
// communicator), so that nobody else waits a whole deadline for it, and so that a live rank
// that is late because it was waiting out a death is not taken for dead in turn: a rank that
// heard of a death within the last few deadlines waits one more deadline before it gives up on
// a peer (docs/faults.md).
class DeathNotices {
 public:
  DeathNotices(MPI_Comm control, int rank, int size, double timeout_s);
  bool dead(int rank) const { return dead_.count(rank) > 0; }
  const std::set<int>& dead_ranks() const { return dead_; }
  // Marks `rank` dead and tells the other live ranks. False if it was known.
  bool declare(int rank);
  // Takes the notices that arrived; true if one named a rank not known dead.
  bool absorb();
  // Whether a peer that missed its deadline may have been delayed by a recent death.
  bool recent_death() const;

 private:
  MPI_Comm control_;
  int rank_, size_;
  double timeout_s_;
  std::set<int> dead_;
  std::chrono::steady_clock::time_point last_death_{};
  std::vector<std::unique_ptr<int>> sent_;  // notice buffers (sends are freed, not awaited)
};

// Sleeps a little between polls, so that oversubscribed ranks (more ranks than cores) leave the
// cores to the ranks that compute.
void poll_pause();

}  // namespace lpdt::dist
