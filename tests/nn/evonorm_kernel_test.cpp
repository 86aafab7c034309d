// The fused EvoNorm-S0 CPU kernel against its scalar reference, the reference against autograd
// through the composite ATen layer, and the layer's fused path against its composite path.
#include "lpdt/nn/evonorm_kernel.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <string>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/nn/evonorm.h"
#include "lpdt/nn/node_layout.h"

namespace lpdt::nn {
namespace {

// Tolerances about 5x the largest error measured on these cases (in brackets).
// Relative error of the kernel's exp over the clamped range (Cephes' polynomial) [8e-8].
constexpr double kExpRelTolerance = 2e-7;
// Kernel vs reference, as max |a - e| / max(1, max |e|) per tensor. The kernel runs in float32
// with double sums; the reference entirely in double (rounded to float32 at the end).
constexpr double kForwardTolerance = 1e-6;   // y, mean, rstd [1.3e-7]
constexpr double kBackwardTolerance = 2e-6;  // dx, dv, dgamma, dbeta [3.5e-7]
// The reference (float32 inputs, double arithmetic) vs autograd through the composite layer in
// float64: only the reference's final rounding to float32 differs [5e-8].
constexpr double kReferenceTolerance = 2e-7;
// Fused layer vs composite layer, both float32: the composite's ~10-op chain rounds each step
// [1.8e-7].
constexpr double kLayerTolerance = 1e-6;
constexpr double kEps = 1e-5;

// max |actual - expected| / max(1, max |expected|)
double scaled_error(const at::Tensor& actual, const at::Tensor& expected) {
  const at::Tensor e = expected.to(at::kDouble);
  const double diff = (actual.to(at::kDouble) - e).abs().max().item<double>();
  return diff / std::max(1.0, e.abs().max().item<double>());
}

#define EXPECT_CLOSE(actual, expected, tolerance) \
  EXPECT_LE(scaled_error((actual), (expected)), (tolerance)) << #actual

TEST(EvoNormKernel, FastExpMatchesStdExp) {
  double worst = 0.0;
  for (double z = -87.3; z <= 88.0; z += 0.0137) {
    const double expected = std::exp(static_cast<double>(static_cast<float>(z)));
    const double actual = evonorm_fast_exp(static_cast<float>(z));
    worst = std::max(worst, std::abs(actual - expected) / expected);
  }
  EXPECT_LE(worst, kExpRelTolerance);
  // Clamped outside the range: finite, and sigmoid's limits stay right.
  EXPECT_TRUE(std::isfinite(evonorm_fast_exp(1000.0f)));
  EXPECT_LT(evonorm_fast_exp(-1000.0f), 1e-37f);
  EXPECT_GE(evonorm_fast_exp(-1000.0f), 0.0f);
}

struct Case {
  std::int64_t b, k, c, channels_per_group, h, w;
};

std::string case_name(const Case& c) {
  return "b" + std::to_string(c.b) + "_k" + std::to_string(c.k) + "_c" + std::to_string(c.c) +
         "_cg" + std::to_string(c.channels_per_group) + "_" + std::to_string(c.h) + "x" +
         std::to_string(c.w);
}

class EvoNormKernelCase : public ::testing::TestWithParam<Case> {};

// A case's random inputs (NCHW) and the scalar reference's outputs.
struct CaseData {
  at::Tensor x, v, gamma, beta, dy;
  EvoNormForward ref;
  EvoNormGradients ref_grad;
};

CaseData case_data(const Case& p) {
  const std::int64_t kc = p.k * p.c;
  torch::manual_seed(11);
  CaseData d;
  // An offset mean (|mean| >> std in some groups) exercises the shifted variance.
  d.x = torch::randn({p.b, kc, p.h, p.w}) * 1.5 + 2.0;
  d.v = torch::randn({kc});
  d.gamma = torch::randn({kc});
  d.beta = torch::randn({kc});
  d.dy = torch::randn({p.b, kc, p.h, p.w});
  d.ref = evonorm_s0_forward_reference(d.x, d.v, d.gamma, d.beta, p.channels_per_group, kEps);
  d.ref_grad = evonorm_s0_backward_reference(d.dy, d.x, d.v, d.gamma, d.ref.mean, d.ref.rstd,
                                             p.channels_per_group);
  return d;
}

void expect_matches_reference(const CaseData& d, const EvoNormForward& out,
                              const EvoNormGradients& grad) {
  EXPECT_CLOSE(out.y.cpu(), d.ref.y, kForwardTolerance);
  EXPECT_CLOSE(out.mean.cpu(), d.ref.mean, kForwardTolerance);
  EXPECT_CLOSE(out.rstd.cpu(), d.ref.rstd, kForwardTolerance);
  EXPECT_CLOSE(grad.dx.cpu(), d.ref_grad.dx, kBackwardTolerance);
  EXPECT_CLOSE(grad.dv.cpu(), d.ref_grad.dv, kBackwardTolerance);
  EXPECT_CLOSE(grad.dgamma.cpu(), d.ref_grad.dgamma, kBackwardTolerance);
  EXPECT_CLOSE(grad.dbeta.cpu(), d.ref_grad.dbeta, kBackwardTolerance);
}

constexpr at::MemoryFormat kFormats[] = {at::MemoryFormat::ChannelsLast,
                                         at::MemoryFormat::Contiguous};

// At every vector level the CPU has (core/cpu_dispatch.h): channels-last inputs whose channel
// count the level's lanes divide take the explicit-vector kernels, the others the plain loops.
TEST_P(EvoNormKernelCase, MatchesScalarReference) {
  const Case& p = GetParam();
  const CaseData d = case_data(p);
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    for (const auto format : kFormats) {
      SCOPED_TRACE(format == at::MemoryFormat::ChannelsLast ? "channels-last" : "NCHW");
      const at::Tensor x = d.x.contiguous(format);
      const at::Tensor dy = d.dy.contiguous(format);
      if (format == at::MemoryFormat::ChannelsLast && p.h * p.w > 1 && p.k * p.c > 1) {
        ASSERT_TRUE(is_channels_last(x));
      }
      const EvoNormForward out =
          evonorm_s0_forward_cpu(x, d.v, d.gamma, d.beta, p.channels_per_group, kEps);
      EXPECT_TRUE(out.y.is_contiguous(x.suggest_memory_format()));
      const EvoNormGradients grad =
          evonorm_s0_backward_cpu(dy, x, d.v, d.gamma, out.mean, out.rstd, p.channels_per_group);
      EXPECT_TRUE(grad.dx.is_contiguous(x.suggest_memory_format()));
      expect_matches_reference(d, out, grad);
    }
  }
}

// On a machine with a GPU and a build with the CUDA kernels: the CUDA kernels against the same
// reference, with x and dy in every pair of layouts.
TEST_P(EvoNormKernelCase, CudaMatchesScalarReference) {
  const Case& p = GetParam();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const CaseData d = case_data(p);
  if (!evonorm_s0_cuda_kernel_supports(d.x.cuda(), p.channels_per_group)) {
    GTEST_SKIP() << "a build without the CUDA kernels";
  }
  for (const auto x_format : kFormats) {
    for (const auto dy_format : kFormats) {
      SCOPED_TRACE(
          std::string(x_format == at::MemoryFormat::ChannelsLast ? "x channels-last" : "x NCHW") +
          (dy_format == at::MemoryFormat::ChannelsLast ? ", dy channels-last" : ", dy NCHW"));
      const at::Tensor x = d.x.cuda().contiguous(x_format);
      const at::Tensor dy = d.dy.cuda().contiguous(dy_format);
      const EvoNormForward out = evonorm_s0_forward_cuda(x, d.v.cuda(), d.gamma.cuda(),
                                                         d.beta.cuda(), p.channels_per_group, kEps);
      EXPECT_TRUE(out.y.is_cuda() && out.y.is_contiguous(x.suggest_memory_format()));
      const EvoNormGradients grad = evonorm_s0_backward_cuda(
          dy, x, d.v.cuda(), d.gamma.cuda(), out.mean, out.rstd, p.channels_per_group);
      EXPECT_TRUE(grad.dx.is_contiguous(x.suggest_memory_format()));
      expect_matches_reference(d, out, grad);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, EvoNormKernelCase,
                         ::testing::Values(Case{1, 1, 4, 1, 3, 5}, Case{5, 1, 4, 2, 7, 7},
                                           Case{5, 3, 4, 4, 5, 3}, Case{1, 3, 16, 16, 6, 5},
                                           Case{5, 1, 16, 16, 1, 1}, Case{5, 3, 6, 2, 9, 7},
                                           Case{1, 1, 32, 4, 11, 13}, Case{5, 3, 16, 2, 28, 28},
                                           Case{5, 1, 1, 1, 4, 4},
                                           // a 16-node ResNet-20 stage-1 layer, 2 samples: the
                                           // CUDA kernels split its pixels in 16 parts
                                           Case{2, 16, 16, 4, 32, 32}),
                         [](const auto& info) { return case_name(info.param); });

TEST(EvoNormKernel, StridedInputAndBroadcastGradient) {
  // x neither channels-last nor contiguous (a transposed view), dy a broadcast (as for a sum).
  torch::manual_seed(5);
  const at::Tensor x = torch::randn({3, 8, 6, 4}).transpose(2, 3);
  ASSERT_FALSE(x.is_contiguous() || x.is_contiguous(at::MemoryFormat::ChannelsLast));
  const at::Tensor v = torch::randn({8}), gamma = torch::randn({8}), beta = torch::randn({8});
  const at::Tensor dy = torch::ones({1}).expand(x.sizes());
  const EvoNormForward ref = evonorm_s0_forward_reference(x, v, gamma, beta, 2, kEps);
  const EvoNormForward out = evonorm_s0_forward_cpu(x, v, gamma, beta, 2, kEps);
  EXPECT_CLOSE(out.y, ref.y, kForwardTolerance);
  const EvoNormGradients ref_grad =
      evonorm_s0_backward_reference(dy, x, v, gamma, ref.mean, ref.rstd, 2);
  const EvoNormGradients grad = evonorm_s0_backward_cpu(dy, x, v, gamma, out.mean, out.rstd, 2);
  EXPECT_CLOSE(grad.dx, ref_grad.dx, kBackwardTolerance);
  EXPECT_CLOSE(grad.dv, ref_grad.dv, kBackwardTolerance);
}

TEST(EvoNormKernel, IndependentOfThreadCount) {
  torch::manual_seed(7);
  const at::Tensor x = torch::randn({8, 16, 9, 9}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor dy = torch::randn_like(x);
  const at::Tensor v = torch::randn({16}), gamma = torch::randn({16}), beta = torch::randn({16});
  const int threads = at::get_num_threads();
  std::vector<EvoNormGradients> grads;
  for (const int t : {1, 2, 3}) {
    at::set_num_threads(t);
    const EvoNormForward out = evonorm_s0_forward_cpu(x, v, gamma, beta, 4, kEps);
    grads.push_back(evonorm_s0_backward_cpu(dy, x, v, gamma, out.mean, out.rstd, 4));
  }
  at::set_num_threads(threads);
  for (std::size_t i = 1; i < grads.size(); ++i) {
    EXPECT_TRUE(at::equal(grads[i].dx, grads[0].dx));
    EXPECT_TRUE(at::equal(grads[i].dv, grads[0].dv));
    EXPECT_TRUE(at::equal(grads[i].dgamma, grads[0].dgamma));
    EXPECT_TRUE(at::equal(grads[i].dbeta, grads[0].dbeta));
  }
}

// ---- the layer ---------------------------------------------------------------------------------

struct LayerRun {
  at::Tensor y, dx, dparams;
};

// forward (fused or composite) of x and params, then the gradients of sum(probe * y).
template <typename Forward>
LayerRun run_layer(const Registry& registry, std::int64_t k, const at::Tensor& x0,
                   const at::Tensor& params0, const at::Tensor& probe, Forward forward) {
  const at::Tensor x = x0.detach().clone().requires_grad_(true);
  const at::Tensor params = params0.detach().clone().requires_grad_(true);
  Context ctx{&registry.layout(), params, nullptr, k, true};
  const at::Tensor y = forward(ctx, x);
  (y * probe).sum().backward();
  return {y.detach(), x.grad(), params.grad()};
}

TEST(EvoNormLayer, FusedMatchesComposite) {
  const std::int64_t k = 3, b = 4, c = 8, groups = 4;
  Registry registry;
  EvoNormS0 norm(registry, "evo", c, groups);
  torch::manual_seed(2);
  const at::Tensor params = torch::randn({k, registry.layout().total_numel});
  for (const bool channels_last : {true, false}) {
    SCOPED_TRACE(channels_last ? "channels-last" : "NCHW");
    at::Tensor x = nodes_to_channels(torch::randn({k, b, c, 6, 6}) + 0.5);
    if (!channels_last) x = x.contiguous();
    const at::Tensor probe = torch::randn(x.sizes());
    const LayerRun fused = run_layer(registry, k, x, params, probe, [&](auto& ctx, auto& in) {
      return norm.forward_fused(ctx, in);
    });
    const LayerRun composite = run_layer(registry, k, x, params, probe, [&](auto& ctx, auto& in) {
      return norm.forward_composite(ctx, in);
    });
    EXPECT_TRUE(fused.y.is_contiguous(x.suggest_memory_format()));
    EXPECT_CLOSE(fused.y, composite.y, kLayerTolerance);
    EXPECT_CLOSE(fused.dx, composite.dx, kLayerTolerance);
    EXPECT_CLOSE(fused.dparams, composite.dparams, kLayerTolerance);
  }
}

TEST(EvoNormLayer, ReferenceMatchesCompositeAutogradInDouble) {
  // The backward equations of evonorm_kernel.h, checked independently of the kernel: the scalar
  // reference against autograd through the composite layer in float64.
  const std::int64_t k = 2, b = 3, c = 6, groups = 3;
  Registry registry;
  EvoNormS0 norm(registry, "evo", c, groups);
  torch::manual_seed(4);
  const at::Tensor params = torch::randn({k, registry.layout().total_numel});
  const at::Tensor x = torch::randn({b, k * c, 5, 4});
  const at::Tensor probe = torch::randn(x.sizes());
  const LayerRun composite =
      run_layer(registry, k, x.to(at::kDouble), params.to(at::kDouble), probe.to(at::kDouble),
                [&](auto& ctx, auto& in) { return norm.forward_composite(ctx, in); });
  // The layer's parameters in its registration order: weight (gamma), bias (beta), v.
  const std::vector<at::Tensor> parts = params.split(c, 1);
  ASSERT_EQ(parts.size(), 3u);
  const at::Tensor gamma = parts[0].reshape({k * c}), beta = parts[1].reshape({k * c}),
                   v = parts[2].reshape({k * c});
  const EvoNormForward ref = evonorm_s0_forward_reference(x, v, gamma, beta, c / groups, kEps);
  const EvoNormGradients grad =
      evonorm_s0_backward_reference(probe, x, v, gamma, ref.mean, ref.rstd, c / groups);
  EXPECT_CLOSE(ref.y, composite.y, kReferenceTolerance);
  EXPECT_CLOSE(grad.dx, composite.dx, kReferenceTolerance);
  const at::Tensor dparams =
      at::cat({grad.dgamma.view({k, c}), grad.dbeta.view({k, c}), grad.dv.view({k, c})}, 1);
  EXPECT_CLOSE(dparams, composite.dparams, kReferenceTolerance);
}

TEST(EvoNormLayer, ForwardTakesFusedPathForFloat32Cpu) {
  Registry registry;
  EvoNormS0 norm(registry, "evo", 4, 2);
  const at::Tensor params = torch::randn({2, registry.layout().total_numel}).requires_grad_(true);
  Context ctx{&registry.layout(), params, nullptr, 2, true};
  const at::Tensor x = nodes_to_channels(torch::randn({2, 3, 4, 5, 5}));
  ASSERT_TRUE(norm.uses_fused_kernel(ctx, x));
  const at::Tensor y = norm.forward(ctx, x);
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_NE(y.grad_fn()->name().find("EvoNormS0Function"), std::string::npos)
      << y.grad_fn()->name();
  // float64 (the finite-difference tests) stays on the composite path.
  Context ctx64{&registry.layout(), params.detach().to(at::kDouble).requires_grad_(true), nullptr,
                2, true};
  const at::Tensor y64 = norm.forward(ctx64, x.to(at::kDouble));
  EXPECT_FALSE(norm.uses_fused_kernel(ctx64, x.to(at::kDouble)));
  EXPECT_EQ(y64.grad_fn()->name().find("EvoNormS0Function"), std::string::npos);
}

TEST(EvoNormLayer, FusedRefusesDoubleBackward) {
  Registry registry;
  EvoNormS0 norm(registry, "evo", 4, 2);
  const at::Tensor params = torch::randn({1, registry.layout().total_numel}).requires_grad_(true);
  Context ctx{&registry.layout(), params, nullptr, 1, true};
  const at::Tensor x = torch::randn({2, 4, 3, 3}).requires_grad_(true);
  const at::Tensor loss = norm.forward_fused(ctx, x).pow(2).sum();
  EXPECT_THROW(torch::autograd::grad({loss}, {x}, {}, /*retain_graph=*/true,
                                     /*create_graph=*/true),
               UserError);
  // First order works.
  const auto grads = torch::autograd::grad({loss}, {x});
  EXPECT_TRUE(grads[0].defined());
}

}  // namespace
}  // namespace lpdt::nn
