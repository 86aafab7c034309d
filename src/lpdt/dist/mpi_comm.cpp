#include "lpdt/dist/mpi_comm.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "lpdt/dist/cluster.h"
#include "lpdt/dist/stuck_call_watchdog.h"

namespace lpdt::dist {

void MpiComm::check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw UserError(std::string("MPI error in ") + call + ": " + std::string(text, length));
}

MpiComm::MpiComm(MPI_Comm comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

MpiComm::Clock::time_point MpiComm::deadline() const {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(timeout_s_));
}

void poll_pause() { std::this_thread::sleep_for(std::chrono::microseconds(20)); }

MPI_Request MpiComm::start_send(std::span<const std::uint8_t> bytes, int dest, int tag) {
  MPI_Request request = MPI_REQUEST_NULL;
  const WatchedMpiCall watched("MPI_Isend");
  check(MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, comm_,
                  &request),
        "MPI_Isend");
  return request;
}

MPI_Request MpiComm::start_synchronous_send(std::span<const std::uint8_t> bytes, int dest,
                                            int tag) {
  MPI_Request request = MPI_REQUEST_NULL;
  const WatchedMpiCall watched("MPI_Issend");
  check(MPI_Issend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, comm_,
                   &request),
        "MPI_Issend");
  return request;
}

std::vector<std::size_t> MpiComm::wait_or_abandon(std::vector<MPI_Request>& requests,
                                                  const std::vector<int>& peers,
                                                  PeerDeadline& deadline) {
  for (;;) {
    int done = 0;
    {
      const WatchedMpiCall watched("MPI_Testall");
      check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall");
    }
    if (done) return {};
    std::set<int> awaited;
    for (std::size_t r = 0; r < requests.size(); ++r) {
      int complete = 0;
      if (requests[r] != MPI_REQUEST_NULL) {
        check(MPI_Request_get_status(requests[r], &complete, MPI_STATUS_IGNORE),
              "MPI_Request_get_status");
      }
      if (requests[r] != MPI_REQUEST_NULL && !complete) awaited.insert(peers[r]);
    }
    if (deadline.expired(awaited)) break;
    poll_pause();
  }
  // MPI_Testall leaves every handle as it was unless all completed: test each one.
  std::vector<std::size_t> abandoned;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    if (requests[r] == MPI_REQUEST_NULL) continue;
    const WatchedMpiCall watched("MPI_Test / MPI_Cancel");
    int done = 0;
    check(MPI_Test(&requests[r], &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) continue;
    MPI_Cancel(&requests[r]);
    MPI_Request_free(&requests[r]);
    abandoned.push_back(r);
  }
  return abandoned;
}

MPI_Request MpiComm::start_receive(std::span<std::uint8_t> buffer, int source, int tag) {
  MPI_Request request = MPI_REQUEST_NULL;
  const WatchedMpiCall watched("MPI_Irecv");
  check(MPI_Irecv(buffer.data(), static_cast<int>(buffer.size()), MPI_BYTE, source, tag, comm_,
                  &request),
        "MPI_Irecv");
  return request;
}

void MpiComm::wait_all(std::vector<MPI_Request>& requests, Clock::time_point deadline,
                       const std::string& what) {
  for (;;) {
    int done = 0;
    {
      const WatchedMpiCall watched("MPI_Testall");
      check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall");
    }
    if (done) return;
    if (Clock::now() > deadline) {
      const WatchedMpiCall watched("MPI_Cancel");
      for (auto& r : requests) {
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Request_free(&r);
        }
      }
      std::ostringstream msg;
      msg << "rank " << rank_ << " waited " << timeout_s_ << " s for " << what
          << " (run.receive_timeout_s): a peer died or stalled, or was busy for longer than that "
             "(rank 0 evaluating the averaged model, say: the deadline must exceed the longest "
             "computation between two exchanges)";
      throw PeerTimeout(msg.str());
    }
    poll_pause();
  }
}

void MpiComm::send(std::span<const std::uint8_t> bytes, int dest, int tag,
                   const std::string& what, int deadlines) {
  std::vector<MPI_Request> requests{start_send(bytes, dest, tag)};
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s_ * deadlines));
  wait_all(requests, until, what + " to be taken by rank " + std::to_string(dest));
}

