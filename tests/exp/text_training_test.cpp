// The NLP pipeline end to end: AG News CSV files, a WordPiece vocab.txt and a tiny random
// DistilBERT in safetensors, all written by the test, trained by Choco-SGD with Adam on 4 nodes
// at fp32 and at 8 bits. The classes are told apart by topic words, so a working pipeline learns
// them well above chance (25%).
#include <gtest/gtest.h>
#include <torch/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lpdt/core/rng.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/trainer.h"
#include "lpdt/models/model.h"
#include "lpdt/models/safetensors.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

const std::vector<std::vector<std::string>> kTopicWords = {
    {"election", "minister", "war", "treaty", "parliament"},
    {"match", "goal", "league", "coach", "season"},
    {"market", "shares", "profit", "bank", "merger"},
    {"software", "chip", "internet", "science", "space"}};
const std::vector<std::string> kFillerWords = {"the", "a", "of", "on", "new", "report",
                                               "says", "week", "after", "group"};

// "class","title","description" rows: topic words of the class mixed with filler words.
void write_ag_news_csv(const fs::path& path, int rows_per_class, std::uint64_t seed) {
  Rng rng = Rng::stream(seed, 0, StreamPurpose::kSynthetic);
  std::ofstream out(path);
  for (int r = 0; r < rows_per_class; ++r) {
    for (int c = 0; c < 4; ++c) {
      std::string title, description;
      for (int w = 0; w < 4; ++w) {
        const bool topic = rng.uniform() < 0.5;
        const auto& words = topic ? kTopicWords[c] : kFillerWords;
        title += (w ? " " : "") + words[rng.below(words.size())];
      }
      for (int w = 0; w < 8; ++w) {
        const bool topic = rng.uniform() < 0.3;
        const auto& words = topic ? kTopicWords[c] : kFillerWords;
        description += (w ? " " : "") + words[rng.below(words.size())];
      }
      out << '"' << c + 1 << "\",\"" << title << "\",\"" << description << ", \"\"quoted\"\".\"\n";
    }
  }
}

std::vector<std::string> write_vocab(const fs::path& path) {
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "\""};
  for (const auto& topic : kTopicWords) vocab.insert(vocab.end(), topic.begin(), topic.end());
  vocab.insert(vocab.end(), kFillerWords.begin(), kFillerWords.end());
  vocab.push_back("quoted");
  std::ofstream out(path);
  for (const auto& token : vocab) out << token << "\n";
  return vocab;
}

// A DistilBertForMaskedLM-style file: the encoder under "distilbert.", no classification head.
void write_tiny_distilbert(const fs::path& path, std::int64_t vocab_size) {
  models::ModelOptions options;
  options.arch = "transformer";
  options.num_classes = 4;
  options.transformer.vocab_size = vocab_size;
  options.transformer.max_positions = 24;
  options.transformer.hidden = 16;
  options.transformer.layers = 1;
  options.transformer.heads = 2;
  options.transformer.ffn_hidden = 32;
  const auto model = models::make_model(options);
  const at::Tensor params = model->init_params(77);
  std::map<std::string, at::Tensor> tensors;
  for (const LayerSegment& s : model->layout().segments) {
    if (s.name.rfind("classifier", 0) == 0 || s.name.rfind("pre_classifier", 0) == 0) continue;
    tensors["distilbert." + s.name] = params.narrow(0, s.offset, s.numel).view(s.shape).clone();
  }
  models::write_safetensors(path.string(), tensors, {{"format", "pt"}});
}

