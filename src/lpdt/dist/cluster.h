#pragma once
// The processes of one training run. In the simulator there is one, hosting every node; under
// `mpirun -np P lpdt train ...` there are P ranks of an MPI job (Open MPI), each hosting a
// contiguous block of nodes (dist/placement.h). The trainer writes one code path against this:
// gossip goes through make_exchange(), and the few whole-run operations (evaluation,
// checkpoints, the run folder) gather the ranks' rows on rank 0, the leader, which alone writes
// files. Every wait has a deadline: a peer that dies or stalls is reported and left behind
// (docs/faults.md), never a hang.
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lpdt/algo/message_exchange.h"
#include "lpdt/core/error.h"
#include "lpdt/core/layer_layout.h"
#include "lpdt/core/node_range.h"

namespace lpdt::dist {

// A peer did not answer before the deadline (run.receive_timeout_s).
class PeerTimeout : public UserError {
 public:
  using UserError::UserError;
};

// Real network traffic of this process (not counting edges inside it).
struct WireTraffic {
  std::int64_t payloads_sent = 0, bytes_sent = 0;
  std::int64_t payloads_received = 0, bytes_received = 0;
  double wait_s = 0;  // time spent waiting for gossip payloads after posting the round's sends
};

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool leader() const { return rank() == 0; }
  bool distributed() const { return size() > 1 || mpi(); }
  virtual bool mpi() const = 0;
  // "in-process" or e.g. "MPI (Open MPI v4.1.4), 4 ranks".
  virtual std::string description() const = 0;

  // The nodes of this process among `total`.
  virtual NodeRange hosted(std::int64_t total) const = 0;

  // The exchange of this process's nodes (every message to another rank is an encoded wire
  // payload, comm/wire_payload.h). receive_timeout_s: the deadline of every receive.
  virtual std::unique_ptr<algo::MessageExchange> make_exchange(const NodeRange& nodes,
                                                               const LayerLayout& layout) = 0;

  // Rows [count, ...] of every process, concatenated in node order on the leader ([total, ...],
  // CPU); an undefined tensor on the other ranks. Every rank calls it with its own rows.
  virtual at::Tensor gather_rows(const at::Tensor& rows, std::int64_t total) = 0;
  // Every rank's text on the leader (index = rank); empty elsewhere.
  virtual std::vector<std::string> gather_text(const std::string& text) = 0;
  // The leader's text on every rank.
  virtual std::string broadcast_text(const std::string& text) = 0;

  virtual WireTraffic traffic() const { return {}; }
  // Ranks this process found dead (a gossip payload or a gather that did not come before the
  // deadline). The gathers skip them: their rows are zeros, their texts empty.
  virtual std::set<int> dead_ranks() const { return {}; }
};

// The one process of the simulator.
class SingleProcess final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool mpi() const override { return false; }
  std::string description() const override { return "in-process"; }
  NodeRange hosted(std::int64_t total) const override { return NodeRange::all(total); }
  std::unique_ptr<algo::MessageExchange> make_exchange(const NodeRange& nodes,
                                                       const LayerLayout& layout) override {
    return std::make_unique<algo::InProcessExchange>(nodes.total);
  }
  at::Tensor gather_rows(const at::Tensor& rows, std::int64_t total) override { return rows; }
  std::vector<std::string> gather_text(const std::string& text) override { return {text}; }
  std::string broadcast_text(const std::string& text) override { return text; }
};

// True when this process was started by mpirun / mpiexec (Open MPI, MPICH or a PMIx launcher).
bool launched_by_mpirun();

// The MPI job of this process (MPI initialised on the first call, finalised at exit);
// receive_timeout_s bounds every wait. ConfigError when lpdt was built without MPI.
Cluster& mpi_cluster(double receive_timeout_s);

// After an error on one rank of a multi-rank job: MPI_Abort, so that no peer waits for it.
// Returns (does nothing) outside a multi-rank job.
void abort_job(int exit_code);
// This process's rank in an MPI job (before MPI is initialised: as the launcher set it), -1
// outside one.
int job_rank();
// The rank the launcher (mpirun) gave this process, -1 when it was not launched by one.
int launcher_rank();

}  // namespace lpdt::dist
