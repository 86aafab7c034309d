#pragma once
// Hugging Face safetensors files, the format pretrained weights are published in
// (github.com/huggingface/safetensors, "Format"; docs/pretrained.md):
//   [8 bytes]  N, a little-endian u64: the size of the header
//   [N bytes]  a UTF-8 JSON object {"<name>": {"dtype": "F32", "shape": [2, 3],
//              "data_offsets": [begin, end]}, ..., "__metadata__": {"<key>": "<value>"}}
//              (__metadata__ optional), padded with spaces
//   [rest]     the byte buffer: each tensor's little-endian row-major bytes at [begin, end),
//              offsets relative to the buffer's start.
// The reader enforces every rule of the format (a file that breaks one is a UserError naming the
// file, the tensor and the field): N < 100 MB and within the file, a JSON object, each entry with
// a known dtype, a shape and data_offsets whose span is numel * itemsize, and the ranges tiling
// the buffer exactly: no overlap, no hole, nothing after the last tensor.
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lpdt::models {

// The reference implementation's limit on N (MAX_HEADER_SIZE): a larger value is a corrupt file,
// not a header worth allocating for.
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct SafetensorsFile {
  // CPU, contiguous tensors in the file's dtype: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL ->
  // at::kDouble kFloat kHalf kBFloat16 kLong kInt kShort kChar kByte kBool.
  std::map<std::string, at::Tensor> tensors;
  // The optional "__metadata__" object (string -> string; e.g. {"format": "pt"}).
  std::map<std::string, std::string> metadata;
};

// Reads the whole file and copies every tensor out (eagerly; a DistilBERT-base file is ~270 MB).
// UserError for a missing or unreadable file and for any violation of the format.
SafetensorsFile read_safetensors(const std::string& path);

// The same rules on a file's bytes held in memory (a section of a larger file: the tensors of a
// checkpoint). `source` begins every error, e.g. "safetensors file 'x.safetensors'".
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source);

// The same, the tensors viewing `bytes` in place instead of copying them (each whose data is
// aligned to its element size; any other is copied), kept alive by `owner`, which must own
// `bytes`. For a large section read once and then copied elsewhere (a checkpoint's tensors),
// where a copy would double the memory the read takes. Writing into such a tensor writes into
// the bytes (each tensor has its own range of them), so `owner` must not own const bytes.
SafetensorsFile parse_safetensors_in_place(std::string_view bytes,
                                           std::shared_ptr<const void> owner,
                                           const std::string& source);

// Writes `tensors` (any device and layout; one of the dtypes above) in name order, the header
// compact JSON padded with spaces to a multiple of 8 bytes as the reference writer does. The bytes
// go to `path` + ".tmp", which is then renamed over `path`: a failed write never destroys an
// existing file. UserError for an unsupported dtype, the reserved name "__metadata__", or an I/O
// failure.
void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// What write_safetensors writes, in pieces: `head` (the header's size as a little-endian u64,
// then the header) followed by the bytes of each tensor of `data` in turn (contiguous CPU
// tensors, in name order; the inputs themselves where they already are). For writers that stream
// the bytes (checkpoints) instead of copying them into one string. `target` names them in
// errors, as below.
struct SafetensorsPieces {
  std::string head;
  std::vector<at::Tensor> data;
  std::uint64_t size() const;  // bytes in all
};
SafetensorsPieces safetensors_pieces(const std::map<std::string, at::Tensor>& tensors,
                                     const std::map<std::string, std::string>& metadata,
                                     const std::string& target);

// The bytes write_safetensors would write, in memory. `target` names them in errors ("cannot
// write <target>: ...").
std::string safetensors_bytes(const std::map<std::string, at::Tensor>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              const std::string& target);

}  // namespace lpdt::models
