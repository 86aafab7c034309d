#pragma once
// Datasets by name, for the experiment layer and the CLI.
#include <string>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/synthetic.h"
#include "lpdt/data/synthetic_text.h"
#include "lpdt/data/text_dataset.h"

namespace lpdt::data {

// The names load_dataset accepts: fashion-mnist, mnist, cifar10, cifar100, synthetic, imagenette.
const std::vector<std::string>& dataset_names();

// Loads `name` from `dir` (empty dir: the default, kFashionMnistDir, for fashion-mnist; required
// for the others). "synthetic" ignores dir and uses `synthetic` with its split set to `split`.
// "imagenette" is an image folder (image_folder_reader.h) stored at image_size x image_size
// (0: kImagenetteDefaultSize); the other datasets ignore image_size.
// ConfigError for an unknown name; the readers' UserErrors for bad files.
Dataset load_dataset(const std::string& name, const std::string& dir, Split split,
                     const SyntheticOptions& synthetic = {}, int64_t image_size = 0);

// The names load_text_dataset accepts: ag-news, sentlen, synthetic-text.
const std::vector<std::string>& text_dataset_names();

// Loads the text dataset `name` from `dir`, tokenized with the WordPiece vocab.txt at
// `vocab_path` into [CLS] ... [SEP] rows of max_length tokens (docs/data.md, "Text datasets").
// ag-news and sentlen need both dir and vocab_path. "synthetic-text" ignores dir and uses
// `synthetic` with its split set to `split`; an empty vocab_path gives it its own vocabulary.
// ConfigError for an unknown name or a missing dir / vocab_path; UserErrors for bad files.
// to_dataset() (text_dataset.h) turns the result into a Dataset.
TextDataset load_text_dataset(const std::string& name, const std::string& dir,
                              const std::string& vocab_path, Split split, int64_t max_length,
                              const SyntheticTextOptions& synthetic = {});

}  // namespace lpdt::data
