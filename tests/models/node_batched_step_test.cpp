// The gradient of a step does not depend on how many nodes go through one pass, nor on the
// convolution algorithm.
#include "lpdt/models/node_batched_step.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <string>
#include <vector>

#include <ATen/Parallel.h>

#include "lpdt/core/cuda_step_graph.h"
#include "lpdt/core/error.h"
#include "lpdt/quant/affine_quantizer_cuda.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::models {
namespace {

constexpr double kTolerance = 1e-4;

// A one-channel ResNet of `depth` on size x size inputs.
ModelOptions resnet_options(int depth, int size) {
  ModelOptions options;
  options.arch = "resnet";
  options.depth = depth;
  options.in_channels = 1;
  options.height = options.width = size;
  return options;
}

TEST(ComputeGradients, PassSizeAndConvAlgorithmDoNotChangeTheResult) {
  ModelOptions options = resnet_options(8, 12);
  options.norm = "batchnorm";  // buffers too
  const auto model = make_model(options);
  const std::int64_t k = 4, b = 3;
  torch::manual_seed(11);
  const at::Tensor x = model->init_params(3).unsqueeze(0).repeat({k, 1}) +
                       0.05 * torch::randn({k, model->num_params()});
  const at::Tensor inputs = torch::randn({k, b, 1, 12, 12});
  const at::Tensor targets = torch::randint(0, 10, {k, b}, torch::kLong);

  std::vector<at::Tensor> reference_buffers = model->init_buffers(k);
  const GradientResult reference = compute_gradients(*model, x, reference_buffers, inputs, targets,
                                                     0, nn::ConvAlgorithm::kGrouped);
  for (std::int64_t pass : {1, 2, 3}) {
    std::vector<at::Tensor> buffers = model->init_buffers(k);
    const GradientResult r =
        compute_gradients(*model, x, buffers, inputs, targets, pass, nn::ConvAlgorithm::kPerNode);
    EXPECT_TRUE(torch::allclose(r.grad, reference.grad, kTolerance, kTolerance)) << pass;
    EXPECT_TRUE(torch::allclose(r.loss, reference.loss, kTolerance, kTolerance)) << pass;
    for (std::size_t j = 0; j < buffers.size(); ++j) {
      EXPECT_TRUE(torch::allclose(buffers[j], reference_buffers[j], kTolerance, kTolerance));
    }
  }
  EXPECT_FALSE(x.requires_grad()) << "the caller's parameters must stay a plain tensor";
}

// Passes side by side on worker threads (run.pass_workers) compute what passes in turn compute on
// one intra-op thread, bit for bit: every worker runs one thread, so every kernel takes the same
// one-thread path. Float, 8-bit simulated (stochastic draws keyed per node) and the integer
// backend; BatchNorm buffers too.
TEST(ComputeGradients, PassesOnWorkersEqualPassesInTurnOnOneThread) {
  const int threads_before = at::get_num_threads();
  for (const std::string precision : {"fp32", "int8-simulated", "int8-integer"}) {
    if (precision == "int8-integer" && !quant::have_int8_gemm()) continue;  // built without oneDNN
    ModelOptions options = resnet_options(8, 12);
    if (precision == "fp32") {
      options.norm = "batchnorm";  // buffers updated by each pass
    } else {
      options.quant.precision = quant::Precision::kInt8;
      options.quant.backend = precision == "int8-integer" ? quant::QuantBackend::kInteger
                                                          : quant::QuantBackend::kSimulated;
    }
    const auto model = make_model(options);
    const std::int64_t k = 5, b = 3;
    torch::manual_seed(17);
    const at::Tensor x = model->init_params(2).unsqueeze(0).repeat({k, 1}) +
                         0.02 * torch::randn({k, model->num_params()});
    const at::Tensor inputs = torch::randn({k, b, 1, 12, 12});
    const at::Tensor targets = torch::randint(0, 10, {k, b}, torch::kLong);
    const quant::DrawKey draws{7, 3, 0};

    at::set_num_threads(1);
    std::vector<at::Tensor> in_turn_buffers = model->init_buffers(k);
    const GradientResult in_turn = compute_gradients(
        *model, x, in_turn_buffers, inputs, targets, 1, nn::ConvAlgorithm::kGrouped, draws);
    at::set_num_threads(2);
    for (const int workers : {2, 3}) {
      std::vector<at::Tensor> buffers = model->init_buffers(k);
      const GradientResult side_by_side =
          compute_gradients(*model, x, buffers, inputs, targets, 1, nn::ConvAlgorithm::kGrouped,
                            draws, nullptr, workers);
      EXPECT_TRUE(at::equal(side_by_side.grad, in_turn.grad)) << precision << " " << workers;
      EXPECT_TRUE(at::equal(side_by_side.loss, in_turn.loss)) << precision << " " << workers;
      ASSERT_EQ(buffers.size(), in_turn_buffers.size());
      for (std::size_t j = 0; j < buffers.size(); ++j) {
        EXPECT_TRUE(at::equal(buffers[j], in_turn_buffers[j])) << precision << " buffer " << j;
      }
    }
  }
  at::set_num_threads(threads_before);
}

TEST(ComputeGradients, PassWorkersRejectAnObserver) {
  const auto model = make_model(resnet_options(8, 8));
  const at::Tensor x = model->init_params(1).unsqueeze(0).repeat({2, 1});
  std::vector<at::Tensor> buffers = model->init_buffers(2);
  PassObserver observer;
  EXPECT_ANY_THROW(compute_gradients(*model, x, buffers, torch::randn({2, 1, 1, 8, 8}),
                                     torch::zeros({2, 1}, torch::kLong), 1,
                                     nn::ConvAlgorithm::kGrouped, {}, &observer, 2));
}

// A PassObserver sees every pass, in order, before its forward and between its forward and its
// backward, with the pass's node count; observing changes nothing computed.
TEST(ComputeGradients, ObserverSeesEveryPassAroundItsForward) {
  const auto model = make_model(resnet_options(8, 8));
  const std::int64_t k = 5, b = 2;
  torch::manual_seed(5);
  const at::Tensor x = model->init_params(1).unsqueeze(0).repeat({k, 1});
  const at::Tensor inputs = torch::randn({k, b, 1, 8, 8});
  const at::Tensor targets = torch::randint(0, 10, {k, b}, torch::kLong);
  std::vector<std::string> events;
  PassObserver observer;
  observer.before_forward = [&](std::int64_t nodes) {
    events.push_back("before " + std::to_string(nodes));
  };
  observer.after_forward = [&](std::int64_t nodes) {
    events.push_back("after " + std::to_string(nodes));
  };
  std::vector<at::Tensor> buffers = model->init_buffers(k);
  const GradientResult observed = compute_gradients(*model, x, buffers, inputs, targets, 2,
                                                    nn::ConvAlgorithm::kGrouped, {}, &observer);
  EXPECT_EQ(events, (std::vector<std::string>{"before 2", "after 2", "before 2", "after 2",
                                              "before 1", "after 1"}));
  std::vector<at::Tensor> plain_buffers = model->init_buffers(k);
  const GradientResult plain =
      compute_gradients(*model, x, plain_buffers, inputs, targets, 2, nn::ConvAlgorithm::kGrouped);
  EXPECT_TRUE(at::equal(observed.grad, plain.grad));
  EXPECT_TRUE(at::equal(observed.loss, plain.loss));
}

// model.precision = "bf16": the same ResNet-20 (EvoNorm, the CPU fused kernel) with bfloat16
// convolutions computes logits and gradients close to the float32 model's (bfloat16 keeps 8
// significant bits), but not equal to them; parameters and gradients stay float32.
TEST(ComputeGradients, Bfloat16ConvolutionsStayCloseToFloat32) {
  ModelOptions options = resnet_options(20, 16);
  const auto fp32_model = make_model(options);
  options.quant.precision = quant::Precision::kBf16;
  const auto bf16_model = make_model(options);
  ASSERT_EQ(bf16_model->num_params(), fp32_model->num_params());
  const std::int64_t k = 2, b = 8;
  torch::manual_seed(12);
  const at::Tensor x = fp32_model->init_params(3).unsqueeze(0).repeat({k, 1});
  const at::Tensor inputs = torch::randn({k, b, 1, 16, 16});
  const at::Tensor targets = torch::randint(0, 10, {k, b}, torch::kLong);
  std::vector<at::Tensor> fp32_buffers = fp32_model->init_buffers(k);
  std::vector<at::Tensor> bf16_buffers = bf16_model->init_buffers(k);
  const GradientResult fp32 = compute_gradients(*fp32_model, x, fp32_buffers, inputs, targets, 1,
                                                nn::ConvAlgorithm::kGrouped);
  const GradientResult bf16 = compute_gradients(*bf16_model, x, bf16_buffers, inputs, targets, 1,
                                                nn::ConvAlgorithm::kGrouped);
  ASSERT_EQ(bf16.grad.scalar_type(), at::kFloat);
  for (std::int64_t i = 0; i < k; ++i) {
    const double loss_error = std::abs(bf16.loss[i].item<double>() - fp32.loss[i].item<double>()) /
                              fp32.loss[i].item<double>();
    const double grad_error =
        (bf16.grad[i] - fp32.grad[i]).norm().item<double>() / fp32.grad[i].norm().item<double>();
    EXPECT_LT(loss_error, 1e-2) << "node " << i;
    EXPECT_LT(grad_error, 0.1) << "node " << i;
    EXPECT_GT(grad_error, 1e-5) << "node " << i << ": bfloat16 changed nothing";
  }
}

}  // namespace
}  // namespace lpdt::models

