#include "lpdt/data/image_folder_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/types.h>

#include <filesystem>

#include "jpeg_test_util.h"
#include "lpdt/core/error.h"
#include "lpdt/data/dataset_registry.h"
#include "lpdt/data/image_resize.h"
#include "lpdt/data/jpeg_decoder.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::flat_rgb;
using testing::kJpegTolerance;
using testing::max_abs_diff;
using testing::write_jpeg;

// Away from the colour edges, an antialiased 2x reduction of flat areas keeps their colour; near
// them the filter mixes neighbours, so geometry checks sample a few pixels inside each area.
constexpr int kFlatAreaTolerance = kJpegTolerance + 1;

void make_dir(const std::string& path) { fs::create_directories(path); }

// The colour of class c, image i: distinct for every (c, i) of the tests.
std::array<int, 3> colour(int c, int i) { return {20 + 60 * c, 30 + 40 * i, 200 - 50 * c}; }

// train/ with three classes written in unsorted order, files named so that byte order matters.
void write_small_tree(const std::string& root) {
  const std::vector<std::string> classes = {"n02", "n01", "n10"};  // sorted: n01, n02, n10
  const std::vector<std::string> files = {"2.jpg", "10.JPEG", "1.jpeg"};  // 1.jpeg, 10.JPEG, 2.jpg
  for (const auto& split : {"train", "val"}) {
    for (const auto& cls : classes) {
      const std::string dir = root + "/" + split + "/" + cls;
      make_dir(dir);
      const int c = cls == "n01" ? 0 : cls == "n02" ? 1 : 2;
      for (const auto& file : files) {
        const int i = file == "1.jpeg" ? 0 : file == "10.JPEG" ? 1 : 2;
        const auto [r, g, b] = colour(c, i);
        write_jpeg(dir + "/" + file, flat_rgb(24, 32, r, g, b));
      }
      testing::write_bytes(dir + "/notes.txt", {'x'});  // ignored: not an image
    }
  }
}

TEST(ImageFolder, ClassOrderLabelsAndPixels) {
  testing::TempDir dir;
  write_small_tree(dir.path());
  const ImageFolderListing listing = list_image_folder(dir.path(), Split::kTrain, "test");
  EXPECT_EQ(listing.classes, (std::vector<std::string>{"n01", "n02", "n10"}));
  ASSERT_EQ(listing.files.size(), 9u);
  EXPECT_EQ(fs::path(listing.files[0]).filename(), "1.jpeg");
  EXPECT_EQ(fs::path(listing.files[1]).filename(), "10.JPEG");
  EXPECT_EQ(fs::path(listing.files[2]).filename(), "2.jpg");
  EXPECT_EQ(listing.labels, (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2}));

  const Dataset d = load_imagenette(dir.path(), Split::kTrain, 16);
  EXPECT_EQ(d.name, "imagenette");
  EXPECT_EQ(d.images.sizes(), (std::vector<int64_t>{9, 3, 16, 16}));
  EXPECT_EQ(d.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_TRUE(torch::equal(d.labels, torch::tensor({0, 0, 0, 1, 1, 1, 2, 2, 2}, torch::kInt64)));
  EXPECT_EQ(d.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(d.std, (std::vector<double>{0.229, 0.224, 0.225}));
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 3; ++i) {
      const auto [r, g, b] = colour(c, i);
      EXPECT_LE(max_abs_diff(d.images[3 * c + i], flat_rgb(16, 16, r, g, b)), kJpegTolerance)
          << "class " << c << " image " << i;
    }
  }
  // val/ holds the same classes: same labels.
  const Dataset val = load_dataset("imagenette", dir.path(), Split::kTest, {}, 16);
  EXPECT_EQ(val.size(), 9);
  EXPECT_TRUE(torch::equal(val.labels, d.labels));
  // The default stored size is imagenette2-160's.
  EXPECT_EQ(load_imagenette(dir.path(), Split::kTest).height(), kImagenetteDefaultSize);
}

// Images with stray bytes before a JPEG marker load, and the dataset carries one warning that
// counts them and names them; a clean folder carries none.
TEST(ImageFolder, StrayBytesBeforeAMarkerAreAWarning) {
  testing::TempDir dir;
  write_small_tree(dir.path());
  EXPECT_TRUE(load_imagenette(dir.path(), Split::kTrain, 16).warnings.empty());
  const std::string padded_file = dir.path() + "/train/n02/10.JPEG";
  std::vector<std::uint8_t> bytes = testing::encode_jpeg(flat_rgb(24, 32, 10, 20, 30));
  bytes.insert(bytes.end() - 2, 20, 0x7F);
  testing::write_bytes(padded_file, bytes);
  const Dataset d = load_imagenette(dir.path(), Split::kTrain, 16);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_THAT(d.warnings[0],
              ::testing::AllOf(::testing::HasSubstr("imagenette: 1 of the 9 training images"),
                               ::testing::HasSubstr(padded_file + " ("),
                               ::testing::HasSubstr("extraneous bytes")));
}

