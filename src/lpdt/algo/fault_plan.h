#pragma once
// Injected faults (config section [faults], docs/faults.md): which gossip messages are lost or
// late, and which nodes die when. Every decision is a pure function of (seed, round, sender,
// receiver), so the simulator and every rank of a multi-process run see the same faults, and a
// resumed run sees the faults the uninterrupted one saw.
#include <cstdint>
#include <vector>

namespace lpdt::algo {

struct FaultOptions {
  std::uint64_t seed = 0;
  // Each message (one edge, one round) is lost with this probability. A lost message is sent
  // again with the next round (and may be lost again): push-sum's mass and Choco's public copies
  // need every message to arrive eventually (docs/faults.md).
  double drop_probability = 0;
  // Each message that is not lost arrives `delay_rounds` rounds late with this probability.
  double delay_probability = 0;
  std::int64_t delay_rounds = 1;
  // These nodes stop (send nothing, hear nothing) from round kill_step on; under mpirun their
  // rank's process is killed.
  std::vector<std::int64_t> kill_nodes;
  std::int64_t kill_step = 0;

  bool any() const {
    return drop_probability > 0 || delay_probability > 0 || !kill_nodes.empty();
  }
  bool any_link_fault() const { return drop_probability > 0 || delay_probability > 0; }
};

// A lost message is resent every round; after this many losses in a row it goes through. The
// bound keeps the messages in flight, which are held in memory, to a few dozen rounds' worth. It
// matters only for drop probabilities near 1: a fraction p^64 of messages reach it (0.1% at
// p = 0.9, 53% at p = 0.99), and the run warns when that fraction is above 0.1%.
constexpr std::int64_t kMaxConsecutiveLosses = 64;

// The fraction of messages whose losses stop at kMaxConsecutiveLosses: p^64.
double capped_loss_fraction(double drop_probability);

// What happens to one message.
struct MessageFate {
  std::int64_t late_rounds = 0;  // 0: on time; k > 0: arrives k rounds after it was sent
  std::int64_t losses = 0;       // how many times it was lost (each loss costs one resend)
};

class FaultPlan {
 public:
  // ConfigError for a probability outside [0, 1), delay_rounds < 1 or a negative node id.
  explicit FaultPlan(FaultOptions options);

  const FaultOptions& options() const { return options_; }

  // The fate of the message node `sender` sends node `receiver` in round `round`.
  MessageFate fate(std::int64_t round, std::int64_t sender, std::int64_t receiver) const;
  // Whether `node` has been killed by round `round`.
  bool killed(std::int64_t node, std::int64_t round) const;

 private:
  // Uniform in [0, 1), a function of its arguments only.
  double uniform(std::int64_t round, std::int64_t sender, std::int64_t receiver,
                 std::uint64_t draw) const;

  FaultOptions options_;
};

}  // namespace lpdt::algo
