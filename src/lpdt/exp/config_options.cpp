#include "lpdt/exp/config_options.h"

#include "lpdt/compress/compressor.h"
#include "lpdt/core/error.h"

namespace lpdt::exp {

algo::DecentralizedOptions algorithm_options(const ExperimentConfig& config,
                                             std::int64_t first_node) {
  static const char* kAlgorithmNames[] = {"dpsgd", "deepsqueeze", "choco"};
  const auto compressor = compress::CompressorOptions()
                              .name(std::string(to_string(config.algo.compressor)))
                              .keep_fraction(config.algo.keep_fraction)
                              .seed(config.run.seed)
                              .values(compress::parse_message_values(
                                  std::string(to_string(config.algo.message_values))))
                              .rounding(quant::parse_rounding(
                                  std::string(to_string(config.algo.message_rounding))))
                              .first_node(first_node);
  return algo::DecentralizedOptions()
      .algorithm(kAlgorithmNames[static_cast<int>(config.algo.name)])
      .compressor(compressor)
      .eta(config.algo.consensus_step)
      .momentum(config.optim.momentum)
      .nesterov(config.optim.nesterov)
      .weight_decay(config.optim.weight_decay)
      .qgm(config.algo.qgm)
      .xhat_init(std::string(to_string(config.algo.choco_init)))
      .accounting(std::string(to_string(config.ledger.accounting)));
}

quant::QuantOptions quant_options(const ExperimentConfig& config) {
  quant::QuantOptions q;
  q.precision = quant::parse_precision(std::string(to_string(config.model.precision)));
  q.backend = quant::parse_backend(std::string(to_string(config.quant.backend)));
  q.scheme = quant::parse_scheme(std::string(to_string(config.quant.scheme)));
  q.bits = config.quant.bits;
  q.grad_bits = config.quant.grad_bits;
  q.eval_rounding = quant::parse_rounding(std::string(to_string(config.quant.eval_rounding)));
  q.range_momentum = config.quant.range_momentum;
  q.range_evonorm = std::string(to_string(config.quant.range_evonorm));
  q.ranges_as_params = config.quant.range_state == QuantConfig::RangeState::kParam;
  return q;
}

InputShape dataset_input_shape(const ExperimentConfig& config) {
  switch (config.data.dataset) {
    case DataConfig::Dataset::kFashionMnist:
    case DataConfig::Dataset::kMnist:
      return {1, 28, 28, 10};
    case DataConfig::Dataset::kCifar10:
      return {3, 32, 32, 10};
    case DataConfig::Dataset::kCifar100:
      return {3, 32, 32, 100};
    case DataConfig::Dataset::kSynthetic:
      return {3, config.data.synthetic_size, config.data.synthetic_size, 10};  // data/synthetic.h
  }
  throw ConfigError("data.dataset: no known input shape");
}

models::ModelOptions model_options_for(const ExperimentConfig& config, const InputShape& shape) {
  models::ModelOptions options;
  options.arch = std::string(to_string(config.model.arch));
  options.depth = config.model.depth;
  options.norm = std::string(to_string(config.model.norm));
  options.groups = config.model.groups;
  options.in_channels = shape.channels;
  options.height = config.data.pad_to > 0 ? config.data.pad_to : shape.height;
  options.width = config.data.pad_to > 0 ? config.data.pad_to : shape.width;
  options.num_classes = shape.num_classes;
  options.quant = quant_options(config);
  return options;
}

}  // namespace lpdt::exp
