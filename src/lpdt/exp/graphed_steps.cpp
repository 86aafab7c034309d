#include "lpdt/exp/graphed_steps.h"

namespace lpdt::exp {

GraphedSteps::Run GraphedSteps::run(double lr, const std::function<void()>& step) {
  if (!enabled_ || eager_steps_ < kEagerSteps) {
    ++eager_steps_;
    step();
    return Run::kEager;
  }
  if (const auto it = graphs_.find(lr); it != graphs_.end()) {
    it->second->replay();
    return Run::kReplayed;
  }
  if (graphs_.size() >= kMaxGraphs) {
    step();
    return Run::kEager;
  }
  auto graph = std::make_unique<CudaStepGraph>();
  graph->capture(step, graphs_.empty() ? nullptr : graphs_.begin()->second.get());
  graph->replay();
  graphs_.emplace(lr, std::move(graph));
  return Run::kCaptured;
}

std::string cuda_graph_obstacle(const StepTraits& step) {
  if (!cuda_graphs_available()) return "this build has no CUDA graphs (a LibTorch without CUDA)";
  if (step.int8_model && !step.draws_on_device) {
    return "the int8 model's stochastic-rounding draws are keyed on the host's step counter (a "
           "build without the CUDA quantizer kernels)";
  }
  if (!step.static_topology) return "a time-varying topology changes the mixing matrix every round";
  if (step.random_compressor) return "random-k draws its indices on the host every round";
  if (step.int8_messages) {
    return "int8 messages' stochastic-rounding draws are keyed on the host's round counter";
  }
  if (step.sparse_wire_size) {
    return "the encoded size of a sparse message depends on its kept positions, read on the host "
           "every round for the byte ledger";
  }
  if (step.lr_changes_every_step) {
    return "the cosine schedule changes the learning rate, a captured constant, every step";
  }
  if (step.faults) return "injected faults decide on the host, every round, which messages arrive";
  if (step.dead_nodes) {
    return "nodes dead at the checkpoint: the host drops their edges every round";
  }
  if (step.adam) {
    return "Adam's bias corrections 1 - beta^t, captured constants, change every step";
  }
  return "";
}

}  // namespace lpdt::exp
