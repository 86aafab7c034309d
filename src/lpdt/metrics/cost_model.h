#pragma once
// The paper's hardware cost model (section 5, Tables 7-10; docs/cost.md): additions and
// multiplications per layer for training (Table 7: forward + backward) and inference (Table 9),
// energy from a table of per-operation energies, and per-node memory broken down by what holds
// it. Inputs are the layers a real forward pass ran (core/layer_trace.h), so the counts follow
// the project's models. Plain arithmetic, no tensors.
#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/core/layer_trace.h"

namespace lpdt::metrics {

enum class CostPhase { kTraining, kInference };

struct OpCounts {
  double adds = 0;
  double mults = 0;
  OpCounts& operator+=(const OpCounts& other) {
    adds += other.adds;
    mults += other.mults;
    return *this;
  }
};

// One traced layer's counts, with L^2 read as height x width and the output size
// Lo = floor((L + 2P - K) / S) + 1 per side (Table 8's notation):
//   training (Table 7)                       inference (Table 9)
//   conv        3 b Cout Cin K^2 Lo^2 (each)     b Cout Cin K^2 Lo^2 (each)
//   linear      3 b Cout Cin (each)              b Cout Cin (each)
//   act. quant  2 b C L^2 add, 4 b C L^2 mult    - (Table 9 has no such row)
//   weight q.   2 Cout Cin K^2, 4 Cout Cin K^2   same
//   BN + ReLU   9 b C L^2, 6 b C L^2 + 7 C       3 b C L^2, 2 b C L^2 + 3 C
//   EvoNorm     6 b C L^2, 10 b C L^2 + 5 C      2 b C L^2, 4 b C L^2 + 2 C
//   skip        2 b C L^2 adds                   same
//   avg pool    b C L^2 add, 2 b C mult          b C L^2, b C
//   max pool    b C L^2 comparisons, counted as additions (not in the paper's tables)
OpCounts count_ops(const TracedLayer& layer, CostPhase phase);

// Energy per operation in picojoules; the default is the paper's source, Horowitz (ISSCC 2014,
// 45 nm): fp32 add 0.9, fp32 mult 3.7, int8 add 0.03, int8 mult 0.2.
struct EnergyTable {
  std::string name = "horowitz-2014-45nm";
  double fp32_add_pj = 0.9;
  double fp32_mult_pj = 3.7;
  double int8_add_pj = 0.03;
  double int8_mult_pj = 0.2;
};

// mJ for `ops` done in fp32, or in 8-bit integers (the paper: "integer operations for our low
// precision models and float operations for the baseline models").
double energy_mj(const OpCounts& ops, const EnergyTable& table, bool low_precision);

// Per-node memory in bytes, by what holds it.
struct MemoryBreakdown {
  double weights = 0;
  double activations = 0;
  double gradients = 0;
  double optimizer = 0;
  double communication = 0;
  double total() const { return weights + activations + gradients + optimizer + communication; }
};

// What the memory model needs besides the trace.
struct MemoryInputs {
  std::int64_t params = 0;            // one node's parameters
  bool low_precision = false;         // an 8-bit model
  std::int64_t optimizer_copies = 0;  // [P] fp32 buffers of the local optimizer (momentum, QGM, Adam)
  std::int64_t algorithm_copies = 0;  // [P] fp32 buffers of the algorithm (Choco x-hat copies,
                                      // DeepSqueeze's error feedback)
  double message_bytes = 0;           // one encoded outgoing message (comm/wire_payload.h)
  std::int64_t in_degree = 0;         // messages received and held per round
};

// Training memory of one node for one iteration:
//   weights      P x 4 bytes (float master weights, as the paper: "weights are stored in full
//                precision during training"), plus P x 1 byte for the 8-bit working copy;
//   activations  sum over layers of b x saved_per_sample, 4 bytes each in fp32 and 1 byte in
//                8-bit models (what the integer backend keeps: codes, docs/quantization.md);
//   gradients    P x 4 bytes (the weight gradient stays float in both);
//   optimizer    optimizer_copies x P x 4;
//   communication algorithm_copies x P x 4 + (1 + in_degree) messages.
MemoryBreakdown training_memory(const std::vector<TracedLayer>& trace, const MemoryInputs& inputs);

// Inference memory: the weights alone, P x 4 bytes in fp32 and P x 1 byte in 8 bits (the paper:
// "for inference, we report the memory utilized by the model weights").
MemoryBreakdown inference_memory(std::int64_t params, bool low_precision);

}  // namespace lpdt::metrics
