#pragma once
// CIFAR-10 / CIFAR-100 "binary version" readers (https://www.cs.toronto.edu/~kriz/cifar.html).
//   CIFAR-10:  data_batch_1..5.bin (train), test_batch.bin; record = 1 label byte + 3072 pixels
//   CIFAR-100: train.bin, test.bin; record = coarse label byte + fine label byte + 3072 pixels
// Pixels are 1024 red, 1024 green, 1024 blue bytes, each a row-major 32x32 plane: [C, H, W].
#include <array>
#include <string>

#include "lpdt/data/dataset.h"

namespace lpdt::data {

inline constexpr int64_t kCifarChannels = 3;
inline constexpr int64_t kCifarSide = 32;
inline constexpr int64_t kCifarPixelBytes = kCifarChannels * kCifarSide * kCifarSide;  // 3072

// Normalisation of the reference trainers (lpdl-reference-spec.md 8.1), in [0, 1] pixel units.
inline constexpr std::array<double, 3> kCifar10Mean = {0.4914, 0.4822, 0.4465};
inline constexpr std::array<double, 3> kCifar10Std = {0.2023, 0.1994, 0.2010};
inline constexpr std::array<double, 3> kCifar100Mean = {0.5071, 0.4867, 0.4408};
inline constexpr std::array<double, 3> kCifar100Std = {0.2675, 0.2565, 0.2761};

// `dir` is the folder holding the .bin files; the archives' own sub-folders
// (cifar-10-batches-bin/, cifar-100-binary/) are also looked into. Files may be gzip'd.
// A missing file, a size that is not a whole number of records, or a label out of range is a
// UserError naming the file.
Dataset load_cifar10(const std::string& dir, Split split);
// Uses the fine labels (100 classes); the coarse byte is checked (< 20) and dropped.
Dataset load_cifar100(const std::string& dir, Split split);

}  // namespace lpdt::data
