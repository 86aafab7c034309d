#include "lpdt/models/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "lpdt/core/error.h"
#include "lpdt/core/json_error_text.h"

namespace lpdt::models {
namespace {

// The format stores little-endian bytes; tensors are copied without swapping.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

// One row per dtype of the format: its name in the header, the ATen dtype, bytes per element.
struct DtypeRow {
  std::string_view name;
  at::ScalarType type;
  std::uint64_t itemsize;
};
constexpr std::array<DtypeRow, 10> kDtypes = {{
    {"F64", at::kDouble, 8},
    {"F32", at::kFloat, 4},
    {"F16", at::kHalf, 2},
    {"BF16", at::kBFloat16, 2},
    {"I64", at::kLong, 8},
    {"I32", at::kInt, 4},
    {"I16", at::kShort, 2},
    {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},
    {"BOOL", at::kBool, 1},
}};

const DtypeRow* dtype_by_name(const std::string& name) {
  for (const auto& row : kDtypes) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

const DtypeRow* dtype_by_type(at::ScalarType type) {
  for (const auto& row : kDtypes) {
    if (row.type == type) return &row;
  }
  return nullptr;
}

constexpr std::string_view kMetadataKey = "__metadata__";

// A tensor's entry of the header, validated.
struct Entry {
  std::string name;
  const DtypeRow* dtype = nullptr;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

// The first key found twice in one JSON object, at any depth, from the parser's events: one
// set of keys per open object. `duplicate_entry`: the top-level key the duplicate is inside
// ("" for a duplicate top-level key). Builds no document.
struct DuplicateKeyFinder {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> open_objects;
  std::string entry;  // the current top-level key
  std::string duplicate, duplicate_entry;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) {
    open_objects.emplace_back();
    return true;
  }
  bool key(json::string_t& name) {
    if (open_objects.size() == 1) entry = name;
    if (!open_objects.back().insert(name).second && duplicate.empty()) {
      duplicate = name;
      duplicate_entry = open_objects.size() == 1 ? "" : entry;
    }
    return true;
  }
  bool end_object() {
    open_objects.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }
};

// Parses the bytes of a whole file; `source` begins every error ("safetensors file 'x'").
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const { throw UserError(source_ + ": " + what); }
  [[noreturn]] void fail_tensor(const std::string& name, const std::string& what) const {
    fail("tensor '" + printable(name) + "': " + what);
  }

  // owner: when set, it owns `bytes`, and the tensors view them in place where aligned.
  SafetensorsFile parse(std::string_view bytes,
                        const std::shared_ptr<const void>& owner = nullptr) const {
    if (bytes.size() < 8) {
      std::ostringstream msg;
      msg << "is " << bytes.size() << " bytes long, too short for the 8-byte header size";
      fail(msg.str());
    }
    std::uint64_t header_bytes = 0;
    for (int i = 0; i < 8; ++i) {
      header_bytes |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    }
    if (header_bytes >= kSafetensorsMaxHeaderBytes) {
      std::ostringstream msg;
      msg << "header size " << header_bytes << " bytes, expected less than "
          << kSafetensorsMaxHeaderBytes << " (corrupt file?)";
      fail(msg.str());
    }
    if (header_bytes > bytes.size() - 8) {
      std::ostringstream msg;
      msg << "header size " << header_bytes << " bytes runs past the end of the file ("
          << bytes.size() << " bytes; truncated?)";
      fail(msg.str());
    }
    const char* header_begin = bytes.data() + 8;
    const char* buffer_begin = header_begin + header_bytes;
    const std::uint64_t buffer_bytes = bytes.size() - 8 - header_bytes;

    SafetensorsFile out;
    std::vector<Entry> entries = parse_header(header_begin, buffer_begin, out.metadata);
    check_tiling(entries, buffer_bytes);
    for (const Entry& e : entries) {
      const char* data = buffer_begin + e.begin;
      const auto options = at::TensorOptions().dtype(e.dtype->type);
      at::Tensor t;
      if (owner != nullptr && e.end > e.begin &&
          reinterpret_cast<std::uintptr_t>(data) % options.dtype().itemsize() == 0) {
        // A view of the bytes, which the deleter's copy of `owner` keeps alive (writable, as
        // LibTorch's tensors are: the owner's bytes are not const, parse_safetensors_in_place).
        t = at::from_blob(const_cast<char*>(data), e.shape, [owner](void*) {}, options);
      } else {
        t = at::empty(e.shape, options);
        if (e.end > e.begin) std::memcpy(t.data_ptr(), data, e.end - e.begin);
      }
      if (e.dtype->type == at::kBool) {
        // Any byte other than 0 / 1 is not a bool: reading it as one is undefined behaviour.
        const auto* p = reinterpret_cast<const unsigned char*>(buffer_begin + e.begin);
        for (std::uint64_t k = 0; k < e.end - e.begin; ++k) {
          if (p[k] > 1) {
            std::ostringstream msg;
            msg << "BOOL element " << k << " has byte value " << static_cast<int>(p[k])
                << ", expected 0 or 1";
            fail_tensor(e.name, msg.str());
          }
        }
      }
      out.tensors.emplace(e.name, std::move(t));
    }
    return out;
  }

 private:

  std::vector<Entry> parse_header(const char* begin, const char* end,
                                  std::map<std::string, std::string>& metadata) const {
    // nlohmann keeps the last of duplicate keys silently: a first pass over the header's events
    // finds them, at any depth (a tensor entry naming "dtype" twice, as the reference reader
    // refuses too). Not a parser callback: with one, nlohmann 3.11 scans each object's parent
    // again whenever the object closes, quadratic in the entries (a 1.2 MB header took 21 s).
    // nlohmann's reader takes a NUL byte for the end of its input: a header padded with NULs
    // (or cut by one) would read as the JSON before it. The format pads with spaces.
    if (const char* nul = std::find(begin, end, '\0'); nul != end) {
      fail("header holds a NUL byte at offset " + std::to_string(8 + (nul - begin)) +
           " (JSON has none; the format pads the header with spaces)");
    }
    DuplicateKeyFinder finder;
    if (!nlohmann::json::sax_parse(begin, end, &finder)) fail("header is not valid UTF-8 JSON");
    if (!finder.duplicate.empty()) {
      fail(finder.duplicate_entry.empty()
               ? "header names '" + finder.duplicate + "' twice"
               : "header's entry '" + finder.duplicate_entry + "' names '" + finder.duplicate +
                     "' twice");
    }
    const nlohmann::json header = nlohmann::json::parse(begin, end, nullptr, false);
    if (header.is_discarded()) fail("header is not valid UTF-8 JSON");
    if (!header.is_object()) fail("header is JSON but not an object {name: entry, ...}");

    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
      if (name == kMetadataKey) {
        if (!value.is_object()) fail("__metadata__ must be an object of strings");
        for (const auto& [key, text] : value.items()) {
          if (!text.is_string()) {
            fail("__metadata__ key '" + key + "' is " + json_excerpt(text) + ", expected a string");
          }
          metadata.emplace(key, text.get<std::string>());
        }
        continue;
      }
      entries.push_back(parse_entry(name, value));
    }
    return entries;
  }

