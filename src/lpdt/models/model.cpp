#include "lpdt/models/model.h"

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "lpdt/models/lenet.h"
#include "lpdt/models/mobilenet_v2.h"
#include "lpdt/models/resnet_cifar.h"
#include "lpdt/models/resnet_imagenet.h"
#include "lpdt/models/transformer.h"
#include "lpdt/models/vgg.h"

namespace lpdt::models {

at::Tensor Model::init_params(std::uint64_t seed) const {
  const LayerLayout& layout = registry_.layout();
  at::Tensor flat = at::empty({layout.total_numel}, at::kFloat);
  float* out = flat.data_ptr<float>();
  Rng rng = Rng::stream(seed, 0, StreamPurpose::kInit);
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const LayerSegment& seg = layout.segments[s];
    const nn::ParamInit& init = registry_.inits()[s];
    float* p = out + seg.offset;
    for (std::int64_t i = 0; i < seg.numel; ++i) {
      switch (init.kind) {
        case nn::ParamInit::Kind::kZeros:
          p[i] = 0.0f;
          break;
        case nn::ParamInit::Kind::kOnes:
          p[i] = 1.0f;
          break;
        case nn::ParamInit::Kind::kNormal:
          p[i] = static_cast<float>(init.a + init.b * rng.normal());
          break;
        case nn::ParamInit::Kind::kUniform:
          p[i] = static_cast<float>(init.a + (init.b - init.a) * rng.uniform());
          break;
      }
    }
  }
  return flat;
}

at::Tensor Model::trainable_mask() const {
  const LayerLayout& layout = registry_.layout();
  at::Tensor mask = at::ones({layout.total_numel}, at::kFloat);
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    if (!registry_.trainable()[s]) {
      mask.narrow(0, layout.segments[s].offset, layout.segments[s].numel).zero_();
    }
  }
  return mask;
}

std::vector<at::Tensor> Model::init_buffers(std::int64_t k) const {
  std::vector<at::Tensor> buffers;
  for (const nn::BufferSpec& spec : registry_.buffers()) {
    std::vector<std::int64_t> shape{k};
    shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
    buffers.push_back(at::full(shape, spec.init_value, at::kFloat));
  }
  return buffers;
}

std::unique_ptr<Model> make_model(const ModelOptions& options) {
  const bool text = options.arch == "distilbert" || options.arch == "transformer";
  if (!text && (options.in_channels < 1 || options.height < 1 || options.width < 1)) {
    throw ConfigError("model.arch = '" + options.arch + "': inputs of " +
                      std::to_string(options.in_channels) + " channels, " +
                      std::to_string(options.height) + "x" + std::to_string(options.width) +
                      ": expected at least 1 channel and 1x1 pixels");
  }
  if (options.arch == "resnet") return std::make_unique<ResNetCifar>(options);
  if (options.arch == "resnet18") return std::make_unique<ResNetImageNet>(options, 18);
  if (options.arch == "resnet34") return std::make_unique<ResNetImageNet>(options, 34);
  if (options.arch == "mobilenetv2") return std::make_unique<MobileNetV2>(options);
  if (options.arch == "vgg11") return std::make_unique<Vgg11>(options);
  if (options.arch == "lenet5") return std::make_unique<LeNet5>(options);
  if (options.arch == "mlp") return std::make_unique<Mlp>(options);
  if (text) return std::make_unique<TransformerClassifier>(options);
  throw ConfigError("model.arch = '" + options.arch +
                    "' is not a model: expected one of resnet, resnet18, resnet34, "
                    "mobilenetv2, vgg11, lenet5, mlp, transformer, distilbert");
}

at::Tensor node_batched_loss(const at::Tensor& logits, const at::Tensor& targets) {
  const auto k = logits.size(0), b = logits.size(1);
  const at::Tensor flat_logits = logits.reshape({k * b, logits.size(2)});
  return at::cross_entropy_loss(flat_logits, targets.reshape({k * b}), {}, at::Reduction::Sum) /
         static_cast<double>(b);
}

}  // namespace lpdt::models
