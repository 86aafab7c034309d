#pragma once
// JPEG decoding with libjpeg(-turbo), for image-folder datasets such as Imagenette.
//
// Every image comes out as [3, H, W] uint8 RGB, whatever its stored colour space: YCbCr and RGB
// as libjpeg converts them, grayscale replicated to three channels, CMYK / YCCK converted as
// R = C * K / 255 (and G, B likewise from M, Y): libjpeg returns CMYK in Adobe's inverted
// convention (255 = no ink), which is how Photoshop writes the CMYK JPEGs that ImageNet holds.
//
// libjpeg's default error handler calls exit(); ours longjmps back and the decoder throws a
// UserError "<what>: not a valid JPEG: <libjpeg's message>" instead. A file cut short (libjpeg's
// warning "Premature end of JPEG file", after which it would pad the image with grey) is an error
// too, as is every warning of damaged image data (bad Huffman or arithmetic code, restart markers
// out of sequence, an inconsistent progression); other warnings (e.g. extraneous bytes before a
// marker; metadata libjpeg does not know) are not. Stray bytes before a marker are counted for
// the caller (`stray_bytes`): encoders write them in whole images (two ImageNet files hold one
// junk byte, some cameras' 36-40), but damaged entropy-coded data that still decodes to the
// image's end leaves the same warning, so only the caller can say how many images it saw them in.
// An image whose header claims more than kMostJpegPixels is refused before it is decoded.
#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::data {

// The most pixels (width x height, as the header gives them) decode_jpeg decodes: 2^27, a
// 134-megapixel photo, beyond the largest cameras' (about 100). A larger claim is a damaged file
// or an image to scale down first; a progressive one would hold all its coefficients at once.
constexpr std::uint64_t kMostJpegPixels = std::uint64_t{1} << 27;

// The size of a JPEG's header and of what decode_jpeg would return for it.
struct JpegInfo {
  int64_t height = 0;  // stored size
  int64_t width = 0;
  int64_t channels = 0;  // stored components: 1 (grayscale), 3 (YCbCr / RGB), 4 (CMYK / YCCK)
};

// The header of `data` (no pixel decoding). `what` names the source in errors (a path).
JpegInfo read_jpeg_info(const std::uint8_t* data, std::size_t size, const std::string& what);

// Decodes a whole JPEG held in memory. `what` names the source in errors (a path).
// min_side > 0 lets libjpeg shrink the image while decoding (DCT scaling, scale_num / 8 with
// scale_num in 1..8, the coarsest whose output keeps its shorter side >= min_side): decoding at
// 1/2 scale costs about a third of a full decode. The caller resizes to its exact size anyway.
// min_side = 0: full size. Returns [3, H', W'] uint8 RGB, contiguous. stray_bytes (if given):
// set to the bytes libjpeg skipped before markers ("extraneous bytes"), 0 in a clean file.
torch::Tensor decode_jpeg(const std::uint8_t* data, std::size_t size, const std::string& what,
                          int64_t min_side = 0, std::uint64_t* stray_bytes = nullptr);
torch::Tensor decode_jpeg(const std::vector<std::uint8_t>& bytes, const std::string& what,
                          int64_t min_side = 0, std::uint64_t* stray_bytes = nullptr);

// Reads and decodes the file `path`; a missing or unreadable file is a UserError naming it, as is
// a file larger than loadable_file_bytes(). Returns [3, H', W'] uint8 RGB.
torch::Tensor read_jpeg(const std::string& path, int64_t min_side = 0,
                        std::uint64_t* stray_bytes = nullptr);

// The DCT scale numerator (over 8) that decode_jpeg uses for a height x width image: the
// smallest in 1..8 whose ceil(side * num / 8) keeps the shorter side >= min_side; 8 when
// min_side <= 0 or the image is already small.
int jpeg_scale_num(int64_t height, int64_t width, int64_t min_side);

}  // namespace lpdt::data
