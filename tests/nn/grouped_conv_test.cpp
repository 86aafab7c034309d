// Grouped and depthwise convolutions (Conv2dOptions::groups, as MobileNetV2's depthwise 3x3):
// the node-batched fp32 layer against at::conv2d with groups run node by node, its
// initialisation fan, and the 8-bit QConv2d (simulated backend) against the float path on the
// same quantized inputs.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>

#include "lpdt/core/error.h"
#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/q_conv2d.h"
#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::nn {
namespace {

constexpr double kFloatTolerance = 1e-5;

struct GroupedCase {
  std::int64_t in, out, groups, stride;
  ConvAlgorithm algorithm;
};

class GroupedConv2d : public ::testing::TestWithParam<GroupedCase> {};

// Node i's output and gradients are those of at::conv2d(x_i, w_i, groups) on its own slice.
TEST_P(GroupedConv2d, EqualsPerNodeGroupedConvolution) {
  const GroupedCase c = GetParam();
  const std::int64_t k = 3, b = 2, side = 7;
  Registry registry;
  Conv2d conv(registry, "conv",
              Conv2dOptions{c.in, c.out, 3}
                  .with_stride(c.stride)
                  .with_padding(1)
                  .with_bias(true)
                  .with_groups(c.groups));
  ASSERT_EQ(registry.layout().segments[0].shape,
            (std::vector<std::int64_t>{c.out, c.in / c.groups, 3, 3}));
  torch::manual_seed(31);
  const at::Tensor params0 = torch::randn({k, registry.layout().total_numel});
  const at::Tensor x0 =
      torch::randn({b, k * c.in, side, side}).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor params = params0.clone().requires_grad_(true);
  at::Tensor x = x0.clone().requires_grad_(true);
  Context ctx{&registry.layout(), params, nullptr, k, true, c.algorithm};
  const at::Tensor y = conv.forward(ctx, x);
  const at::Tensor probe = torch::randn_like(y);
  (y * probe).sum().backward();

  const std::int64_t weight_numel = registry.layout().segments[0].numel;
  for (std::int64_t i = 0; i < k; ++i) {
    const at::Tensor w = params0[i]
                             .narrow(0, 0, weight_numel)
                             .reshape({c.out, c.in / c.groups, 3, 3})
                             .clone()
                             .requires_grad_(true);
    const at::Tensor bias = params0[i].narrow(0, weight_numel, c.out).clone().requires_grad_(true);
    const at::Tensor xi = x0.narrow(1, i * c.in, c.in).contiguous().requires_grad_(true);
    const at::Tensor yi = at::conv2d(xi, w, bias, {c.stride, c.stride}, {1, 1}, {1, 1}, c.groups);
    const at::Tensor probe_i = probe.narrow(1, i * c.out, c.out);
    (yi * probe_i).sum().backward();
    EXPECT_TRUE(at::allclose(y.narrow(1, i * c.out, c.out), yi, kFloatTolerance, kFloatTolerance))
        << "node " << i << " output";
    EXPECT_TRUE(at::allclose(params.grad()[i].narrow(0, 0, weight_numel), w.grad().reshape({-1}),
                             kFloatTolerance, kFloatTolerance))
        << "node " << i << " weight gradient";
    EXPECT_TRUE(at::allclose(params.grad()[i].narrow(0, weight_numel, c.out), bias.grad(),
                             kFloatTolerance, kFloatTolerance))
        << "node " << i << " bias gradient";
    EXPECT_TRUE(at::allclose(x.grad().narrow(1, i * c.in, c.in), xi.grad(), kFloatTolerance,
                             kFloatTolerance))
        << "node " << i << " input gradient";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Groups, GroupedConv2d,
    ::testing::Values(GroupedCase{6, 6, 6, 1, ConvAlgorithm::kPerNode},  // depthwise
                      GroupedCase{6, 6, 6, 2, ConvAlgorithm::kGrouped},
                      GroupedCase{4, 6, 2, 1, ConvAlgorithm::kGrouped},
                      GroupedCase{4, 8, 2, 2, ConvAlgorithm::kPerNode},
                      GroupedCase{4, 8, 4, 1, ConvAlgorithm::kGrouped},  // 2 outputs per input
                      GroupedCase{4, 6, 1, 1, ConvAlgorithm::kGrouped}),  // dense
    [](const auto& info) {
      const GroupedCase& c = info.param;
      return "in" + std::to_string(c.in) + "_out" + std::to_string(c.out) + "_groups" +
             std::to_string(c.groups) + "_stride" + std::to_string(c.stride) +
             (c.algorithm == ConvAlgorithm::kGrouped ? "_grouped" : "_per_node");
    });

TEST(GroupedConv2d, InitialisesWithTheFanOutOfOneInputChannel) {
  // He et al. 2015 fan-out: an input channel of a depthwise 3x3 conv feeds 9 outputs, of a
  // dense one 9 * out; groups 2 of 8 outputs: 9 * 4.
  const struct {
    Conv2dOptions options;
    double fan_out;
  } cases[] = {{Conv2dOptions{32, 32, 3}.with_groups(32), 9.0},
               {Conv2dOptions{16, 32, 3}, 9.0 * 32},
               {Conv2dOptions{4, 8, 3}.with_groups(2), 9.0 * 4}};
  for (const auto& c : cases) {
    Registry registry;
    Conv2d conv(registry, "conv", c.options);
    ASSERT_EQ(registry.inits()[0].kind, ParamInit::Kind::kNormal);
    EXPECT_NEAR(registry.inits()[0].b, std::sqrt(2.0 / c.fan_out), 1e-12);
  }
}

TEST(GroupedConv2d, GroupsNotDividingTheChannelsAreAConfigError) {
  Registry registry;
  try {
    Conv2d conv(registry, "features.1.conv.0", Conv2dOptions{6, 8, 3}.with_groups(4));
    FAIL() << "groups 4 of 6 input channels accepted";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("features.1.conv.0"), std::string::npos) << message;
    EXPECT_NE(message.find("groups = 4"), std::string::npos) << message;
    EXPECT_NE(message.find("in_channels = 6"), std::string::npos) << message;
  }
  EXPECT_THROW(Conv2d(registry, "zero", Conv2dOptions{6, 6, 3}.with_groups(0)), ConfigError);
}

quant::QuantOptions int8() {
  quant::QuantOptions q;
  q.precision = quant::Precision::kInt8;
  return q;
}

// The 8-bit grouped convolution: forward conv(Q(x), Q(w), groups) from the quantizations
// recomputed by definition (sites: input = 0, layer gradient = 1, as quant_layers_test.cpp), the
// weight gradient from the float output gradient, the layer gradient from the 8-bit one.
TEST(QConv2dGrouped, SimulatedBackendEqualsTheFloatPathOnQuantizedInputs) {
  const std::int64_t k = 2, in = 6, out = 12, groups = 3, b = 3;
  Registry registry;
  QConv2d conv(registry, "conv",
               Conv2dOptions{in, out, 3}.with_padding(1).with_stride(2).with_groups(groups),
               int8());
  torch::manual_seed(32);
  const at::Tensor params0 = torch::randn({k, registry.layout().total_numel}) * 0.3;
  const at::Tensor x0 = torch::randn({b, k * in, 9, 9}).contiguous(at::MemoryFormat::ChannelsLast);
  const quant::DrawKey draws{6, 2, 0};
  at::Tensor params = params0.clone().requires_grad_(true);
  at::Tensor x = x0.clone().requires_grad_(true);
  std::vector<at::Tensor> buffers;
  for (const BufferSpec& spec : registry.buffers()) {
    std::vector<std::int64_t> shape{k};
    shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
    buffers.push_back(at::full(shape, spec.init_value, at::kFloat));
  }
  Context ctx{&registry.layout(), params, &buffers, k, true};
  ctx.draws = draws;
  const at::Tensor y = conv.forward(ctx, x);
  const at::Tensor probe = torch::randn_like(y);
  (y * probe).sum().backward();

  Context plain{&registry.layout(), params0, nullptr, k, true};
  const at::Tensor w = plain.param(ParamRef{0}).contiguous();  // [k, out, in/groups, 3, 3]
  const quant::QuantizeRequest activation{8, quant::QuantScheme::kGemmlowp,
                                          quant::Rounding::kStochastic, draws, 0};
  const at::Tensor qx =
      quant::fake_quantize(x0, k, quant::sample_mean_range(x0, k), activation)
          .requires_grad_(true);
  const quant::QuantizeRequest nearest{
      8, quant::QuantScheme::kGemmlowp, quant::Rounding::kNearest, {}, 0};
  const at::Tensor qw =
      quant::fake_quantize(w, k, quant::tensor_range(w, k), nearest).requires_grad_(true);
  const auto conv_of = [&](const at::Tensor& input, const at::Tensor& weight) {
    return at::conv2d(input, weight.reshape({k * out, in / groups, 3, 3}), {}, {2, 2}, {1, 1},
                      {1, 1}, k * groups);
  };
  const at::Tensor y_float = conv_of(qx.detach(), qw);
  EXPECT_TRUE(at::allclose(y, y_float, kFloatTolerance, kFloatTolerance)) << "forward";
  (y_float * probe).sum().backward();
  EXPECT_TRUE(at::allclose(params.grad(), qw.grad().reshape({k, -1}), kFloatTolerance,
                           kFloatTolerance))
      << "weight gradient: float output gradient, quantized input";
  const at::Tensor gc = quant::canonical_layout(probe);
  const quant::QuantizeRequest gradient{8, quant::QuantScheme::kGemmlowp,
                                        quant::Rounding::kStochastic, draws, 1};
  const at::Tensor y_layer = conv_of(qx, qw.detach());
  y_layer.backward(quant::fake_quantize(gc, k, quant::tensor_range(gc, k), gradient)
                       .contiguous(y_layer.suggest_memory_format()));
  EXPECT_TRUE(at::allclose(x.grad(), qx.grad(), kFloatTolerance, kFloatTolerance))
      << "layer gradient: the 8-bit output gradient through the quantized weight";
}

}  // namespace
}  // namespace lpdt::nn
