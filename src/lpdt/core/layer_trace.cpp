#include "lpdt/core/layer_trace.h"

namespace lpdt {

const char* to_string(TracedOp op) {
  switch (op) {
    case TracedOp::kConv:
      return "conv";
    case TracedOp::kLinear:
      return "linear";
    case TracedOp::kActivationQuantization:
      return "quantization (activation)";
    case TracedOp::kWeightQuantization:
      return "quantization (weight)";
    case TracedOp::kBatchNormRelu:
      return "range batch-norm + relu";
    case TracedOp::kEvoNorm:
      return "range evonorm";
    case TracedOp::kSkipConnection:
      return "skip connection";
    case TracedOp::kAveragePool:
      return "average pool";
    case TracedOp::kMaxPool:
      return "max pool";
  }
  return "?";
}

}  // namespace lpdt
