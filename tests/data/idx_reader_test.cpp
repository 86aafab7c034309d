// IDX (MNIST / Fashion-MNIST) reader on small files the test writes, plain and gzip, and every
// corruption path.
#include "lpdt/data/idx_reader.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstring>
#include <filesystem>

#include "lpdt/core/error.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::append_be32;
using testing::expect_error;
using testing::TempDir;

std::vector<std::uint8_t> idx_images(std::uint32_t n, std::uint32_t h, std::uint32_t w,
                                     std::uint32_t magic = kIdxImagesMagic) {
  std::vector<std::uint8_t> b;
  append_be32(b, magic);
  append_be32(b, n);
  append_be32(b, h);
  append_be32(b, w);
  for (std::uint32_t i = 0; i < n * h * w; ++i) b.push_back(static_cast<std::uint8_t>(i * 7 + 3));
  return b;
}

std::vector<std::uint8_t> idx_labels(std::uint32_t n, std::uint32_t magic = kIdxLabelsMagic) {
  std::vector<std::uint8_t> b;
  append_be32(b, magic);
  append_be32(b, n);
  for (std::uint32_t i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

// Writes a 5-sample 4x3 split under `dir`; gz selects the compressed file names.
void write_split(const TempDir& dir, const std::string& prefix, bool gz, std::uint32_t n = 5) {
  const std::string images = dir.file(prefix + "-images-idx3-ubyte");
  const std::string labels = dir.file(prefix + "-labels-idx1-ubyte");
  if (gz) {
    testing::write_gzip(images + ".gz", idx_images(n, 4, 3));
    testing::write_gzip(labels + ".gz", idx_labels(n));
  } else {
    testing::write_bytes(images, idx_images(n, 4, 3));
    testing::write_bytes(labels, idx_labels(n));
  }
}

void expect_small_dataset(const Dataset& d, int64_t n) {
  ASSERT_EQ(d.images.sizes(), (std::vector<int64_t>{n, 1, 4, 3}));
  EXPECT_EQ(d.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(d.labels.scalar_type(), torch::kInt64);
  EXPECT_EQ(d.num_classes, 10);
  const auto* px = d.images.data_ptr<std::uint8_t>();
  for (int64_t i = 0; i < n * 12; ++i) ASSERT_EQ(px[i], static_cast<std::uint8_t>(i * 7 + 3));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(d.labels[i].item<int64_t>(), i % 10);
  // Row-major: pixel (sample 1, row 2, col 1) is byte 12 + 2 * 3 + 1.
  EXPECT_EQ(d.images[1][0][2][1].item<int>(), static_cast<std::uint8_t>(19 * 7 + 3));
}

TEST(IdxReader, ReadsPlainFiles) {
  TempDir dir;
  write_split(dir, "train", false);
  write_split(dir, "t10k", false, 3);
  const Dataset train = load_fashion_mnist(dir.path(), Split::kTrain);
  expect_small_dataset(train, 5);
  EXPECT_EQ(train.name, "fashion-mnist");
  EXPECT_DOUBLE_EQ(train.mean[0], 0.2860);
  EXPECT_DOUBLE_EQ(train.std[0], 0.3530);
  expect_small_dataset(load_fashion_mnist(dir.path(), Split::kTest), 3);
  const Dataset mnist = load_mnist(dir.path(), Split::kTrain);
  EXPECT_DOUBLE_EQ(mnist.mean[0], 0.1307);
  EXPECT_DOUBLE_EQ(mnist.std[0], 0.3081);
}

TEST(IdxReader, ReadsGzipFiles) {
  TempDir dir;
  write_split(dir, "train", true);
  expect_small_dataset(load_fashion_mnist(dir.path(), Split::kTrain), 5);
}

TEST(IdxReader, DetectsGzipByMagicNotByName) {
  TempDir dir;
  // A gzip stream under the plain name, and a plain file under the .gz name.
  testing::write_gzip(dir.file("train-images-idx3-ubyte"), idx_images(5, 4, 3));
  testing::write_bytes(dir.file("train-labels-idx1-ubyte.gz"), idx_labels(5));
  expect_small_dataset(load_fashion_mnist(dir.path(), Split::kTrain), 5);
}

TEST(IdxReader, MissingFilesNameTheFolder) {
  TempDir dir;
  expect_error<UserError>(
      [&] { load_fashion_mnist(dir.path(), Split::kTrain); },
      {"fashion-mnist", dir.path(), "train-images-idx3-ubyte", "dataset-fashion-mnist"});
  expect_error<UserError>([&] { read_idx_labels(dir.file("nope"), "mnist"); },
                          {"mnist", dir.file("nope"), "no such file"});
  expect_error<UserError>([&] { read_idx_labels(dir.path(), "mnist"); }, {"is a directory"});
  // The folder given as one of its files.
  write_split(dir, "train", false);
  const std::string file = dir.file("train-images-idx3-ubyte");
  expect_error<UserError>([&] { load_mnist(file, Split::kTrain); },
                          {"mnist", file, "is a file, expected the folder that holds"});
}

// A folder that cannot be searched is not "not found": the system's reason is given. (A link loop
// here, since permission bits do not bind the root user that CI may run as.)
TEST(IdxReader, AFolderThatCannotBeOpenedGivesTheReason) {
  TempDir dir;
  const std::string loop = dir.file("loop");
  std::filesystem::create_directory_symlink(loop, loop);
  try {
    load_fashion_mnist(loop, Split::kTrain);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(loop + "/train-images-idx3-ubyte: cannot open: "), std::string::npos)
        << text;
    EXPECT_EQ(text.find("found"), std::string::npos) << text;
  }
}

// A data.dir that does not exist is said to be missing itself, not to lack the file.
TEST(IdxReader, AMissingFolderIsNamedAsSuch) {
  TempDir dir;
  const std::string nowhere = dir.file("nowhere");
  expect_error<UserError>([&] { load_fashion_mnist(nowhere, Split::kTrain); },
                          {"fashion-mnist", nowhere, "no such folder (data.dir)",
                           "train-images-idx3-ubyte"});
}

TEST(IdxReader, BadMagic) {
  TempDir dir;
  const auto path = dir.file("x");
  testing::write_bytes(path, idx_images(2, 2, 2, 0x00000801));
  expect_error<UserError>(
      [&] { read_idx_images(path, "fashion-mnist"); },
      {"fashion-mnist", path, "bad magic number 0x00000801", "expected 0x00000803"});
  testing::write_bytes(path, idx_labels(2, 0x00000803));
  expect_error<UserError>([&] { read_idx_labels(path, "mnist"); },
                          {path, "bad magic number 0x00000803", "expected 0x00000801"});
}

TEST(IdxReader, Truncated) {
  TempDir dir;
  const auto path = dir.file("train-images-idx3-ubyte");
  // A header for 60000 28x28 images followed by only 1000 bytes.
  std::vector<std::uint8_t> header;
  append_be32(header, kIdxImagesMagic);
  append_be32(header, 60000);
  append_be32(header, 28);
  append_be32(header, 28);
  header.resize(header.size() + 1000, 0);
  testing::write_bytes(path, header);
  expect_error<UserError>([&] { read_idx_images(path, "fashion-mnist"); },
                          {"fashion-mnist: " + path +
                           ": truncated: header says 60000 images of "
                           "28x28 (47040000 bytes) but only 1000 bytes "
                           "follow"});
  // Cut inside the header, and inside the magic.
  testing::write_bytes(path, std::vector<std::uint8_t>(header.begin(), header.begin() + 10));
  expect_error<UserError>([&] { read_idx_images(path, "x"); }, {path, "truncated", "header"});
  testing::write_bytes(path, {0, 0});
  expect_error<UserError>([&] { read_idx_images(path, "x"); }, {path, "truncated"});
  testing::write_bytes(path, {});
  expect_error<UserError>([&] { read_idx_images(path, "x"); }, {path, "truncated"});
  // Labels: 10 announced, 4 present.
  auto labels = idx_labels(10);
  labels.resize(8 + 4);
  testing::write_bytes(path, labels);
  expect_error<UserError>([&] { read_idx_labels(path, "x"); },
                          {path, "truncated: header says 10 labels (10 bytes) but only 4 bytes"});
}

TEST(IdxReader, TrailingBytes) {
  TempDir dir;
  const auto path = dir.file("l");
  auto labels = idx_labels(3);
  labels.push_back(1);
  testing::write_bytes(path, labels);
  expect_error<UserError>([&] { read_idx_labels(path, "x"); }, {path, "1 extra bytes"});
}

// An empty split would surface later as "no samples to partition", far from the file.
TEST(IdxReader, EmptyFilesNameTheFile) {
  TempDir dir;
  const auto images = dir.file("i");
  testing::write_bytes(images, idx_images(0, 28, 28));
  expect_error<UserError>([&] { read_idx_images(images, "mnist"); },
                          {images, "header says 0 images: the file is empty"});
  const auto labels = dir.file("l");
  testing::write_bytes(labels, idx_labels(0));
  expect_error<UserError>([&] { read_idx_labels(labels, "mnist"); },
                          {labels, "header says 0 labels: the file is empty"});
}

TEST(IdxReader, TruncatedGzipStream) {
  TempDir dir;
  const auto path = dir.file("train-images-idx3-ubyte.gz");
  testing::write_gzip(path, idx_images(50, 10, 10));
  auto bytes = testing::read_bytes(path);
  bytes.resize(bytes.size() / 2);
  testing::write_bytes(path, bytes);
  // Either zlib reports the cut stream, or the IDX payload comes up short: both name the file.
  expect_error<UserError>([&] { read_idx_images(path, "fashion-mnist"); }, {"fashion-mnist", path});
}

TEST(IdxReader, CorruptGzipStreamNamesTheFileOnce) {
  TempDir dir;
  const auto path = dir.file("train-images-idx3-ubyte");
  // The gzip magic and method, then bytes that are no deflate stream.
  std::vector<std::uint8_t> bytes = {0x1f, 0x8b, 0x08, 0x00};
  for (int i = 0; i < 40; ++i) bytes.push_back(static_cast<std::uint8_t>("garbage"[i % 7]));
  testing::write_bytes(path, bytes);
  try {
    read_idx_images(path, "mnist");
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("mnist: " + path + ": corrupt gzip stream: ", 0), 0u) << message;
    // zlib's own text repeats the path; the message names it once.
    EXPECT_EQ(message.find(path, message.find(path) + 1), std::string::npos) << message;
  }
}

// A gzip file that inflates far beyond what its header says (a few kilobytes of zeros can be
// gigabytes) is refused once the output passes the header's size, not after inflating it all.
TEST(IdxReader, GzipStreamLongerThanItsHeaderIsStoppedAtTheHeadersSize) {
  TempDir dir;
  const auto path = dir.file("train-images-idx3-ubyte.gz");
  std::vector<std::uint8_t> bytes = idx_images(5, 4, 3);
  bytes.resize(bytes.size() + (std::size_t{64} << 20), 0);  // 64 MiB of zeros: about 64 KiB gzip
  testing::write_gzip(path, bytes);
  expect_error<UserError>([&] { read_idx_images(path, "fashion-mnist"); },
                          {path, "decompresses to more than 76 bytes",
                           "more than its header says (5 images of 4x3 and 16 bytes)"});
  const auto labels = dir.file("train-labels-idx1-ubyte.gz");
  std::vector<std::uint8_t> label_bytes = idx_labels(5);
  label_bytes.push_back(1);
  testing::write_gzip(labels, label_bytes);
  expect_error<UserError>([&] { read_idx_labels(labels, "fashion-mnist", 10); },
                          {labels, "decompresses to more than 13 bytes", "5 labels and 8 bytes"});
}

// Bytes after the gzip stream that start no gzip member are an error, as extra bytes of a plain
// file are (zlib's gzread would ignore them); members concatenated as gzip(1) writes them with
// `cat a.gz b.gz` are one file.
TEST(IdxReader, GzipTrailingGarbageIsAnErrorAndConcatenatedMembersAreOneFile) {
  TempDir dir;
  const auto path = dir.file("train-images-idx3-ubyte.gz");
  testing::write_gzip(path, idx_images(5, 4, 3));
  auto bytes = testing::read_bytes(path);
  for (const char c : std::string("garbage")) bytes.push_back(static_cast<std::uint8_t>(c));
  testing::write_bytes(path, bytes);
  expect_error<UserError>([&] { read_idx_images(path, "mnist"); },
                          {path, "7 bytes follow the end of the gzip stream and are not gzip data"});

  const std::vector<std::uint8_t> whole = idx_images(5, 4, 3);
  const std::vector<std::uint8_t> first(whole.begin(), whole.begin() + 30);
  const std::vector<std::uint8_t> second(whole.begin() + 30, whole.end());
  const auto a = dir.file("a.gz"), b = dir.file("b.gz");
  testing::write_gzip(a, first);
  testing::write_gzip(b, second);
  std::vector<std::uint8_t> joined = testing::read_bytes(a);
  const auto tail = testing::read_bytes(b);
  joined.insert(joined.end(), tail.begin(), tail.end());
  testing::write_bytes(path, joined);
  const torch::Tensor images = read_idx_images(path, "mnist");
  ASSERT_EQ(images.sizes(), (std::vector<std::int64_t>{5, 1, 4, 3}));
  EXPECT_EQ(std::memcmp(images.data_ptr<std::uint8_t>(), whole.data() + 16, 60), 0);
}

TEST(IdxReader, ImplausibleHeader) {
  TempDir dir;
  const auto path = dir.file("i");
  std::vector<std::uint8_t> b;
  append_be32(b, kIdxImagesMagic);
  append_be32(b, 0xffffffffu);
  append_be32(b, 28);
  append_be32(b, 28);
  testing::write_bytes(path, b);
  expect_error<UserError>([&] { read_idx_images(path, "x"); }, {path, "not a plausible size"});
  b = {};
  append_be32(b, kIdxImagesMagic);
  append_be32(b, 1);
  append_be32(b, 0);
  append_be32(b, 28);
  testing::write_bytes(path, b);
  expect_error<UserError>([&] { read_idx_images(path, "x"); }, {path, "0x28"});
}

TEST(IdxReader, LabelOutOfRange) {
  TempDir dir;
  write_split(dir, "train", false);
  auto labels = idx_labels(5);
  labels[8 + 3] = 10;
  const auto path = dir.file("train-labels-idx1-ubyte");
  testing::write_bytes(path, labels);
  expect_error<UserError>([&] { load_fashion_mnist(dir.path(), Split::kTrain); },
                          {"fashion-mnist", path, "label 10 at index 3", "[0, 10)"});
}

TEST(IdxReader, CountMismatch) {
  TempDir dir;
  write_split(dir, "train", false);
  testing::write_bytes(dir.file("train-labels-idx1-ubyte"), idx_labels(4));
  expect_error<UserError>([&] { load_mnist(dir.path(), Split::kTrain); },
                          {"mnist", "5 images", "4 labels", "train-labels-idx1-ubyte"});
}

TEST(IdxReader, RealFashionMnistTestSplit) {
  const std::string file = std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not found";
  const Dataset d = load_fashion_mnist(kFashionMnistDir, Split::kTest);
  EXPECT_EQ(d.images.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_EQ(class_counts(d.labels, 10).min().item<int64_t>(), 1000);
  // The documented mean is the training set's; the test set is close to it.
  const double mean = d.images.to(torch::kFloat64).mean().item<double>() / 255.0;
  EXPECT_NEAR(mean, kFashionMnistMean, 0.01);
}

}  // namespace
}  // namespace lpdt::data
