#include "lpdt/data/cifar_reader.h"

#include <torch/types.h>

#include <cstring>
#include <filesystem>

#include "lpdt/core/error.h"
#include "lpdt/data/file_bytes.h"

namespace lpdt::data {
namespace {

constexpr int64_t kCifar100CoarseClasses = 20;

struct RecordLayout {
  int64_t label_bytes;     // bytes before the pixels
  int64_t label_offset;    // which of them is the label we keep
  int64_t num_classes;     // range of that label
  int64_t coarse_classes;  // range of the other label byte (CIFAR-100), 0 if none
};

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// The folder that holds `probe`: `dir` itself or the archive's sub-folder inside it.
std::string resolve_dir(const std::string& dir, const std::string& subdir,
                        const std::string& probe) {
  if (!find_plain_or_gz(join_path(dir, probe)).empty()) return dir;
  const std::string nested = join_path(dir, subdir);
  if (!find_plain_or_gz(join_path(nested, probe)).empty()) return nested;
  return dir;
}

// Appends the records of one file to `images` / `labels`.
void read_records(const std::string& path, const std::string& what, const RecordLayout& layout,
                  std::vector<torch::Tensor>& images, std::vector<torch::Tensor>& labels) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path, what);
  const int64_t record = layout.label_bytes + kCifarPixelBytes;
  const auto size = static_cast<int64_t>(bytes.size());
  if (size == 0) throw UserError(what + ": " + path + ": empty file, expected records");
  if (size % record != 0) {
    throw UserError(what + ": " + path + ": size " + std::to_string(size) +
                    " bytes is not a multiple of the " + std::to_string(record) + "-byte record (" +
                    std::to_string(layout.label_bytes) + " label byte(s) + " +
                    std::to_string(kCifarPixelBytes) + " pixels)");
  }
  const int64_t n = size / record;
  auto image = torch::empty({n, kCifarChannels, kCifarSide, kCifarSide}, torch::kUInt8);
  auto label = torch::empty({n}, torch::kInt64);
  auto* image_out = image.data_ptr<std::uint8_t>();
  auto* label_out = label.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const std::uint8_t* rec = bytes.data() + i * record;
    const int64_t value = rec[layout.label_offset];
    if (value >= layout.num_classes) {
      throw UserError(what + ": " + path + ": label " + std::to_string(value) + " of record " +
                      std::to_string(i) + " is out of range [0, " +
                      std::to_string(layout.num_classes) + ")");
    }
    if (layout.coarse_classes > 0 && rec[0] >= layout.coarse_classes) {
      throw UserError(what + ": " + path + ": coarse label " + std::to_string(rec[0]) +
                      " of record " + std::to_string(i) + " is out of range [0, " +
                      std::to_string(layout.coarse_classes) + ")");
    }
    label_out[i] = value;
    std::memcpy(image_out + i * kCifarPixelBytes, rec + layout.label_bytes, kCifarPixelBytes);
  }
  images.push_back(std::move(image));
  labels.push_back(std::move(label));
}

Dataset load_cifar(const std::string& name, const std::string& dir,
                   const std::vector<std::string>& files, const std::string& subdir,
                   const RecordLayout& layout, const std::array<double, 3>& mean,
                   const std::array<double, 3>& std) {
  const std::string root = resolve_dir(dir, subdir, files.front());
  std::vector<torch::Tensor> images, labels;
  for (const auto& file : files) {
    const std::string wanted = join_path(root, file);
    const std::string path = find_plain_or_gz(wanted);
    if (path.empty()) {
      throw UserError(name + ": " + wanted + ": no such file (nor " + file +
                      ".gz): set data.dir to the folder of the binary version's .bin files "
                      "(docs/data.md, CIFAR binary, says where to get them)");
    }
    read_records(path, name, layout, images, labels);
  }
  Dataset d;
  d.name = name;
  d.images = images.size() == 1 ? images[0] : torch::cat(images);
  d.labels = labels.size() == 1 ? labels[0] : torch::cat(labels);
  d.num_classes = layout.num_classes;
  d.mean.assign(mean.begin(), mean.end());
  d.std.assign(std.begin(), std.end());
  check_dataset(d);
  return d;
}

}  // namespace

Dataset load_cifar10(const std::string& dir, Split split) {
  std::vector<std::string> files;
  if (split == Split::kTrain) {
    for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back("test_batch.bin");
  }
  return load_cifar("cifar10", dir, files, "cifar-10-batches-bin", RecordLayout{1, 0, 10, 0},
                    kCifar10Mean, kCifar10Std);
}

Dataset load_cifar100(const std::string& dir, Split split) {
  const std::vector<std::string> files = {split == Split::kTrain ? "train.bin" : "test.bin"};
  return load_cifar("cifar100", dir, files, "cifar-100-binary",
                    RecordLayout{2, 1, 100, kCifar100CoarseClasses}, kCifar100Mean, kCifar100Std);
}

}  // namespace lpdt::data
