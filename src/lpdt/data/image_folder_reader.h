#pragma once
// Image-folder datasets in the class-per-folder layout of torchvision's ImageFolder, such as
// Imagenette (https://github.com/fastai/imagenette; imagenette2-160 or imagenette2):
//   <dir>/train/<class>/*.JPEG   (Split::kTrain)
//   <dir>/val/<class>/*.JPEG     (Split::kTest)
// Classes are the sorted sub-folder names (label = index in that order); inside a class the
// files are taken in sorted name order, so a dataset is the same on every machine. Files ending
// in .jpeg / .jpg (any case) are images; other files are ignored.
//
// Every image is decoded (jpeg_decoder.h), its shorter side resized to the storage size S with
// antialiased bilinear filtering (image_resize.h, torchvision's Resize(S, antialias=True)) and
// centre-cropped to S x S, so the whole split is one [N, 3, S, S] uint8 tensor: 3 S^2 bytes per
// image. Imagenette's 9,469 training images take 727 MB at S = 160 and 465 MB at S = 128; its
// 3,925 validation images 301 MB and 193 MB. Decoding runs on LibTorch's intra-op threads.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/data/dataset.h"

namespace lpdt::data {

// ImageNet's normalisation (torchvision's reference scripts), in [0, 1] pixel units.
inline constexpr std::array<double, 3> kImageNetMean = {0.485, 0.456, 0.406};
inline constexpr std::array<double, 3> kImageNetStd = {0.229, 0.224, 0.225};

// Imagenette's stored size when data.image_size is 0: the side of imagenette2-160's images.
inline constexpr int64_t kImagenetteDefaultSize = 160;

// "train" / "val": the split's folder.
const char* image_folder_split_dir(Split split);

// The sorted class folders of <dir>/<split folder>, and every image file of each, sorted.
struct ImageFolderListing {
  std::vector<std::string> classes;              // folder names, sorted
  std::vector<std::string> files;                // full paths, class by class, sorted by name
  std::vector<int64_t> labels;                   // one per file: index into `classes`
};

// UserError (naming the folder) when <dir> or the split folder is missing, the split folder has
// no class folders, or a class folder holds no image. `what` prefixes messages ("imagenette").
ImageFolderListing list_image_folder(const std::string& dir, Split split, const std::string& what);

// Loads a split at storage size `image_size` (S). The test split's classes must be those of the
// train folder when <dir>/train exists (otherwise labels would silently disagree): a UserError
// names the difference. An unreadable or corrupt image is a UserError naming the file (the
// first such file in listing order, whatever the thread timing). mean / std: ImageNet's.
Dataset load_image_folder(const std::string& name, const std::string& dir, Split split,
                          int64_t image_size);

// load_image_folder("imagenette", dir, split, image_size); image_size <= 0 means
// kImagenetteDefaultSize.
Dataset load_imagenette(const std::string& dir, Split split, int64_t image_size = 0);

}  // namespace lpdt::data
