#include "lpdt/nn/many_small_matmuls.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include "lpdt/core/error.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The products without autograd, one block of consecutive products per thread.
at::Tensor blocked_bmm(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor ac = a.contiguous(), bc = b.contiguous();
  const std::int64_t count = ac.size(0);
  at::Tensor out = at::empty({count, ac.size(1), bc.size(2)}, ac.options());
  const std::int64_t threads = std::max<std::int64_t>(1, at::get_num_threads());
  const std::int64_t grain = std::max<std::int64_t>(1, (count + threads - 1) / threads);
  at::parallel_for(0, count, grain, [&](std::int64_t begin, std::int64_t end) {
    // Grad mode is thread-local and on in OpenMP's worker threads: the products are outside
    // autograd (the caller's Function records them), so each thread turns it off itself.
    const at::NoGradGuard no_grad;
    at::Tensor block = out.narrow(0, begin, end - begin);
    at::bmm_out(block, ac.narrow(0, begin, end - begin), bc.narrow(0, begin, end - begin));
  });
  return out;
}

struct ManySmallMatmuls : torch::autograd::Function<ManySmallMatmuls> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    ctx->save_for_backward({a, b});
    return blocked_bmm(a, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grad[0];
    return {blocked_bmm(g, saved[1].transpose(1, 2)), blocked_bmm(saved[0].transpose(1, 2), g)};
  }
};

}  // namespace

at::Tensor many_small_matmuls(const at::Tensor& a, const at::Tensor& b) {
  LPDT_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0) && a.size(2) == b.size(1),
             "many_small_matmuls: expected a [N, m, n] and b [N, n, p]");
  if (!a.device().is_cpu()) return at::bmm(a, b);
  return ManySmallMatmuls::apply(a, b);
}

}  // namespace lpdt::nn
