// checkpoint_equal [--tensors] A B: exit 0 when two checkpoints (exp/checkpoint.h) hold the same
// training state value for value: parameters, buffers, every optimizer tensor, the byte ledger,
// rounds and epochs done, and the per-epoch results apart from wall-clock times; with --tensors,
// the rounds and the tensors only (a run that lost a rank counts that rank's bytes as it last
// reported them, where the simulator counts them to its death). Exit 1 listing what differs.
// The MPI tests compare a multi-process run with the simulator through it.
#include <torch/types.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "lpdt/exp/checkpoint.h"

namespace {

int differences = 0;

void differ(const std::string& what) {
  std::cerr << "checkpoint_equal: " << what << " differs\n";
  ++differences;
}

void compare_tensors(const std::string& what, const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
    differ(what + " (shape or dtype)");
  } else if (!at::equal(a, b)) {
    const double gap = (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
    // Which rows (nodes, in the simulator's layout) differ: a node-local difference (a dead
    // node's rows) reads apart from a global one.
    std::string rows;
    if (a.dim() >= 1 && a.size(0) > 1) {
      const at::Tensor same = at::eq(a, b).reshape({a.size(0), -1}).all(1);
      for (std::int64_t r = 0; r < a.size(0); ++r) {
        if (!same[r].item<bool>()) rows += (rows.empty() ? "" : ", ") + std::to_string(r);
      }
      rows = ", rows " + rows;
    }
    differ(what + " (max |a - b| = " + std::to_string(gap) + rows + ")");
  }
}

nlohmann::json without_times(nlohmann::json epochs) {
  for (auto& e : epochs) e.erase("elapsed_s");
  return epochs;
}

}  // namespace

int main(int argc, char** argv) {
  const bool tensors_only = argc == 4 && std::string(argv[1]) == "--tensors";
  if (argc != 3 && !tensors_only) {
    std::cerr << "usage: checkpoint_equal [--tensors] A/checkpoint.lpdt B/checkpoint.lpdt\n";
    return 2;
  }
  try {
    const auto a = lpdt::exp::read_checkpoint(argv[argc - 2]);
    const auto b = lpdt::exp::read_checkpoint(argv[argc - 1]);
    if (a.epochs_done != b.epochs_done) differ("epochs_done");
    if (a.rounds_done != b.rounds_done) differ("rounds_done");
    compare_tensors("params", a.params, b.params);
    if (a.buffers.size() != b.buffers.size()) differ("buffer count");
    for (std::size_t i = 0; i < std::min(a.buffers.size(), b.buffers.size()); ++i) {
      compare_tensors("buffer " + std::to_string(i), a.buffers[i], b.buffers[i]);
    }
    if (a.optimizer.size() != b.optimizer.size()) differ("optimizer tensor names");
    for (const auto& [name, tensor] : a.optimizer) {
      const auto it = b.optimizer.find(name);
      if (it == b.optimizer.end()) {
        differ("optimizer '" + name + "' (missing in B)");
        continue;
      }
      compare_tensors("optimizer '" + name + "'", tensor, it->second);
    }
    if (!tensors_only && a.ledger != b.ledger) differ("byte ledger");
    if (!tensors_only && without_times(a.epochs) != without_times(b.epochs)) {
      differ("per-epoch results");
    }
  } catch (const std::exception& e) {
    std::cerr << "checkpoint_equal: " << e.what() << "\n";
    return 2;
  }
  if (differences == 0) std::cout << "checkpoint_equal: identical\n";
  return differences == 0 ? 0 : 1;
}