namespace lpdt::models {
namespace {

// On a machine with a GPU: one grouped pass on CUDA computes what one node per pass computes on
// the CPU, for each normalisation and both precisions (the simulated int8 path runs the
// device-generic quantizer there). TF32 is switched off: it would round the convolutions' inputs
// to 10-bit mantissas.
struct DeviceCase {
  const char* norm;
  bool int8;
};

void PrintTo(const DeviceCase& c, std::ostream* os) {
  *os << c.norm << (c.int8 ? " int8" : " fp32");
}

class CudaVsCpu : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(CudaVsCpu, GradientsLossesAndBuffersMatch) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
  const DeviceCase c = GetParam();
  ModelOptions options;
  options.arch = "resnet";
  options.depth = 8;
  options.norm = c.norm;
  options.in_channels = 3;
  options.height = options.width = 16;
  if (c.int8) options.quant.precision = quant::Precision::kInt8;
  const auto model = make_model(options);
  const std::int64_t k = 5, b = 4;
  torch::manual_seed(23);
  const at::Tensor x = model->init_params(3).unsqueeze(0).repeat({k, 1}) +
                       0.05 * torch::randn({k, model->num_params()});
  const at::Tensor inputs = torch::randn({k, b, 3, 16, 16});
  const at::Tensor targets = torch::randint(0, 10, {k, b}, torch::kLong);

