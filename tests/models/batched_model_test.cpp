// The batched engine must compute exactly what k separate models compute (design.md).
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/models/model.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::models {
namespace {

constexpr double kOutputTolerance = 1e-4;
constexpr double kGradTolerance = 1e-4;

struct Case {
  std::string arch;
  std::string norm;
  std::int64_t depth;
  std::int64_t channels, size;
  nn::ConvAlgorithm conv = nn::ConvAlgorithm::kPerNode;
  std::string precision = "fp32";
  bool ranges_as_params = false;
};

ModelOptions options_of(const Case& c) {
  ModelOptions options;
  options.arch = c.arch;
  options.norm = c.norm;
  options.depth = c.depth;
  options.in_channels = c.channels;
  options.height = options.width = c.size;
  options.quant.precision = quant::parse_precision(c.precision);
  options.quant.ranges_as_params = c.ranges_as_params;
  return options;
}

class BatchedVsSeparate : public ::testing::TestWithParam<Case> {};

// On CPUs without AVX-512 (AVX2-only ones), oneDNN sums a node's convolution in another order in
// the batched pass than in a single-node one (other kernels for the strided channel slice and for
// grouped weights). Float results then differ by more than kGradTolerance after batch norm, and in
// 8-bit models a rounding decision flips now and then and spreads. There the comparison bounds
// the relative error of each node's whole tensor instead (a node mixed up with another is off by
// far more); NodeIndependence still checks bit for bit that no node sees another's data.
constexpr double kOtherSummationOrderRelative = 0.1;
bool same_summation_order_as_single_node(const Case& c) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return true;
#endif
  return !(c.precision == "int8" || (c.norm == "batchnorm" && c.conv == nn::ConvAlgorithm::kGrouped));
}
// ||a - b|| / ||b||
double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() / (b.norm().item<double>() + 1e-12);
}