  Entry parse_entry(const std::string& name, const nlohmann::json& value) const {
    if (!value.is_object()) {
      fail_tensor(name, "entry is " + json_excerpt(value) + ", expected {dtype, shape, data_offsets}");
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(field)) fail_tensor(name, std::string("entry has no '") + field + "'");
    }
    Entry e;
    e.name = name;
    const auto& dtype = value.at("dtype");
    if (!dtype.is_string() || (e.dtype = dtype_by_name(dtype.get<std::string>())) == nullptr) {
      fail_tensor(
          name, "dtype " + json_excerpt(dtype) + " is not one of F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL");
    }
    const auto& shape = value.at("shape");
    if (!shape.is_array()) fail_tensor(name, "shape " + json_excerpt(shape) + " is not an array");
    std::uint64_t numel = 1;
    constexpr auto kMaxDim = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    for (const auto& dim : shape) {
      if (!dim.is_number_unsigned() || dim.get<std::uint64_t>() > kMaxDim) {
        fail_tensor(name, "shape " + json_excerpt(shape) + " must hold non-negative integers");
      }
      const std::uint64_t d = dim.get<std::uint64_t>();
      if (d != 0 && numel > kMaxDim / d) fail_tensor(name, "shape " + json_excerpt(shape) + " overflows");
      numel *= d;
      e.shape.push_back(static_cast<std::int64_t>(d));
    }
    const auto& offsets = value.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      fail_tensor(name, "data_offsets " + json_excerpt(offsets) +
                            " must be [begin, end], two non-negative integers");
    }
    e.begin = offsets[0].get<std::uint64_t>();
    e.end = offsets[1].get<std::uint64_t>();
    std::ostringstream range_text;  // (not string +: GCC 12 warns falsely on it here)
    range_text << "[" << e.begin << ", " << e.end << "]";
    const std::string range = range_text.str();
    if (e.end < e.begin) fail_tensor(name, "data_offsets " + range + " end before begin");
    if (numel > kMaxDim / e.dtype->itemsize) {
      fail_tensor(name, "shape " + json_excerpt(shape) + " of " + std::string(e.dtype->name) +
                            " needs more than 2^63 bytes");
    }
    if (e.end - e.begin != numel * e.dtype->itemsize) {
      std::ostringstream msg;
      msg << "data_offsets " << range << " span " << e.end - e.begin << " bytes, expected numel "
          << numel << " x " << e.dtype->itemsize << " bytes of " << e.dtype->name << " = "
          << numel * e.dtype->itemsize << " (shape " << json_excerpt(shape) << ")";
      fail_tensor(name, msg.str());
    }
    return e;
  }

  // The ranges, sorted by begin, must tile [0, buffer_bytes): each begins where the previous
  // ended (an earlier begin is an overlap, a later one a hole) and the last ends at the file's end.
  void check_tiling(std::vector<Entry>& entries, std::uint64_t buffer_bytes) const {
    for (const Entry& e : entries) {
      if (e.end > buffer_bytes) {
        std::ostringstream msg;
        msg << "data_offsets [" << e.begin << ", " << e.end << "] run past the end of the "
            << buffer_bytes << "-byte data buffer";
        fail_tensor(e.name, msg.str());
      }
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t covered = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
      if (e.begin < covered) {
        std::ostringstream msg;
        msg << "data_offsets [" << e.begin << ", " << e.end << "] overlap tensor '"
            << printable(previous->name) << "' [" << previous->begin << ", " << previous->end << "]";
        fail_tensor(e.name, msg.str());
      }
      if (e.begin > covered) {
        std::ostringstream msg;
        msg << "data_offsets [" << e.begin << ", " << e.end << "] leave a hole: bytes [" << covered
            << ", " << e.begin << ") of the data buffer belong to no tensor";
        fail_tensor(e.name, msg.str());
      }
      covered = e.end;
      previous = &e;
    }
    if (covered != buffer_bytes) {
      std::ostringstream msg;
      msg << "data buffer is " << buffer_bytes << " bytes but the tensors cover only " << covered
          << " (trailing bytes belong to no tensor)";
      fail(msg.str());
    }
  }

  std::string source_;
};