TEST(TextTraining, AgNewsWithAPretrainedTinyDistilBertLearnsAtBothPrecisions) {
  const fs::path dir =
      fs::temp_directory_path() / ("lpdt_text_training_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ag_news_csv");
  write_ag_news_csv(dir / "ag_news_csv" / "train.csv", 128, 1);
  write_ag_news_csv(dir / "ag_news_csv" / "test.csv", 25, 2);
  const auto vocab = write_vocab(dir / "vocab.txt");
  write_tiny_distilbert(dir / "model.safetensors", static_cast<std::int64_t>(vocab.size()));
  for (const char* precision : {"fp32", "int8"}) {
    SCOPED_TRACE(precision);
    const ExperimentConfig config = load_experiment_config(
        std::nullopt,
        {"run.out_dir=\"" + (dir / "runs").string() + "\"", "run.name=\"agnews\"",
         "run.epochs=10", "run.log_every=0", "data.dataset=\"ag-news\"",
         "data.dir=\"" + dir.string() + "\"", "data.vocab=\"" + (dir / "vocab.txt").string() + "\"",
         "data.max_length=24", "data.batch_size=16", "data.skew=0.5", "model.arch=\"transformer\"",
         "model.transformer_hidden=16", "model.transformer_layers=1", "model.transformer_heads=2",
         "model.transformer_ffn=32", "model.dropout=0",
         "model.pretrained=\"" + (dir / "model.safetensors").string() + "\"",
         std::string("model.precision=\"") + precision + "\"", "graph.nodes=4",
         "algo.name=\"choco\"", "optim.optimizer=\"adam\"", "optim.lr=0.01",
         "optim.weight_decay=1e-4", "optim.schedule=\"constant\"", "optim.warmup=\"none\""});
    std::vector<std::string> lines;
    const TrainResult result = train(config, [&](const std::string& l) { lines.push_back(l); });
    bool reported = false;
    for (const auto& line : lines) reported = reported || line.find("pretrained weights") != std::string::npos;
    EXPECT_TRUE(reported);
    EXPECT_GT(result.final_evaluation.average_model_accuracy, 70.0);
    std::ifstream in(result.run_dir / "summary.json");
    const nlohmann::json summary = nlohmann::json::parse(in);
    EXPECT_EQ(summary["config"]["data"]["dataset"], "ag-news");
    EXPECT_EQ(summary["config"]["model"]["pretrained"], (dir / "model.safetensors").string());
    EXPECT_EQ(summary["warnings"].dump().find("[UNK]"), std::string::npos) << summary["warnings"];
    // A resume continues from the checkpoint: the weights file, moved away, is not needed.
    fs::rename(dir / "model.safetensors", dir / "moved.safetensors");
    ExperimentConfig longer = config;
    longer.run.epochs = 11;
    lines.clear();
    TrainOptions resume;
    resume.resume_dir = result.run_dir;
    EXPECT_NO_THROW(train(longer, [&](const std::string& l) { lines.push_back(l); }, resume));
    bool continued = false;
    for (const auto& line : lines) {
      continued = continued || line.find("the file is not read again") != std::string::npos;
    }
    EXPECT_TRUE(continued);
    fs::rename(dir / "moved.safetensors", dir / "model.safetensors");
  }
  fs::remove_all(dir);
}

// A vocab.txt that cannot spell the text (here: the special tokens and punctuation only) turns
// most words into [UNK]: the run says so when it starts and records it in summary.json.
TEST(TextTraining, AVocabularyThatCannotSpellTheTextIsAWarning) {
  const fs::path dir =
      fs::temp_directory_path() / ("lpdt_text_unknown_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ag_news_csv");
  write_ag_news_csv(dir / "ag_news_csv" / "train.csv", 16, 1);
  write_ag_news_csv(dir / "ag_news_csv" / "test.csv", 4, 2);
  std::ofstream(dir / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n,\n.\n\"\n";
  const ExperimentConfig config = load_experiment_config(
      std::nullopt,
      {"run.out_dir=\"" + (dir / "runs").string() + "\"", "run.epochs=1", "run.log_every=0",
       "data.dataset=\"ag-news\"", "data.dir=\"" + dir.string() + "\"",
       "data.vocab=\"" + (dir / "vocab.txt").string() + "\"", "data.max_length=24",
       "data.batch_size=8", "model.arch=\"transformer\"", "model.transformer_hidden=16",
       "model.transformer_layers=1", "model.transformer_heads=2", "model.transformer_ffn=32",
       "graph.nodes=2"});
  std::vector<std::string> lines;
  const TrainResult result = train(config, [&](const std::string& l) { lines.push_back(l); });
  bool said = false;
  for (const auto& line : lines) {
    said = said || (line.find("warning:") != std::string::npos &&
                    line.find("words are [UNK]") != std::string::npos);
  }
  EXPECT_TRUE(said);
  std::ifstream in(result.run_dir / "summary.json");
  const nlohmann::json warnings = nlohmann::json::parse(in)["warnings"];
  ASSERT_EQ(warnings.size(), 1u) << warnings;
  EXPECT_NE(warnings[0].get<std::string>().find("data.vocab"), std::string::npos) << warnings;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lpdt::exp
