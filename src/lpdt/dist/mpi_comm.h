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
class PeerDeadline;

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
  // Waits for every request until the deadline expires (PeerDeadline, with its extension;
  // peers[i]: the rank request i waits for); the ones still pending then are cancelled and freed
  // (the caller keeps their buffers alive), and their indices returned. No throw.
  std::vector<std::size_t> wait_or_abandon(std::vector<MPI_Request>& requests,
                                           const std::vector<int>& peers, PeerDeadline& deadline);
  // Waits for every request; PeerTimeout after the deadline, naming `what`.
  void wait_all(std::vector<MPI_Request>& requests, Clock::time_point deadline,
                const std::string& what);
  // Blocking send with a deadline of `deadlines` times timeout_s. `what` names the payload ("its
  // rows"): a timeout says "rank R waited T s for <what> to be taken by rank <dest>".
  void send(std::span<const std::uint8_t> bytes, int dest, int tag, const std::string& what,
            int deadlines = 1);
  // Receives one message of any size from `source` (probed), with a deadline; `what` names the
  // payload ("rank R waited T s for <what> from rank <source>"). notices: if
  // given, the wait ends early (nullopt) when `source` is found dead, and its deadline is a
  // PeerDeadline (one more deadline after a recent death or a sign of life of `source`).
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

// Dead ranks, as this process knows them, and the small messages on the control communicator
// that keep that knowledge right (docs/faults.md):
// - death notices: a rank that finds a peer dead tells every other rank at once, so that nobody
//   else waits a whole deadline for it;
// - signs of life: a rank that is waiting tells every rank that it is alive (at most every
//   timeout / 4). A rank waiting out a death is late for its neighbours through no fault of its
//   own; they see it alive and wait on (PeerDeadline) instead of taking it for dead.
class DeathNotices {
 public:
  DeathNotices(MPI_Comm control, int rank, int size, double timeout_s);
  bool dead(int rank) const { return dead_.count(rank) > 0; }
  const std::set<int>& dead_ranks() const { return dead_; }
  // Marks `rank` dead and tells the other live ranks. False if it was known.
  bool declare(int rank);
  // Takes the notices and signs of life that arrived; true if a notice named a rank not known
  // dead.
  bool absorb();
  // Whether a peer that missed its deadline may have been delayed by a recent death.
  bool recent_death() const;
  // Tells the live ranks that this one is alive, unless it did within timeout / 4.
  void sign_of_life();
  // Whether `rank` gave a sign of life within the last timeout / 2.
  bool seen_alive_recently(int rank) const;

 private:
  MPI_Comm control_;
  int rank_, size_;
  double timeout_s_;
  std::set<int> dead_;
  std::chrono::steady_clock::time_point last_death_{};
  std::vector<std::unique_ptr<int>> sent_;  // notice buffers (sends are freed, not awaited)
  std::vector<std::chrono::steady_clock::time_point> seen_alive_;  // per rank
  std::chrono::steady_clock::time_point signed_{};  // this rank's last sign of life
};

// The deadline of a wait for peers, with the rule that keeps a live peer from being taken for
// dead. A peer can be late through no fault of its own: it was waiting out a death (a whole
// run.receive_timeout_s), while this rank, which had nothing to wait for, went on a round ahead,
// so that its deadline passes when the peer's does. The peer's death notice, sent as it goes on,
// then races this rank's deadline with a margin of about a step: on a loaded machine a directed
// ring of 4 ranks took a live rank for dead in 1 run of 8 (docs/faults.md). So a missed deadline
// is extended by a whole deadline when a death was heard of recently (once) or when a peer still
// awaited gave a sign of life within the last half deadline (it is waiting, so alive), at most
// kMaxExtensions times in all, so that no wait is endless. A dead peer gives no sign of life,
// and is found dead at the first deadline as before.
class PeerDeadline {
 public:
  PeerDeadline(const MpiComm& comm, DeathNotices& notices);
  // True once the deadline (and any extension) has passed, or at once when every rank still
  // awaited (`awaited`) is known dead. Gives this rank's sign of life while it waits, and takes
  // the notices that arrived.
  bool expired(const std::set<int>& awaited);
  MpiComm::Clock::time_point until() const { return until_; }

 private:
  static constexpr int kMaxExtensions = 3;
  const MpiComm& comm_;
  DeathNotices& notices_;
  MpiComm::Clock::time_point until_;
  int extensions_ = 0;
};

// Sleeps a little between polls, so that oversubscribed ranks (more ranks than cores) leave the
// cores to the ranks that compute.
void poll_pause();

}  // namespace lpdt::dist