  std::vector<at::Tensor> cpu_buffers = model->init_buffers(k);
  const GradientResult cpu = compute_gradients(*model, x, cpu_buffers, inputs, targets, 1,
                                               nn::ConvAlgorithm::kPerNode, {7, 3, 0});
  std::vector<at::Tensor> gpu_buffers = model->init_buffers(k);
  for (auto& t : gpu_buffers) t = t.cuda();
  const GradientResult gpu =
      compute_gradients(*model, x.cuda(), gpu_buffers, inputs.cuda(), targets.cuda(), 0,
                        nn::ConvAlgorithm::kGrouped, {7, 3, 0});
  ASSERT_TRUE(gpu.grad.is_cuda());
  // float32: summation orders differ. int8: a value that lands within rounding of a code
  // boundary may take the other code on the other device, so compare by relative norm.
  const double tolerance = c.int8 ? 5e-2 : 1e-4;
  const double grad_error =
      (gpu.grad.cpu() - cpu.grad).norm().item<double>() / cpu.grad.norm().item<double>();
  EXPECT_LT(grad_error, tolerance) << c.norm;
  EXPECT_TRUE(torch::allclose(gpu.loss.cpu(), cpu.loss, tolerance, tolerance)) << c.norm;
  for (std::size_t j = 0; j < cpu_buffers.size(); ++j) {
    EXPECT_TRUE(torch::allclose(gpu_buffers[j].cpu(), cpu_buffers[j], tolerance, tolerance));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Norms, CudaVsCpu,
    ::testing::Values(DeviceCase{"evonorm", false}, DeviceCase{"batchnorm", false},
                      DeviceCase{"groupnorm", false}, DeviceCase{"evonorm", true},
                      DeviceCase{"batchnorm", true}),
    [](const ::testing::TestParamInfo<DeviceCase>& info) {
      return std::string(info.param.norm) + (info.param.int8 ? "_int8" : "_fp32");
    });

}  // namespace
}  // namespace lpdt::models

