#include "lpdt/quant/quant_options.h"

#include "lpdt/core/error.h"

namespace lpdt::quant {

void QuantOptions::validate() const {
  if (bits < 2 || bits > 16) {
    throw ConfigError("quant.bits = " + std::to_string(bits) +
                      " is out of range: expected 2 to 16");
  }
  if (grad_bits < 2 || grad_bits > 16) {
    throw ConfigError("quant.grad_bits = " + std::to_string(grad_bits) +
                      " is out of range: expected 2 to 16");
  }
  if (!(range_momentum > 0.0 && range_momentum <= 1.0)) {
    throw ConfigError("quant.range_momentum = " + std::to_string(range_momentum) +
                      " is out of range: expected (0, 1] (the weight of the newest batch)");
  }
  if (range_evonorm != "reference" && range_evonorm != "paper" && range_evonorm != "std") {
    throw ConfigError("quant.range_evonorm = '" + range_evonorm +
                      "' is not a Range EvoNorm variant: expected reference, paper or std");
  }
  if (backend == QuantBackend::kInteger) {
    if (scheme != QuantScheme::kGemmlowp) {
      throw ConfigError(
          "quant.backend = 'integer' needs quant.scheme = 'gemmlowp' (an integer zero point makes "
          "the padding of integer convolutions exact); got quant.scheme = 'reference'");
    }
    if (bits != 8 || grad_bits != 8) {
      throw ConfigError(
          "quant.backend = 'integer' computes with 8-bit codes: set quant.bits = 8 "
          "and quant.grad_bits = 8, or use quant.backend = 'simulated'");
    }
  }
}

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  if (name == "int8") return Precision::kInt8;
  throw ConfigError("model.precision = '" + name +
                    "' is not a precision: expected fp32, bf16 or int8");
}

QuantBackend parse_backend(const std::string& name) {
  if (name == "simulated") return QuantBackend::kSimulated;
  if (name == "integer") return QuantBackend::kInteger;
  throw ConfigError("quant.backend = '" + name +
                    "' is not a backend: expected simulated or integer");
}

QuantScheme parse_scheme(const std::string& name) {
  if (name == "gemmlowp") return QuantScheme::kGemmlowp;
  if (name == "reference") return QuantScheme::kReference;
  throw ConfigError("quant.scheme = '" + name +
                    "' is not a scheme: expected gemmlowp or reference");
}

Rounding parse_rounding(const std::string& name) {
  if (name == "nearest") return Rounding::kNearest;
  if (name == "stochastic") return Rounding::kStochastic;
  throw ConfigError("quant.eval_rounding = '" + name +
                    "' is not a rounding: expected nearest or stochastic");
}

WeightGrad parse_weight_grad(const std::string& name) {
  if (name == "fp32") return WeightGrad::kFp32;
  if (name == "bf16") return WeightGrad::kBf16;
  throw ConfigError("quant.weight_grad = '" + name +
                    "' is not a weight-gradient precision: expected fp32 or bf16");
}

std::string to_string(Precision value) {
  switch (value) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kInt8:
      return "int8";
  }
  return "?";
}
std::string to_string(QuantBackend value) {
  return value == QuantBackend::kSimulated ? "simulated" : "integer";
}
std::string to_string(QuantScheme value) {
  return value == QuantScheme::kGemmlowp ? "gemmlowp" : "reference";
}
std::string to_string(Rounding value) {
  return value == Rounding::kNearest ? "nearest" : "stochastic";
}
std::string to_string(WeightGrad value) { return value == WeightGrad::kFp32 ? "fp32" : "bf16"; }

}  // namespace lpdt::quant
