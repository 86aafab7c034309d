// The device-generic quantizer (tensor operations) against the CPU loops, bit for bit, on random
// inputs of every layout; and, where a GPU exists, the CUDA kernels (affine_quantizer_cuda.h) and
// the tensor operations on CUDA tensors against the CPU loops.
#include "lpdt/quant/affine_quantizer_tensor_ops.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/quant/affine_quantizer_cuda.h"

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
// For the CUDA kernels, also: an odd element count per node (a last pair of one element), nodes
// and samples of several range chunks, lines of an even count of columns that does not divide a
// block (6, 34), lines wider than a block (600 and 601 columns) and many one-element lines.
const std::vector<Input> kCudaInputs = {
    {"activation", {4, 3 * 5, 6, 7}},
    {"linear", {3, 8, 33}},
    {"weights", {3, 4 * 3 * 3 * 2}},
    {"odd", {3, 5, 7}},
    {"large activation", {8, 3 * 16, 24, 24}},
    {"six channels", {5, 3 * 6, 9, 9}},
    {"even linear", {3, 8, 34}},
    {"wide linear", {2, 3, 600}},
    {"wide odd linear", {2, 3, 601}},
    {"long weights", {3, 20000}},
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

// On a machine with a GPU (and a build with the kernels): the CUDA quantizer decides exactly as
// the CPU loops, and the tensor operations on CUDA tensors decide as the kernels.
class QuantizerCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!cuda::handles(at::zeros({1}, at::kCUDA))) GTEST_SKIP() << "a build without the kernels";
  }
};

TEST_F(QuantizerCuda, RangesMatchTheCpuLoops) {
  for (const Input& in : kCudaInputs) {
    const at::Tensor x = random_input(in, 31);
    const std::int64_t k = nodes_of(in);
    for (const at::Tensor& device_x : {x.cuda(), x.cuda().contiguous()}) {
      const NodeRange cpu = tensor_range(x, k), gpu = tensor_range(device_x, k);
      EXPECT_TRUE(gpu.min.is_cuda());
      expect_identical(cpu.min, gpu.min, std::string(in.name) + " min");
      expect_identical(cpu.max, gpu.max, std::string(in.name) + " max");
      // Summed in double in sample order on both devices: the same floats.
      const NodeRange cpu_mean = sample_mean_range(x, k), gpu_mean = sample_mean_range(device_x, k);
      expect_identical(cpu_mean.min, gpu_mean.min, std::string(in.name) + " sample-mean min");
      expect_identical(cpu_mean.max, gpu_mean.max, std::string(in.name) + " sample-mean max");
    }
  }
}

TEST_F(QuantizerCuda, FakeQuantizeMatchesTheCpuLoopsAndTheTensorOps) {
  for (const Input& in : kCudaInputs) {
    for (const Request& r : kRequests) {
      const at::Tensor x = random_input(in, 41);
      const std::int64_t k = nodes_of(in);
      NodeRange range = tensor_range(x, k);  // narrowed: clamping is exercised too
      range.min = range.min * 0.8;
      range.max = range.max * 0.9;
      const QuantizeRequest request = make_request(r);
      const std::string what = std::string(in.name) + " bits " + std::to_string(r.bits) +
                               (r.rounding == Rounding::kStochastic ? " stochastic" : " nearest");
      const at::Tensor gpu = fake_quantize(x.cuda(), k, range, request);
      EXPECT_TRUE(gpu.is_cuda()) << what;
      expect_identical(fake_quantize(x, k, range, request), gpu, what);
      expect_identical(tensor_ops::fake_quantize(x.cuda(), k, range, request), gpu,
                       what + " (tensor ops)");
    }
  }
}

TEST_F(QuantizerCuda, CodesAndDequantizeMatchTheCpuLoops) {
  for (const Input& in : kCudaInputs) {
    for (const Rounding rounding : {Rounding::kNearest, Rounding::kStochastic}) {
      const at::Tensor x = random_input(in, 51);
      const std::int64_t k = nodes_of(in);
      const QuantizeRequest request = make_request({8, QuantScheme::kGemmlowp, rounding});
      const NodeRange range = tensor_range(x, k);
      const QuantizedTensor cpu = quantize(x, k, range, request);
      const QuantizedTensor gpu = quantize(x.cuda(), k, range, request);
      EXPECT_TRUE(gpu.codes.is_cuda() && gpu.scale.is_cuda());
      expect_identical(cpu.codes, gpu.codes, std::string(in.name) + " codes");
      expect_identical(cpu.scale, gpu.scale, "scale");
      expect_identical(cpu.zero_point, gpu.zero_point, "zero point");
      expect_identical(dequantize(cpu, k), dequantize(gpu, k), "dequantize");
    }
  }
}