std::optional<std::vector<std::uint8_t>> MpiComm::try_receive(int source, int tag,
                                                              Clock::time_point until,
                                                              const std::string& what) {
  int found = 0;
  MPI_Message message;
  MPI_Status status;
  {
    const WatchedMpiCall watched("MPI_Improbe");
    check(MPI_Improbe(source, tag, comm_, &found, &message, &status), "MPI_Improbe");
  }
  if (!found) return std::nullopt;
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  auto bytes = std::make_unique<std::vector<std::uint8_t>>(static_cast<std::size_t>(count));
  MPI_Request request = MPI_REQUEST_NULL;
  {
    const WatchedMpiCall watched("MPI_Imrecv");
    check(MPI_Imrecv(bytes->data(), count, MPI_BYTE, &message, &request), "MPI_Imrecv");
  }
  for (;;) {
    int done = 0;
    int code = MPI_SUCCESS;
    {
      const WatchedMpiCall watched("MPI_Test");
      code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    if (code == MPI_SUCCESS && done) return std::move(*bytes);
    if (code != MPI_SUCCESS || Clock::now() > until) {
      abandoned_.emplace_back(request, std::move(bytes));
      std::ostringstream msg;
      msg << "rank " << rank_ << " waited " << timeout_s_ << " s for " << what << " from rank "
          << source << " (run.receive_timeout_s): the peer died or stalled while sending it";
      throw PeerTimeout(msg.str());
    }
    poll_pause();
  }
}

std::vector<std::uint8_t> MpiComm::receive(int source, int tag, const std::string& what) {
  const auto until = deadline();
  for (;;) {
    if (auto bytes = try_receive(source, tag, until, what)) return std::move(*bytes);
    if (Clock::now() > until) {
      std::ostringstream msg;
      msg << "rank " << rank_ << " waited " << timeout_s_ << " s for " << what << " from rank "
          << source << " (run.receive_timeout_s): the peer died or stalled";
      throw PeerTimeout(msg.str());
    }
    poll_pause();
  }
}

std::optional<std::vector<std::uint8_t>> MpiComm::receive_unless_dead(int source, int tag,
                                                                      const std::string& what,
                                                                      DeathNotices& notices) {
  PeerDeadline until(*this, notices);
  for (;;) {
    if (auto bytes = try_receive(source, tag, until.until(), what)) return std::move(*bytes);
    notices.absorb();
    if (notices.dead(source)) return std::nullopt;
    if (until.expired({source})) {
      std::ostringstream msg;
      msg << "rank " << rank_ << " waited " << timeout_s_ << " s for " << what << " from rank "
          << source << " (run.receive_timeout_s): the peer died or stalled";
      throw PeerTimeout(msg.str());
    }
    poll_pause();
  }
}

namespace {
constexpr int kTagDeathNotice = 77;
constexpr int kTagSignOfLife = 78;
}

DeathNotices::DeathNotices(MPI_Comm control, int rank, int size, double timeout_s)
    : control_(control),
      rank_(rank),
      size_(size),
      timeout_s_(timeout_s),
      seen_alive_(static_cast<std::size_t>(size)) {}

void DeathNotices::sign_of_life() {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - signed_).count() < timeout_s_ / 4) return;
  signed_ = now;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || dead_.count(r)) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    const WatchedMpiCall watched("MPI_Isend");
    MpiComm::check(MPI_Isend(&rank_, 1, MPI_INT, r, kTagSignOfLife, control_, &request),
                   "MPI_Isend");
    MPI_Request_free(&request);  // one int from a member: sent eagerly, nobody waits for it
  }
}

bool DeathNotices::seen_alive_recently(int rank) const {
  if (rank < 0 || rank >= size_) return false;
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                     seen_alive_[static_cast<std::size_t>(rank)])
                           .count();
  return since < timeout_s_ / 2;
}

bool DeathNotices::declare(int dead_rank) {
  if (!dead_.insert(dead_rank).second) return false;
  last_death_ = std::chrono::steady_clock::now();
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || dead_.count(r)) continue;
    sent_.push_back(std::make_unique<int>(dead_rank));
    MPI_Request request = MPI_REQUEST_NULL;
    const WatchedMpiCall watched("MPI_Isend");
    MpiComm::check(MPI_Isend(sent_.back().get(), 1, MPI_INT, r, kTagDeathNotice, control_, &request),
                   "MPI_Isend");
    MPI_Request_free(&request);  // a one-int message: sent eagerly, nobody waits for it
  }
  return true;
}

namespace {

// Receives every one-int message with `tag` that has arrived on `comm`, handing each to
// take(source rank, value).
template <typename Take>
void receive_arrived_ints(MPI_Comm comm, int tag, Take take) {
  for (;;) {
    int found = 0;
    MPI_Message message;
    MPI_Status status;
    const WatchedMpiCall watched("MPI_Improbe / MPI_Mrecv");
    MpiComm::check(MPI_Improbe(MPI_ANY_SOURCE, tag, comm, &found, &message, &status),
                   "MPI_Improbe");
    if (!found) return;
    int value = -1;
    MpiComm::check(MPI_Mrecv(&value, 1, MPI_INT, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    take(status.MPI_SOURCE, value);
  }
}

}  // namespace

bool DeathNotices::absorb() {
  const auto now = std::chrono::steady_clock::now();
  receive_arrived_ints(control_, kTagSignOfLife, [&](int source, int) {
    if (source >= 0 && source < size_) seen_alive_[static_cast<std::size_t>(source)] = now;
  });
  bool news = false;
  receive_arrived_ints(control_, kTagDeathNotice, [&](int, int dead_rank) {
    if (dead_rank >= 0 && dead_rank < size_ && dead_rank != rank_ &&
        dead_.insert(dead_rank).second) {
      last_death_ = now;
      news = true;
    }
  });
  return news;
}

PeerDeadline::PeerDeadline(const MpiComm& comm, DeathNotices& notices)
    : comm_(comm), notices_(notices), until_(comm.deadline()) {}

bool PeerDeadline::expired(const std::set<int>& awaited) {
  notices_.sign_of_life();
  notices_.absorb();
  // Peers known dead (a notice) are not waited for any more.
  if (std::all_of(awaited.begin(), awaited.end(), [&](int r) { return notices_.dead(r); })) {
    return true;
  }
  if (MpiComm::Clock::now() <= until_) return false;
  if (extensions_ == kMaxExtensions) return true;
  const bool awaited_alive = std::any_of(awaited.begin(), awaited.end(), [&](int r) {
    return !notices_.dead(r) && notices_.seen_alive_recently(r);
  });
  const bool after_a_death = extensions_ == 0 && notices_.recent_death();
  if (!awaited_alive && !after_a_death) return true;
  ++extensions_;
  until_ = comm_.deadline();
  return false;
}

bool DeathNotices::recent_death() const {
  if (dead_.empty()) return false;
  const double since =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_death_).count();
  return since < 3 * timeout_s_;
}

}  // namespace lpdt::dist
