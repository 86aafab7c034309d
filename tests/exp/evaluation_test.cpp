// Evaluation on workers (exp/evaluation.h): every node's accuracy, and the averaged model's, equal
// those of the passes in turn, for models with and without buffers, fp32 and 8-bit, whatever the
// worker count and however the test batches divide among the workers.
#include "lpdt/exp/evaluation.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <set>
#include <string>

#include "lpdt/models/model.h"

namespace lpdt::exp {
namespace {

struct EvaluationCase {
  const char* name;
  const char* arch;
  const char* norm;
  std::int64_t depth;
  std::int64_t size;
  const char* precision;
  quant::Rounding eval_rounding;
};
void PrintTo(const EvaluationCase& c, std::ostream* os) { *os << c.name; }

class WorkersCase : public ::testing::TestWithParam<EvaluationCase> {};

models::ModelOptions options_of(const EvaluationCase& c) {
  models::ModelOptions options;
  options.arch = c.arch;
  options.norm = c.norm;
  options.depth = c.depth;
  options.in_channels = 1;
  options.height = options.width = c.size;
  options.quant.precision = quant::parse_precision(c.precision);
  options.quant.eval_rounding = c.eval_rounding;
  return options;
}

// Restores LibTorch's intra-op thread count when it goes.
struct IntraOpThreads {
  explicit IntraOpThreads(int n) : previous(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(previous); }
  int previous;
};

TEST_P(WorkersCase, WorkersGiveTheAccuraciesOfPassesInTurn) {
  const EvaluationCase c = GetParam();
  const auto model = models::make_model(options_of(c));
  const std::int64_t k = 5, samples = 230, batch = 40;  // 6 batches, the last of 30
  torch::manual_seed(11);
  // Nodes apart from each other, so that a node's count put in another's place would show.
  const at::Tensor base = model->init_params(3);
  const at::Tensor params =
      base.unsqueeze(0).repeat({k, 1}) + 0.3 * torch::randn({k, base.numel()});
  std::vector<at::Tensor> buffers = model->init_buffers(k);
  for (auto& b : buffers) b.add_(0.1 * torch::rand_like(b));  // running statistics apart too

  data::Dataset test;
  test.name = "random";
  test.images = torch::randint(0, 256, {samples, 1, c.size, c.size}, torch::kUInt8);
  test.labels = torch::zeros({samples}, torch::kLong);
  test.num_classes = 10;
  test.mean = {0.5};
  test.std = {0.25};
  // The labels node 2 predicts: node 2 then scores 100%, the others what they share with it.
  {
    const data::EvalBatches all(test, samples);
    const data::EvalBatch whole = all.batch(0);
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> node_buffers;
    for (const auto& b : buffers) node_buffers.push_back(b.narrow(0, 2, 1).clone());
    nn::Context ctx{&model->layout(),   params.narrow(0, 2, 1),     &node_buffers, 1,
                    /*training=*/false, nn::ConvAlgorithm::kPerNode};
    test.labels = model->forward(ctx, whole.inputs.unsqueeze(0)).argmax(2).squeeze(0).contiguous();
  }
  const data::EvalBatches batches(test, batch);

  std::vector<double> in_turn;
  Evaluation in_turn_all;
  {
    const IntraOpThreads one(1);
    in_turn = node_accuracies(*model, params, buffers, batches, /*workers=*/1);
    in_turn_all = evaluate(*model, params, buffers, batches, /*per_node=*/true, /*workers=*/1);
  }
  ASSERT_EQ(in_turn.size(), static_cast<std::size_t>(k));
  EXPECT_DOUBLE_EQ(in_turn[2], 100.0);
  EXPECT_GE(std::set<double>(in_turn.begin(), in_turn.end()).size(), 2u)
      << "the nodes must score differently for the test to see a mix-up";

  for (const int workers : {2, 3, 4, 8}) {
    const std::vector<double> on_workers =
        node_accuracies(*model, params, buffers, batches, workers);
    EXPECT_EQ(on_workers, in_turn) << workers << " workers";
    const Evaluation all = evaluate(*model, params, buffers, batches, true, workers);
    EXPECT_EQ(all.node_accuracy, in_turn_all.node_accuracy) << workers << " workers";
    EXPECT_EQ(all.average_model_accuracy, in_turn_all.average_model_accuracy) << workers;
  }
  // The buffers (BatchNorm's running statistics) are the caller's, untouched.
  std::vector<at::Tensor> before;
  for (const auto& b : buffers) before.push_back(b.clone());
  node_accuracies(*model, params, buffers, batches, 2);
  for (std::size_t i = 0; i < buffers.size(); ++i) EXPECT_TRUE(torch::equal(buffers[i], before[i]));
}

// quant.eval_rounding = stochastic (the official code's evaluation): each evaluation draws
// afresh, and each node draws as its global id wherever it is evaluated (row i of a block that
// starts at node f draws as node f + i), so that a rank evaluating its own nodes measures what
// the simulator measures for them.
TEST(StochasticEvaluation, DrawsPerEvaluationAndPerGlobalNode) {
  const EvaluationCase c{"resnet8_int8_stochastic_eval", "resnet", "evonorm", 8, 16, "int8",
                         quant::Rounding::kStochastic};
  const auto model = models::make_model(options_of(c));
  const std::int64_t k = 4, samples = 120, batch = 40;
  torch::manual_seed(5);
  const at::Tensor base = model->init_params(3);
  const at::Tensor params =
      base.unsqueeze(0).repeat({k, 1}) + 0.3 * torch::randn({k, base.numel()});
  std::vector<at::Tensor> buffers = model->init_buffers(k);
  data::Dataset test;
  test.name = "random";
  test.images = torch::randint(0, 256, {samples, 1, c.size, c.size}, torch::kUInt8);
  test.labels = torch::randint(0, 10, {samples}, torch::kLong);
  test.num_classes = 10;
  test.mean = {0.5};
  test.std = {0.25};
  const data::EvalBatches batches(test, batch);
  const IntraOpThreads one(1);
  {
    // The running activation ranges evaluation quantizes with, from a training pass (they start
    // at [0, 0], which rounds everything to one code whatever the draws).
    torch::NoGradGuard no_grad;
    const data::EvalBatch first = batches.batch(0);
    nn::Context ctx{&model->layout(), params, &buffers, k, /*training=*/true,
                    nn::ConvAlgorithm::kPerNode};
    const std::vector<std::int64_t> shape = {k, first.inputs.size(0), 1, c.size, c.size};
    model->forward(ctx, first.inputs.unsqueeze(0).expand(shape));
  }

  const auto all = node_accuracies(*model, params, buffers, batches, 1, eval_draws(9, 1, 0));
  // Nodes 2 and 3 evaluated as a block of their own, as a rank hosting them does.
  std::vector<at::Tensor> block_buffers;
  for (const auto& b : buffers) block_buffers.push_back(b.narrow(0, 2, 2));
  const auto block = node_accuracies(*model, params.narrow(0, 2, 2), block_buffers, batches, 1,
                                     eval_draws(9, 1, 2));
  EXPECT_EQ(block[0], all[2]);
  EXPECT_EQ(block[1], all[3]);
  // The same evaluation again draws the same; the next evaluation draws afresh.
  EXPECT_EQ(node_accuracies(*model, params, buffers, batches, 1, eval_draws(9, 1, 0)), all);
  bool any_differs = false;
  for (std::int64_t evaluation = 2; evaluation < 6 && !any_differs; ++evaluation) {
    any_differs =
        node_accuracies(*model, params, buffers, batches, 1, eval_draws(9, evaluation, 0)) != all;
  }
  EXPECT_TRUE(any_differs) << "four later evaluations drew what the first drew";
}

INSTANTIATE_TEST_SUITE_P(
    Evaluation, WorkersCase,
    ::testing::Values(EvaluationCase{"lenet5", "lenet5", "none", 0, 28, "fp32",
                                     quant::Rounding::kNearest},
                      EvaluationCase{"resnet8_batchnorm", "resnet", "batchnorm", 8, 16, "fp32",
                                     quant::Rounding::kNearest},
                      EvaluationCase{"resnet8_int8", "resnet", "evonorm", 8, 16, "int8",
                                     quant::Rounding::kNearest},
                      EvaluationCase{"resnet8_int8_stochastic_eval", "resnet", "evonorm", 8, 16,
                                     "int8", quant::Rounding::kStochastic}),
    [](const ::testing::TestParamInfo<EvaluationCase>& info) { return info.param.name; });

}  // namespace
}  // namespace lpdt::exp
