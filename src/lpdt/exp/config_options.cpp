#include "lpdt/exp/config_options.h"

#include <algorithm>

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
      .optimizer(std::string(to_string(config.optim.optimizer)))
      .beta1(config.optim.beta1)
      .beta2(config.optim.beta2)
      .eps(config.optim.eps)
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
  q.weight_grad = quant::parse_weight_grad(std::string(to_string(config.quant.weight_grad)));
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
    case DataConfig::Dataset::kImagenette: {
      // data/image_folder_reader.h: stored at image_size (0: 160), 10 classes.
      const std::int64_t side = config.data.image_size > 0 ? config.data.image_size : 160;
      return {3, side, side, 10};
    }
    case DataConfig::Dataset::kAgNews:
    case DataConfig::Dataset::kSentlen:
    case DataConfig::Dataset::kSyntheticText:
      throw ConfigError("data.dataset = '" + std::string(to_string(config.data.dataset)) +
                        "' is a text dataset: the cost model covers the image classifiers of the "
                        "paper's Tables 7-9");
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
  // data.crop_size: the resized crops (training) and centre crops (evaluation) the model sees.
  if (config.data.crop_size > 0) options.height = options.width = config.data.crop_size;
  options.num_classes = shape.num_classes;
  options.quant = quant_options(config);
  options.residual_init = config.model.residual_init == ModelConfig::ResidualInit::kOne
                              ? nn::ResidualInit::kOne
                              : nn::ResidualInit::kReference;
  if (options.arch == "distilbert" || options.arch == "transformer") {
    models::TransformerOptions& t = options.transformer;
    if (options.arch == "distilbert") {
      t = models::TransformerOptions::distilbert_base();
    } else {
      t.hidden = config.model.transformer_hidden;
      t.layers = config.model.transformer_layers;
      t.heads = config.model.transformer_heads;
      t.ffn_hidden = config.model.transformer_ffn;
      t.max_positions = std::max<std::int64_t>(config.data.max_length, 1);
    }
    t.vocab_size = shape.vocab_size;
    t.pad_id = shape.pad_id;
    t.dropout = t.attention_dropout = config.model.dropout;
  }
  return options;
}

}  // namespace lpdt::exp
