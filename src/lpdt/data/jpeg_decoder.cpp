#include "lpdt/data/jpeg_decoder.h"

#include <torch/types.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "lpdt/core/error.h"
#include "lpdt/data/file_bytes.h"

namespace lpdt::data {
namespace {

constexpr int kScaleDenom = 8;  // libjpeg's DCT scaling works in eighths

// libjpeg reports errors through cinfo->err; ours records the message and longjmps back into
// the function that called setjmp, so that nothing exits the process.
struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg casts cinfo->err to ErrorManager*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  std::uint64_t stray_bytes = 0;  // libjpeg's "extraneous bytes before marker", summed
};

void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) are not printed; stray bytes before a marker are counted for the caller.
// Every warning that says the image data is damaged is an error: a truncated file, entropy-coded
// data that is not valid Huffman or arithmetic code (bit errors, a damaged copy), a restart marker
// out of sequence, a progressive scan sequence that is inconsistent, invalid scan parameters.
// libjpeg would go on with grey or garbled blocks, which a training set must not silently contain.
// The others (stray bytes before a marker, common in files that decode whole; an unknown JFIF
// version, Adobe transform or ICC profile: metadata) are not. (JWRN_ARITH_BAD_CODE, "Corrupt JPEG
// data: bad arithmetic code", is declared only in some builds' headers: it is found by its message,
// as any other "Corrupt JPEG data" warning but the two benign ones.)
bool damage_warning(j_common_ptr cinfo) {
  const int code = cinfo->err->msg_code;
  switch (code) {
    case JWRN_JPEG_EOF:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_BOGUS_PROGRESSION:
    case JWRN_NOT_SEQUENTIAL:
      return true;
    case JWRN_EXTRANEOUS_DATA:
    case JWRN_BOGUS_ICC:
      return false;
    default:
      break;
  }
  const jpeg_error_mgr& err = *cinfo->err;
  if (code >= 0 && code <= err.last_jpeg_message &&
      err.jpeg_message_table != nullptr && err.jpeg_message_table[code] != nullptr) {
    return std::strncmp(err.jpeg_message_table[code], "Corrupt JPEG data", 17) == 0;
  }
  return false;
}

void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  if (damage_warning(cinfo)) on_error_exit(cinfo);
  if (cinfo->err->msg_code == JWRN_EXTRANEOUS_DATA) {
    reinterpret_cast<ErrorManager*>(cinfo->err)->stray_bytes +=
        static_cast<std::uint64_t>(std::max(cinfo->err->msg_parm.i[0], 0));
  }
  ++cinfo->err->num_warnings;
}

// One decompression. Owns libjpeg's state; the destructor releases it on every path.
struct Decoder {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  bool created = false;

  Decoder() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error_exit;
    err.pub.emit_message = on_emit_message;
  }
  ~Decoder() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;
};

// The functions that call setjmp hold no object with a destructor in their frames (a longjmp
// would skip it) and touch state only through `d`, which outlives them. false = libjpeg failed,
// the message is in d.err.message.

bool read_header(Decoder& d, const std::uint8_t* data, std::size_t size) {
  if (setjmp(d.err.jump)) return false;
  jpeg_create_decompress(&d.cinfo);
  d.created = true;
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d.cinfo, TRUE);
  return true;
}

bool start(Decoder& d, int scale_num) {
  if (setjmp(d.err.jump)) return false;
  d.cinfo.scale_num = static_cast<unsigned int>(scale_num);
  d.cinfo.scale_denom = kScaleDenom;
  jpeg_start_decompress(&d.cinfo);
  return true;
}

// Reads every scanline into `out` (output_height rows of row_bytes), then finishes.
bool read_rows(Decoder& d, std::uint8_t* out, std::size_t row_bytes) {
  if (setjmp(d.err.jump)) return false;
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = out + static_cast<std::size_t>(d.cinfo.output_scanline) * row_bytes;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

[[noreturn]] void fail_jpeg(const std::string& what, const Decoder& d) {
  throw UserError(what + ": not a valid JPEG: " + d.err.message);
}

// A header's size is checked before decoding: a 120-byte file may claim 65,500 x 65,500 pixels,
// and libjpeg keeps a progressive image's coefficients whole whatever the output scale (8.7 GB
// measured), filling the missing data with grey.
void check_pixel_count(const Decoder& d, const std::string& what) {
  const auto pixels = static_cast<std::uint64_t>(d.cinfo.image_height) * d.cinfo.image_width;
  if (pixels > kMostJpegPixels) {
    throw UserError(what + ": the JPEG header says " + std::to_string(d.cinfo.image_width) + "x" +
                    std::to_string(d.cinfo.image_height) + " pixels, more than the " +
                    std::to_string(kMostJpegPixels) +
                    " (2^27, a 134-megapixel photo) lpdt decodes: a damaged file, or an image to "
                    "scale down before training on it");
  }
}

// Adobe-inverted CMYK (255 = no ink) to RGB: R = C * K / 255, G = M * K / 255, B = Y * K / 255,
// rounded to nearest. cmyk: [H, W, 4] uint8 -> [H, W, 3] uint8
torch::Tensor cmyk_to_rgb(const torch::Tensor& cmyk) {
  const int64_t h = cmyk.size(0), w = cmyk.size(1);
  auto rgb = torch::empty({h, w, 3}, torch::kUInt8);
  const std::uint8_t* in = cmyk.data_ptr<std::uint8_t>();
  std::uint8_t* out = rgb.data_ptr<std::uint8_t>();
  for (int64_t p = 0; p < h * w; ++p, in += 4, out += 3) {
    const unsigned k = in[3];
    for (int c = 0; c < 3; ++c) out[c] = static_cast<std::uint8_t>((in[c] * k + 127) / 255);
  }
  return rgb;
}

}  // namespace

