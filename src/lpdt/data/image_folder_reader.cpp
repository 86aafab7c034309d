#include "lpdt/data/image_folder_reader.h"

#include <ATen/Parallel.h>
#include <torch/types.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "lpdt/core/error.h"
#include "lpdt/data/image_resize.h"
#include "lpdt/data/jpeg_decoder.h"

namespace lpdt::data {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpeg" || ext == ".jpg";
}

// The sub-folders of `root`, sorted by name (byte order, as Python's sorted()).
// `what` (the dataset's name) prefixes errors.
std::vector<std::string> class_folders(const fs::path& root, const std::string& what) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) {
      names.push_back(entry.path().filename().string());
    } else if (entry.is_symlink() && !entry.exists()) {
      // Where a class folder's link points at nothing, dropping it would drop a class silently
      // (and with it a label every later class shifts past).
      throw UserError(what + ": " + entry.path().string() + ": a dangling symbolic link (its target " +
                      fs::read_symlink(entry.path()).string() +
                      " does not exist), expected a class folder");
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "a, b, c" (at most the first few names).
std::string name_list(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 5;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? "(none)" : out;
}

// The test split must label classes as the train split does.
void check_same_classes(const std::string& name, const fs::path& train_root,
                        const fs::path& test_root, const std::vector<std::string>& test_classes) {
  const std::vector<std::string> train_classes = class_folders(train_root, name);
  if (train_classes == test_classes) return;
  std::vector<std::string> only_train, only_test;
  std::set_difference(train_classes.begin(), train_classes.end(), test_classes.begin(),
                      test_classes.end(), std::back_inserter(only_train));
  std::set_difference(test_classes.begin(), test_classes.end(), train_classes.begin(),
                      train_classes.end(), std::back_inserter(only_test));
  throw UserError(name + ": the class folders of " + test_root.string() + " differ from those of " +
                  train_root.string() + " (labels would disagree): only in train: " +
                  name_list(only_train) + "; only in " + test_root.filename().string() + ": " +
                  name_list(only_test));
}

ImageFolderListing list_folders(const std::string& dir, Split split, const std::string& what);

}  // namespace

const char* image_folder_split_dir(Split split) { return split == Split::kTrain ? "train" : "val"; }

ImageFolderListing list_image_folder(const std::string& dir, Split split, const std::string& what) {
  // A folder that cannot be listed (permissions, a dangling link) is the user's to fix too.
  try {
    return list_folders(dir, split, what);
  } catch (const fs::filesystem_error& e) {
    throw UserError(what + ": " + e.what());
  }
}

namespace {

// An image is resized whole (shorter side to `side`) before its centre is cropped: a 65,500 x 1
// one (a 122-byte file) would be resized to 160 x 10,480,000 pixels, 20 GB of floats. Images
// longer than kMostAspectRatio times their width (or the other way round) are refused; the
// photos of classification datasets are below 4:1.
constexpr int64_t kMostAspectRatio = 64;
void check_aspect_ratio(int64_t height, int64_t width, int64_t side, const std::string& path) {
  const auto [h, w] = shorter_side_size(height, width, side);
  if (std::max(h, w) > kMostAspectRatio * side) {
    throw UserError(path + ": a " + std::to_string(width) + "x" + std::to_string(height) +
                    " image (as decoded) is more than " + std::to_string(kMostAspectRatio) +
                    " times as long as it is wide: resized to a shorter side of " +
                    std::to_string(side) + " it would be " + std::to_string(w) + "x" +
                    std::to_string(h) + " pixels; crop it or remove it from the folder");
  }
}

ImageFolderListing list_folders(const std::string& dir, Split split, const std::string& what) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UserError(what + ": " + dir + ": " +
                    (fs::exists(dir, ec) ? "not a folder" : "no such folder") +
                    " (data.dir); expected the dataset folder holding train/ and val/ (e.g. "
                    "imagenette2-160)");
  }
  const fs::path root = fs::path(dir) / image_folder_split_dir(split);
  if (!fs::is_directory(root, ec)) {
    throw UserError(what + ": " + root.string() + ": no such folder; expected " + dir +
                    "/train and " + dir + "/val with one sub-folder of images per class");
  }
  ImageFolderListing listing;
  listing.classes = class_folders(root, what);
  if (listing.classes.empty()) {
    throw UserError(what + ": " + root.string() +
                    ": no class folders; expected one sub-folder of images per class");
  }
  for (std::size_t c = 0; c < listing.classes.size(); ++c) {
    const fs::path class_dir = root / listing.classes[c];
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(class_dir)) {
      if (!is_image_file(entry.path())) continue;
      if (entry.is_regular_file()) {
        files.push_back(entry.path().string());
        continue;
      }
      // An image's name on something with no image to read: dropping it would change the
      // dataset silently (a link whose target moved, a FIFO that would block the read).
      if (entry.is_symlink() && !entry.exists()) {
        throw UserError(what + ": " + entry.path().string() +
                        ": a dangling symbolic link (its target " +
                        fs::read_symlink(entry.path()).string() +
                        " does not exist), expected a JPEG file");
      }
      if (!entry.is_directory()) {
        throw UserError(what + ": " + entry.path().string() +
                        ": is not a regular file (a FIFO, a socket or a device?), expected a "
                        "JPEG file");
      }
    }
    if (files.empty()) {
      throw UserError(what + ": " + class_dir.string() +
                      ": no images in this class folder (expected .JPEG / .jpg / .jpeg files)");
    }
    std::sort(files.begin(), files.end());
    for (auto& file : files) {
      listing.files.push_back(std::move(file));
      listing.labels.push_back(static_cast<int64_t>(c));
    }
  }
  return listing;
}

