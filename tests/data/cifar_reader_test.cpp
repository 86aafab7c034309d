// CIFAR-10 / CIFAR-100 binary readers on small generated files, plus corruption.
#include "lpdt/data/cifar_reader.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <filesystem>

#include "lpdt/core/error.h"
#include "lpdt/data/file_bytes.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::expect_error;
using testing::TempDir;

// Record r of a file: label bytes, then pixel i = (seed + r * 31 + i) mod 251.
std::vector<std::uint8_t> records(int n, const std::vector<std::vector<std::uint8_t>>& labels,
                                  int seed) {
  std::vector<std::uint8_t> b;
  for (int r = 0; r < n; ++r) {
    b.insert(b.end(), labels[r].begin(), labels[r].end());
    for (int i = 0; i < kCifarPixelBytes; ++i) {
      b.push_back(static_cast<std::uint8_t>((seed + r * 31 + i) % 251));
    }
  }
  return b;
}

void write_cifar10(const std::string& dir, int per_file, bool gz_last = false) {
  std::filesystem::create_directories(dir);
  for (int f = 1; f <= 6; ++f) {
    std::vector<std::vector<std::uint8_t>> labels;
    for (int r = 0; r < per_file; ++r) labels.push_back({static_cast<std::uint8_t>((f + r) % 10)});
    const std::string name = f <= 5 ? "data_batch_" + std::to_string(f) + ".bin" : "test_batch.bin";
    const auto bytes = records(per_file, labels, f);
    if (gz_last && f == 5) {
      testing::write_gzip(dir + "/" + name + ".gz", bytes);
    } else {
      testing::write_bytes(dir + "/" + name, bytes);
    }
  }
}

TEST(CifarReader, Cifar10TrainConcatenatesFiveBatches) {
  TempDir dir;
  write_cifar10(dir.path(), 3, /*gz_last=*/true);
  const Dataset d = load_cifar10(dir.path(), Split::kTrain);
  EXPECT_EQ(d.name, "cifar10");
  ASSERT_EQ(d.images.sizes(), (std::vector<int64_t>{15, 3, 32, 32}));
  EXPECT_EQ(d.num_classes, 10);
  for (int f = 1; f <= 5; ++f) {
    for (int r = 0; r < 3; ++r) {
      const int64_t i = (f - 1) * 3 + r;
      EXPECT_EQ(d.labels[i].item<int64_t>(), (f + r) % 10);
      // Channel planes: green channel, row 1, col 2 is pixel byte 1024 + 32 + 2.
      EXPECT_EQ(d.images[i][1][1][2].item<int>(), (f + r * 31 + 1024 + 34) % 251);
    }
  }
  EXPECT_EQ(d.mean, (std::vector<double>{0.4914, 0.4822, 0.4465}));
  EXPECT_EQ(d.std, (std::vector<double>{0.2023, 0.1994, 0.2010}));
  const Dataset t = load_cifar10(dir.path(), Split::kTest);
  EXPECT_EQ(t.size(), 3);
}

TEST(CifarReader, Cifar10FindsTheArchiveSubfolder) {
  TempDir dir;
  write_cifar10(dir.file("cifar-10-batches-bin"), 2);
  EXPECT_EQ(load_cifar10(dir.path(), Split::kTrain).size(), 10);
}