// The format's first 8 bytes: the header's size, a little-endian u64.
std::string size_field(std::uint64_t header_size) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header_size >> (8 * i)) & 0xFF);
  return out;
}

std::vector<char> read_all(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw UserError("safetensors file '" + path + "' does not exist or is not a file");
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw UserError("cannot open safetensors file '" + path + "'");
  const std::streamoff size = in.tellg();
  std::vector<char> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(bytes.data(), size)) {
    throw UserError("cannot read safetensors file '" + path + "'");
  }
  return bytes;
}

void write_all(const std::string& path, const SafetensorsPieces& pieces) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError("cannot write safetensors file '" + path + "'");
  out.write(pieces.head.data(), static_cast<std::streamsize>(pieces.head.size()));
  for (const at::Tensor& t : pieces.data) {
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  }
  out.flush();
  if (!out) {
    const int error_number = errno;
    throw UserError("cannot write safetensors file '" + path + "': " +
                    (error_number != 0 ? std::strerror(error_number) : "disk full?"));
  }
}

}  // namespace

std::uint64_t SafetensorsPieces::size() const {
  std::uint64_t total = head.size();
  for (const at::Tensor& t : data) total += t.nbytes();
  return total;
}

SafetensorsPieces safetensors_pieces(const std::map<std::string, at::Tensor>& tensors,
                                     const std::map<std::string, std::string>& metadata,
                                     const std::string& target) {
  // The header in the reference writer's layout: compact JSON, __metadata__ first, padded with
  // spaces so that the buffer starts 8-byte aligned.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::vector<at::Tensor> data;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == kMetadataKey) {
      throw UserError("cannot write " + target +
                      ": '__metadata__' is reserved and cannot name a tensor");
    }
    if (!tensor.defined()) {
      throw UserError("cannot write " + target + ": tensor '" + name + "' is undefined");
    }
    const DtypeRow* dtype = dtype_by_type(tensor.scalar_type());
    if (dtype == nullptr) {
      std::ostringstream msg;
      msg << "cannot write " << target << ": tensor '" << name << "' has dtype "
          << tensor.scalar_type()
          << ", expected one of float64 float32 float16 bfloat16 int64 int32 int16 int8 uint8 "
             "bool";
      throw UserError(msg.str());
    }
    data.push_back(tensor.detach().to(at::kCPU).contiguous());
    const std::uint64_t bytes = data.back().nbytes();
    header[name] = {{"dtype", std::string(dtype->name)},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw UserError("cannot write " + target +
                    ": a tensor name or metadata string is not valid UTF-8 (" + json_error_text(e) +
                    ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string head = size_field(text.size());
  head += text;
  return SafetensorsPieces{std::move(head), std::move(data)};
}

SafetensorsFile read_safetensors(const std::string& path) {
  const std::vector<char> bytes = read_all(path);
  return parse_safetensors(std::string_view(bytes.data(), bytes.size()),
                           "safetensors file '" + path + "'");
}

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source) {
  return Reader(source).parse(bytes);
}

SafetensorsFile parse_safetensors_in_place(std::string_view bytes,
                                           std::shared_ptr<const void> owner,
                                           const std::string& source) {
  LPDT_CHECK(owner != nullptr, "parse_safetensors_in_place: no owner of the bytes");
  return Reader(source).parse(bytes, owner);
}

std::string safetensors_bytes(const std::map<std::string, at::Tensor>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              const std::string& target) {
  const SafetensorsPieces pieces = safetensors_pieces(tensors, metadata, target);
  std::string out;
  out.reserve(pieces.size());
  out += pieces.head;
  for (const at::Tensor& t : pieces.data) {
    out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const SafetensorsPieces pieces =
      safetensors_pieces(tensors, metadata, "safetensors file '" + path + "'");
  const std::string temporary = path + ".tmp";
  try {
    write_all(temporary, pieces);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(temporary, ec);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(temporary, ec);
    throw UserError("cannot replace safetensors file '" + path + "': " + why);
  }
}

}  // namespace lpdt::models
