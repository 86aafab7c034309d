// Pretrained DistilBERT weights from safetensors (models/pretrained.h): a tiny random DistilBERT
// that the test writes under Hugging Face's names loads into the node-batched model exactly.
#include "lpdt/models/pretrained.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <filesystem>
#include <limits>

#include "lpdt/core/error.h"
#include "lpdt/models/model.h"
#include "lpdt/models/safetensors.h"
#include "tiny_distilbert.h"

namespace lpdt::models {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::tiny_distilbert;

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / ("lpdt_pretrained_" + name + "_" +
                                       std::to_string(::getpid()) + ".safetensors"))
      .string();
}

// A masked-LM checkpoint as Hugging Face writes it: the encoder under "distilbert.", the masked-LM
// head's tensors, no classification head. Half of it in bfloat16, as half-precision uploads are.
std::map<std::string, at::Tensor> masked_lm_checkpoint(const Model& model) {
  std::map<std::string, at::Tensor> tensors;
  torch::manual_seed(1);
  bool half = false;
  for (const LayerSegment& s : model.layout().segments) {
    if (s.name.rfind("pre_classifier", 0) == 0 || s.name.rfind("classifier", 0) == 0) continue;
    at::Tensor t = torch::randn(s.shape);
    tensors["distilbert." + s.name] = half ? t.to(at::kBFloat16) : t;
    half = !half;
  }
  tensors["vocab_projector.weight"] = torch::randn({30, 8});
  tensors["vocab_layer_norm.weight"] = torch::ones({8});
  return tensors;
}

TEST(Pretrained, LoadsEveryEncoderTensorByNameAndKeepsAFreshHead) {
  const auto model = make_model(tiny_distilbert());
  const auto tensors = masked_lm_checkpoint(*model);
  const std::string path = temp_file("ok");
  write_safetensors(path, tensors);
  const at::Tensor fresh = model->init_params(3);
  at::Tensor params = fresh.clone();
  const PretrainedReport report = load_pretrained(*model, path, params);
  for (const LayerSegment& s : model->layout().segments) {
    const at::Tensor got = params.narrow(0, s.offset, s.numel).view(s.shape);
    const auto it = tensors.find("distilbert." + s.name);
    if (it == tensors.end()) {  // the head: untouched
      EXPECT_TRUE(torch::equal(got, fresh.narrow(0, s.offset, s.numel).view(s.shape))) << s.name;
    } else {
      EXPECT_TRUE(torch::equal(got, it->second.to(at::kFloat))) << s.name;
    }
  }
  EXPECT_EQ(report.fresh, (std::vector<std::string>{"pre_classifier.weight", "pre_classifier.bias",
                                                    "classifier.weight", "classifier.bias"}));
  EXPECT_EQ(report.unused,
            (std::vector<std::string>{"vocab_layer_norm.weight", "vocab_projector.weight"}));
  EXPECT_EQ(report.loaded.size() + report.fresh.size(), model->layout().segments.size());
  fs::remove(path);
}

TEST(Pretrained, AShapeMismatchNamesTheTensorAndBothShapes) {
  const auto model = make_model(tiny_distilbert());
  auto tensors = masked_lm_checkpoint(*model);
  tensors["distilbert.embeddings.word_embeddings.weight"] = torch::zeros({31, 8});
  const std::string path = temp_file("shape");
  write_safetensors(path, tensors);
  at::Tensor params = model->init_params(3);
  try {
    load_pretrained(*model, path, params);
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("distilbert.embeddings.word_embeddings.weight"), std::string::npos);
    EXPECT_NE(message.find("[31, 8]"), std::string::npos) << message;
    EXPECT_NE(message.find("[30, 8]"), std::string::npos) << message;
    EXPECT_NE(message.find("data.vocab"), std::string::npos) << message;
  }
  fs::remove(path);
}