int jpeg_scale_num(int64_t height, int64_t width, int64_t min_side) {
  if (min_side <= 0) return kScaleDenom;
  for (int num = 1; num < kScaleDenom; ++num) {
    // libjpeg's output size: jdiv_round_up(side * scale_num, scale_denom).
    const int64_t h = (height * num + kScaleDenom - 1) / kScaleDenom;
    const int64_t w = (width * num + kScaleDenom - 1) / kScaleDenom;
    if (std::min(h, w) >= min_side) return num;
  }
  return kScaleDenom;
}

JpegInfo read_jpeg_info(const std::uint8_t* data, std::size_t size, const std::string& what) {
  Decoder d;
  if (!read_header(d, data, size)) fail_jpeg(what, d);
  return JpegInfo{static_cast<int64_t>(d.cinfo.image_height),
                  static_cast<int64_t>(d.cinfo.image_width),
                  static_cast<int64_t>(d.cinfo.num_components)};
}

torch::Tensor decode_jpeg(const std::uint8_t* data, std::size_t size, const std::string& what,
                          int64_t min_side, std::uint64_t* stray_bytes) {
  Decoder d;
  if (!read_header(d, data, size)) fail_jpeg(what, d);
  check_pixel_count(d, what);
  bool cmyk = false;
  switch (d.cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:  // libjpeg-turbo replicates gray to R = G = B
    case JCS_YCbCr:
    case JCS_RGB:
      d.cinfo.out_color_space = JCS_RGB;
      break;
    case JCS_CMYK:
    case JCS_YCCK:  // libjpeg converts YCCK to CMYK
      d.cinfo.out_color_space = JCS_CMYK;
      cmyk = true;
      break;
    default:
      throw UserError(what + ": not a valid JPEG: unsupported colour space (libjpeg code " +
                      std::to_string(static_cast<int>(d.cinfo.jpeg_color_space)) + ", " +
                      std::to_string(d.cinfo.num_components) + " components)");
  }
  const int scale_num = jpeg_scale_num(d.cinfo.image_height, d.cinfo.image_width, min_side);
  if (!start(d, scale_num)) fail_jpeg(what, d);
  const int64_t h = d.cinfo.output_height, w = d.cinfo.output_width;
  const int64_t components = d.cinfo.output_components;
  LPDT_CHECK(components == (cmyk ? 4 : 3), what + ": unexpected libjpeg output components");
  auto pixels = torch::empty({h, w, components}, torch::kUInt8);  // [H, W, 3 or 4] interleaved
  if (!read_rows(d, pixels.data_ptr<std::uint8_t>(), static_cast<std::size_t>(w * components))) {
    fail_jpeg(what, d);
  }
  if (cmyk) pixels = cmyk_to_rgb(pixels);
  if (stray_bytes != nullptr) *stray_bytes = d.err.stray_bytes;
  return pixels.permute({2, 0, 1}).contiguous();  // [3, H, W]
}

torch::Tensor decode_jpeg(const std::vector<std::uint8_t>& bytes, const std::string& what,
                          int64_t min_side, std::uint64_t* stray_bytes) {
  return decode_jpeg(bytes.data(), bytes.size(), what, min_side, stray_bytes);
}

torch::Tensor read_jpeg(const std::string& path, int64_t min_side, std::uint64_t* stray_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw UserError(path + ": no such file (expected a JPEG image)");
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw UserError(path + ": cannot open: " + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) throw UserError(path + ": cannot determine the file size");
  // Read whole, a file beyond what this machine can hold would end in std::bad_alloc.
  if (static_cast<std::uint64_t>(size) > loadable_file_bytes()) {
    throw UserError(path + ": " + std::to_string(size) +
                    " bytes, more than half of this machine's memory (" +
                    std::to_string(loadable_file_bytes()) +
                    "): not an image this reader can load (a damaged file, or not a JPEG?)");
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    throw UserError(path + ": read error");
  }
  return decode_jpeg(bytes, path, min_side, stray_bytes);
}

}  // namespace lpdt::data
