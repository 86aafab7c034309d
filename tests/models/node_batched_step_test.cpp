// The gradient of a step does not depend on how many nodes go through one pass, nor on the
// convolution algorithm.
#include "lpdt/models/node_batched_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace lpdt::models {
namespace {

constexpr double kTolerance = 1e-4;

TEST(ComputeGradients, PassSizeAndConvAlgorithmDoNotChangeTheResult) {
  ModelOptions options;
  options.arch = "resnet";
  options.depth = 8;
  options.norm = "batchnorm";  // buffers too
  options.in_channels = 1;
  options.height = options.width = 12;
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

}  // namespace
}  // namespace lpdt::models
