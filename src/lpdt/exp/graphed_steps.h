#pragma once
// The trainer's step on a GPU, captured as CUDA graphs and replayed (run.cuda_graph). A graph
// freezes the host-side scalars of the step, so there is one graph per learning-rate value (the
// official warm-up and multistep schedules have a handful), sharing one memory pool; a schedule
// with more values than kMaxGraphs runs its further values eagerly. The first kEagerSteps steps
// run eagerly: cuDNN's algorithm search and the allocator's growth happen there, not in capture.
#include <map>
#include <memory>
#include <string>

#include "lpdt/core/cuda_step_graph.h"

namespace lpdt::exp {

class GraphedSteps {
 public:
  static constexpr int kEagerSteps = 3;
  static constexpr std::size_t kMaxGraphs = 8;

  // How a step ran: eagerly, captured (its host code ran during capture, then its graph was
  // replayed once), or replayed (only device work: the caller does the host-side bookkeeping).
  enum class Run { kEager, kCaptured, kReplayed };

  // enabled: capture at all (a CUDA device and a capturable step).
  explicit GraphedSteps(bool enabled) : enabled_(enabled) {}

  // Runs `step` for learning rate `lr` (the key of its graph).
  Run run(double lr, const std::function<void()>& step);

  std::size_t graphs() const { return graphs_.size(); }

 private:
  bool enabled_;
  int eager_steps_ = 0;
  std::map<double, std::unique_ptr<CudaStepGraph>> graphs_;
};

// The properties of a training step that decide whether it can be captured.
struct StepTraits {
  bool int8_model = false;
  bool draws_on_device = false;  // the int8 model's draws keyed on a device step counter
  bool static_topology = true;
  bool random_compressor = false;
  bool int8_messages = false;          // stochastic-rounding draws keyed on the host's round
  bool sparse_wire_size = false;       // sparse messages counted as encoded: sizes read every round
  bool lr_changes_every_step = false;  // a cosine schedule: one graph per step would never replay
  bool faults = false;  // injected faults: the host decides every round which messages arrive
  // Nodes dead at a resumed run's checkpoint (a rank lost for real, no fault injected): the host
  // applies the dead-peer rule every round (algo/link_faults.h).
  bool dead_nodes = false;
  bool adam = false;    // Adam / AdamW: bias corrections 1 - beta^t are host scalars of step t
};
// Why the trainer's step cannot be captured, "" when it can.
std::string cuda_graph_obstacle(const StepTraits& step);

}  // namespace lpdt::exp
