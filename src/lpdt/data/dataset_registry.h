#pragma once
// Datasets by name, for the experiment layer and the CLI.
#include <string>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/synthetic.h"

namespace lpdt::data {

// The names load_dataset accepts: fashion-mnist, mnist, cifar10, cifar100, synthetic.
const std::vector<std::string>& dataset_names();

// Loads `name` from `dir` (empty dir: the default, kFashionMnistDir, for fashion-mnist; required
// for the others). "synthetic" ignores dir and uses `synthetic` with its split set to `split`.
// ConfigError for an unknown name; the readers' UserErrors for bad files.
Dataset load_dataset(const std::string& name, const std::string& dir, Split split,
                     const SyntheticOptions& synthetic = {});

}  // namespace lpdt::data
