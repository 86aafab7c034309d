#include "lpdt/data/idx_reader.h"

#include <torch/types.h>

#include <cstring>
#include <filesystem>

#include "lpdt/core/error.h"
#include "lpdt/data/file_bytes.h"

namespace lpdt::data {
namespace {

// Larger than any real IDX file: rejects a corrupt header before its product can overflow.
constexpr std::uint64_t kMaxIdxDim = std::uint64_t{1} << 31;

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& why) {
  throw UserError(what + ": " + path + ": " + why);
}

std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Validates the magic and the header, returns the dims; `bytes` holds at least the header's
// bytes (or the whole file when it is shorter).
std::vector<std::uint64_t> parse_header(const std::vector<std::uint8_t>& bytes,
                                        std::uint32_t expected_magic, int num_dims,
                                        const std::string& kind, const std::string& path,
                                        const std::string& what) {
  const std::size_t header_bytes = 4 + 4 * static_cast<std::size_t>(num_dims);
  if (bytes.size() < 4) {
    fail(what, path,
         "truncated: " + std::to_string(bytes.size()) +
             " bytes, too short for the 4-byte IDX magic number");
  }
  const std::uint32_t magic = read_be32(bytes.data());
  if (magic != expected_magic) {
    fail(what, path,
         "bad magic number " + hex32(magic) + ", expected " + hex32(expected_magic) + " (IDX " +
             kind + " file)");
  }
  if (bytes.size() < header_bytes) {
    fail(what, path,
         "truncated: " + std::to_string(bytes.size()) + " bytes, the " + kind + " header needs " +
             std::to_string(header_bytes));
  }
  std::vector<std::uint64_t> dims(num_dims);
  for (int i = 0; i < num_dims; ++i) {
    dims[i] = read_be32(bytes.data() + 4 + 4 * i);
    if (i == 0 && dims[i] == 0) fail(what, path, "header says 0 " + kind + ": the file is empty");
    if (dims[i] >= kMaxIdxDim) {
      fail(what, path,
           "header dimension " + std::to_string(i) + " is " + std::to_string(dims[i]) +
               ", not a plausible size");
    }
  }
  return dims;
}

void check_payload(std::size_t have, std::uint64_t want, const std::string& description,
                   const std::string& path, const std::string& what) {
  if (have < want) {
    fail(what, path,
         "truncated: header says " + description + " (" + std::to_string(want) +
             " bytes) but only " + std::to_string(have) + " bytes follow");
  }
  if (have > want) {
    fail(what, path,
         "header says " + description + " (" + std::to_string(want) + " bytes) but " +
             std::to_string(have - want) + " extra bytes follow");
  }
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string locate(const std::string& dir, const std::string& name, const std::string& what) {
  // data.dir naming a file (one of the IDX files, say) rather than their folder.
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec)) {
    throw UserError(what + ": " + dir + ": is a file, expected the folder that holds " + name +
                    " (data.dir)");
  }
  // (A folder that exists but cannot be searched is named when its file is opened.)
  if (std::filesystem::status(dir, ec).type() == std::filesystem::file_type::not_found) {
    throw UserError(what + ": " + dir + ": no such folder (data.dir), expected the folder that " +
                    "holds " + name + (what == "fashion-mnist"
                                           ? std::string(" (Debian's dataset-fashion-mnist "
                                                         "installs them in ") +
                                                 kFashionMnistDir + ")"
                                           : std::string()));
  }
  const std::string found = find_plain_or_gz(join_path(dir, name));
  if (found.empty()) {
    std::string hint;
    if (what == "fashion-mnist") {
      hint = std::string(" (Debian's dataset-fashion-mnist installs them in ") + kFashionMnistDir +
             ")";
    }
    throw UserError(what + ": " + dir + ": neither " + name + " nor " + name + ".gz found" + hint);
  }
  return found;
}

Dataset load_idx_dataset(const std::string& name, const std::string& dir, Split split, double mean,
                         double std) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string image_path = locate(dir, prefix + "-images-idx3-ubyte", name);
  const std::string label_path = locate(dir, prefix + "-labels-idx1-ubyte", name);
  Dataset d;
  d.name = name;
  d.images = read_idx_images(image_path, name);
  d.labels = read_idx_labels(label_path, name, 10);
  if (d.images.size(0) != d.labels.size(0)) {
    throw UserError(name + ": " + image_path + " holds " + std::to_string(d.images.size(0)) +
                    " images but " + label_path + " holds " + std::to_string(d.labels.size(0)) +
                    " labels");
  }
  d.num_classes = 10;
  d.mean = {mean};
  d.std = {std};
  check_dataset(d);
  return d;
}

}  // namespace

torch::Tensor read_idx_images(const std::string& path, const std::string& what) {
  // The header first, so that a gzip file is inflated no further than its header says.
  const auto dims =
      parse_header(read_file_head(path, what, 16), kIdxImagesMagic, 3, "images", path, what);
  const std::uint64_t n = dims[0], h = dims[1], w = dims[2];
  if (h == 0 || w == 0) {
    fail(what, path, "header says images of " + std::to_string(h) + "x" + std::to_string(w));
  }
  // Each dim < 2^31 and h*w <= 2^31, so n*h*w < 2^62 cannot overflow.
  if (h * w > kMaxIdxDim) fail(what, path, "header says implausibly large images");
  const std::uint64_t payload = n * h * w;
  const std::string description =
      std::to_string(n) + " images of " + std::to_string(h) + "x" + std::to_string(w);
  const std::vector<std::uint8_t> bytes = read_file_bytes(
      path, what, 16 + payload, "more than its header says (" + description + " and 16 bytes)");
  check_payload(bytes.size() - 16, payload, description, path, what);
  auto images =
      torch::empty({static_cast<int64_t>(n), 1, static_cast<int64_t>(h), static_cast<int64_t>(w)},
                   torch::kUInt8);
  if (payload > 0) std::memcpy(images.data_ptr<std::uint8_t>(), bytes.data() + 16, payload);
  return images;
}

torch::Tensor read_idx_labels(const std::string& path, const std::string& what,
                              int64_t num_classes) {
  const auto dims =
      parse_header(read_file_head(path, what, 8), kIdxLabelsMagic, 1, "labels", path, what);
  const std::uint64_t n = dims[0];
  const std::vector<std::uint8_t> bytes = read_file_bytes(
      path, what, 8 + n, "more than its header says (" + std::to_string(n) + " labels and 8 bytes)");
  check_payload(bytes.size() - 8, n, std::to_string(n) + " labels", path, what);
  auto labels = torch::empty({static_cast<int64_t>(n)}, torch::kInt64);
  auto* out = labels.data_ptr<int64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint8_t label = bytes[8 + i];
    if (label >= num_classes) {
      fail(what, path,
           "label " + std::to_string(label) + " at index " + std::to_string(i) +
               " is out of range [0, " + std::to_string(num_classes) + ")");
    }
    out[i] = label;
  }
  return labels;
}

Dataset load_fashion_mnist(const std::string& dir, Split split) {
  return load_idx_dataset("fashion-mnist", dir, split, kFashionMnistMean, kFashionMnistStd);
}

Dataset load_mnist(const std::string& dir, Split split) {
  return load_idx_dataset("mnist", dir, split, kMnistMean, kMnistStd);
}

}  // namespace lpdt::data