// A file of another hidden or feed-forward size names the setting that describes it.
TEST(Pretrained, AShapeMismatchNamesTheSettingToChange) {
  const auto model = make_model(tiny_distilbert());
  const std::string path = temp_file("sizes");
  const auto message_for = [&](const std::map<std::string, at::Tensor>& tensors) {
    write_safetensors(path, tensors);
    at::Tensor params = model->init_params(3);
    try {
      load_pretrained(*model, path, params);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto wider = masked_lm_checkpoint(*model);
  wider["distilbert.embeddings.word_embeddings.weight"] = torch::zeros({30, 16});
  EXPECT_THAT(message_for(wider), HasSubstr("the file's hidden size is 16: set "
                                            "model.transformer_hidden = 16"));
  auto longer_ffn = masked_lm_checkpoint(*model);
  longer_ffn["distilbert.transformer.layer.0.ffn.lin1.weight"] = torch::zeros({32, 8});
  EXPECT_THAT(message_for(longer_ffn), HasSubstr("the file's feed-forward size is 32: set "
                                                 "model.transformer_ffn = 32"));
  auto other_ffn = masked_lm_checkpoint(*model);
  other_ffn["distilbert.transformer.layer.0.ffn.lin2.weight"] = torch::zeros({8, 24});
  EXPECT_THAT(message_for(other_ffn), HasSubstr("model.transformer_ffn = 24"));
  auto norm = masked_lm_checkpoint(*model);
  norm["distilbert.transformer.layer.1.sa_layer_norm.weight"] = torch::zeros({12});
  EXPECT_THAT(message_for(norm), HasSubstr("model.transformer_hidden = 12"));
  // The pre-classifier is [hidden, hidden]: a hidden-size mismatch, whichever dimension differs,
  // not a head for another number of classes.
  auto pre_classifier = masked_lm_checkpoint(*model);
  pre_classifier["pre_classifier.weight"] = torch::zeros({16, 8});
  EXPECT_THAT(message_for(pre_classifier),
              AllOf(HasSubstr("model.transformer_hidden = 16"),
                    Not(HasSubstr("another number of classes"))));
  fs::remove(path);
}

TEST(Pretrained, NonFiniteWeightsNameTheTensor) {
  const auto model = make_model(tiny_distilbert());
  auto tensors = masked_lm_checkpoint(*model);
  tensors["distilbert.transformer.layer.0.ffn.lin1.weight"][0][1] =
      std::numeric_limits<float>::quiet_NaN();
  const std::string path = temp_file("nan");
  write_safetensors(path, tensors);
  at::Tensor params = model->init_params(3);
  try {
    load_pretrained(*model, path, params);
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'distilbert.transformer.layer.0.ffn.lin1.weight' holds NaN"),
              std::string::npos)
        << message;
  }
  fs::remove(path);
}

TEST(Pretrained, AMissingEncoderTensorIsAnError) {
  const auto model = make_model(tiny_distilbert());
  auto tensors = masked_lm_checkpoint(*model);
  tensors.erase("distilbert.transformer.layer.1.ffn.lin2.weight");
  const std::string path = temp_file("missing");
  write_safetensors(path, tensors);
  at::Tensor params = model->init_params(3);
  try {
    load_pretrained(*model, path, params);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("transformer.layer.1.ffn.lin2.weight"), std::string::npos);
  }
  fs::remove(path);
}

// Files that would load into a different network than they hold are errors, not "unused"
// tensors: more encoder layers than the model has, one tensor under two names, half a head.
TEST(Pretrained, FilesThatDoNotFitTheModelWholeAreErrors) {
  const auto model = make_model(tiny_distilbert());
  const auto error_of = [&](const std::map<std::string, at::Tensor>& tensors) {
    const std::string path = temp_file("fit");
    write_safetensors(path, tensors);
    at::Tensor params = model->init_params(3);
    std::string message = "(no error)";
    try {
      load_pretrained(*model, path, params);
    } catch (const UserError& e) {
      message = e.what();
    }
    fs::remove(path);
    return message;
  };
  auto deeper = masked_lm_checkpoint(*model);
  deeper["distilbert.transformer.layer.2.ffn.lin1.weight"] = torch::randn({16, 8});
  EXPECT_NE(error_of(deeper).find("3 encoder layers"), std::string::npos) << error_of(deeper);
  EXPECT_NE(error_of(deeper).find("model.transformer_layers = 3"), std::string::npos);

  auto twice = masked_lm_checkpoint(*model);
  twice["embeddings.LayerNorm.bias"] = torch::zeros({8});
  const std::string twice_message = error_of(twice);
  EXPECT_NE(twice_message.find("'distilbert.embeddings.LayerNorm.bias'"), std::string::npos)
      << twice_message;
  EXPECT_NE(twice_message.find("both name"), std::string::npos) << twice_message;

  auto half_head = masked_lm_checkpoint(*model);
  for (const LayerSegment& s : model->layout().segments) {
    if (s.name.rfind("pre_classifier", 0) == 0) half_head[s.name] = torch::randn(s.shape);
  }
  const std::string head_message = error_of(half_head);
  EXPECT_NE(head_message.find("part of the classification head"), std::string::npos)
      << head_message;
  // The checkpoint as it is loads.
  EXPECT_EQ(error_of(masked_lm_checkpoint(*model)), "(no error)");
}

// Any model loads from a file under lpdt's own parameter names; a missing tensor's message names
// the model, not DistilBERT.
TEST(Pretrained, AnImageModelLoadsByItsOwnNames) {
  ModelOptions options;
  options.arch = "lenet5";
  options.num_classes = 10;
  options.in_channels = 1;
  const auto model = make_model(options);
  const at::Tensor saved = model->init_params(7);
  std::map<std::string, at::Tensor> tensors;
  for (const LayerSegment& s : model->layout().segments) {
    tensors[s.name] = saved.narrow(0, s.offset, s.numel).view(s.shape).clone();
  }
  const std::string path = temp_file("lenet");
  write_safetensors(path, tensors);
  at::Tensor params = model->init_params(8);
  ASSERT_FALSE(torch::equal(params, saved));
  const PretrainedReport report = load_pretrained(*model, path, params);
  EXPECT_TRUE(torch::equal(params, saved));
  EXPECT_EQ(report.loaded.size(), model->layout().segments.size());
  tensors.erase(model->layout().segments.front().name);
  write_safetensors(path, tensors);
  try {
    load_pretrained(*model, path, params);
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'" + model->layout().segments.front().name + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find("lenet5"), std::string::npos) << message;
    EXPECT_EQ(message.find("DistilBERT"), std::string::npos) << message;
  }
  fs::remove(path);
}

}  // namespace
}  // namespace lpdt::models