// One warning for the images in which libjpeg skipped stray bytes before a marker, naming the
// first few: whole images from some encoders, or damaged ones that decode to their end.
std::vector<std::string> stray_bytes_warnings(const std::string& name, Split split,
                                              const std::vector<std::string>& files,
                                              const std::vector<std::uint64_t>& stray_bytes) {
  constexpr std::size_t kNamed = 3;
  std::size_t count = 0;
  std::string examples;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (stray_bytes[i] == 0) continue;
    if (++count <= kNamed) {
      examples += (examples.empty() ? "" : ", ") + files[i] + " (" +
                  std::to_string(stray_bytes[i]) + " bytes)";
    }
  }
  if (count == 0) return {};
  return {name + ": " + std::to_string(count) + " of the " + std::to_string(files.size()) + " " +
          (split == Split::kTest ? "test" : "training") +
          " images hold stray bytes before a JPEG marker (libjpeg's \"extraneous bytes\"): " +
          examples + (count > kNamed ? ", ..." : "") +
          ". Some encoders write them in whole images, but damaged data that still decodes to "
          "the image's end shows the same: if they should not be there, look at those images"};
}

}  // namespace

Dataset load_image_folder(const std::string& name, const std::string& dir, Split split,
                          int64_t image_size) {
  if (image_size < 1) {
    throw ConfigError(name + ": image size must be >= 1, got " + std::to_string(image_size));
  }
  const ImageFolderListing listing = list_image_folder(dir, split, name);
  if (split == Split::kTest) {
    const fs::path train_root = fs::path(dir) / image_folder_split_dir(Split::kTrain);
    std::error_code ec;
    if (fs::is_directory(train_root, ec)) {
      try {
        check_same_classes(name, train_root, fs::path(dir) / image_folder_split_dir(split),
                           listing.classes);
      } catch (const fs::filesystem_error& e) {
        throw UserError(name + ": " + e.what());
      }
    }
  }

  const auto n = static_cast<int64_t>(listing.files.size());
  auto images = torch::empty({n, 3, image_size, image_size}, torch::kUInt8);
  // Each image writes its own slot; failures are collected per image so that the error reported
  // is the first bad file in listing order, not whichever thread failed first.
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> stray_bytes(static_cast<std::size_t>(n), 0);
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const std::string& path = listing.files[static_cast<std::size_t>(i)];
      try {
        // DCT scaling keeps the shorter side >= S; the antialiased resize does the rest.
        const auto decoded =  // [3, H, W] uint8
            read_jpeg(path, image_size, &stray_bytes[static_cast<std::size_t>(i)]);
        check_aspect_ratio(decoded.size(1), decoded.size(2), image_size, path);
        images.select(0, i).copy_(resize_and_center_crop(decoded.unsqueeze(0), image_size)[0]);
      } catch (const UserError& e) {
        errors[static_cast<std::size_t>(i)] = e.what();  // names the file already
      } catch (const c10::Error& e) {  // LibTorch's message, without its C++ frames
        errors[static_cast<std::size_t>(i)] = path + ": " + e.what_without_backtrace();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(i)] = path + ": " + e.what();
      }
    }
  });
  for (const auto& error : errors) {
    if (!error.empty()) throw UserError(name + ": " + error);
  }

  Dataset d;
  d.warnings = stray_bytes_warnings(name, split, listing.files, stray_bytes);
  d.name = name;
  d.images = images;
  d.labels = torch::tensor(listing.labels, torch::kInt64);
  d.num_classes = static_cast<int64_t>(listing.classes.size());
  d.mean.assign(kImageNetMean.begin(), kImageNetMean.end());
  d.std.assign(kImageNetStd.begin(), kImageNetStd.end());
  check_dataset(d);
  return d;
}

Dataset load_imagenette(const std::string& dir, Split split, int64_t image_size) {
  return load_image_folder("imagenette", dir, split,
                           image_size > 0 ? image_size : kImagenetteDefaultSize);
}

}  // namespace lpdt::data
