// The MPI job of a multi-process run (dist/cluster.h); only compiled when lpdt is built with MPI.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <optional>
#include <set>
#include <iostream>
#include <sstream>

#include "lpdt/dist/cluster.h"
#include "lpdt/dist/mpi_comm.h"
#include "lpdt/dist/mpi_exchange.h"
#include "lpdt/dist/stuck_call_watchdog.h"
#include "lpdt/dist/placement.h"

namespace lpdt::dist {
namespace {

// Tags of the control communicator (gossip has its own, tagged by node).
constexpr int kTagGather = 1;
constexpr int kTagBroadcast = 2;
// The deadline of the gathers and the broadcast, in gossip deadlines (run.receive_timeout_s).
constexpr double kControlTimeoutFactor = 3;
// The least time MPI_Init is given: a healthy job's start can take seconds on a loaded host, and
// run.receive_timeout_s, meant for messages, may be as short as 0.01 s.
constexpr double kLeastInitSeconds = 10;
// How long a finished rank gives MPI_Finalize before it leaves without it.
constexpr int kFinalizeGraceSeconds = 60;

class MpiCluster final : public Cluster {
 public:
  explicit MpiCluster(double timeout_s) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      init_with_deadline(std::max(kControlTimeoutFactor * timeout_s, kLeastInitSeconds));
    }
    MPI_Comm gossip, control;
    MpiComm::check(MPI_Comm_dup(MPI_COMM_WORLD, &gossip), "MPI_Comm_dup");
    MpiComm::check(MPI_Comm_dup(MPI_COMM_WORLD, &control), "MPI_Comm_dup");
    gossip_ = std::make_shared<MpiComm>(gossip, timeout_s);
    // A peer may be late to a gather by one gossip round's deadline (it was finding a dead
    // rank): the gathers wait longer, so that a live rank is never taken for a dead one.
    control_ = std::make_unique<MpiComm>(control, kControlTimeoutFactor * timeout_s);
    notices_ = std::make_shared<DeathNotices>(control, control_->rank(), control_->size(),
                                              timeout_s);
    const int rank = control_->rank();
    watchdog_ = std::make_unique<StuckCallWatchdog>(
        stuck_call_limit_s(timeout_s), [rank, timeout_s](const char* call, double seconds) {
          std::fprintf(stderr,
                       "lpdt: rank %d: error: %s has not returned for %.0f s (the deadline, "
                       "run.receive_timeout_s = %g s, and %g s of grace): the MPI library is "
                       "stuck, most likely on a peer that died in the middle of a message (Open "
                       "MPI's shared-memory transport can wait for it forever). Ending this rank; "
                       "the run folder's last checkpoint is intact: continue the run with lpdt "
                       "train --resume <run folder>\n",
                       rank, call, seconds, timeout_s, kStuckCallGraceSeconds);
          std::fflush(nullptr);
          std::_Exit(1);
        });
    set_mpi_call_watchdog(watchdog_.get());
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    library_ = std::string(version, static_cast<std::size_t>(length));
    if (const auto comma = library_.find(','); comma != std::string::npos) library_.resize(comma);
  }