TEST(ImageFolder, GrayscaleImagesBecomeRgb) {
  testing::TempDir dir;
  make_dir(dir.path() + "/train/a");
  write_jpeg(dir.path() + "/train/a/g.jpg", torch::full({1, 20, 20}, 77, torch::kUInt8));
  const Dataset d = load_imagenette(dir.path(), Split::kTrain, 10);
  ASSERT_EQ(d.images.sizes(), (std::vector<int64_t>{1, 3, 10, 10}));
  EXPECT_LE(max_abs_diff(d.images[0], torch::full({3, 10, 10}, 77, torch::kUInt8)),
            kJpegTolerance);
}

// Quadrant colours of a wide 40x80 image: 20-pixel-wide vertical stripes A | B/C | D/E | F,
// where the two middle stripes differ between the top and bottom halves. Shorter side to 20
// gives 20x40 (stripes 10 wide); the centred 20x20 crop keeps columns 10..29, i.e. B/C and D/E
// only, each a quadrant of the result.
TEST(ImageFolder, ResizeAndCenterCropGeometry) {
  const std::array<std::array<int, 3>, 6> colours = {{{250, 0, 0},     // A
                                                      {0, 200, 0},     // B top
                                                      {0, 0, 220},     // C bottom
                                                      {230, 230, 0},   // D top
                                                      {0, 210, 210},   // E bottom
                                                      {240, 0, 240}}};  // F
  auto image = torch::empty({3, 40, 80}, torch::kUInt8);
  const auto fill = [&](int64_t top, int64_t left, int64_t h, int64_t w, int which) {
    for (int ch = 0; ch < 3; ++ch) {
      image[ch].narrow(0, top, h).narrow(1, left, w).fill_(colours[which][ch]);
    }
  };
  fill(0, 0, 40, 20, 0);
  fill(0, 20, 20, 20, 1);
  fill(20, 20, 20, 20, 2);
  fill(0, 40, 20, 20, 3);
  fill(20, 40, 20, 20, 4);
  fill(0, 60, 40, 20, 5);

  testing::TempDir dir;
  make_dir(dir.path() + "/train/q");
  write_jpeg(dir.path() + "/train/q/quadrants.jpg", image);
  const Dataset d = load_imagenette(dir.path(), Split::kTrain, 20);
  ASSERT_EQ(d.images.sizes(), (std::vector<int64_t>{1, 3, 20, 20}));
  const auto out = d.images[0];
  const auto expect_colour = [&](int64_t y, int64_t x, int which) {
    for (int ch = 0; ch < 3; ++ch) {
      EXPECT_NEAR(out[ch][y][x].item<int>(), colours[which][ch], kFlatAreaTolerance)
          << "pixel (" << y << ", " << x << ") channel " << ch;
    }
  };
  for (int64_t y : {1, 4, 7}) {
    for (int64_t x : {1, 4, 7}) {
      expect_colour(y, x, 1);            // B, top left
      expect_colour(y + 11, x, 2);       // C, bottom left
      expect_colour(y, x + 11, 3);       // D, top right
      expect_colour(y + 11, x + 11, 4);  // E, bottom right
    }
  }
  // The same as the transform on the decoded image; the reader lets libjpeg decode at 1/2 scale
  // (DCT scaling: 20x40 keeps the shorter side >= 20), so the resize is then the identity.
  const auto decoded = read_jpeg(dir.path() + "/train/q/quadrants.jpg", 20);
  EXPECT_EQ(decoded.sizes(), (std::vector<int64_t>{3, 20, 40}));
  EXPECT_TRUE(torch::equal(out, resize_and_center_crop(decoded.unsqueeze(0), 20)[0]));
  // Geometry of the helpers: torchvision's sizes and offsets.
  EXPECT_EQ(shorter_side_size(375, 500, 160), (std::pair<int64_t, int64_t>{160, 213}));
  EXPECT_EQ(shorter_side_size(500, 375, 160), (std::pair<int64_t, int64_t>{213, 160}));
  const auto ramp = torch::arange(7, torch::kInt64).view({1, 1, 1, 7}).expand({1, 1, 3, 7});
  EXPECT_EQ(center_crop(ramp, 3, 4)[0][0][0][0].item<int64_t>(), 2);  // round(1.5) = 2
  EXPECT_EQ(center_crop(ramp, 3, 6)[0][0][0][0].item<int64_t>(), 0);  // round(0.5) = 0
}

