#include "lpdt/data/dataset_registry.h"

#include "lpdt/core/error.h"
#include "lpdt/data/ag_news_reader.h"
#include "lpdt/data/cifar_reader.h"
#include "lpdt/data/idx_reader.h"
#include "lpdt/data/image_folder_reader.h"
#include "lpdt/data/sentlen_reader.h"

namespace lpdt::data {

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"fashion-mnist", "mnist", "cifar10", "cifar100",
                                                 "synthetic", "imagenette"};
  return names;
}

Dataset load_dataset(const std::string& name, const std::string& dir, Split split,
                     const SyntheticOptions& synthetic, int64_t image_size) {
  if (name == "synthetic") return make_synthetic(SyntheticOptions(synthetic).split(split));
  if (name == "fashion-mnist")
    return load_fashion_mnist(dir.empty() ? kFashionMnistDir : dir, split);
  bool known = false;
  for (const auto& n : dataset_names()) known = known || n == name;
  if (!known) {
    std::string list;
    for (const auto& n : dataset_names()) list += (list.empty() ? "" : ", ") + n;
    throw ConfigError("unknown dataset \"" + name + "\", expected one of: " + list);
  }
  if (dir.empty()) {
    throw ConfigError("data.dir is empty: data.dataset = \"" + name +
                      "\" reads its files from a folder; set data.dir to it (docs/data.md)");
  }
  if (name == "mnist") return load_mnist(dir, split);
  if (name == "cifar10") return load_cifar10(dir, split);
  if (name == "imagenette") return load_imagenette(dir, split, image_size);
  return load_cifar100(dir, split);
}

const std::vector<std::string>& text_dataset_names() {
  static const std::vector<std::string> names = {"ag-news", "sentlen", "synthetic-text"};
  return names;
}

TextDataset load_text_dataset(const std::string& name, const std::string& dir,
                              const std::string& vocab_path, Split split, int64_t max_length,
                              const SyntheticTextOptions& synthetic) {
  bool known = false;
  for (const auto& n : text_dataset_names()) known = known || n == name;
  if (!known) {
    std::string list;
    for (const auto& n : text_dataset_names()) list += (list.empty() ? "" : ", ") + n;
    throw ConfigError("unknown text dataset \"" + name + "\", expected one of: " + list);
  }
  if (name == "synthetic-text") {
    const SyntheticTextOptions options = SyntheticTextOptions(synthetic).split(split);
    if (vocab_path.empty()) return make_synthetic_text(options, max_length);
    const WordPieceTokenizer tokenizer = WordPieceTokenizer::from_file(vocab_path);
    return make_synthetic_text(options, max_length, &tokenizer);
  }
  if (dir.empty()) {
    throw ConfigError("data.dir is empty: data.dataset = \"" + name +
                      "\" reads its files from a folder; set data.dir to it (docs/data.md)");
  }
  if (vocab_path.empty()) {
    throw ConfigError("data.vocab is empty: data.dataset = \"" + name +
                      "\" needs a WordPiece vocab.txt (the pretrained model's; docs/data.md)");
  }
  const WordPieceTokenizer tokenizer = WordPieceTokenizer::from_file(vocab_path);
  if (name == "ag-news") return load_ag_news(dir, split, tokenizer, max_length);
  return load_sentlen(dir, split, tokenizer, max_length);
}

}  // namespace lpdt::data
