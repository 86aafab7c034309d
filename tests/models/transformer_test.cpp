// The transformer classifier (models/transformer.h): the node-batched model against k separate
// models, against a plain single-node implementation of DistilBERT's equations, against finite
// differences, padding invariance, and its 8-bit integer backend against the simulated one.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <map>

#include "../nn/finite_difference.h"
#include "lpdt/core/error.h"
#include "lpdt/models/model.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::models {
namespace {

constexpr std::int64_t kVocab = 23, kPad = 0, kClasses = 3;

ModelOptions tiny_options(const std::string& precision = "fp32") {
  ModelOptions options;
  options.arch = "transformer";
  options.num_classes = kClasses;
  options.transformer.vocab_size = kVocab;
  options.transformer.pad_id = kPad;
  options.transformer.max_positions = 16;
  options.transformer.hidden = 8;
  options.transformer.layers = 2;
  options.transformer.heads = 2;
  options.transformer.ffn_hidden = 12;
  options.transformer.dropout = 0.0;
  options.transformer.attention_dropout = 0.0;
  options.quant.precision = quant::parse_precision(precision);
  return options;
}

// [k, b, L] token ids: position 0 = 1 ([CLS]-like), random words, then padding of random length
// (at least one real token after [CLS]).
at::Tensor random_tokens(std::int64_t k, std::int64_t b, std::int64_t length) {
  at::Tensor tokens = torch::randint(1, kVocab, {k, b, length}, torch::kLong);
  tokens.select(2, 0).fill_(1);
  const at::Tensor real = torch::randint(2, length + 1, {k, b, 1}, torch::kLong);
  const at::Tensor positions = torch::arange(length, torch::kLong).view({1, 1, length});
  return tokens.masked_fill(positions.ge(real), kPad);
}

struct Precision {
  std::string name;
  double tolerance;
};

class TransformerBatchedVsSeparate : public ::testing::TestWithParam<Precision> {};

TEST_P(TransformerBatchedVsSeparate, OutputsGradientsAndRangesMatch) {
  const auto model = make_model(tiny_options(GetParam().name));
  const std::int64_t k = 3, b = 4, length = 7;
  const quant::DrawKey draws{5, 9, 0};
  torch::manual_seed(11);
  const at::Tensor base = model->init_params(3);
  const at::Tensor params0 = base.unsqueeze(0).repeat({k, 1}) + 0.05 * torch::randn({k, base.numel()});
  const at::Tensor tokens = random_tokens(k, b, length);
  const at::Tensor y = torch::randint(0, kClasses, {k, b}, torch::kLong);

  at::Tensor params = params0.clone().requires_grad_(true);
  std::vector<at::Tensor> buffers = model->init_buffers(k);
  nn::Context ctx{&model->layout(), params, &buffers, k, /*training=*/true};
  ctx.draws = draws;
  const at::Tensor logits = model->forward(ctx, tokens);
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{k, b, kClasses}));
  node_batched_loss(logits, y).backward();
  const double tol = GetParam().tolerance;
  for (std::int64_t i = 0; i < k; ++i) {
    at::Tensor p = params0.narrow(0, i, 1).clone().requires_grad_(true);
    std::vector<at::Tensor> node_buffers = model->init_buffers(1);
    nn::Context node_ctx{&model->layout(), p, &node_buffers, 1, true};
    node_ctx.draws = draws;
    node_ctx.draws.first_node = i;
    const at::Tensor node_logits = model->forward(node_ctx, tokens.narrow(0, i, 1));
    node_batched_loss(node_logits, y.narrow(0, i, 1)).backward();
    EXPECT_TRUE(torch::allclose(node_logits[0], logits[i], tol, tol)) << "node " << i;
    EXPECT_TRUE(torch::allclose(p.grad()[0], params.grad()[i], tol, tol))
        << "node " << i << " gradients differ by "
        << (p.grad()[0] - params.grad()[i]).abs().max().item<double>();
    for (std::size_t j = 0; j < buffers.size(); ++j) {
      EXPECT_TRUE(torch::allclose(node_buffers[j][0], buffers[j][i], 1e-5, 1e-6))
          << "node " << i << " buffer " << j;
    }
  }
  if (GetParam().name == "int8") {
    EXPECT_FALSE(buffers.empty());  // the running ranges
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, TransformerBatchedVsSeparate,
                         ::testing::Values(Precision{"fp32", 1e-5}, Precision{"int8", 1e-4}),
                         [](const auto& info) { return info.param.name; });