TEST(ImageFolder, Errors) {
  testing::TempDir dir;
  const std::string root = dir.path();
  expect_error<UserError>([&] { load_imagenette(root + "/nowhere", Split::kTrain); },
                          {"imagenette", root + "/nowhere", "no such folder (data.dir)"});
  testing::write_bytes(root + "/a-file", {'x'});
  expect_error<UserError>([&] { load_imagenette(root + "/a-file", Split::kTrain); },
                          {"imagenette", root + "/a-file", "not a folder (data.dir)"});
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain); },
                          {root + "/train", "no such folder"});
  make_dir(root + "/train");
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain); },
                          {root + "/train", "no class folders"});
  make_dir(root + "/train/n01");
  write_jpeg(root + "/train/n01/a.jpg", flat_rgb(8, 8, 1, 2, 3));
  make_dir(root + "/train/n02");
  testing::write_bytes(root + "/train/n02/readme.txt", {'x'});
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain); },
                          {root + "/train/n02", "no images"});
  // A corrupt image among good ones: the message names that file.
  write_jpeg(root + "/train/n02/b.jpg", flat_rgb(8, 8, 1, 2, 3));
  testing::write_bytes(root + "/train/n02/c.JPEG", {0xff, 0xd8, 0xff, 0x00, 0x12});
  write_jpeg(root + "/train/n02/d.jpg", flat_rgb(8, 8, 1, 2, 3));
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain, 8); },
                          {"imagenette", root + "/train/n02/c.JPEG", "not a valid JPEG"});
  fs::remove(root + "/train/n02/c.JPEG");
  EXPECT_EQ(load_imagenette(root, Split::kTrain, 8).size(), 3);
  // An image's name with no image behind it is named, not skipped: a dangling link, a FIFO.
  fs::create_symlink(root + "/moved/e.jpg", root + "/train/n02/e.jpg");
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain, 8); },
                          {root + "/train/n02/e.jpg", "dangling symbolic link",
                           root + "/moved/e.jpg"});
  fs::remove(root + "/train/n02/e.jpg");
  ASSERT_EQ(mkfifo((root + "/train/n02/f.jpg").c_str(), 0600), 0);
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain, 8); },
                          {root + "/train/n02/f.jpg", "not a regular file"});
  fs::remove(root + "/train/n02/f.jpg");
  // An image far longer than wide would be resized whole first (a 65,500 x 1 one to 20 GB):
  // refused, naming the file and the size it would take.
  write_jpeg(root + "/train/n02/long.jpg", flat_rgb(1, 200, 1, 2, 3));
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain, 2); },
                          {root + "/train/n02/long.jpg", "a 200x1 image", "more than 64 times",
                           "400x2 pixels"});
  fs::remove(root + "/train/n02/long.jpg");
  // A class folder's link to nothing is named, not dropped with its class.
  fs::create_symlink(root + "/moved/n03", root + "/train/n03");
  expect_error<UserError>([&] { load_imagenette(root, Split::kTrain, 8); },
                          {"imagenette: " + root + "/train/n03", "dangling symbolic link",
                           "expected a class folder"});
  fs::remove(root + "/train/n03");
  // A folder with an image's name is not an image: ignored like other non-image entries.
  make_dir(root + "/train/n02/g.jpg");
  EXPECT_EQ(load_imagenette(root, Split::kTrain, 8).size(), 3);
  fs::remove(root + "/train/n02/g.jpg");
  // val/ must have train/'s classes.
  make_dir(root + "/val/n01");
  write_jpeg(root + "/val/n01/a.jpg", flat_rgb(8, 8, 1, 2, 3));
  make_dir(root + "/val/n03");
  write_jpeg(root + "/val/n03/a.jpg", flat_rgb(8, 8, 1, 2, 3));
  expect_error<UserError>([&] { load_imagenette(root, Split::kTest, 8); },
                          {"differ", "only in train: n02", "only in val: n03"});
  expect_error<ConfigError>([&] { load_image_folder("x", root, Split::kTrain, -1); },
                            {"image size", "-1"});
  expect_error<ConfigError>([&] { load_dataset("imagenette", "", Split::kTrain); },
                            {"data.dir is empty", "imagenette"});
}

}  // namespace
}  // namespace lpdt::data