// The running range moved in the range kernel equals ATen's mul_ and add_ on the GPU, for [k]
// buffers and for [k] views with a stride (ranges kept as parameters, rows of [k, P]).
TEST_F(QuantizerCuda, RunningRangeUpdateMatchesTheTensorOps) {
  const Input in{"large activation", {8, 3 * 16, 24, 24}};
  const at::Tensor x = random_input(in, 71).cuda();
  const std::int64_t k = nodes_of(in);
  const double momentum = 0.1;
  for (const bool strided : {false, true}) {
    const at::Tensor storage = torch::randn({k, 5}, torch::kCUDA);
    const at::Tensor expected_min = storage.select(1, 1).clone(),
                     expected_max = storage.select(1, 3).clone() + 2.0;
    at::Tensor run_min = strided ? storage.select(1, 1) : expected_min.clone();
    at::Tensor run_max = strided ? storage.select(1, 3) : expected_max.clone();
    run_max.copy_(expected_max);
    const NodeRange fused = sample_mean_range_updating(x, k, run_min, run_max, momentum);
    const NodeRange range = sample_mean_range(x, k);
    expect_identical(range.min, fused.min, "range min");
    expect_identical(range.max, fused.max, "range max");
    expected_min.mul_(1.0 - momentum).add_(range.min, momentum);
    expected_max.mul_(1.0 - momentum).add_(range.max, momentum);
    const std::string what = strided ? " (strided)" : " (contiguous)";
    expect_identical(expected_min, run_min, "running min" + what);
    expect_identical(expected_max, run_max, "running max" + what);
  }
}

// A tensor whose data starts at an odd element (a view): the kernels take the element-wise path
// and decide as the CPU loops.
TEST_F(QuantizerCuda, AnUnalignedViewMatchesTheCpuLoops) {
  torch::manual_seed(81);
  const at::Tensor base = torch::randn({1 + 3 * 8 * 34});
  const at::Tensor x = base.slice(0, 1).view({3, 8, 34});
  const at::Tensor device_x = base.cuda().slice(0, 1).view({3, 8, 34});
  const NodeRange range = tensor_range(x, 3);
  expect_identical(range.min, tensor_range(device_x, 3).min, "range min");
  for (const Request& r : kRequests) {
    const QuantizeRequest request = make_request(r);
    expect_identical(fake_quantize(x, 3, range, request),
                     fake_quantize(device_x, 3, range, request), "bits " + std::to_string(r.bits));
  }
}

// Many tensors in one kernel (more than one launch's 64, some empty, a channels-last weight): the
// CPU loops' floats.
TEST_F(QuantizerCuda, EachTensorMatchesTheCpuLoops) {
  torch::manual_seed(91);
  const std::int64_t k = 4;
  std::vector<at::Tensor> tensors;
  for (int i = 0; i < 150; ++i) {
    const std::int64_t numel = i % 17 == 0 ? 0 : (i * 37) % 700 + 1;
    tensors.push_back(torch::randn({k, numel}) * 2.0 + 0.3);
  }
  tensors.push_back(torch::randn({k * 8, 3, 3, 3})
                        .contiguous(at::MemoryFormat::ChannelsLast)
                        .view({k, 8, 3, 3, 3}));
  std::vector<at::Tensor> device;
  for (const at::Tensor& t : tensors) device.push_back(t.cuda());
  ASSERT_EQ(device.back().strides(), tensors.back().strides());
  for (const Request& r : kRequests) {
    const auto cpu = fake_quantize_each_nearest(tensors, k, r.bits, r.scheme);
    const auto gpu = fake_quantize_each_nearest(device, k, r.bits, r.scheme);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(gpu[i].strides(), cpu[i].strides());
      expect_identical(cpu[i], gpu[i],
                       "tensor " + std::to_string(i) + ", bits " + std::to_string(r.bits));
    }
  }
}

// The kernels read the stream of each node from the key: shifting first_node by one node moves
// node i's draws to node i - 1.
TEST_F(QuantizerCuda, DrawsFollowTheGlobalNodeId) {
  const at::Tensor x = random_input({"linear", {3, 8, 33}}, 61).cuda();
  QuantizeRequest request = make_request({8, QuantScheme::kGemmlowp, Rounding::kStochastic});
  const NodeRange range = tensor_range(x, 3);
  const at::Tensor all = fake_quantize(x, 3, range, request);
  request.key.first_node += 1;
  const at::Tensor last_two =
      fake_quantize(x.slice(0, 1).contiguous(), 2,
                    NodeRange{range.min.slice(0, 1), range.max.slice(0, 1)}, request);
  expect_identical(all.slice(0, 1), last_two, "nodes 1 and 2");
}

}  // namespace
}  // namespace lpdt::quant