// One node's DistilBERT forward written out from the equations (Vaswani et al. 2017; Hugging Face's
// modeling_distilbert.py), head by head, with parameters looked up by their Hugging Face names.
at::Tensor reference_forward(const Model& model, const at::Tensor& flat, const at::Tensor& tokens,
                             const TransformerOptions& t) {
  std::map<std::string, at::Tensor> p;
  for (const LayerSegment& s : model.layout().segments) {
    p[s.name] = flat.narrow(0, s.offset, s.numel).view(s.shape);
  }
  const auto linear = [&](const std::string& name, const at::Tensor& x) {
    return at::matmul(x, p.at(name + ".weight").t()) + p.at(name + ".bias");
  };
  const auto layer_norm = [&](const std::string& name, const at::Tensor& x) {
    const at::Tensor mean = x.mean(-1, true);
    const at::Tensor var = (x - mean).pow(2).mean(-1, true);
    return (x - mean) / at::sqrt(var + 1e-12) * p.at(name + ".weight") + p.at(name + ".bias");
  };
  const std::int64_t b = tokens.size(0), length = tokens.size(1), dh = t.hidden / t.heads;
  at::Tensor h = p.at("embeddings.word_embeddings.weight").index_select(0, tokens.flatten())
                     .view({b, length, t.hidden}) +
                 p.at("embeddings.position_embeddings.weight").narrow(0, 0, length);
  h = layer_norm("embeddings.LayerNorm", h);
  for (std::int64_t l = 0; l < t.layers; ++l) {
    const std::string prefix = "transformer.layer." + std::to_string(l);
    const at::Tensor q = linear(prefix + ".attention.q_lin", h);
    const at::Tensor kk = linear(prefix + ".attention.k_lin", h);
    const at::Tensor v = linear(prefix + ".attention.v_lin", h);
    std::vector<at::Tensor> heads;
    for (std::int64_t head = 0; head < t.heads; ++head) {
      const at::Tensor qh = q.narrow(2, head * dh, dh), kh = kk.narrow(2, head * dh, dh),
                       vh = v.narrow(2, head * dh, dh);
      at::Tensor scores = at::matmul(qh, kh.transpose(1, 2)) / std::sqrt(double(dh));  // [b, L, L]
      scores = scores.masked_fill(tokens.eq(t.pad_id).unsqueeze(1), -1e30);
      heads.push_back(at::matmul(at::softmax(scores, -1), vh));
    }
    const at::Tensor attended = linear(prefix + ".attention.out_lin", at::cat(heads, 2));
    h = layer_norm(prefix + ".sa_layer_norm", attended + h);
    const at::Tensor ffn = linear(prefix + ".ffn.lin2", at::gelu(linear(prefix + ".ffn.lin1", h)));
    h = layer_norm(prefix + ".output_layer_norm", ffn + h);
  }
  const at::Tensor pooled = at::relu(linear("pre_classifier", h.select(1, 0)));
  return linear("classifier", pooled);  // [b, classes]
}

TEST(Transformer, MatchesAPlainImplementationOfDistilBert) {
  const ModelOptions options = tiny_options();
  const auto model = make_model(options);
  torch::manual_seed(2);
  const at::Tensor params = model->init_params(5).to(at::kDouble) +
                            0.1 * torch::randn({model->num_params()}, at::kDouble);
  const at::Tensor tokens = random_tokens(1, 5, 9);
  std::vector<at::Tensor> buffers = model->init_buffers(1);
  nn::Context ctx{&model->layout(), params.unsqueeze(0), &buffers, 1, /*training=*/false};
  const at::Tensor logits = model->forward(ctx, tokens)[0];
  const at::Tensor expected = reference_forward(*model, params, tokens[0], options.transformer);
  EXPECT_TRUE(torch::allclose(logits, expected, 1e-10, 1e-10))
      << (logits - expected).abs().max().item<double>();
}

TEST(Transformer, PaddingDoesNotChangeTheLogits) {
  const auto model = make_model(tiny_options());
  torch::manual_seed(4);
  // Weights far from the N(0, 0.02) start, so that one token visibly moves the logits.
  const at::Tensor params =
      (model->init_params(5) + 0.5 * torch::randn({model->num_params()})).unsqueeze(0);
  const at::Tensor tokens = random_tokens(1, 3, 6);
  const at::Tensor padded = at::cat({tokens, at::full({1, 3, 5}, kPad, torch::kLong)}, 2);
  std::vector<at::Tensor> buffers = model->init_buffers(1);
  nn::Context ctx{&model->layout(), params, &buffers, 1, /*training=*/false};
  EXPECT_TRUE(torch::allclose(model->forward(ctx, tokens), model->forward(ctx, padded), 1e-5, 1e-5));
  // ... while a real token in place of padding does.
  at::Tensor changed = tokens.clone();
  changed.select(2, 5).fill_(7);
  EXPECT_FALSE(torch::allclose(model->forward(ctx, tokens), model->forward(ctx, changed), 1e-5, 1e-5));
}