  ~MpiCluster() override {
    // MPI_Finalize has a bounded wait of its own (below); no call is watched after this.
    set_mpi_call_watchdog(nullptr);
    // After a death, Open MPI's MPI_Finalize (a fence over every process of the job) may wait
    // forever for the dead one. The run is complete and written by now: leave without it.
    notices_->absorb();
    if (!notices_->dead_ranks().empty()) {
      std::fflush(nullptr);
      std::_Exit(0);
    }
    // A death this rank never heard of could still stall the fence: give it a bounded time.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(kFinalizeGraceSeconds));
      std::fflush(nullptr);
      std::_Exit(0);
    }).detach();
    notices_.reset();
    gossip_.reset();
    control_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  // MPI_Init returns only once every process of the job has called it: a process that exits
  // or crashes before (an error of its own, a program other than lpdt in an MPMD launch) would
  // leave the others waiting forever, with or without mpirun --enable-recovery. A watchdog ends
  // this process with a message once the deadline passes.
  static void init_with_deadline(double deadline_s) {
    struct Watch {
      std::mutex mutex;
      std::condition_variable done_signal;
      bool done = false;
    };
    auto watch = std::make_shared<Watch>();
    std::thread([watch, deadline_s] {
      std::unique_lock<std::mutex> lock(watch->mutex);
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
      if (watch->done_signal.wait_until(lock, deadline, [&] { return watch->done; })) return;
      const int rank = launcher_rank();
      std::fprintf(stderr,
                   "lpdt: %serror: MPI_Init did not complete within %g s (3 x "
                   "run.receive_timeout_s, at least 10 s): a process of this job never joined it (it exited "
                   "or crashed before starting MPI, on an error of its own (see its output), or "
                   "is not lpdt); stopping\n",
                   rank >= 0 ? ("rank " + std::to_string(rank) + ": ").c_str() : "", deadline_s);
      std::fflush(nullptr);
      std::_Exit(1);
    }).detach();
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    {
      std::lock_guard<std::mutex> lock(watch->mutex);
      watch->done = true;
    }
    watch->done_signal.notify_all();
    MpiComm::check(code, "MPI_Init_thread");
  }

  int rank() const override { return control_->rank(); }
  int size() const override { return control_->size(); }
  bool mpi() const override { return true; }
  std::string description() const override {
    return "MPI (" + library_ + "), " + std::to_string(size()) + " ranks";
  }
  NodeRange hosted(std::int64_t total) const override {
    return hosted_nodes(rank(), size(), total);
  }

  std::unique_ptr<algo::MessageExchange> make_exchange(const NodeRange& nodes,
                                                       const LayerLayout& layout) override {
    return std::make_unique<MpiExchange>(gossip_, nodes, layout, &traffic_, notices_);
  }

  at::Tensor gather_rows(const at::Tensor& rows, std::int64_t total) override {
    const at::Tensor mine = rows.detach().cpu().contiguous();
    const auto* bytes = static_cast<const std::uint8_t*>(mine.data_ptr());
    const std::size_t size_bytes = static_cast<std::size_t>(mine.nbytes());
    if (!leader()) {
      control_->send({bytes, size_bytes}, 0, kTagGather, "its rows", gather_deadlines());
      return at::Tensor();
    }
    auto shape = mine.sizes().vec();
    LPDT_CHECK(!shape.empty(), "gather_rows: a 0-d tensor has no rows");
    shape[0] = total;
    at::Tensor all = at::zeros(shape, mine.options());  // a dead rank's rows stay zero
    const std::size_t row_bytes = mine.size(0) > 0 ? size_bytes / mine.size(0) : 0;
    for (int r = 0; r < size(); ++r) {
      const NodeRange block = hosted_nodes(r, size(), total);
      auto* out = static_cast<std::uint8_t*>(all.data_ptr()) + block.first * row_bytes;
      if (r == 0) {
        std::memcpy(out, bytes, size_bytes);
        continue;
      }
      if (notices_->dead(r)) continue;
      const auto received = receive_or_mark_dead(r, "gathered rows");
      if (!received) continue;
      const std::vector<std::uint8_t>& got = *received;
      if (got.size() != static_cast<std::size_t>(block.count) * row_bytes) {
        throw UserError("rank " + std::to_string(r) + " sent " + std::to_string(got.size()) +
                        " bytes of rows, expected " +
                        std::to_string(block.count * row_bytes) +
                        " (ranks disagree on the model or the node placement)");
      }
      std::memcpy(out, got.data(), got.size());
    }
    return all;
  }

  std::vector<std::string> gather_text(const std::string& text) override {
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()),
                                              text.size());
    if (!leader()) {
      control_->send(bytes, 0, kTagGather, "its text", gather_deadlines());
      return {};
    }
    std::vector<std::string> all{text};
    for (int r = 1; r < size(); ++r) {
      const auto got = notices_->dead(r) ? std::nullopt : receive_or_mark_dead(r, "gathered text");
      all.emplace_back(got ? std::string(got->begin(), got->end()) : std::string());
    }
    return all;
  }

  std::string broadcast_text(const std::string& text) override {
    if (leader()) {
      const std::span<const std::uint8_t> bytes(
          reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
      for (int r = 1; r < size(); ++r) {
        notices_->absorb();
        if (notices_->dead(r)) continue;
        try {
          control_->send(bytes, r, kTagBroadcast, "the leader's text");
        } catch (const PeerTimeout& timeout) {
          notices_->declare(r);
          std::fprintf(stderr, "rank 0: %s; treating rank %d as dead\n", timeout.what(), r);
        }
      }
      return text;
    }
    const auto got = control_->receive(0, kTagBroadcast, "the leader's text");
    return std::string(got.begin(), got.end());
  }

  WireTraffic traffic() const override { return traffic_; }
  std::set<int> dead_ranks() const override { return notices_->dead_ranks(); }

 private:
  // Rank 0 takes the gathered messages in rank order, and may wait a whole deadline for each
  // rank before this one that died (found dead by that deadline): rank r's message waits r
  // deadlines to be taken, so that a live rank behind a dead one is not ended with it.
  int gather_deadlines() const { return std::max(1, rank()); }

  // A gathered message from rank r; nullopt (and r marked dead) when none came by the deadline.
  std::optional<std::vector<std::uint8_t>> receive_or_mark_dead(int r, const std::string& what) {
    try {
      return control_->receive_unless_dead(r, kTagGather, what, *notices_);
    } catch (const PeerTimeout& timeout) {
      notices_->declare(r);
      std::fprintf(stderr, "rank 0: %s; treating rank %d as dead (its rows are left out)\n",
                   timeout.what(), r);
      return std::nullopt;
    }
  }

  std::shared_ptr<MpiComm> gossip_;
  std::unique_ptr<MpiComm> control_;
  std::string library_;
  WireTraffic traffic_;
  std::shared_ptr<DeathNotices> notices_;
  std::unique_ptr<StuckCallWatchdog> watchdog_;  // watches this rank's MPI calls (set globally)
};

std::unique_ptr<MpiCluster>& instance() {
  static std::unique_ptr<MpiCluster> cluster;
  return cluster;
}

}  // namespace

Cluster& mpi_cluster(double receive_timeout_s) {
  auto& cluster = instance();
  if (!cluster) cluster = std::make_unique<MpiCluster>(receive_timeout_s);
  return *cluster;
}

void abort_job(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

int job_rank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return launcher_rank();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

}  // namespace lpdt::dist
