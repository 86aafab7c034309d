#include "lpdt/data/jpeg_decoder.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <filesystem>

#include "jpeg_test_util.h"
#include "lpdt/core/error.h"
#include "lpdt/data/file_bytes.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::encode_jpeg;
using testing::expect_error;
using testing::flat_rgb;
using testing::kJpegTolerance;
using testing::max_abs_diff;

// A smooth colour image: red ramps along x, green along y, blue constant.
// -> [3, h, w] uint8
torch::Tensor smooth_rgb(int64_t h, int64_t w) {
  const auto x = torch::arange(w, torch::kInt64).view({1, w}).expand({h, w});
  const auto y = torch::arange(h, torch::kInt64).view({h, 1}).expand({h, w});
  return torch::stack({(40 + 3 * x), (20 + 2 * y), torch::full({h, w}, 90, torch::kInt64)})
      .to(torch::kUInt8);
}

TEST(JpegDecoder, FlatColour) {
  const auto pixels = flat_rgb(16, 24, 200, 50, 100);
  const auto decoded = decode_jpeg(encode_jpeg(pixels), "flat.jpg");
  EXPECT_EQ(decoded.sizes(), (std::vector<int64_t>{3, 16, 24}));
  EXPECT_EQ(decoded.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(decoded.is_contiguous());
  EXPECT_LE(max_abs_diff(decoded, pixels), kJpegTolerance);
}

TEST(JpegDecoder, SmoothImage) {
  const auto pixels = smooth_rgb(40, 56);
  const auto decoded = decode_jpeg(encode_jpeg(pixels), "smooth.jpg");
  ASSERT_EQ(decoded.sizes(), pixels.sizes());
  EXPECT_LE(max_abs_diff(decoded, pixels), kJpegTolerance);
  // Channel order is R, G, B: red grows along x, green along y.
  EXPECT_GT(decoded[0][5][50].item<int>(), decoded[0][5][5].item<int>() + 100);
  EXPECT_GT(decoded[1][35][5].item<int>(), decoded[1][5][5].item<int>() + 50);
}

TEST(JpegDecoder, GrayscaleBecomesRgb) {
  const auto gray = (torch::arange(20 * 30, torch::kInt64).view({1, 20, 30}) % 30 * 4 + 60)
                        .to(torch::kUInt8);  // smooth ramp along x
  const auto decoded = decode_jpeg(encode_jpeg(gray), "gray.jpg");
  ASSERT_EQ(decoded.sizes(), (std::vector<int64_t>{3, 20, 30}));
  EXPECT_TRUE(torch::equal(decoded[0], decoded[1]));
  EXPECT_TRUE(torch::equal(decoded[0], decoded[2]));
  EXPECT_LE(max_abs_diff(decoded[0], gray[0]), kJpegTolerance);
  EXPECT_EQ(read_jpeg_info(encode_jpeg(gray).data(), encode_jpeg(gray).size(), "gray.jpg").channels,
            1);
}

TEST(JpegDecoder, CmykBecomesRgb) {
  // Adobe-inverted CMYK (255 = no ink): R = C * K / 255, G = M * K / 255, B = Y * K / 255.
  const int c = 200, m = 100, y = 250, k = 128;
  const auto cmyk =
      torch::tensor({c, m, y, k}, torch::kUInt8).view({4, 1, 1}).expand({4, 8, 16}).contiguous();
  const auto bytes = encode_jpeg(cmyk);
  EXPECT_EQ(read_jpeg_info(bytes.data(), bytes.size(), "cmyk.jpg").channels, 4);
  const auto decoded = decode_jpeg(bytes, "cmyk.jpg");
  ASSERT_EQ(decoded.sizes(), (std::vector<int64_t>{3, 8, 16}));
  const auto expected = flat_rgb(8, 16, (c * k + 127) / 255, (m * k + 127) / 255, (y * k + 127) / 255);
  EXPECT_LE(max_abs_diff(decoded, expected), kJpegTolerance);
}

TEST(JpegDecoder, DctScaling) {
  EXPECT_EQ(jpeg_scale_num(375, 500, 160), 4);  // 1/2: 188x250, while 3/8 gives 141 < 160
  EXPECT_EQ(jpeg_scale_num(160, 240, 160), 8);  // already the size: no scaling
  EXPECT_EQ(jpeg_scale_num(100, 100, 0), 8);
  EXPECT_EQ(jpeg_scale_num(800, 800, 100), 1);  // 1/8: exactly 100
  EXPECT_EQ(jpeg_scale_num(801, 900, 101), 1);  // libjpeg rounds up: ceil(801 / 8) = 101
  EXPECT_EQ(jpeg_scale_num(801, 900, 102), 2);
  const auto pixels = flat_rgb(48, 64, 30, 140, 220);
  const auto small = decode_jpeg(encode_jpeg(pixels), "scaled.jpg", /*min_side=*/12);
  EXPECT_EQ(small.sizes(), (std::vector<int64_t>{3, 12, 16}));  // 2/8 of 48x64
  EXPECT_LE(max_abs_diff(small, flat_rgb(12, 16, 30, 140, 220)), kJpegTolerance);
  // Smaller than min_side already: full size.
  EXPECT_EQ(decode_jpeg(encode_jpeg(pixels), "x.jpg", 100).sizes(),
            (std::vector<int64_t>{3, 48, 64}));
}

TEST(JpegDecoder, ReadsFiles) {
  testing::TempDir dir;
  const auto pixels = smooth_rgb(24, 32);
  testing::write_jpeg(dir.file("a.JPEG"), pixels);
  const auto decoded = read_jpeg(dir.file("a.JPEG"));
  EXPECT_LE(max_abs_diff(decoded, pixels), kJpegTolerance);
}

// Bytes between the entropy-coded data and the end marker (as some encoders write, and as damaged
// data that still decodes to the end leaves): the image decodes, and the bytes are counted.
TEST(JpegDecoder, CountsStrayBytesBeforeAMarker) {
  const auto pixels = smooth_rgb(24, 32);
  const std::vector<std::uint8_t> clean = encode_jpeg(pixels);
  ASSERT_GE(clean.size(), 4u);
  ASSERT_EQ(clean[clean.size() - 2], 0xFF);
  ASSERT_EQ(clean[clean.size() - 1], 0xD9);  // EOI
  std::uint64_t stray = 99;
  const auto whole = decode_jpeg(clean, "clean.jpg", 0, &stray);
  EXPECT_EQ(stray, 0u);
  std::vector<std::uint8_t> padded(clean.begin(), clean.end() - 2);
  for (int i = 0; i < 20; ++i) padded.push_back(0x7F);
  padded.push_back(0xFF);
  padded.push_back(0xD9);
  const auto decoded = decode_jpeg(padded, "padded.jpg", 0, &stray);
  // libjpeg's Huffman decoder reads a few bytes ahead into its bit buffer: those are not counted.
  EXPECT_GE(stray, 12u);
  EXPECT_LE(stray, 20u);
  EXPECT_TRUE(torch::equal(decoded, whole));
}

TEST(JpegDecoder, CorruptFilesAreUserErrors) {
  testing::TempDir dir;
  const std::string garbage = dir.file("garbage.JPEG");
  testing::write_bytes(garbage, {'n', 'o', 't', ' ', 'a', ' ', 'j', 'p', 'e', 'g'});
  expect_error<UserError>([&] { read_jpeg(garbage); },
                          {garbage, "not a valid JPEG", "Not a JPEG file"});

  // A sparse file larger than this machine could hold is refused before it is read (it ended in
  // std::bad_alloc): its size is named.
  const std::string sparse = dir.file("sparse.jpg");
  testing::write_bytes(sparse, {0xFF, 0xD8});
  std::filesystem::resize_file(sparse, loadable_file_bytes() + 1);
  expect_error<UserError>([&] { read_jpeg(sparse); },
                          {sparse, std::to_string(loadable_file_bytes() + 1) + " bytes",
                           "more than half of this machine's memory"});
  std::filesystem::remove(sparse);

  const std::string empty = dir.file("empty.jpg");
  testing::write_bytes(empty, {});
  expect_error<UserError>([&] { read_jpeg(empty); }, {empty, "not a valid JPEG"});

  // Cut in the middle of the entropy-coded data: libjpeg's "Premature end" is an error here.
  auto bytes = encode_jpeg(smooth_rgb(64, 64));
  bytes.resize(bytes.size() / 2);
  const std::string truncated = dir.file("truncated.jpg");
  testing::write_bytes(truncated, bytes);
  expect_error<UserError>([&] { read_jpeg(truncated); },
                          {truncated, "not a valid JPEG", "Premature end of JPEG file"});

  // Entropy-coded data with flipped bits (a damaged copy): libjpeg's "Corrupt JPEG data" warning
  // (a bad Huffman code, or a marker where data should be) is an error here.
  auto damaged = encode_jpeg(smooth_rgb(64, 64));
  for (std::size_t i = damaged.size() / 2; i < damaged.size() / 2 + 40; ++i) damaged[i] ^= 0xFF;
  expect_error<UserError>([&] { decode_jpeg(damaged, "damaged.jpg"); },
                          {"damaged.jpg", "not a valid JPEG", "Corrupt JPEG data"});

  // A restart marker out of sequence (RST2 where RST1 belongs): libjpeg resynchronises and fills
  // the blocks it skipped with grey; an error here.
  auto restarts = encode_jpeg(smooth_rgb(64, 64), 100, /*restart_rows=*/1);
  int seen = 0;
  for (std::size_t i = 2; i + 1 < restarts.size(); ++i) {
    if (restarts[i] == 0xFF && restarts[i + 1] >= 0xD0 && restarts[i + 1] <= 0xD7 && ++seen == 2) {
      ASSERT_EQ(restarts[i + 1], 0xD1);
      restarts[i + 1] = 0xD2;
      break;
    }
  }
  ASSERT_EQ(seen, 2) << "no second restart marker";
  expect_error<UserError>([&] { decode_jpeg(restarts, "restarts.jpg"); },
                          {"restarts.jpg", "not a valid JPEG", "instead of RST1"});

  // A header claiming more pixels than any photo (a 120-byte file can claim 65,500 x 65,500) is
  // refused before anything is decoded.
  auto huge = encode_jpeg(smooth_rgb(16, 16));
  bool patched = false;
  for (std::size_t i = 2; i + 8 < huge.size(); ++i) {
    if (huge[i] == 0xFF && huge[i + 1] == 0xC0) {  // SOF0: length, precision, height, width
      huge[i + 5] = 0xFF, huge[i + 6] = 0xDC, huge[i + 7] = 0xFF, huge[i + 8] = 0xDC;
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  expect_error<UserError>([&] { decode_jpeg(huge, "huge.jpg", 16); },
                          {"huge.jpg", "the JPEG header says 65500x65500 pixels",
                           "more than the 134217728"});

  // Only the header survives.
  bytes.resize(40);
  expect_error<UserError>([&] { decode_jpeg(bytes, "header-only.jpg"); },
                          {"header-only.jpg", "not a valid JPEG"});

  const std::string missing = dir.file("missing.jpg");
  expect_error<UserError>([&] { read_jpeg(missing); }, {missing, "no such file"});
}

}  // namespace
}  // namespace lpdt::data
