// The device-generic quantizer (tensor operations, the path CUDA tensors take) against the CPU
// loops, bit for bit, on random inputs of every layout; and, where a GPU exists, the same
// functions on CUDA tensors against the CPU.
#include "lpdt/quant/affine_quantizer_tensor_ops.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace lpdt::quant {
namespace {

struct Input {
  const char* name;
  std::vector<std::int64_t> shape;  // 4-D: [b, k*C, H, W]; otherwise node-leading [k, ...]
};

at::Tensor random_input(const Input& in, std::int64_t seed) {
  torch::manual_seed(seed);
  at::Tensor x = torch::randn(in.shape) * 1.7 + 0.2;
  // 4-D activations arrive channels-last from the node-batched layers, or NCHW from others.
  if (in.shape.size() == 4 && seed % 2 == 0) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  return x;
}

std::int64_t nodes_of(const Input& in) { return in.shape.size() == 4 ? 3 : in.shape[0]; }

const std::vector<Input> kInputs = {
    {"activation", {4, 3 * 5, 6, 7}},
    {"linear", {3, 8, 33}},
    {"weights", {3, 4 * 3 * 3 * 2}},
};

struct Request {
  int bits;
  QuantScheme scheme;
  Rounding rounding;
};

const std::vector<Request> kRequests = {
    {8, QuantScheme::kGemmlowp, Rounding::kNearest},
    {8, QuantScheme::kGemmlowp, Rounding::kStochastic},
    {4, QuantScheme::kReference, Rounding::kStochastic},
    {16, QuantScheme::kReference, Rounding::kNearest},
};

QuantizeRequest make_request(const Request& r) {
  QuantizeRequest q;
  q.bits = r.bits;
  q.scheme = r.scheme;
  q.rounding = r.rounding;
  q.key = DrawKey{1234, 17, 5};
  q.site = 3;
  return q;
}

void expect_identical(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const at::Tensor ca = a.cpu().contiguous(), cb = b.cpu().contiguous();
  EXPECT_TRUE(at::equal(ca, cb))
      << what << ": max |difference| "
      << (ca.to(at::kDouble) - cb.to(at::kDouble)).abs().max().item<double>();
}

TEST(QuantizerTensorOps, RangesMatchTheCpuLoops) {
  for (const Input& in : kInputs) {
    for (std::int64_t seed = 0; seed < 2; ++seed) {
      const at::Tensor x = random_input(in, seed);
      const std::int64_t k = nodes_of(in);
      const NodeRange loops = tensor_range(x, k), ops = tensor_ops::tensor_range(x, k);
      expect_identical(loops.min, ops.min, std::string(in.name) + " tensor min");
      expect_identical(loops.max, ops.max, std::string(in.name) + " tensor max");
      const NodeRange mean_loops = sample_mean_range(x, k);
      const NodeRange mean_ops = tensor_ops::sample_mean_range(x, k);
      // Both sum in double; the order of the additions differs.
      EXPECT_TRUE(at::allclose(mean_loops.min, mean_ops.min, 1e-6, 1e-7)) << in.name;
      EXPECT_TRUE(at::allclose(mean_loops.max, mean_ops.max, 1e-6, 1e-7)) << in.name;
    }
  }
}

TEST(QuantizerTensorOps, FakeQuantizeMatchesTheCpuLoopsBitForBit) {
  for (const Input& in : kInputs) {
    for (const Request& r : kRequests) {
      for (std::int64_t seed = 0; seed < 2; ++seed) {
        const at::Tensor x = random_input(in, seed + 10);
        const std::int64_t k = nodes_of(in);
        // A range narrower than the data, so that clamping is exercised too.
        NodeRange range = tensor_range(x, k);
        range.min = range.min * 0.8;
        range.max = range.max * 0.9;
        const QuantizeRequest request = make_request(r);
        const std::string what = std::string(in.name) + " bits " + std::to_string(r.bits) +
                                 (r.rounding == Rounding::kStochastic ? " stochastic" : " nearest");
        expect_identical(fake_quantize(x, k, range, request),
                         tensor_ops::fake_quantize(x, k, range, request), what);
      }
    }
  }
}

TEST(QuantizerTensorOps, CodesAndDequantizeMatchTheCpuLoops) {
  for (const Input& in : kInputs) {
    for (const Rounding rounding : {Rounding::kNearest, Rounding::kStochastic}) {
      const at::Tensor x = random_input(in, 7);
      const std::int64_t k = nodes_of(in);
      const QuantizeRequest request = make_request({8, QuantScheme::kGemmlowp, rounding});
      const NodeRange range = tensor_range(x, k);
      const QuantizedTensor loops = quantize(x, k, range, request);
      const QuantizedTensor ops = tensor_ops::quantize(x, k, range, request);
      expect_identical(loops.codes, ops.codes, std::string(in.name) + " codes");
      expect_identical(loops.scale, ops.scale, "scale");
      expect_identical(loops.zero_point, ops.zero_point, "zero point");
      expect_identical(dequantize(loops, k), tensor_ops::dequantize(ops, k), "dequantize");
    }
  }
}

TEST(QuantizerTensorOps, DrawsAreTheScalarHash) {
  NodeView v;
  v.nodes = 2;
  v.samples = 3;
  v.rows = 4;
  v.cols = 5;
  const DrawKey key{99, 3, 8};
  const at::Tensor draws = tensor_ops::centered_uniform_draws(v, key, 6, at::kCPU);
  ASSERT_EQ(draws.sizes(), (std::vector<std::int64_t>{2, 3, 4, 5}));
  const at::Tensor flat = draws.reshape({2, -1});
  for (std::int64_t node = 0; node < 2; ++node) {
    const std::uint64_t stream = draw_stream(key, node, 6);
    for (std::int64_t e = 0; e < v.node_numel(); ++e) {
      ASSERT_EQ(flat[node][e].item<float>(), centered_uniform(stream, e)) << node << " " << e;
    }
  }
}

// On a machine with a GPU: the CUDA path decides exactly as the CPU loops.
TEST(QuantizerTensorOps, CudaMatchesTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const Input& in : kInputs) {
    for (const Request& r : kRequests) {
      const at::Tensor x = random_input(in, 21);
      const std::int64_t k = nodes_of(in);
      const QuantizeRequest request = make_request(r);
      const NodeRange range = tensor_range(x, k);
      const NodeRange cuda_range = tensor_range(x.cuda(), k);
      expect_identical(range.min, cuda_range.min, "cuda range");
      expect_identical(fake_quantize(x, k, range, request),
                       fake_quantize(x.cuda(), k, cuda_range, request), in.name);
    }
  }
}

}  // namespace
}  // namespace lpdt::quant
