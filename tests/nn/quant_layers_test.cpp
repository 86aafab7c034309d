// The 8-bit layers: gradient bifurcation against the float path on the same quantized inputs,
// Range EvoNorm / Range BatchNorm against finite differences and against the reference
// formulas (reference spec 7.3 / 7.4) written out for one node.
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>

#include "finite_difference.h"
#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/nn/param_segments.h"
#include "lpdt/nn/q_conv2d.h"
#include "lpdt/nn/q_linear.h"
#include "lpdt/nn/quantized_params.h"
#include "lpdt/nn/range_batch_norm.h"
#include "lpdt/nn/range_evonorm.h"
#include "lpdt/nn/range_evonorm_kernel.h"
#include "lpdt/quant/affine_quantizer.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::nn {
namespace {

using testing::check_param_gradient;

constexpr double kFloatTolerance = 1e-5;

std::vector<at::Tensor> fresh_buffers(const Registry& registry, std::int64_t k) {
  std::vector<at::Tensor> buffers;
  for (const BufferSpec& spec : registry.buffers()) {
    std::vector<std::int64_t> shape{k};
    shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
    buffers.push_back(at::full(shape, spec.init_value, at::kFloat));
  }
  return buffers;
}

quant::QuantOptions int8() {
  quant::QuantOptions q;
  q.precision = quant::Precision::kInt8;
  return q;
}

// The quantizations a QConv2d / QLinear makes, recomputed from their definitions: sites are
// numbered in construction order (input QuantMeasure = 0, layer gradient = 1).
struct Expected {
  at::Tensor qx, qw, qb;
};
Expected expected_quantization(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                               std::int64_t k, const quant::DrawKey& draws) {
  Expected e;
  quant::QuantizeRequest activation{8, quant::QuantScheme::kGemmlowp, quant::Rounding::kStochastic,
                                    draws, 0};
  e.qx = quant::fake_quantize(x, k, quant::sample_mean_range(x, k), activation);
  quant::QuantizeRequest nearest{
      8, quant::QuantScheme::kGemmlowp, quant::Rounding::kNearest, {}, 0};
  e.qw = quant::fake_quantize(w, k, quant::tensor_range(w, k), nearest);
  if (b.defined()) e.qb = quant::fake_quantize(b, k, quant::tensor_range(b, k), nearest);
  return e;
}

at::Tensor quantized_gradient(const at::Tensor& g, std::int64_t k, const quant::DrawKey& draws) {
  const at::Tensor gc = quant::canonical_layout(g);
  quant::QuantizeRequest request{8, quant::QuantScheme::kGemmlowp, quant::Rounding::kStochastic,
                                 draws, 1};
  return quant::fake_quantize(gc, k, quant::tensor_range(gc, k), request);
}

TEST(QConv2d, BifurcatedGradientsEqualTheFloatPathOnQuantizedInputs) {
  Registry registry;
  const std::int64_t k = 2, in = 3, out = 4, b = 5;
  QConv2d conv(registry, "conv",
               Conv2dOptions{in, out, 3}.with_padding(1).with_stride(2).with_bias(true), int8());
  torch::manual_seed(2);
  const at::Tensor params0 = torch::randn({k, registry.layout().total_numel}) * 0.3;
  const at::Tensor x0 = torch::randn({b, k * in, 9, 9}).contiguous(at::MemoryFormat::ChannelsLast);
  const quant::DrawKey draws{5, 3, 0};

  at::Tensor params = params0.clone().requires_grad_(true);
  at::Tensor x = x0.clone().requires_grad_(true);
  std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
  Context ctx{&registry.layout(), params, &buffers, k, true};
  ctx.draws = draws;
  const at::Tensor y = conv.forward(ctx, x);
  const at::Tensor probe = torch::randn_like(y);
  (y * probe).sum().backward();

  // The float path: conv(qx, qw, qb) with autograd, the layer gradient from Q(probe).
  Context plain{&registry.layout(), params0, nullptr, k, true};
  const at::Tensor w = plain.param(ParamRef{0}).contiguous(),
                   bias = plain.param(ParamRef{1}).contiguous();
  const Expected e = expected_quantization(x0, w, bias, k, draws);
  const at::Tensor qw = e.qw.clone().requires_grad_(true), qb = e.qb.clone().requires_grad_(true);
  const at::Tensor qx = e.qx.clone().requires_grad_(true);
  const auto conv_of = [&](const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bb) {
    return at::conv2d(input, weight.reshape({k * out, in, 3, 3}), bb.reshape({k * out}), {2, 2},
                      {1, 1}, {1, 1}, k);
  };
  const at::Tensor y_float = conv_of(qx.detach(), qw, qb);
  EXPECT_TRUE(at::allclose(y, y_float, kFloatTolerance, kFloatTolerance));
  (y_float * probe).sum().backward();
  const at::Tensor grad_params = params.grad();
  EXPECT_TRUE(at::allclose(grad_params.narrow(1, 0, w[0].numel()), qw.grad().reshape({k, -1}),
                           kFloatTolerance, kFloatTolerance))
      << "weight gradient: float output gradient, quantized input";
  EXPECT_TRUE(at::allclose(grad_params.narrow(1, w[0].numel(), out), qb.grad(), kFloatTolerance,
                           kFloatTolerance));
  const at::Tensor y_layer = conv_of(qx, qw.detach(), qb.detach());
  y_layer.backward(quantized_gradient(probe, k, draws).contiguous(y_layer.suggest_memory_format()));
  EXPECT_TRUE(at::allclose(x.grad(), qx.grad(), kFloatTolerance, kFloatTolerance))
      << "layer gradient: the 8-bit output gradient through the quantized weight";
  // And the layer gradient is not the float one.
  const at::Tensor qx2 = e.qx.clone().requires_grad_(true);
  conv_of(qx2, qw.detach(), qb.detach()).backward(probe);
  EXPECT_FALSE(at::allclose(x.grad(), qx2.grad(), 1e-7, 1e-7));
}

TEST(QLinear, BifurcatedGradientsEqualTheFloatPathOnQuantizedInputs) {
  Registry registry;
  const std::int64_t k = 3, in = 7, out = 5, b = 6;
  QLinear linear(registry, "fc", in, out, int8());
  torch::manual_seed(4);
  const at::Tensor params0 = torch::randn({k, registry.layout().total_numel});
  const at::Tensor x0 = torch::randn({k, b, in});
  const quant::DrawKey draws{8, 1, 2};
  at::Tensor params = params0.clone().requires_grad_(true);
  at::Tensor x = x0.clone().requires_grad_(true);
  std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
  Context ctx{&registry.layout(), params, &buffers, k, true};
  ctx.draws = draws;
  const at::Tensor y = linear.forward(ctx, x);
  const at::Tensor probe = torch::randn_like(y);
  (y * probe).sum().backward();

  Context plain{&registry.layout(), params0, nullptr, k, true};
  const Expected e = expected_quantization(x0, plain.param(ParamRef{0}).contiguous(),
                                           plain.param(ParamRef{1}).contiguous(), k, draws);
  const at::Tensor qw = e.qw.clone().requires_grad_(true), qb = e.qb.clone().requires_grad_(true);
  const at::Tensor y_float = at::baddbmm(qb.unsqueeze(1), e.qx, qw.transpose(1, 2));
  EXPECT_TRUE(at::allclose(y, y_float, kFloatTolerance, kFloatTolerance));
  (y_float * probe).sum().backward();
  EXPECT_TRUE(at::allclose(params.grad().narrow(1, 0, out * in), qw.grad().reshape({k, -1}),
                           kFloatTolerance, kFloatTolerance));
  EXPECT_TRUE(at::allclose(params.grad().narrow(1, out * in, out), qb.grad(), kFloatTolerance,
                           kFloatTolerance));
  EXPECT_TRUE(at::allclose(x.grad(), at::bmm(quantized_gradient(probe, k, draws), e.qw),
                           kFloatTolerance, kFloatTolerance));
}

// The integer backend computes the simulated backend's function (design.md): same outputs and
// gradients up to float rounding, given the same draws.
template <typename MakeLayer>
void expect_backends_agree(MakeLayer make_layer, const at::Tensor& x0, std::int64_t k) {
  quant::QuantOptions simulated = int8(), integer = int8();
  integer.backend = quant::QuantBackend::kInteger;
  Registry registry_sim, registry_int;
  const auto layer_sim = make_layer(registry_sim, simulated);
  const auto layer_int = make_layer(registry_int, integer);
  ASSERT_EQ(registry_sim.layout().total_numel, registry_int.layout().total_numel);
  torch::manual_seed(12);
  const at::Tensor params0 = torch::randn({k, registry_sim.layout().total_numel}) * 0.5;
  at::Tensor probe;
  std::vector<at::Tensor> outputs, grad_x, grad_params;
  for (auto* pair : {&layer_sim, &layer_int}) {
    const Registry& registry = pair == &layer_sim ? registry_sim : registry_int;
    at::Tensor params = params0.clone().requires_grad_(true);
    at::Tensor x = x0.clone().requires_grad_(true);
    std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
    Context ctx{&registry.layout(), params, &buffers, k, true};
    ctx.draws = quant::DrawKey{21, 4, 0};
    const at::Tensor y = (*pair)->forward(ctx, x);
    if (!probe.defined()) probe = torch::randn_like(y);
    (y * probe).sum().backward();
    outputs.push_back(y.detach());
    grad_x.push_back(x.grad());
    grad_params.push_back(params.grad());
  }
  const auto relative = [](const at::Tensor& a, const at::Tensor& b) {
    return ((a - b).abs().max() / (b.abs().max() + 1e-12)).item<double>();
  };
  EXPECT_LT(relative(outputs[1], outputs[0]), 1e-5) << "forward";
  EXPECT_LT(relative(grad_x[1], grad_x[0]), 1e-5) << "layer gradient";
  EXPECT_LT(relative(grad_params[1], grad_params[0]), 1e-5) << "weight gradient";
}

TEST(IntegerBackend, QConv2dMatchesSimulated) {
  if (!quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const std::int64_t k = 2;
  torch::manual_seed(13);
  const at::Tensor x = torch::randn({3, k * 4, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  for (const Conv2dOptions& options :
       {Conv2dOptions{4, 6, 3}.with_padding(1),
        Conv2dOptions{4, 6, 3}.with_padding(1).with_stride(2).with_bias(true),
        Conv2dOptions{4, 6, 1}.with_stride(2),
        // Grouped and depthwise (MobileNetV2's), "same" and strided.
        Conv2dOptions{4, 6, 3}.with_padding(1).with_groups(2),
        Conv2dOptions{4, 4, 3}.with_padding(1).with_groups(4).with_bias(true),
        Conv2dOptions{4, 4, 3}.with_padding(1).with_stride(2).with_groups(4)}) {
    expect_backends_agree(
        [&](Registry& r, const quant::QuantOptions& q) {
          return std::make_unique<QConv2d>(r, "conv", options, q);
        },
        x, k);
  }
}

TEST(IntegerBackend, QLinearMatchesSimulated) {
  if (!quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const std::int64_t k = 3;
  torch::manual_seed(14);
  const at::Tensor x = torch::randn({k, 5, 12});
  expect_backends_agree(
      [&](Registry& r, const quant::QuantOptions& q) {
        return std::make_unique<QLinear>(r, "fc", 12, 7, q);
      },
      x, k);
}

// A first layer's input (the data) needs no gradient: the integer layers then skip the 8-bit
// layer-gradient pass, and the weight gradient is bit for bit the one computed beside it.
TEST(IntegerBackend, NoLayerGradientForAnInputThatNeedsNone) {
  if (!quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const std::int64_t k = 2;
  quant::QuantOptions q = int8();
  q.backend = quant::QuantBackend::kInteger;
  torch::manual_seed(15);
  const at::Tensor image =
      torch::randn({3, k * 4, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor rows = torch::randn({k, 5, 12});
  Registry conv_registry, linear_registry;
  const QConv2d conv(conv_registry, "conv", Conv2dOptions{4, 6, 3}.with_padding(1), q);
  const QLinear linear(linear_registry, "fc", 12, 7, q);
  const auto gradients = [&](const Layer& layer, const Registry& registry, const at::Tensor& x0,
                             bool input_grad) {
    torch::manual_seed(16);
    at::Tensor params =
        (torch::randn({k, registry.layout().total_numel}) * 0.5).requires_grad_(true);
    const at::Tensor x = x0.clone().requires_grad_(input_grad);
    std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
    Context ctx{&registry.layout(), params, &buffers, k, true};
    ctx.draws = quant::DrawKey{21, 4, 0};
    const at::Tensor y = layer.forward(ctx, x);
    // Count the 8-bit layer-gradient passes (the kernels open named RecordFunction ranges).
    static thread_local int passes = 0;
    passes = 0;
    const at::CallbackHandle handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction& fn)
                                       -> std::unique_ptr<at::ObserverContext> {
          const std::string name = fn.name();
          if (name == "lpdt::int8_conv2d_input_grad" || name == "lpdt::int8_linear_input_grad") {
            ++passes;
          }
          return nullptr;
        }).needsInputs(false));
    (y * torch::ones_like(y)).sum().backward();
    at::removeCallback(handle);
    EXPECT_EQ(passes, input_grad ? 1 : 0);
    EXPECT_EQ(x.grad().defined(), input_grad);
    return params.grad();
  };
  EXPECT_TRUE(at::equal(gradients(conv, conv_registry, image, false),
                        gradients(conv, conv_registry, image, true)));
  EXPECT_TRUE(at::equal(gradients(linear, linear_registry, rows, false),
                        gradients(linear, linear_registry, rows, true)));
}

// The project's own parallel loops (quantizers, the fused Range EvoNorm, the integer convolution's
// passes) split their work by (node, sample) and never share an output element between threads:
// the same results, bit for bit, on one and on two threads. With real threads (the project is
// compiled with OpenMP, so at::parallel_for runs in parallel) a race or a thread-dependent sum
// would show here; the weight gradient is LibTorch's float convolution, compared to rounding.
TEST(Threads, ProjectKernelsGiveTheSameResultsOnOneAndTwoThreads) {
  if (!quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const std::int64_t k = 2;
  torch::manual_seed(31);
  const at::Tensor x0 =
      torch::randn({6, k * 16, 12, 12}).contiguous(at::MemoryFormat::ChannelsLast);
  quant::QuantOptions q = int8();
  q.backend = quant::QuantBackend::kInteger;
  struct Run {
    at::Tensor out, grad_x, grad_params;
  };
  const auto run = [&](int threads, const std::string& variant) {
    at::set_num_threads(threads);
    quant::QuantOptions options = q;
    options.range_evonorm = variant;
    Registry registry;
    QConv2d conv(registry, "conv", Conv2dOptions{16, 16, 3}.with_padding(1), options);
    RangeEvoNorm norm(registry, "norm", 16, 8, options);
    torch::manual_seed(32);
    at::Tensor params =
        (torch::rand({k, registry.layout().total_numel}) + 0.5).requires_grad_(true);
    at::Tensor x = x0.clone().requires_grad_(true);
    std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
    Context ctx{&registry.layout(), params, &buffers, k, true};
    ctx.draws = quant::DrawKey{5, 2, 0};
    const at::Tensor y = norm.forward(ctx, conv.forward(ctx, x));
    (y * torch::linspace(-1.0, 1.0, y.numel()).view(y.sizes())).sum().backward();
    at::set_num_threads(1);
    return Run{y.detach(), x.grad(), params.grad()};
  };
  for (const std::string variant : {"reference", "std"}) {
    const Run one = run(1, variant), two = run(2, variant);
    EXPECT_TRUE(at::equal(one.out, two.out)) << variant << ": forward";
    EXPECT_TRUE(at::equal(one.grad_x, two.grad_x)) << variant << ": layer gradient";
    EXPECT_TRUE(at::allclose(one.grad_params, two.grad_params, 1e-4, 1e-6))
        << variant << ": parameter gradients";
  }
}

// A model's parameters fake-quantized at once (nn/quantized_params.h): the same floats as one at
// a time, a straight-through gradient, refilled when the parameters change in place, and none for
// other bits.
TEST(QuantizedParams, AllAtOnceEqualOneAtATime) {
  Registry registry;
  const std::int64_t k = 3;
  QConv2d conv(registry, "conv", Conv2dOptions{4, 6, 3}.with_padding(1).with_bias(true), int8());
  QLinear linear(registry, "fc", 24, 5, int8());
  torch::manual_seed(12);
  const at::Tensor params =
      (torch::randn({k, registry.layout().total_numel}) * 0.4).requires_grad_(true);
  std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
  Context ctx{&registry.layout(), params, &buffers, k, true};
  const quant::QuantOptions q = int8();
  const std::vector<at::Tensor>* all = quantized_segments(ctx, q);
  ASSERT_NE(all, nullptr);
  ASSERT_EQ(all->size(), registry.layout().segments.size());
  for (std::size_t i = 0; i < all->size(); ++i) {
    const at::Tensor one = quantize_nearest(ctx.param(ParamRef{i}), k, q);
    EXPECT_TRUE(at::equal((*all)[i], one)) << registry.layout().segments[i].name;
  }
  const at::Tensor probe = torch::randn({k, registry.layout().total_numel});
  at::Tensor sum = at::zeros({}, params.options());
  for (std::size_t i = 0; i < all->size(); ++i) {
    const LayerSegment& seg = registry.layout().segments[i];
    sum = sum + ((*all)[i] * probe.narrow(1, seg.offset, seg.numel).view((*all)[i].sizes())).sum();
  }
  sum.backward();
  EXPECT_TRUE(at::equal(params.grad(), probe)) << "straight through";
  EXPECT_EQ(quantized_segments(ctx, q), all) << "kept while the parameters stay";
  const at::Tensor before = (*all)[0].detach().clone();
  {
    torch::NoGradGuard no_grad;
    params.mul_(2.0);
  }
  const std::vector<at::Tensor>* after = quantized_segments(ctx, q);
  ASSERT_NE(after, nullptr);
  EXPECT_TRUE(at::allclose((*after)[0], before * 2.0, 1e-6, 1e-6)) << "refilled";
  quant::QuantOptions four = q;
  four.bits = 4;
  EXPECT_EQ(quantized_segments(ctx, four), nullptr);
  if (torch::cuda::is_available()) {
    std::vector<at::Tensor> device_buffers;
    for (const at::Tensor& b : buffers) device_buffers.push_back(b.cuda());
    Context device{&registry.layout(), params.detach().cuda(), &device_buffers, k, true};
    for (std::size_t i = 0; i < all->size(); ++i) {
      EXPECT_TRUE(at::equal(quantized_param(device, ParamRef{i}, q).cpu(), (*after)[i]))
          << "CUDA, " << registry.layout().segments[i].name;
    }
  }
}

// The parameters gathered into one dense tensor per segment (nn/param_segments.h): the columns'
// values, convolution weights channels-last, gradients scattered back into the rows (zeros for
// unused segments); on CUDA (where Context::param gathers) the same values and gradients.
TEST(ParamSegments, GatherAndScatterTheRows) {
  Registry registry;
  const std::int64_t k = 3;
  QConv2d conv(registry, "conv", Conv2dOptions{4, 6, 3}.with_padding(1).with_bias(true), int8());
  QLinear linear(registry, "fc", 24, 5, int8());
  const LayerLayout& layout = registry.layout();
  torch::manual_seed(13);
  const at::Tensor rows = torch::randn({k, layout.total_numel});
  const at::Tensor probe = torch::randn({k, layout.total_numel});
  const auto run = [&](const at::Tensor& params) {
    const std::vector<at::Tensor> segments = gather_param_segments(params, layout);
    at::Tensor sum = at::zeros({}, params.options());
    for (std::size_t i = 0; i + 1 < segments.size(); ++i) {  // the last one unused
      const LayerSegment& seg = layout.segments[i];
      sum = sum +
            (segments[i] *
             probe.to(params.device()).narrow(1, seg.offset, seg.numel).view(segments[i].sizes()))
                .sum();
    }
    sum.backward();
    return segments;
  };
  const at::Tensor params = rows.clone().requires_grad_(true);
  const std::vector<at::Tensor> segments = run(params);
  ASSERT_EQ(segments.size(), layout.segments.size());
  Context view{&layout, rows, nullptr, k, true};
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const LayerSegment& seg = layout.segments[i];
    EXPECT_TRUE(at::equal(segments[i], view.param(ParamRef{i}))) << seg.name;
    EXPECT_EQ(segments[i].stride(0) * k, segments[i].numel()) << seg.name;
    if (segment_channels_last(seg)) {
      EXPECT_TRUE(segments[i]
                      .view({k * seg.shape[0], seg.shape[1], seg.shape[2], seg.shape[3]})
                      .is_contiguous(at::MemoryFormat::ChannelsLast))
          << seg.name;
    }
  }
  const LayerSegment& last = layout.segments.back();
  at::Tensor expected = probe.clone();
  expected.narrow(1, last.offset, last.numel).zero_();
  EXPECT_TRUE(at::equal(params.grad(), expected));
  if (torch::cuda::is_available() && param_segments_gathered(rows.cuda())) {
    const at::Tensor device = rows.cuda().requires_grad_(true);
    const std::vector<at::Tensor> on_device = run(device);
    for (std::size_t i = 0; i < segments.size(); ++i) {
      EXPECT_EQ(on_device[i].strides(), segments[i].strides());
      EXPECT_TRUE(at::equal(on_device[i].cpu(), segments[i])) << "CUDA " << layout.segments[i].name;
    }
    EXPECT_TRUE(at::equal(device.grad().cpu(), expected)) << "CUDA gradients";
    Context ctx{&layout, device, nullptr, k, true};
    // Context::param gathers on CUDA: the convolution weight channels-last.
    EXPECT_EQ(ctx.param(ParamRef{0}).strides(), segments[0].strides());
    EXPECT_TRUE(at::equal(ctx.param(ParamRef{0}).cpu(), segments[0]));
  }
}

TEST(QuantMeasure, RangesAsParametersLiveInTheParameterRows) {
  // quant.range_state = "param" (the official code): the running range is two non-trainable
  // columns of each node's parameter row, updated in place by a training forward.
  quant::QuantOptions options = int8();
  options.ranges_as_params = true;
  Registry registry;
  QuantMeasure measure(registry, "qm", options);
  ASSERT_EQ(registry.layout().total_numel, 2);
  EXPECT_FALSE(registry.trainable()[0]);
  EXPECT_FALSE(registry.trainable()[1]);
  EXPECT_TRUE(registry.buffers().empty());
  const std::int64_t k = 2;
  at::Tensor params = at::zeros({k, 2});
  const at::Tensor leaf = params.detach().requires_grad_(true);  // as the engine passes it
  torch::manual_seed(16);
  const at::Tensor x = torch::randn({k, 5, 3});
  Context ctx{&registry.layout(), leaf, nullptr, k, true};
  const at::Tensor y = measure.forward(ctx, x.requires_grad_(true));
  y.sum().backward();  // in-place range updates must not break the backward pass
  const quant::NodeRange batch = quant::sample_mean_range(x.detach(), k);
  EXPECT_TRUE(at::allclose(params.select(1, 0), 0.9 * batch.min, 1e-6, 1e-7));
  EXPECT_TRUE(at::allclose(params.select(1, 1), 0.9 * batch.max, 1e-6, 1e-7));
  EXPECT_TRUE(!leaf.grad().defined() || at::equal(leaf.grad(), at::zeros({k, 2})));  // no gradient
}

// Reference spec 7.3 written out for one node, NCHW, without quantizers: the group scales
// [b, G] of x [b, C, H, W], and the output for given scales.
at::Tensor reference_group_scales(const at::Tensor& x, std::int64_t groups) {
  const auto b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const std::int64_t m = c * h * w / (groups * 16);
  const at::Tensor y = x.reshape({b, groups, 16, m});
  const at::Tensor rng = (std::get<0>(y.max(-1)) - std::get<0>(y.min(-1))).mean(-1);
  const double sf =
      0.5 * 0.35 * (1 + std::sqrt(M_PI * std::log(4.0))) / std::sqrt(2 * std::log(double(m)));
  return 1.0 / (rng * sf + 1e-5);
}

at::Tensor reference_range_evonorm(const at::Tensor& x, const at::Tensor& v,
                                   const at::Tensor& gamma, const at::Tensor& beta,
                                   const at::Tensor& s) {
  const auto b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), groups = s.size(1);
  const at::Tensor n = x * at::clamp(x * v.view({1, c, 1, 1}) / 6 + 0.5, 0, 1);
  return (n.reshape({b, groups, -1}) * s.unsqueeze(-1)).reshape({b, c, h, w}) *
             gamma.view({1, c, 1, 1}) +
         beta.view({1, c, 1, 1});
}

at::Tensor reference_range_evonorm(const at::Tensor& x, const at::Tensor& v,
                                   const at::Tensor& gamma, const at::Tensor& beta,
                                   std::int64_t groups) {
  return reference_range_evonorm(x, v, gamma, beta, reference_group_scales(x, groups));
}

TEST(RangeEvoNorm, MatchesTheReferenceFormulaPerNode) {
  Registry registry;
  const std::int64_t k = 2, c = 16, groups = 8;
  quant::QuantOptions fp32;
  RangeEvoNorm norm(registry, "norm", c, groups, fp32);
  torch::manual_seed(6);
  const at::Tensor params = torch::rand({k, registry.layout().total_numel}) + 0.5;
  const at::Tensor x = torch::randn({3, k * c, 4, 4}).contiguous(at::MemoryFormat::ChannelsLast);
  Context ctx{&registry.layout(), params, nullptr, k, true};
  const at::Tensor y = norm.forward(ctx, x);
  for (std::int64_t i = 0; i < k; ++i) {
    const at::Tensor expected =
        reference_range_evonorm(x.narrow(1, i * c, c).contiguous(), ctx.param(ParamRef{2})[i],
                                ctx.param(ParamRef{0})[i], ctx.param(ParamRef{1})[i], groups);
    EXPECT_TRUE(at::allclose(y.narrow(1, i * c, c), expected, kFloatTolerance, kFloatTolerance))
        << "node " << i;
  }
}

TEST(RangeEvoNorm, StdVariantIsEvoNormS0WithTheHardSigmoid) {
  // quant.range_evonorm = "std": eq. 4's group standard deviation (biased, eps 1e-5) as the
  // statistic, the hard sigmoid of eq. 5 in the numerator; written out per node in NCHW.
  Registry registry;
  const std::int64_t k = 2, c = 16, groups = 4, b = 3;
  quant::QuantOptions fp32;
  fp32.range_evonorm = "std";
  RangeEvoNorm norm(registry, "norm", c, groups, fp32);
  torch::manual_seed(21);
  const at::Tensor params = torch::rand({k, registry.layout().total_numel}) + 0.5;
  const at::Tensor x =
      (torch::randn({b, k * c, 5, 5}) * 3 + 1).contiguous(at::MemoryFormat::ChannelsLast);
  for (bool fused : {false, true}) {
    norm.use_fused_kernel(fused);
    Context ctx{&registry.layout(), params, nullptr, k, true};
    const at::Tensor y = norm.forward(ctx, x);
    for (std::int64_t i = 0; i < k; ++i) {
      const at::Tensor xi = x.narrow(1, i * c, c).contiguous();
      const at::Tensor v = ctx.param(ParamRef{2})[i].view({1, c, 1, 1});
      const at::Tensor gamma = ctx.param(ParamRef{0})[i].view({1, c, 1, 1});
      const at::Tensor beta = ctx.param(ParamRef{1})[i].view({1, c, 1, 1});
      const at::Tensor n = xi * at::clamp(xi * v / 6 + 0.5, 0, 1);
      const at::Tensor grouped = xi.reshape({b, groups, -1});
      const at::Tensor std = (grouped.var(-1, /*unbiased=*/false, /*keepdim=*/true) + 1e-5).sqrt();
      const at::Tensor expected =
          (n.reshape({b, groups, -1}) / std).reshape(xi.sizes()) * gamma + beta;
      EXPECT_TRUE(at::allclose(y.narrow(1, i * c, c), expected, 1e-5, 1e-5))
          << "node " << i << (fused ? " fused" : " composite");
    }
  }
}

// A group whose values are all equal (range 0) would get the reference's scale 1 / 1e-5: its
// output 1e5 times its input. It takes the largest scale of its node's other groups (over the
// batch) instead, and the other groups are normalised as the reference does; node 1, without a
// flat group, is untouched. fp32, the composite code and the fused one at every vector level.
TEST(RangeEvoNorm, AFlatGroupTakesItsNodesLargestOtherScale) {
  Registry registry;
  const std::int64_t k = 2, c = 16, groups = 8;
  RangeEvoNorm norm(registry, "norm", c, groups, quant::QuantOptions{});
  torch::manual_seed(23);
  const at::Tensor params = torch::rand({k, registry.layout().total_numel}) + 0.5;
  at::Tensor x = torch::randn({3, k * c, 4, 4});
  x.select(0, 1).narrow(0, 2, 2).fill_(0.7);  // sample 1, node 0, group 1 (channels 2 and 3)
  x = x.contiguous(at::MemoryFormat::ChannelsLast);
  Context ctx{&registry.layout(), params, nullptr, k, true};
  std::vector<at::Tensor> expected;
  for (std::int64_t i = 0; i < k; ++i) {
    const at::Tensor xi = x.narrow(1, i * c, c).contiguous();
    at::Tensor s = reference_group_scales(xi, groups);  // [b, G]
    if (i == 0) {
      ASSERT_GT(s[1][1].item<double>(), 9e4) << "the flat group's reference scale";
      s = s.clone();
      s[1][1] = 0.0;
      const double largest_other = s.max().item<double>();
      ASSERT_LT(largest_other, 100.0);
      s[1][1] = largest_other;
    }
    expected.push_back(reference_range_evonorm(xi, ctx.param(ParamRef{2})[i],
                                               ctx.param(ParamRef{0})[i],
                                               ctx.param(ParamRef{1})[i], s));
  }
  const auto expect_expected = [&](const std::string& what) {
    const at::Tensor input = x.clone().requires_grad_(true);
    const at::Tensor y = norm.forward(ctx, input);
    y.sum().backward();
    for (std::int64_t i = 0; i < k; ++i) {
      EXPECT_TRUE(at::allclose(y.narrow(1, i * c, c), expected[i], kFloatTolerance,
                               kFloatTolerance))
          << what << ", node " << i;
    }
    EXPECT_TRUE(input.grad().isfinite().all().item<bool>()) << what;
    EXPECT_LT(input.grad().abs().max().item<double>(), 1e3) << what;
  };
  norm.use_fused_kernel(false);
  expect_expected("composite");
  norm.use_fused_kernel(true);
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    expect_expected(std::string("fused, ") + simd_level_name(level));
  }
}

// 8-bit: each node's group scales are quantized with one range, which a flat group's 1e5 would
// stretch so that the node's other scales (about 1) round to 0 or 392. With the flat group's
// scale at the node's largest other, the quantization range is the one an ordinary group in its
// place gives: node 0's other groups come out exactly as when the flat group holds a copy of
// another group's values (within the input's range, so that the input codes are the same).
TEST(RangeEvoNorm, AFlatGroupLeavesTheOtherGroupsOf8BitModelsAlone) {
  for (const std::string variant : {"reference", "paper"}) {
    SCOPED_TRACE(variant);
    Registry registry;
    const std::int64_t k = 2, c = 16, groups = 8, b = 3;
    quant::QuantOptions q8 = int8();
    q8.range_evonorm = variant;
    RangeEvoNorm norm(registry, "norm", c, groups, q8);
    torch::manual_seed(24);
    const at::Tensor params = torch::rand({k, registry.layout().total_numel}) + 0.5;
    const at::Tensor x = torch::randn({b, k * c, 4, 4});
    at::Tensor flat = x.clone(), copied = x.clone();
    // Sample 1, node 0, group 1: zeros, a value the input's codes hold exactly (stochastic
    // rounding of another value could leave the group with two codes).
    flat.select(0, 1).narrow(0, 2, 2).zero_();
    copied.select(0, 1).narrow(0, 2, 2).copy_(x.select(0, 1).narrow(0, 6, 2));  // group 3's
    for (const bool fused : {false, true}) {
      SCOPED_TRACE(fused ? "fused" : "composite");
      norm.use_fused_kernel(fused);
      const auto run = [&](const at::Tensor& input) {
        std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
        Context ctx{&registry.layout(), params, &buffers, k, true};
        ctx.draws = quant::DrawKey{5, 0, 0};
        return norm.forward(ctx, input.contiguous(at::MemoryFormat::ChannelsLast));
      };
      const at::Tensor y_flat = run(flat), y_copied = run(copied);
      ASSERT_TRUE(y_flat.isfinite().all().item<bool>());
      // Every sample's node-0 channels but the replaced group's, and all of node 1.
      for (std::int64_t n = 0; n < b; ++n) {
        for (std::int64_t ch = 0; ch < k * c; ++ch) {
          if (n == 1 && (ch == 2 || ch == 3)) continue;
          ASSERT_TRUE(at::equal(y_flat[n][ch], y_copied[n][ch])) << "sample " << n << " channel "
                                                                 << ch;
        }
      }
    }
  }
}

// The fused CPU operation against the composite version: outputs and gradients, fp32 and 8-bit.
struct FusedCase {
  std::string variant;
  bool int8;
  std::int64_t channels, groups, size;
  int bits = 8;  // quant.bits of an 8-bit case
  bool flat_group = false;  // node 0's first group all zeros in sample 1 (range 0)
};

class RangeEvoNormFused : public ::testing::TestWithParam<FusedCase> {};

quant::QuantOptions options_of(const FusedCase& c) {
  quant::QuantOptions options = c.int8 ? int8() : quant::QuantOptions{};
  if (c.int8) options.bits = c.bits;
  options.range_evonorm = c.variant;
  return options;
}

// One forward and backward of the layer against a random probe; results on the CPU.
struct FusedRun {
  at::Tensor out, grad_x, grad_p;
};

// A case's layer (2 nodes) and random parameters, input and probe.
struct FusedSetup {
  static constexpr std::int64_t k = 2, b = 3;
  Registry registry;
  RangeEvoNorm norm;
  at::Tensor params0, x0, probe;
  FusedSetup(const FusedCase& c, std::uint64_t seed)
      : norm(registry, "norm", c.channels, c.groups, options_of(c)) {
    torch::manual_seed(static_cast<std::int64_t>(seed));
    params0 = torch::rand({k, registry.layout().total_numel}) + 0.5;
    x0 = torch::randn({b, k * c.channels, c.size, c.size});
    if (c.flat_group) x0.select(0, 1).narrow(0, 0, c.channels / c.groups).zero_();
    x0 = x0.contiguous(at::MemoryFormat::ChannelsLast);
    probe = torch::randn_like(x0);
  }
  FusedRun run(at::Device device) {
    // Copies (to(kCPU) would return the tensor itself), so that every run's are leaves.
    at::Tensor params = params0.to(device, /*non_blocking=*/false, /*copy=*/true).requires_grad_();
    at::Tensor x = x0.to(device, /*non_blocking=*/false, /*copy=*/true).requires_grad_();
    std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
    for (auto& t : buffers) t = t.to(device);
    Context ctx{&registry.layout(), params, &buffers, k, true};
    ctx.draws = quant::DrawKey{3, 1, 0};
    const at::Tensor y = norm.forward(ctx, x);
    (y * probe.to(device)).sum().backward();
    return {y.detach().cpu(), x.grad().cpu(), params.grad().cpu()};
  }
};

double relative_error(const at::Tensor& actual, const at::Tensor& expected) {
  return ((actual - expected).abs().max() / (expected.abs().max() + 1e-12)).item<double>();
}

void expect_runs_agree(const FusedRun& actual, const FusedRun& expected) {
  EXPECT_LT(relative_error(actual.out, expected.out), 1e-5) << "forward";
  EXPECT_LT(relative_error(actual.grad_x, expected.grad_x), 1e-4) << "input gradient";
  EXPECT_LT(relative_error(actual.grad_p, expected.grad_p), 1e-4) << "parameter gradient";
}

// The fused CPU operation against the composite version.
// At every vector level this CPU runs (core/cpu_dispatch.h).
TEST_P(RangeEvoNormFused, MatchesTheCompositeVersion) {
  FusedSetup setup(GetParam(), 15);
  setup.norm.use_fused_kernel(false);
  const FusedRun composite = setup.run(at::kCPU);
  setup.norm.use_fused_kernel(true);
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    expect_runs_agree(setup.run(at::kCPU), composite);
  }
}

// Codes wider than 8 bits (quant.bits 9 to 16): the fused kernels take 8-bit codes, so the layer
// runs its composite code even when asked for the fused one (it stopped with "codes are 8-bit").
TEST(RangeEvoNormWideCodes, RunTheCompositeCode) {
  for (const int bits : {9, 12, 16}) {
    SCOPED_TRACE(bits);
    FusedSetup setup(FusedCase{"reference", true, 16, 8, 6, bits}, 17);
    setup.norm.use_fused_kernel(false);
    const FusedRun composite = setup.run(at::kCPU);
    setup.norm.use_fused_kernel(true);
    const FusedRun asked_fused = setup.run(at::kCPU);
    EXPECT_TRUE(at::equal(asked_fused.out, composite.out));
    EXPECT_TRUE(at::equal(asked_fused.grad_x, composite.grad_x));
  }
}

// A group of one value (one channel per group, 1x1 maps) has no range: its scale factor
// 1 / sqrt(2 ln 1) is infinite and every output NaN. Said, naming the layer and what to change.
TEST(RangeEvoNormOneValueGroups, AreAConfigurationError) {
  Registry registry;
  RangeEvoNorm norm(registry, "stage3.norm", 4, 4, int8());
  const at::Tensor params = torch::rand({1, registry.layout().total_numel}) + 0.5;
  std::vector<at::Tensor> buffers = fresh_buffers(registry, 1);
  Context ctx{&registry.layout(), params, &buffers, 1, true};
  try {
    norm.forward(ctx, torch::randn({2, 4, 1, 1}));
    ADD_FAILURE() << "a group of one value was normalised";
  } catch (const lpdt::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("Range EvoNorm 'stage3.norm'"), std::string::npos) << message;
    EXPECT_NE(message.find("1x1 maps holds one value"), std::string::npos) << message;
    EXPECT_NE(message.find("model.groups"), std::string::npos) << message;
  }
  // Two values per group (2x1 maps) have a range.
  EXPECT_NO_THROW(norm.forward(ctx, torch::randn({2, 4, 2, 1})));
}

// On a machine with a GPU: the layer on CUDA tensors (the CUDA kernels for the range statistic in
// builds with them; the composite code otherwise and for "std") against the CPU's fused
// operation. The range statistic's forward rounds as the CPU kernel does: the same floats.
TEST_P(RangeEvoNormFused, CudaMatchesTheCpuFusedVersion) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  FusedSetup setup(GetParam(), 16);
  const FusedRun cpu = setup.run(at::kCPU), cuda = setup.run(at::kCUDA);
  expect_runs_agree(cuda, cpu);
  if (GetParam().variant != "std") {
    EXPECT_TRUE(at::equal(cuda.out, cpu.out)) << "bit for bit";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, RangeEvoNormFused,
    ::testing::Values(FusedCase{"reference", false, 16, 8, 6},
                      FusedCase{"reference", false, 64, 8, 7}, FusedCase{"paper", false, 8, 2, 5},
                      FusedCase{"reference", true, 16, 8, 6},
                      FusedCase{"reference", true, 32, 8, 7}, FusedCase{"paper", true, 8, 4, 4},
                      // Chunks of 98 (28x28 maps): the kernel's 16-lane
                      // pass, with many tied codes at 8 bits.
                      FusedCase{"reference", true, 16, 8, 28},
                      FusedCase{"reference", false, 16, 8, 28}, FusedCase{"std", false, 16, 8, 6},
                      FusedCase{"std", false, 64, 4, 7}, FusedCase{"std", true, 16, 8, 6},
                      FusedCase{"std", true, 32, 4, 28},
                      // A group of range 0 (flat_group_scales.h).
                      FusedCase{"reference", true, 16, 8, 6, 8, true},
                      FusedCase{"reference", false, 16, 8, 6, 8, true},
                      FusedCase{"paper", true, 8, 2, 5, 8, true}),
    [](const auto& info) {
      return info.param.variant + (info.param.int8 ? "_int8_" : "_fp32_") +
             std::to_string(info.param.channels) + "ch_" + std::to_string(info.param.size) + "px" +
             (info.param.flat_group ? "_flat" : "");
    });

TEST(RangeEvoNorm, ChunksFallBackBelowSixteen) {
  EXPECT_EQ(range_chunks(16 * 98), 16);
  EXPECT_EQ(range_chunks(392), 14);  // 8 channels of 7x7 per group (ResNet-20 on 28x28)
  EXPECT_EQ(range_chunks(16), 8);    // chunks of at least two elements
  EXPECT_EQ(range_chunks(14), 7);
  EXPECT_EQ(range_chunks(17), 1);
  EXPECT_NEAR(range_scale_factor(128), 0.540205 / std::sqrt(2 * std::log(128.0)), 1e-5);
}

// The range statistic's vectorised pass (runs of pixels per channel, combined per chunk) against
// the sequential copy-and-scan it replaced: the same scales and the same max/min elements, bit for
// bit, on the map sizes of ResNet-20 at 28x28 and 32x32, with ties (8-bit codes), infinities and a
// node's slice of a multi-node tensor (pixel stride k*C). 7x7 maps (runs of 7 pixels) and a NaN
// take the sequential method inside the vectorised entry point.
// A (sample, node) slice of a channels-last activation, as the range statistic's tests take it.
struct SliceShape {
  std::int64_t channels, groups, side, nodes;
};
std::string slice_case(const SliceShape& shape, int trial, std::int64_t node) {
  return std::to_string(shape.channels) + " channels, " + std::to_string(shape.side) + "x" +
         std::to_string(shape.side) + ", trial " + std::to_string(trial) + ", node " +
         std::to_string(node);
}

// At every vector level this CPU runs, each equal to the baseline level's too.
TEST(RangeEvoNorm, VectorisedRangeStatisticEqualsTheSequentialOne) {
  using Shape = SliceShape;
  torch::manual_seed(21);
  for (const Shape& shape :
       {Shape{16, 8, 32, 1}, Shape{32, 8, 16, 2}, Shape{64, 8, 8, 3}, Shape{16, 8, 28, 1},
        Shape{32, 8, 14, 2}, Shape{64, 8, 7, 1}, Shape{20, 4, 9, 2}, Shape{48, 16, 5, 1}}) {
    const std::int64_t pixels = shape.side * shape.side, stride = shape.nodes * shape.channels;
    const std::int64_t chunks = range_chunks(shape.channels / shape.groups * pixels);
    for (int trial = 0; trial < 4; ++trial) {
      // Trial 0: continuous values; 1: few distinct values (ties everywhere); 2: with +-inf;
      // 3: with a NaN.
      at::Tensor x = trial == 1 ? torch::randint(0, 5, {pixels, stride}).to(at::kFloat)
                                : torch::randn({pixels, stride});
      if (trial == 2) {
        x.index_put_({torch::randint(0, pixels, {7}), torch::randint(0, stride, {7})},
                     std::numeric_limits<float>::infinity());
        x.index_put_({torch::randint(0, pixels, {7}), torch::randint(0, stride, {7})},
                     -std::numeric_limits<float>::infinity());
      }
      if (trial == 3) x.index_put_({pixels / 2, 1}, std::numeric_limits<float>::quiet_NaN());
      for (std::int64_t node = 0; node < shape.nodes; ++node) {
        const float* slice = x.data_ptr<float>() + node * shape.channels;
        const auto args = [&](bool sequential) {
          return slice_range_statistic(slice, pixels, stride, shape.channels, shape.groups, chunks,
                                       0.3f, sequential);
        };
        SliceRangeStatistic baseline;
        {
          ScopedSimdLevel scoped(SimdLevel::kBaseline);
          baseline = args(true);
        }
        for (const SimdLevel level : cpu_simd_levels()) {
          ScopedSimdLevel scoped(level);
          const SliceRangeStatistic fast = args(false), reference = args(true);
          const std::string where = slice_case(shape, trial, node) + ", " + simd_level_name(level);
          EXPECT_EQ(reference.arg_max, baseline.arg_max) << where;
          EXPECT_EQ(reference.arg_min, baseline.arg_min) << where;
          EXPECT_EQ(fast.arg_max, reference.arg_max) << where;
          EXPECT_EQ(fast.arg_min, reference.arg_min) << where;
          ASSERT_EQ(fast.scale.size(), reference.scale.size());
          for (std::size_t g = 0; g < fast.scale.size(); ++g) {
            if (std::isnan(reference.scale[g])) {
              EXPECT_TRUE(std::isnan(fast.scale[g])) << where;
            } else {
              EXPECT_EQ(fast.scale[g], reference.scale[g]) << where << ", group " << g;
              EXPECT_EQ(reference.scale[g], baseline.scale[g]) << where << ", group " << g;
            }
          }
        }
      }
    }
  }
}

// 8-bit models find the range statistic on the input's codes: the same scales and max/min
// elements, bit for bit, as the sequential scan of the dequantized values, on ResNet-20's map
// sizes, several nodes' slices, codes spread over 0..255 and codes bunched on a few values (ties
// everywhere, and the extreme codes 0 and 255 at a run's first pixel), and 7x7 maps (which take
// the sequential scan on values inside).
TEST(RangeEvoNorm, RangeStatisticOfCodesEqualsTheOneOfTheirValues) {
  using Shape = SliceShape;
  torch::manual_seed(23);
  for (const Shape& shape : {Shape{16, 8, 32, 1}, Shape{32, 8, 16, 2}, Shape{64, 8, 8, 3},
                             Shape{16, 8, 28, 1}, Shape{64, 8, 7, 1}, Shape{20, 4, 9, 2}}) {
    const std::int64_t pixels = shape.side * shape.side, stride = shape.nodes * shape.channels;
    const std::int64_t chunks = range_chunks(shape.channels / shape.groups * pixels);
    for (int trial = 0; trial < 3; ++trial) {
      // Trial 0: codes over 0..255; 1: three distinct codes; 2: only 0 and 255.
      const at::Tensor codes =
          trial == 0   ? torch::randint(0, 256, {pixels, stride}).to(at::kByte)
          : trial == 1 ? (torch::randint(0, 3, {pixels, stride}) * 60 + 40).to(at::kByte)
                       : (torch::randint(0, 2, {pixels, stride}) * 255).to(at::kByte);
      for (std::int64_t node = 0; node < shape.nodes; ++node) {
        const float code_scale = 0.013f * static_cast<float>(node + 1), zero_point = 97.0f + node;
        const at::Tensor values = (codes.to(at::kFloat) - zero_point) * code_scale;
        for (const SimdLevel level : cpu_simd_levels()) {
          ScopedSimdLevel scoped(level);
          const SliceRangeStatistic of_codes = slice_range_statistic_of_codes(
              codes.data_ptr<std::uint8_t>() + node * shape.channels, code_scale, zero_point,
              pixels, stride, shape.channels, shape.groups, chunks, 0.3f);
          const SliceRangeStatistic reference = slice_range_statistic(
              values.data_ptr<float>() + node * shape.channels, pixels, stride, shape.channels,
              shape.groups, chunks, 0.3f, /*sequential=*/true);
          const std::string where = slice_case(shape, trial, node) + ", " + simd_level_name(level);
          EXPECT_EQ(of_codes.arg_max, reference.arg_max) << where;
          EXPECT_EQ(of_codes.arg_min, reference.arg_min) << where;
          EXPECT_EQ(of_codes.scale, reference.scale) << where;
        }
      }
    }
  }
}

class RangeEvoNormGradients : public ::testing::TestWithParam<std::string> {};

TEST_P(RangeEvoNormGradients, AgreeWithFiniteDifferences) {
  Registry registry;
  quant::QuantOptions fp32;
  fp32.range_evonorm = GetParam();
  RangeEvoNorm norm(registry, "norm", 4, 2, fp32);
  const std::int64_t k = 2;
  torch::manual_seed(9);
  const at::Tensor x = torch::randn({2, k * 4, 4, 4}, torch::kDouble);
  const at::Tensor params0 = torch::rand({k, registry.layout().total_numel}, torch::kDouble) + 0.5;
  check_param_gradient(params0, [&](const at::Tensor& p) {
    Context ctx{&registry.layout(), p, nullptr, k, true};
    return norm.forward(ctx, x);
  });
  Context ctx{&registry.layout(), params0, nullptr, k, true};
  check_param_gradient(x, [&](const at::Tensor& input) { return norm.forward(ctx, input); });
}

INSTANTIATE_TEST_SUITE_P(Variants, RangeEvoNormGradients,
                         ::testing::Values("reference", "paper", "std"));

TEST(RangeBatchNorm, GradientsAndRunningStatistics) {
  Registry registry;
  quant::QuantOptions fp32;
  RangeBatchNorm norm(registry, "bn", 3, fp32, /*relu=*/false);
  const std::int64_t k = 2;
  torch::manual_seed(10);
  const at::Tensor x = torch::randn({4, k * 3, 4, 4}, torch::kDouble);
  const at::Tensor params0 = torch::rand({k, registry.layout().total_numel}, torch::kDouble) + 0.5;
  std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
  for (auto& b : buffers) b = b.to(at::kDouble);
  check_param_gradient(params0, [&](const at::Tensor& p) {
    Context ctx{&registry.layout(), p, &buffers, k, true};
    return norm.forward(ctx, x);
  });
  // Running statistics move towards the batch's (momentum 0.9 on the newest batch).
  std::vector<at::Tensor> fresh = fresh_buffers(registry, k);
  for (auto& b : fresh) b = b.to(at::kDouble);
  Context train{&registry.layout(), params0, &fresh, k, true};
  norm.forward(train, x);
  const at::Tensor batch_mean = x.transpose(0, 1).reshape({k, 3, -1}).mean(-1);
  EXPECT_TRUE(at::allclose(fresh[0], 0.9 * batch_mean, 1e-9, 1e-9));
  // Evaluation uses them: a constant shift of the input moves the output by scale * gamma.
  Context eval{&registry.layout(), params0, &fresh, k, false};
  const at::Tensor y0 = norm.forward(eval, x), y1 = norm.forward(eval, x + 1.0);
  EXPECT_TRUE(at::allclose((y1 - y0).mean({0, 2, 3}),
                           (fresh[1] * eval.param(ParamRef{0})).reshape({k * 3}), 1e-9, 1e-9));
}

TEST(RangeEvoNorm, NonFiniteInputsGiveNaNNotACrash) {
  // A diverged step can hand the norm a group that is all -inf or NaN: the fused kernel's max/min
  // positions must still name elements of the input (they index it in backward), and NaN must
  // propagate as torch.max does, not vanish.
  Registry registry;
  quant::QuantOptions fp32;
  RangeEvoNorm norm(registry, "norm", 4, 2, fp32);
  const std::int64_t k = 2;
  torch::manual_seed(18);
  at::Tensor x = torch::randn({2, k * 4, 4, 4}).contiguous(at::MemoryFormat::ChannelsLast);
  x.narrow(1, 0, 2).fill_(-std::numeric_limits<float>::infinity());  // node 0, group 0
  x.narrow(1, 2, 1).fill_(std::numeric_limits<float>::quiet_NaN());  // node 0, group 1
  const at::Tensor params = torch::rand({k, registry.layout().total_numel}) + 0.5;
  Context ctx{&registry.layout(), params, nullptr, k, true};
  const at::Tensor input = x.clone().requires_grad_(true);
  const at::Tensor y = norm.forward(ctx, input);
  y.sum().backward();
  EXPECT_TRUE(y.narrow(1, 2, 2).isnan().all().item<bool>()) << "the NaN group's outputs";
  EXPECT_TRUE(y.narrow(1, 4, 4).isfinite().all().item<bool>()) << "node 1 is untouched";
  EXPECT_TRUE(input.grad().narrow(1, 4, 4).isfinite().all().item<bool>());
}

TEST(RangeBatchNorm, AConstantChannelLeavesTheOtherChannelsScalesAlone) {
  // 8-bit: the scale vector is quantized with one range per node. A channel that is all zeros on
  // node 0 (range 0, scale 1e5 by the reference's formula) must not take over that range.
  Registry registry;
  quant::QuantOptions q8 = int8();
  RangeBatchNorm norm(registry, "bn", 4, q8, /*relu=*/false);
  const std::int64_t k = 2;
  torch::manual_seed(17);
  at::Tensor x = torch::randn({8, k * 4, 4, 4}).contiguous(at::MemoryFormat::ChannelsLast);
  x.select(1, 2).zero_();  // node 0, channel 2
  const at::Tensor params = torch::ones({k, registry.layout().total_numel});
  params.narrow(1, 4, 4).zero_();  // beta
  std::vector<at::Tensor> buffers = fresh_buffers(registry, k);
  Context ctx{&registry.layout(), params, &buffers, k, true};
  ctx.draws = quant::DrawKey{3, 0, 0};
  const at::Tensor y = norm.forward(ctx, x);
  // The other channels of node 0 come out normalised: about unit spread (range-based estimate),
  // not 0 (scale rounded down) or hundreds (scale rounded up).
  for (const std::int64_t c : {0, 1, 3}) {
    const double spread = y.select(1, c).std().item<double>();
    EXPECT_GT(spread, 0.5) << "channel " << c;
    EXPECT_LT(spread, 2.0) << "channel " << c;
  }
  EXPECT_TRUE(y.select(1, 2).abs().max().item<double>() < 1e-3) << "the constant channel";
  // Its running scale stays finite: the node's largest other scale, not 1e5.
  ASSERT_EQ(registry.buffers().back().name, "bn.running_scale");
  const at::Tensor running_scale = buffers.back()[0];
  EXPECT_LT(running_scale[2].item<double>(), 100.0);
  EXPECT_NEAR(running_scale[2].item<double>(),
              running_scale.index_select(0, torch::tensor({0, 1, 3})).max().item<double>(), 1e-6);
  // The replacement itself: per node, the largest other scale; 1 if every channel is constant.
  const at::Tensor scale = torch::tensor({2.0, 1e5, 3.0, 1e5, 1e5, 1e5});
  EXPECT_TRUE(at::equal(constant_channels_take_largest_scale(scale, 2),
                        torch::tensor({2.0, 3.0, 3.0, 1.0, 1.0, 1.0})));
}

}  // namespace
}  // namespace lpdt::nn
