#pragma once
// JPEG writers for the data module's tests: images with known pixels, encoded by libjpeg itself
// (quality 100, no chroma subsampling) so that decoding lands within a few levels of them.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include "test_util.h"

namespace lpdt::data::testing {

// Largest |decoded - written| on flat or smooth images encoded at quality 100, 4:4:4: the DCT
// quantisation (step 1 at q100) and the YCbCr round trip each cost about one level.
constexpr int kJpegTolerance = 3;

// Encodes `pixels` [C, H, W] uint8 (C = 1 grayscale, 3 RGB, 4 CMYK in Adobe's inverted
// convention) as a baseline JPEG.
// restart_rows > 0 puts a restart marker (RST0 .. RST7 in turn) after every restart_rows rows
// of MCUs.
inline std::vector<std::uint8_t> encode_jpeg(const torch::Tensor& pixels, int quality = 100,
                                             int restart_rows = 0) {
  const int64_t c = pixels.size(0), h = pixels.size(1), w = pixels.size(2);
  const auto interleaved = pixels.permute({1, 2, 0}).contiguous();  // [H, W, C]
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = static_cast<int>(c);
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  if (c == 4) jpeg_set_colorspace(&cinfo, JCS_CMYK);  // stored as CMYK, Adobe marker written
  jpeg_set_quality(&cinfo, quality, TRUE);
  cinfo.restart_in_rows = restart_rows;
  for (int i = 0; i < cinfo.num_components; ++i) {
    cinfo.comp_info[i].h_samp_factor = 1;
    cinfo.comp_info[i].v_samp_factor = 1;
  }
  jpeg_start_compress(&cinfo, TRUE);
  const auto* data = interleaved.data_ptr<std::uint8_t>();
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPROW>(data + static_cast<int64_t>(cinfo.next_scanline) * w * c);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<std::uint8_t> bytes(buffer, buffer + size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return bytes;
}

inline void write_jpeg(const std::string& path, const torch::Tensor& pixels, int quality = 100) {
  write_bytes(path, encode_jpeg(pixels, quality));
}

// [3, H, W] uint8 filled with one colour.
inline torch::Tensor flat_rgb(int64_t h, int64_t w, int r, int g, int b) {
  return torch::tensor({r, g, b}, torch::kUInt8).view({3, 1, 1}).expand({3, h, w}).contiguous();
}

// max |a - b| over all elements, as int.
inline int max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kInt32) - b.to(torch::kInt32)).abs().max().item<int>();
}

}  // namespace lpdt::data::testing