TEST_P(BatchedVsSeparate, OutputsAndGradientsMatch) {
  const Case c = GetParam();
  const auto model = make_model(options_of(c));
  const std::int64_t k = 3, b = 4;
  // 8-bit models: node i of the batch draws what a separate model with first_node = i draws.
  const quant::DrawKey draws{99, 5, 0};
  torch::manual_seed(7);
  // Nodes start from different parameters so a mix-up between nodes would show.
  const at::Tensor base = model->init_params(1234);
  const at::Tensor params0 =
      base.unsqueeze(0).repeat({k, 1}) + 0.05 * torch::randn({k, base.numel()});
  const at::Tensor x = torch::randn({k, b, c.channels, c.size, c.size});
  const at::Tensor y = torch::randint(0, 10, {k, b}, torch::kLong);

  at::Tensor params = params0.clone().requires_grad_(true);
  std::vector<at::Tensor> buffers = model->init_buffers(k);
  // VGG's dropout draws random masks in training: compare it in evaluation mode.
  const bool training = c.arch != "vgg11";
  nn::Context ctx{&model->layout(), params, &buffers, k, training, c.conv};
  ctx.draws = draws;
  const at::Tensor logits = model->forward(ctx, x);
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{k, b, 10}));
  node_batched_loss(logits, y).backward();

  for (std::int64_t i = 0; i < k; ++i) {
    at::Tensor p = params0.narrow(0, i, 1).clone().requires_grad_(true);
    std::vector<at::Tensor> node_buffers = model->init_buffers(1);
    nn::Context node_ctx{&model->layout(), p, &node_buffers, 1, training};
    node_ctx.draws = draws;
    node_ctx.draws.first_node = i;
    const at::Tensor node_logits = model->forward(node_ctx, x.narrow(0, i, 1));
    node_batched_loss(node_logits, y.narrow(0, i, 1)).backward();
    if (!same_summation_order_as_single_node(c)) {
      EXPECT_LT(relative_error(logits[i], node_logits[0]), kOtherSummationOrderRelative)
          << "node " << i << " logits";
      EXPECT_LT(relative_error(params.grad()[i], p.grad()[0]), kOtherSummationOrderRelative)
          << "node " << i << " gradients";
      for (std::size_t j = 0; j < buffers.size(); ++j) {
        EXPECT_LT(relative_error(buffers[j][i], node_buffers[j][0]), kOtherSummationOrderRelative)
            << "node " << i << " buffer " << j;
      }
      continue;
    }
    EXPECT_TRUE(torch::allclose(node_logits[0], logits[i], kOutputTolerance, kOutputTolerance))
        << "node " << i << " logits differ";
    EXPECT_TRUE(torch::allclose(p.grad()[0], params.grad()[i], kGradTolerance, kGradTolerance))
        << "node " << i << " gradients differ; max diff "
        << (p.grad()[0] - params.grad()[i]).abs().max().item<double>();
    for (std::size_t j = 0; j < buffers.size(); ++j) {
      EXPECT_TRUE(torch::allclose(node_buffers[j][0], buffers[j][i], 1e-5, 1e-6))
          << "node " << i << " buffer " << j << " differs";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchedVsSeparate,
    ::testing::Values(Case{"resnet", "evonorm", 20, 3, 32},
                      Case{"resnet", "evonorm", 20, 3, 32, nn::ConvAlgorithm::kGrouped},
                      Case{"resnet", "batchnorm", 8, 1, 28},
                      Case{"resnet", "groupnorm", 8, 3, 16, nn::ConvAlgorithm::kGrouped},
                      Case{"lenet5", "none", 0, 1, 28}, Case{"mlp", "none", 0, 1, 28},
                      Case{"vgg11", "evonorm", 0, 3, 32},
                      Case{"resnet", "evonorm", 8, 1, 28, nn::ConvAlgorithm::kPerNode, "int8"},
                      Case{"resnet", "batchnorm", 8, 3, 16, nn::ConvAlgorithm::kPerNode, "int8"},
                      Case{"lenet5", "none", 0, 1, 28, nn::ConvAlgorithm::kPerNode, "int8"},
                      Case{"mlp", "none", 0, 1, 28, nn::ConvAlgorithm::kPerNode, "int8"},
                      Case{"lenet5", "none", 0, 1, 28, nn::ConvAlgorithm::kPerNode, "int8", true},
                      // ImageNet-style ResNet and MobileNetV2 (depthwise convolutions) at 32x32
                      // (MobileNetV2's CIFAR strides) and 64x64 (the paper's strides).
                      Case{"resnet18", "evonorm", 0, 3, 32},
                      Case{"resnet18", "batchnorm", 0, 3, 32, nn::ConvAlgorithm::kGrouped},
                      Case{"mobilenetv2", "evonorm", 0, 3, 32, nn::ConvAlgorithm::kGrouped},
                      Case{"mobilenetv2", "batchnorm", 0, 3, 32},
                      Case{"mobilenetv2", "groupnorm", 0, 3, 64},
                      Case{"resnet18", "evonorm", 0, 3, 32, nn::ConvAlgorithm::kPerNode, "int8"},
                      Case{"mobilenetv2", "evonorm", 0, 3, 32, nn::ConvAlgorithm::kGrouped,
                           "int8"}),
    [](const auto& info) {
      return info.param.arch + "_" + info.param.norm +
             (info.param.conv == nn::ConvAlgorithm::kGrouped ? "_grouped" : "_per_node") + "_" +
             info.param.precision + (info.param.ranges_as_params ? "_ranges_as_params" : "");
    });

// No node's data or parameters reach another node's results: changing every other node's
// input and parameters leaves node 0's logits, gradients and buffers bit for bit as they were.
// This holds however deep the model, unlike BatchedVsSeparate, whose float summation orders
// differ between the batched and the single-node computation: in deep 8-bit models an occasional
// rounding decision flips and the flip spreads (see IntegerVsSimulated). 8-bit MobileNetV2 with
// Range BatchNorm is the case that needs this test: its range-based scale 1 / (range * sf) jumps
// when a flip gives a near-constant channel a range of one quantization step, and the batched
// and separate runs then differ on one node (gradients by up to 41) without any exchange of data
// between nodes, which this test rules out.
class NodeIndependence : public ::testing::TestWithParam<Case> {};

TEST_P(NodeIndependence, OtherNodesChangeNothingOfNodeZero) {
  const Case c = GetParam();
  const auto model = make_model(options_of(c));
  const std::int64_t k = 3, b = 4;
  torch::manual_seed(8);
  const at::Tensor base = model->init_params(99).unsqueeze(0).repeat({k, 1});
  const at::Tensor x = torch::randn({k, b, c.channels, c.size, c.size});
  const at::Tensor y = torch::randint(0, 10, {k, b}, torch::kLong);
  struct Result {
    at::Tensor logits, grad;
    std::vector<at::Tensor> buffers;
  };
  const auto run = [&](const at::Tensor& params0, const at::Tensor& input) {
    at::Tensor params = params0.clone().requires_grad_(true);
    std::vector<at::Tensor> buffers = model->init_buffers(k);
    nn::Context ctx{&model->layout(), params, &buffers, k, true, c.conv};
    ctx.draws = quant::DrawKey{5, 3, 0};
    const at::Tensor logits = model->forward(ctx, input);
    node_batched_loss(logits, y).backward();
    return Result{logits.detach(), params.grad(), buffers};
  };
  const at::Tensor params = base + 0.05 * torch::randn_like(base);
  const Result first = run(params, x);
  // Same node 0; nodes 1 and 2 get other parameters and other inputs (10x larger).
  at::Tensor other_params = params.clone();
  other_params.narrow(0, 1, k - 1).add_(0.05 * torch::randn({k - 1, base.size(1)}));
  at::Tensor other_x = x.clone();
  other_x.narrow(0, 1, k - 1).normal_().mul_(10);
  const Result second = run(other_params, other_x);
  EXPECT_TRUE(at::equal(first.logits[0], second.logits[0])) << "node 0's logits changed";
  EXPECT_TRUE(at::equal(first.grad[0], second.grad[0]))
      << "node 0's gradient changed; max diff " << (first.grad[0] - second.grad[0]).abs().max();
  for (std::size_t j = 0; j < first.buffers.size(); ++j) {
    EXPECT_TRUE(at::equal(first.buffers[j][0], second.buffers[j][0])) << "buffer " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, NodeIndependence,
    ::testing::Values(
        Case{"mobilenetv2", "batchnorm", 0, 3, 32, nn::ConvAlgorithm::kPerNode, "int8"},
        Case{"mobilenetv2", "batchnorm", 0, 3, 32, nn::ConvAlgorithm::kGrouped, "int8"},
        Case{"mobilenetv2", "evonorm", 0, 3, 32, nn::ConvAlgorithm::kGrouped, "int8"},
        Case{"resnet", "evonorm", 20, 3, 32, nn::ConvAlgorithm::kGrouped},
        Case{"resnet", "batchnorm", 8, 3, 16, nn::ConvAlgorithm::kPerNode, "int8"}),
    [](const auto& info) {
      return info.param.arch + "_" + info.param.norm +
             (info.param.conv == nn::ConvAlgorithm::kGrouped ? "_grouped" : "_per_node") + "_" +
             info.param.precision;
    });

// Whole 8-bit models: the integer backend against the simulated one on the same draws. Float
// rounding differences can flip an occasional rounding decision downstream, so the tolerance is
// looser than for single layers (tests/nn/quant_layers_test.cpp), and still far below the
// difference a wrong kernel makes.
//
// MobileNetV2 is 52 quantized layers deep, and each flip spreads: a 1x1 convolution carries it to
// every channel of its pixel, a 3x3 one to the neighbours, a norm to the whole group. Measured
// with a per-layer comparison: the first flip (one element, one quantization step) reaches the
// 4th convolution; by the 14th, 16% of the elements differ and the logits differ by 5% (relative
// norm), gradients by 18%. Its bounds are set above that and below what a wrong depthwise kernel
// gives (zero point off by one code: logits 17%, gradients 218%); the per-layer tests hold every
// one of its layers to 1e-5.
struct BackendCase {
  std::string arch;
  double logits_tolerance, grad_tolerance;
};

class IntegerVsSimulated : public ::testing::TestWithParam<BackendCase> {};

TEST_P(IntegerVsSimulated, LogitsAndGradientsAgree) {
  if (!quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN: no integer backend";
  ModelOptions options;
  options.arch = GetParam().arch;
  options.depth = 8;
  options.in_channels = 1;
  options.height = options.width = 16;
  if (options.arch == "lenet5") options.height = options.width = 28;
  if (options.arch == "mobilenetv2") options.height = options.width = 32;  // CIFAR strides
  options.quant.precision = quant::Precision::kInt8;
  ModelOptions integer_options = options;
  integer_options.quant.backend = quant::QuantBackend::kInteger;
  const auto simulated = make_model(options);
  const auto integer = make_model(integer_options);
  const std::int64_t k = 2, b = 4;
  torch::manual_seed(3);
  const at::Tensor params0 = simulated->init_params(7).unsqueeze(0).repeat({k, 1}) +
                             0.02 * torch::randn({k, simulated->num_params()});
  const at::Tensor x = torch::randn({k, b, 1, options.height, options.width});
  const at::Tensor y = torch::randint(0, 10, {k, b}, torch::kLong);
  std::vector<at::Tensor> logits, grads;
  for (const Model* model : {simulated.get(), integer.get()}) {
    at::Tensor params = params0.clone().requires_grad_(true);
    std::vector<at::Tensor> buffers = model->init_buffers(k);
    nn::Context ctx{&model->layout(), params, &buffers, k, true};
    ctx.draws = quant::DrawKey{11, 2, 0};
    logits.push_back(model->forward(ctx, x));
    node_batched_loss(logits.back(), y).backward();
    grads.push_back(params.grad());
  }
  const auto relative = [](const at::Tensor& a, const at::Tensor& b) {
    return ((a - b).norm() / b.norm()).item<double>();
  };
  EXPECT_LT(relative(logits[1].detach(), logits[0].detach()), GetParam().logits_tolerance);
  EXPECT_LT(relative(grads[1], grads[0]), GetParam().grad_tolerance);
}

// MobileNetV2: depthwise layers on the integer backend's direct kernel.
INSTANTIATE_TEST_SUITE_P(Models, IntegerVsSimulated,
                         ::testing::Values(BackendCase{"resnet", 1e-3, 1e-2},
                                           BackendCase{"lenet5", 1e-3, 1e-2},
                                           BackendCase{"mobilenetv2", 0.1, 0.6}),
                         [](const auto& info) { return info.param.arch; });

TEST(ModelParamCounts, MatchTheReference) {
  // Spec section 6: ResNet-20 273,258; ResNet-54 760,458; VGG-11 9,496,522 (CIFAR-10, EvoNorm).
  ModelOptions options;
  EXPECT_EQ(make_model(options)->num_params(), 273258);
  EXPECT_EQ(make_model(options)->layout().segments.size(), 86u);
  options.depth = 54;
  EXPECT_EQ(make_model(options)->num_params(), 760458);
  options.arch = "vgg11";
  EXPECT_EQ(make_model(options)->num_params(), 9496522);
}

TEST(ModelErrors, BadDepthNamesTheAcceptedValues) {
  ModelOptions options;
  options.depth = 21;
  try {
    make_model(options);
    FAIL() << "depth 21 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("6n+2"), std::string::npos) << e.what();
  }
  options.depth = 20;
  options.arch = "resnet18x";
  EXPECT_THROW(make_model(options), std::exception);
}

TEST(ModelInit, IsDeterministicBySeed) {
  const auto model = make_model(ModelOptions{});
  EXPECT_TRUE(torch::equal(model->init_params(5), model->init_params(5)));
  EXPECT_FALSE(torch::equal(model->init_params(5), model->init_params(6)));
}

}  // namespace
}  // namespace lpdt::models
