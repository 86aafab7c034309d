// ResNet-18 / ResNet-34 (ImageNet style) and MobileNetV2: parameter counts against the
// published numbers, the CIFAR input-size rule of MobileNetV2, the 8-bit construction, and the
// per-layer trace of depthwise convolutions. That the node-batched models equal k separate ones
// is checked with every other model in batched_model_test.cpp.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/core/error.h"
#include "lpdt/core/layer_trace.h"
#include "lpdt/models/model.h"

namespace lpdt::models {
namespace {

ModelOptions options_for(const std::string& arch, const std::string& norm,
                         std::int64_t num_classes) {
  ModelOptions options;
  options.arch = arch;
  options.norm = norm;
  options.num_classes = num_classes;
  options.height = options.width = 224;
  return options;
}

TEST(ImageNetModelParamCounts, MatchThePublishedNumbers) {
  // torchvision (BatchNorm: weight and bias per channel; bias-free convs; fc with bias):
  // resnet18 11,689,512, resnet34 21,797,672, mobilenet_v2 3,504,872 at 1,000 classes.
  EXPECT_EQ(make_model(options_for("resnet18", "batchnorm", 1000))->num_params(), 11689512);
  EXPECT_EQ(make_model(options_for("resnet34", "batchnorm", 1000))->num_params(), 21797672);
  EXPECT_EQ(make_model(options_for("mobilenetv2", "batchnorm", 1000))->num_params(), 3504872);
  // 10 classes: the classifier loses (512 + 1) * 990 and (1280 + 1) * 990 parameters.
  EXPECT_EQ(make_model(options_for("resnet18", "batchnorm", 10))->num_params(), 11181642);
  EXPECT_EQ(make_model(options_for("mobilenetv2", "batchnorm", 10))->num_params(), 2236682);
  // EvoNorm adds v per channel: 4,800 norm channels in ResNet-18 (the reference's Imagenette
  // ResNet-18, spec section 6: 11,186,442), 17,056 in MobileNetV2.
  EXPECT_EQ(make_model(options_for("resnet18", "evonorm", 10))->num_params(), 11186442);
  EXPECT_EQ(make_model(options_for("mobilenetv2", "evonorm", 10))->num_params(), 2253738);
}

TEST(ImageNetModelParamCounts, DoNotDependOnTheInputSize) {
  ModelOptions small = options_for("mobilenetv2", "batchnorm", 1000);
  small.height = small.width = 32;  // the CIFAR adaptation changes strides only
  EXPECT_EQ(make_model(small)->num_params(), 3504872);
  small.arch = "resnet18";
  EXPECT_EQ(make_model(small)->num_params(), 11689512);
}

// The traced rows of one forward pass of one node.
std::vector<TracedLayer> trace_of(const ModelOptions& options, std::int64_t batch = 1) {
  const auto model = make_model(options);
  std::vector<at::Tensor> buffers = model->init_buffers(1);
  const at::Tensor params = model->init_params(1).unsqueeze(0);
  LayerTrace trace;
  nn::Context ctx{&model->layout(), params, &buffers, 1, false};
  ctx.trace = &trace;
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(
      ctx, torch::randn({1, batch, options.in_channels, options.height, options.width}));
  EXPECT_EQ(logits.sizes(), (std::vector<std::int64_t>{1, batch, options.num_classes}));
  return trace.layers;
}

const TracedLayer& row_named(const std::vector<TracedLayer>& rows, const std::string& name) {
  for (const TracedLayer& row : rows) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("no traced row " + name);
}

TEST(MobileNetV2, CifarInputsKeepTheFirstTwoStridesAtOne) {
  // Rule (mobilenet_v2.h): height <= 32 -> stem and second block group with stride 1, so the
  // 1x1 head conv sees 4x4 maps at 32x32; otherwise the paper's strides (/32): 7x7 at 224.
  ModelOptions options = options_for("mobilenetv2", "evonorm", 10);
  options.height = options.width = 32;
  const auto cifar = trace_of(options);
  EXPECT_EQ(row_named(cifar, "features.0.0").stride, 1);
  EXPECT_EQ(row_named(cifar, "features.2.conv.2").stride, 1);  // (6,24,2,2)'s depthwise conv
  EXPECT_EQ(row_named(cifar, "features.18.0").height, 4);
  options.height = options.width = 64;
  const auto imagenet = trace_of(options);
  EXPECT_EQ(row_named(imagenet, "features.0.0").stride, 2);
  EXPECT_EQ(row_named(imagenet, "features.2.conv.2").stride, 2);
  EXPECT_EQ(row_named(imagenet, "features.18.0").height, 2);
}

TEST(MobileNetV2, DepthwiseConvolutionsAreTracedWithTheirGroups) {
  ModelOptions options = options_for("mobilenetv2", "batchnorm", 10);
  options.height = options.width = 64;
  const auto rows = trace_of(options, 2);
  // features.2, the first (6,24,2,2) block: expand 16 -> 96, depthwise 96 at stride 2 on the
  // 32x32 maps the stem leaves (layers conv.0-5: expand conv, norm, depthwise conv, norm,
  // projection conv, norm).
  const TracedLayer& dw = row_named(rows, "features.2.conv.2");
  EXPECT_EQ(dw.in_channels, 96);
  EXPECT_EQ(dw.out_channels, 96);
  EXPECT_EQ(dw.groups, 96);
  EXPECT_EQ(dw.kernel, 3);
  EXPECT_EQ(dw.height, 32);
  EXPECT_EQ(dw.stride, 2);
  EXPECT_EQ(row_named(rows, "features.2.conv.4").groups, 1);  // the 1x1 projection is dense
  EXPECT_EQ(row_named(rows, "features.2.conv.0").groups, 1);  // the 1x1 expansion is dense
}

TEST(ResNet18, SmallInputsRunThroughTheMaxPoolAndAdaptivePool) {
  ModelOptions options = options_for("resnet18", "evonorm", 10);
  options.height = options.width = 32;
  const auto rows = trace_of(options, 2);
  EXPECT_EQ(row_named(rows, "conv1").kernel, 7);
  EXPECT_EQ(row_named(rows, "maxpool").height, 16);  // after the 7x7/2 stem
  EXPECT_EQ(row_named(rows, "maxpool").stride, 2);
  EXPECT_EQ(row_named(rows, "layer1.0.conv1").height, 8);
  EXPECT_EQ(row_named(rows, "layer4.0.downsample.0").stride, 2);
  EXPECT_EQ(row_named(rows, "avgpool").height, 1);
}

// The official 8-bit models start each residual branch's last norm at gamma = 0
// (ResidualInit::kReference); kOne starts it at 1, as the full-precision models. Range EvoNorm
// and Range BatchNorm alike (Range BatchNorm started at 1).
TEST(ImageNetModels8Bit, ZeroTheLastGammaOfEveryResidualBranch) {
  for (const nn::ResidualInit init : {nn::ResidualInit::kReference, nn::ResidualInit::kOne}) {
    for (const std::string arch : {"resnet18", "mobilenetv2", "resnet"}) {
      for (const std::string norm : {"evonorm", "batchnorm"}) {
        SCOPED_TRACE(arch + " " + norm +
                     (init == nn::ResidualInit::kOne ? " (one)" : " (reference)"));
        ModelOptions options = options_for(arch, norm, 10);
        options.height = options.width = 32;
        options.quant.precision = quant::Precision::kInt8;
        options.residual_init = init;
        const auto model = make_model(options);
        EXPECT_NE(model->name().find("-int8"), std::string::npos);
        const at::Tensor params = model->init_params(3);
        // Residual branches' last norms: ResNet bn2; MobileNetV2's projection norm of a block with
        // an add (features.3: 24 -> 24, stride 1), not of one without (features.2: 16 -> 24).
        const std::string branch_end =
            arch == "mobilenetv2" ? "features.3.conv.5.weight" : "layer1.0.bn2.weight";
        const std::string other =
            arch == "mobilenetv2" ? "features.2.conv.5.weight" : "layer1.0.bn1.weight";
        const double branch_gamma = init == nn::ResidualInit::kOne ? 1.0 : 0.0;
        int found = 0;
        for (const LayerSegment& seg : model->layout().segments) {
          const at::Tensor values = params.narrow(0, seg.offset, seg.numel);
          if (seg.name == branch_end) {
            EXPECT_TRUE(values.eq(branch_gamma).all().item<bool>()) << seg.name;
            ++found;
          }
          if (seg.name == other) {
            EXPECT_TRUE(values.eq(1).all().item<bool>()) << seg.name;
            ++found;
          }
        }
        EXPECT_EQ(found, 2) << "segments " << branch_end << ", " << other;
      }
    }
  }
}

TEST(ImageNetModelErrors, UnknownArchListsTheNewModels) {
  ModelOptions options;
  options.arch = "resnet50";
  try {
    make_model(options);
    FAIL() << "resnet50 accepted";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    for (const char* arch : {"resnet18", "resnet34", "mobilenetv2", "transformer", "distilbert"}) {
      EXPECT_NE(message.find(arch), std::string::npos) << message;
    }
  }
}

// An image model with no channels or no pixels is refused when it is made, naming the shape,
// instead of failing inside a layer's first forward pass.
TEST(ImageModelErrors, EmptyInputsAreRefusedWithTheirShape) {
  struct Bad {
    std::int64_t channels, height, width;
  };
  for (const char* arch : {"resnet", "mlp", "lenet5", "mobilenetv2"}) {
    for (const Bad bad : {Bad{0, 32, 32}, Bad{-1, 32, 32}, Bad{1, 0, 32}, Bad{1, 32, 0}}) {
      ModelOptions options;
      options.arch = arch;
      options.in_channels = bad.channels;
      options.height = bad.height;
      options.width = bad.width;
      const std::string shape = std::to_string(bad.channels) + " channels, " +
                                std::to_string(bad.height) + "x" + std::to_string(bad.width);
      try {
        make_model(options);
        ADD_FAILURE() << arch << " accepted " << shape;
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(shape), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace lpdt::models