namespace lpdt::models {
namespace {

// A depth-8 ResNet of 4 nodes on 16x16 inputs on the GPU, with deterministic cuDNN and no TF32,
// its starting parameters and four steps' batches: what the CUDA graph tests replay.
struct GraphCase {
  static constexpr std::int64_t k = 4, b = 8, steps = 4;
  std::unique_ptr<Model> model;
  at::Tensor x0;
  std::vector<at::Tensor> batches, labels;
  GraphCase(const std::string& norm, quant::Precision precision, std::uint64_t seed) {
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
    ModelOptions options;
    options.arch = "resnet";
    options.depth = 8;
    options.norm = norm;
    options.in_channels = 3;
    options.height = options.width = 16;
    options.quant.precision = precision;
    model = make_model(options);
    torch::manual_seed(static_cast<std::int64_t>(seed));
    x0 = (model->init_params(3).unsqueeze(0).repeat({k, 1}) +
          0.05 * torch::randn({k, model->num_params()}))
             .cuda();
    for (std::int64_t s = 0; s < steps; ++s) {
      batches.push_back(torch::randn({k, b, 3, 16, 16}).cuda());
      labels.push_back(torch::randint(0, 10, {k, b}, torch::kLong).cuda());
    }
  }
  std::vector<at::Tensor> fresh_buffers() const {
    std::vector<at::Tensor> buffers = model->init_buffers(k);
    for (auto& t : buffers) t = t.cuda();
    return buffers;
  }
  // One local SGD step in place, as the optimizer does.
  void step(at::Tensor& x, std::vector<at::Tensor>& buffers, const at::Tensor& in,
            const at::Tensor& target, const quant::DrawKey& draws = {}) const {
    const GradientResult g =
        compute_gradients(*model, x, buffers, in, target, 0, nn::ConvAlgorithm::kGrouped, draws);
    torch::NoGradGuard no_grad;
    x.sub_(g.grad, 0.05);
  }
  // x after the steps replayed, relative to the distance x_eager moved from x0.
  double relative_error(const at::Tensor& x_graph, const at::Tensor& x_eager) const {
    return (x_graph - x_eager).norm().item<double>() / (x_eager - x0).norm().item<double>();
  }
};

// On a machine with a GPU: a step captured as a CUDA graph and replayed computes what the same
// step run eagerly computes (deterministic cuDNN, no TF32), over several steps with new inputs
// copied into the captured input tensors.
TEST(CudaStepGraph, ReplaysComputeWhatEagerStepsCompute) {
  if (!cuda_graphs_available()) GTEST_SKIP() << "no CUDA graphs in this build or no GPU";
  // BatchNorm: in-place buffer updates inside the graph too.
  const GraphCase c("batchnorm", quant::Precision::kFp32, 5);
  at::Tensor x_eager = c.x0.clone();
  std::vector<at::Tensor> buffers_eager = c.fresh_buffers();
  for (std::int64_t s = 0; s < c.steps; ++s)
    c.step(x_eager, buffers_eager, c.batches[s], c.labels[s]);

  at::Tensor x_graph = c.x0.clone();
  std::vector<at::Tensor> buffers_graph = c.fresh_buffers();
  at::Tensor in = at::empty_like(c.batches[0]), target = at::empty_like(c.labels[0]);
  {  // Warm-up on copies, so that the captured tensors start from x0 too.
    at::Tensor x_warm = c.x0.clone();
    std::vector<at::Tensor> buffers_warm = c.fresh_buffers();
    c.step(x_warm, buffers_warm, c.batches[0], c.labels[0]);
  }
  CudaStepGraph graph;
  in.copy_(c.batches[0]);
  target.copy_(c.labels[0]);
  graph.capture([&] { c.step(x_graph, buffers_graph, in, target); });
  EXPECT_TRUE(at::equal(x_graph, c.x0)) << "capture must not run the step";
  for (std::int64_t s = 0; s < c.steps; ++s) {
    in.copy_(c.batches[s]);
    target.copy_(c.labels[s]);
    graph.replay();
  }
  cuda_synchronize();
  EXPECT_LT(c.relative_error(x_graph, x_eager), 1e-4)
      << "relative to the distance moved in " << c.steps << " steps";
  for (std::size_t j = 0; j < buffers_eager.size(); ++j) {
    EXPECT_TRUE(torch::allclose(buffers_graph[j], buffers_eager[j], 1e-4, 1e-5)) << j;
  }
}

// On a machine with a GPU and a build with the CUDA quantizer kernels: an 8-bit model's step
// replayed as a CUDA graph draws its stochastic roundings for the step held by a device counter
// (DrawKey::device_step), which the graph advances, so that four replays compute what four eager
// steps keyed 0, 1, 2, 3 on the host compute. (Keyed on the host step, every replay would repeat
// step 0's draws.)
TEST(CudaStepGraph, Int8ReplaysDrawForTheDeviceStepCounter) {
  if (!cuda_graphs_available()) GTEST_SKIP() << "no CUDA graphs in this build or no GPU";
  if (!quant::cuda::kernels_built()) GTEST_SKIP() << "a build without the CUDA quantizer kernels";
  const GraphCase c("evonorm", quant::Precision::kInt8, 6);
  at::Tensor x_eager = c.x0.clone();
  std::vector<at::Tensor> buffers_eager = c.fresh_buffers();
  for (std::int64_t s = 0; s < c.steps; ++s) {
    c.step(x_eager, buffers_eager, c.batches[s], c.labels[s], quant::DrawKey{7, s, 0});
  }

  at::Tensor x_graph = c.x0.clone();
  std::vector<at::Tensor> buffers_graph = c.fresh_buffers();
  at::Tensor in = at::empty_like(c.batches[0]), target = at::empty_like(c.labels[0]);
  at::Tensor step = at::zeros({1}, c.x0.options().dtype(at::kLong));
  // key.step is left at 0: the kernels must read the counter.
  quant::DrawKey draws{7, 0, 0};
  draws.device_step = step.data_ptr<std::int64_t>();
  {
    at::Tensor x_warm = c.x0.clone();
    std::vector<at::Tensor> buffers_warm = c.fresh_buffers();
    c.step(x_warm, buffers_warm, c.batches[0], c.labels[0], draws);
  }
  CudaStepGraph graph;
  graph.capture([&] {
    c.step(x_graph, buffers_graph, in, target, draws);
    step.add_(1);
  });
  for (std::int64_t s = 0; s < c.steps; ++s) {
    in.copy_(c.batches[s]);
    target.copy_(c.labels[s]);
    graph.replay();
  }
  cuda_synchronize();
  EXPECT_EQ(step.item<std::int64_t>(), c.steps);
  EXPECT_LT(c.relative_error(x_graph, x_eager), 1e-4)
      << "relative to the distance moved in " << c.steps << " steps";
}

TEST(AutomaticNodesPerPass, FitsTheSavedActivationsOfAPassInTheBudget) {
  const double budget = kCpuPassActivationBudget;
  EXPECT_EQ(automatic_nodes_per_pass(40, /*on_gpu=*/true, budget * 10), 40);  // a GPU: all nodes
  EXPECT_EQ(automatic_nodes_per_pass(64, false, budget / 3), 3);
  EXPECT_EQ(automatic_nodes_per_pass(64, false, budget / 3.5), 3);  // whole nodes, rounded down
  EXPECT_EQ(automatic_nodes_per_pass(64, false, budget * 2), 1);    // at least one
  EXPECT_EQ(automatic_nodes_per_pass(64, false, budget / 1000), kCpuNodesPerPass);  // the cap
  EXPECT_EQ(automatic_nodes_per_pass(5, false, budget / 1000), 5);        // never more than k
  EXPECT_EQ(automatic_nodes_per_pass(64, false, 0.0), kCpuNodesPerPass);  // unknown: the cap
}

TEST(AutomaticNodesPerPass, TracedModels) {
  // The two ends measured in docs/benchmarks.md: ResNet-20 (about 50 MiB saved per node at batch
  // 32, 1x32x32) one node per pass, LeNet-5 (about 1.4 MiB) the capped grouped pass.
  ModelOptions resnet;
  resnet.in_channels = 1;
  const at::Tensor images = torch::zeros({1, 32, 1, 32, 32});
  const auto resnet20 = make_model(resnet);
  const double resnet_bytes = saved_activation_bytes(trace_forward(*resnet20, images));
  EXPECT_GT(resnet_bytes, 40.0 * 1024 * 1024);
  EXPECT_LT(resnet_bytes, 60.0 * 1024 * 1024);
  EXPECT_EQ(automatic_nodes_per_pass(*resnet20, images, 8, /*on_gpu=*/false), 1);
  ModelOptions lenet = resnet;
  lenet.arch = "lenet5";
  lenet.height = lenet.width = 28;
  const at::Tensor small = torch::zeros({1, 32, 1, 28, 28});
  EXPECT_EQ(automatic_nodes_per_pass(*make_model(lenet), small, 64, false), kCpuNodesPerPass);
}

// run.pass_workers = 0: one worker per intra-op thread, at most one per pass, on the CPU; passes
// in turn on a GPU, for one pass, and for a model with dropout (its draws come from LibTorch's
// global generator in pass order). An explicit count is kept, or refused where it cannot hold.
// Tracing a model with dropout (VGG-11) runs a training forward, which draws masks from the
// global generator: the trace puts the generator back, so the next draws are those without it (a
// resumed run restores the generator, then traces to size its passes).
TEST(TraceForward, LeavesTheGlobalGeneratorAsItWas) {
  ModelOptions options;
  options.arch = "vgg11";
  options.in_channels = 1;
  options.height = options.width = 32;
  const auto model = make_model(options);
  ASSERT_TRUE(model->draws_from_global_generator());
  torch::manual_seed(5);
  const at::Tensor expected = torch::rand({16});
  torch::manual_seed(5);
  const auto trace = trace_forward(*model, torch::zeros({1, 2, 1, 32, 32}));
  EXPECT_FALSE(trace.empty());
  EXPECT_TRUE(torch::equal(torch::rand({16}), expected));
}

TEST(PassWorkers, AutomaticAndExplicitCounts) {
  const auto resnet = make_model(resnet_options(8, 8));
  EXPECT_EQ(automatic_pass_workers(*resnet, 8, /*on_gpu=*/false, 2), 2);
  EXPECT_EQ(automatic_pass_workers(*resnet, 8, false, 4), 4);
  EXPECT_EQ(automatic_pass_workers(*resnet, 3, false, 4), 3) << "at most one per pass";
  EXPECT_EQ(automatic_pass_workers(*resnet, 1, false, 2), 1);
  EXPECT_EQ(automatic_pass_workers(*resnet, 8, /*on_gpu=*/true, 2), 1);
  EXPECT_EQ(automatic_pass_workers(*resnet, 8, false, 1), 1);
  ModelOptions vgg = resnet_options(8, 32);
  vgg.arch = "vgg11";
  const auto vgg11 = make_model(vgg);
  EXPECT_TRUE(vgg11->draws_from_global_generator());
  EXPECT_FALSE(resnet->draws_from_global_generator());
  EXPECT_EQ(automatic_pass_workers(*vgg11, 8, false, 2), 1);

  // Evaluation: one worker per intra-op thread, an explicit count kept, in turn for 1, on a GPU
  // and for a model with dropout (whose forward passes never run side by side in training).
  EXPECT_EQ(evaluation_workers(0, *resnet, false, 2), 2);
  EXPECT_EQ(evaluation_workers(3, *resnet, false, 2), 3);
  EXPECT_EQ(evaluation_workers(1, *resnet, false, 2), 1);
  EXPECT_EQ(evaluation_workers(0, *resnet, /*on_gpu=*/true, 2), 1);
  EXPECT_EQ(evaluation_workers(0, *vgg11, false, 2), 1);

  EXPECT_EQ(resolve_pass_workers(0, *resnet, 8, false, 2), 2);
  EXPECT_EQ(resolve_pass_workers(1, *resnet, 8, false, 2), 1);
  EXPECT_EQ(resolve_pass_workers(3, *resnet, 8, false, 2), 3);
  EXPECT_EQ(resolve_pass_workers(3, *resnet, 2, false, 2), 2) << "at most one per pass";
  EXPECT_THROW(resolve_pass_workers(2, *resnet, 8, /*on_gpu=*/true, 2), ConfigError);
  try {
    resolve_pass_workers(2, *vgg11, 8, false, 2);
    FAIL() << "dropout with workers must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("run.pass_workers = 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dropout"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lpdt::models
