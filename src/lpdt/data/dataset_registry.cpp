#include "lpdt/data/dataset_registry.h"

#include "lpdt/core/error.h"
#include "lpdt/data/cifar_reader.h"
#include "lpdt/data/idx_reader.h"

namespace lpdt::data {

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"fashion-mnist", "mnist", "cifar10", "cifar100",
                                                 "synthetic"};
  return names;
}

Dataset load_dataset(const std::string& name, const std::string& dir, Split split,
                     const SyntheticOptions& synthetic) {
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
  if (dir.empty()) throw ConfigError(name + ": a data directory is required");
  if (name == "mnist") return load_mnist(dir, split);
  if (name == "cifar10") return load_cifar10(dir, split);
  return load_cifar100(dir, split);
}

}  // namespace lpdt::data
