#include "lpdt/metrics/cost_model.h"

#include "lpdt/core/error.h"

namespace lpdt::metrics {
namespace {

constexpr double kPicoToMilli = 1e-9;
constexpr double kFloatBytes = 4;
constexpr double kInt8Bytes = 1;

// floor((L + 2P - K) / S) + 1 (Table 8), per side.
double output_side(std::int64_t side, const TracedLayer& layer) {
  LPDT_CHECK(layer.stride > 0, "count_ops: stride must be positive");
  return static_cast<double>((side + 2 * layer.padding - layer.kernel) / layer.stride + 1);
}

}  // namespace

OpCounts count_ops(const TracedLayer& layer, CostPhase phase) {
  const bool training = phase == CostPhase::kTraining;
  const double b = static_cast<double>(layer.batch);
  const double cin = static_cast<double>(layer.in_channels);
  const double cout = static_cast<double>(layer.out_channels);
  const double k2 = static_cast<double>(layer.kernel * layer.kernel);
  // A grouped convolution's output sees in_channels / groups inputs (Table 8 with C_in / g).
  const double cin_per_out = cin / static_cast<double>(layer.groups);
  const double area = static_cast<double>(layer.height * layer.width);  // L^2
  const double passes = training ? 3 : 1;  // forward, and in training two backward products
  switch (layer.op) {
    case TracedOp::kConv: {
      const double out_area = output_side(layer.height, layer) * output_side(layer.width, layer);
      const double n = passes * b * cout * cin_per_out * k2 * out_area;
      return {n, n};
    }
    case TracedOp::kLinear: {
      const double n = passes * b * cout * cin;
      return {n, n};
    }
    case TracedOp::kActivationQuantization:
      if (!training) return {};
      return {2 * b * cin * area, 4 * b * cin * area};
    case TracedOp::kWeightQuantization:
      return {2 * cout * cin_per_out * k2, 4 * cout * cin_per_out * k2};
    case TracedOp::kBatchNormRelu:
      if (training) return {9 * b * cin * area, 6 * b * cin * area + 7 * cin};
      return {3 * b * cin * area, 2 * b * cin * area + 3 * cin};
    case TracedOp::kEvoNorm:
      if (training) return {6 * b * cin * area, 10 * b * cin * area + 5 * cin};
      return {2 * b * cin * area, 4 * b * cin * area + 2 * cin};
    case TracedOp::kSkipConnection:
      return {2 * b * cin * area, 0};
    case TracedOp::kAveragePool:
      return {b * cin * area, (training ? 2 : 1) * b * cin};
    case TracedOp::kMaxPool:
      return {b * cin * area, 0};
  }
  return {};
}

double energy_mj(const OpCounts& ops, const EnergyTable& table, bool low_precision) {
  const double add_pj = low_precision ? table.int8_add_pj : table.fp32_add_pj;
  const double mult_pj = low_precision ? table.int8_mult_pj : table.fp32_mult_pj;
  return (ops.adds * add_pj + ops.mults * mult_pj) * kPicoToMilli;
}

MemoryBreakdown training_memory(const std::vector<TracedLayer>& trace, const MemoryInputs& inputs) {
  const double params = static_cast<double>(inputs.params);
  MemoryBreakdown m;
  m.weights = params * kFloatBytes + (inputs.low_precision ? params * kInt8Bytes : 0);
  double saved = 0;
  for (const TracedLayer& layer : trace) {
    saved += static_cast<double>(layer.batch) * static_cast<double>(layer.saved_per_sample);
  }
  m.activations = saved * (inputs.low_precision ? kInt8Bytes : kFloatBytes);
  m.gradients = params * kFloatBytes;
  m.optimizer = static_cast<double>(inputs.optimizer_copies) * params * kFloatBytes;
  m.communication = static_cast<double>(inputs.algorithm_copies) * params * kFloatBytes +
                    static_cast<double>(1 + inputs.in_degree) * inputs.message_bytes;
  return m;
}

MemoryBreakdown inference_memory(std::int64_t params, bool low_precision) {
  MemoryBreakdown m;
  m.weights = static_cast<double>(params) * (low_precision ? kInt8Bytes : kFloatBytes);
  return m;
}

}  // namespace lpdt::metrics