TEST(Transformer, GradientsMatchFiniteDifferences) {
  ModelOptions options = tiny_options();
  options.transformer.layers = 1;
  options.transformer.hidden = 4;
  options.transformer.ffn_hidden = 6;
  options.transformer.vocab_size = 7;
  options.transformer.max_positions = 4;
  const auto model = make_model(options);
  torch::manual_seed(8);
  const at::Tensor params0 = model->init_params(1).to(at::kDouble).unsqueeze(0) +
                             0.3 * torch::randn({1, model->num_params()}, at::kDouble);
  at::Tensor tokens = torch::randint(1, 7, {1, 2, 4}, torch::kLong);
  tokens[0][1][3] = kPad;
  nn::testing::check_param_gradient(params0, [&](const at::Tensor& params) {
    std::vector<at::Tensor> buffers = model->init_buffers(1);
    nn::Context ctx{&model->layout(), params, &buffers, 1, /*training=*/true};
    return model->forward(ctx, tokens);
  });
}

TEST(Transformer, IntegerBackendAgreesWithSimulated) {
  if (!quant::have_int8_gemm()) GTEST_SKIP() << "built without oneDNN: no integer backend";
  ModelOptions options = tiny_options("int8");
  options.transformer.hidden = 16;
  options.transformer.ffn_hidden = 32;
  ModelOptions integer_options = options;
  integer_options.quant.backend = quant::QuantBackend::kInteger;
  const auto simulated = make_model(options);
  const auto integer = make_model(integer_options);
  const std::int64_t k = 2, b = 4;
  torch::manual_seed(6);
  const at::Tensor params0 = simulated->init_params(7).unsqueeze(0).repeat({k, 1}) +
                             0.02 * torch::randn({k, simulated->num_params()});
  const at::Tensor tokens = random_tokens(k, b, 8);
  const at::Tensor y = torch::randint(0, kClasses, {k, b}, torch::kLong);
  std::vector<at::Tensor> logits, grads;
  for (const Model* model : {simulated.get(), integer.get()}) {
    at::Tensor params = params0.clone().requires_grad_(true);
    std::vector<at::Tensor> buffers = model->init_buffers(k);
    nn::Context ctx{&model->layout(), params, &buffers, k, true};
    ctx.draws = quant::DrawKey{11, 2, 0};
    logits.push_back(model->forward(ctx, tokens));
    node_batched_loss(logits.back(), y).backward();
    grads.push_back(params.grad());
  }
  const auto relative = [](const at::Tensor& a, const at::Tensor& b) {
    return ((a - b).norm() / b.norm()).item<double>();
  };
  EXPECT_LT(relative(logits[1].detach(), logits[0].detach()), 1e-3);
  EXPECT_LT(relative(grads[1], grads[0]), 1e-2);
}

TEST(Transformer, DistilBertBaseHasTheHuggingFaceParameterCount) {
  ModelOptions options;
  options.arch = "distilbert";
  options.num_classes = 4;
  options.transformer = TransformerOptions::distilbert_base();
  // DistilBertModel: 66,362,880 parameters; the classification head adds 768*768 + 768 +
  // 768*4 + 4 (Hugging Face's DistilBertForSequenceClassification on AG News: 66,956,548).
  EXPECT_EQ(make_model(options)->num_params(), 66362880 + 768 * 768 + 768 + 768 * 4 + 4);
}

TEST(Transformer, RejectsImagesAndTooLongSequences) {
  const auto model = make_model(tiny_options());
  const at::Tensor params = model->init_params(1).unsqueeze(0);
  std::vector<at::Tensor> buffers = model->init_buffers(1);
  nn::Context ctx{&model->layout(), params, &buffers, 1, false};
  EXPECT_THROW(model->forward(ctx, torch::zeros({1, 2, 3, 8, 8})), UserError);
  EXPECT_THROW(model->forward(ctx, torch::ones({1, 2, 17}, torch::kLong)), ConfigError);
  ModelOptions bad = tiny_options();
  bad.transformer.heads = 3;
  EXPECT_THROW(make_model(bad), ConfigError);
}

}  // namespace
}  // namespace lpdt::models
