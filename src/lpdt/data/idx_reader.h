#pragma once
// MNIST / Fashion-MNIST readers: the IDX format of LeCun et al.
// (http://yann.lecun.com/exdb/mnist/, "FILE FORMATS FOR THE MNIST DATABASE"), plain or gzip.
//   images: magic 0x00000803 (uint8, 3 dims), then N, H, W as big-endian uint32, then N*H*W bytes
//   labels: magic 0x00000801 (uint8, 1 dim), then N as big-endian uint32, then N bytes
#include <torch/types.h>

#include <string>

#include "lpdt/data/dataset.h"

namespace lpdt::data {

// Debian's dataset-fashion-mnist package installs the four gzip'd IDX files here.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;

// Normalisation constants in [0, 1] pixel units (training-set statistics).
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;
inline constexpr double kMnistMean = 0.1307;
inline constexpr double kMnistStd = 0.3081;

// Reads an IDX image file (plain or .gz): [N, 1, H, W] uint8. Every inconsistency (bad magic,
// zero dimensions, truncation, trailing bytes) is a UserError naming `what` and the file.
torch::Tensor read_idx_images(const std::string& path, const std::string& what);

// Reads an IDX label file (plain or .gz): [N] int64, every label checked < num_classes.
torch::Tensor read_idx_labels(const std::string& path, const std::string& what,
                              int64_t num_classes = 10);

// Loads `<dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]` (the plain file wins when
// both exist), checks that image and label counts agree. 10 classes, 1 channel.
Dataset load_fashion_mnist(const std::string& dir, Split split);
Dataset load_mnist(const std::string& dir, Split split);

}  // namespace lpdt::data