TEST(CifarReader, Cifar100UsesFineLabels) {
  TempDir dir;
  std::vector<std::vector<std::uint8_t>> labels = {{3, 99}, {19, 0}, {0, 42}};
  testing::write_bytes(dir.file("train.bin"), records(3, labels, 5));
  testing::write_bytes(dir.file("test.bin"), records(1, {{1, 7}}, 6));
  const Dataset d = load_cifar100(dir.path(), Split::kTrain);
  EXPECT_EQ(d.num_classes, 100);
  EXPECT_EQ(d.labels.sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(d.labels[0].item<int64_t>(), 99);
  EXPECT_EQ(d.labels[1].item<int64_t>(), 0);
  EXPECT_EQ(d.labels[2].item<int64_t>(), 42);
  EXPECT_EQ(d.images[2][0][0][0].item<int>(), (5 + 62) % 251);
  EXPECT_EQ(d.mean, (std::vector<double>{0.5071, 0.4867, 0.4408}));
  EXPECT_EQ(load_cifar100(dir.path(), Split::kTest).labels[0].item<int64_t>(), 7);
}

TEST(CifarReader, MissingFile) {
  TempDir dir;
  write_cifar10(dir.path(), 1);
  std::filesystem::remove(dir.file("data_batch_3.bin"));
  expect_error<UserError>([&] { load_cifar10(dir.path(), Split::kTrain); },
                          {"cifar10", dir.file("data_batch_3.bin"), "no such file"});
  expect_error<UserError>([&] { load_cifar100(dir.path(), Split::kTrain); },
                          {"cifar100", "train.bin", "no such file"});
}

TEST(CifarReader, SizeNotAMultipleOfTheRecord) {
  TempDir dir;
  write_cifar10(dir.path(), 2);
  auto bytes = testing::read_bytes(dir.file("test_batch.bin"));
  bytes.pop_back();
  testing::write_bytes(dir.file("test_batch.bin"), bytes);
  expect_error<UserError>([&] { load_cifar10(dir.path(), Split::kTest); },
                          {"cifar10", dir.file("test_batch.bin"), "size 6145 bytes",
                           "not a multiple of the 3073-byte record"});
  testing::write_bytes(dir.file("test.bin"), records(2, {{1, 2}, {1, 2}}, 0));
  bytes = testing::read_bytes(dir.file("test.bin"));
  bytes.resize(3074 + 100);
  testing::write_bytes(dir.file("test.bin"), bytes);
  expect_error<UserError>([&] { load_cifar100(dir.path(), Split::kTest); },
                          {"cifar100", dir.file("test.bin"), "3074-byte record"});
  testing::write_bytes(dir.file("test.bin"), {});
  expect_error<UserError>([&] { load_cifar100(dir.path(), Split::kTest); },
                          {dir.file("test.bin"), "empty"});
}

// A file larger than half the machine's memory cannot load (its bytes and the tensor filled from
// them are held at once): refused before a byte is read, where before the read was attempted and
// the kernel's out-of-memory killer could end the process without a word. The file is sparse: it
// takes no disk space.
TEST(CifarReader, FileLargerThanTheMachineCanLoadIsRefusedBeforeReading) {
  TempDir dir;
  write_cifar10(dir.path(), 1);
  const std::uint64_t loadable = loadable_file_bytes();
  ASSERT_GT(loadable, 0u);
  std::filesystem::resize_file(dir.file("test_batch.bin"), loadable + 3073);
  expect_error<UserError>([&] { load_cifar10(dir.path(), Split::kTest); },
                          {"cifar10", dir.file("test_batch.bin"),
                           "holds " + std::to_string(loadable + 3073) + " bytes",
                           "half of this machine's memory", "a corrupt or wrong file?"});
}

TEST(CifarReader, LabelOutOfRange) {
  TempDir dir;
  write_cifar10(dir.path(), 2);
  testing::write_bytes(dir.file("test_batch.bin"), records(2, {{3}, {10}}, 0));
  expect_error<UserError>([&] { load_cifar10(dir.path(), Split::kTest); },
                          {dir.file("test_batch.bin"), "label 10 of record 1", "[0, 10)"});
  testing::write_bytes(dir.file("test.bin"), records(1, {{2, 100}}, 0));
  expect_error<UserError>([&] { load_cifar100(dir.path(), Split::kTest); },
                          {dir.file("test.bin"), "label 100 of record 0", "[0, 100)"});
  testing::write_bytes(dir.file("test.bin"), records(1, {{20, 1}}, 0));
  expect_error<UserError>([&] { load_cifar100(dir.path(), Split::kTest); },
                          {dir.file("test.bin"), "coarse label 20"});
}

}  // namespace
}  // namespace lpdt::data
