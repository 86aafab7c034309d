// safetensors reader and writer: round trips, files written byte for byte from the format's
// description (so the reader is checked against the format, not only against our writer), and one
// clear error per rule the format sets.
#include "lpdt/models/safetensors.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt::models {
namespace {

using Bytes = std::vector<std::uint8_t>;

// A fresh folder under the system temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("lpdt_safetensors_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// u64 little-endian header size N (given, so that bad sizes can be written), header, buffer.
Bytes file_bytes(std::uint64_t header_size, const std::string& header, const Bytes& buffer) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(header_size >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}
Bytes file_bytes(const std::string& header, const Bytes& buffer) {
  return file_bytes(header.size(), header, buffer);
}

TEST(Safetensors, RoundTripOfEveryDtype) {
  TempDir dir;
  torch::manual_seed(7);
  std::map<std::string, torch::Tensor> tensors = {
      {"f64", torch::randn({3, 4}, torch::kDouble)},
      {"f32", torch::randn({2, 3, 5})},
      {"f16", torch::randn({7}).to(torch::kHalf)},
      {"bf16", torch::randn({2, 9}).to(torch::kBFloat16)},
      {"i64", torch::randint(-(1LL << 62), 1LL << 62, {6}, torch::kLong)},
      {"i32", torch::randint(-(1LL << 31), (1LL << 31) - 1, {2, 2}, torch::kInt)},
      {"i16", torch::randint(-32768, 32767, {5}, torch::kShort)},
      {"i8", torch::randint(-128, 127, {3, 1}, torch::kChar)},
      {"u8", torch::randint(0, 255, {11}, torch::kByte)},
      {"bool", torch::randint(0, 2, {4, 3}).to(torch::kBool)},
      {"scalar", torch::tensor(3.5f).reshape({})},
      {"empty", torch::zeros({0, 4})},
      {"strided", torch::randn({4, 6}).t()},  // written contiguous
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"source", "test"}};
  const std::string path = dir.file("all.safetensors");
  write_safetensors(path, tensors, metadata);

  // The header is padded with spaces to a multiple of 8 (the reference writer's alignment).
  const Bytes bytes = read_bytes(path);
  ASSERT_GE(bytes.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.metadata, metadata);
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (const auto& [name, expected] : tensors) {
    SCOPED_TRACE(name);
    const auto& got = file.tensors.at(name);
    EXPECT_EQ(got.scalar_type(), expected.scalar_type());
    EXPECT_EQ(got.sizes(), expected.sizes());
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(torch::equal(got, expected));
  }
}

// Every value's bytes written by hand from the format's description (little-endian):
//   F32 1.0 = 00 00 80 3f, -2.5 = 00 00 20 c0; I16 258 = 02 01, -1 = ff ff;
//   F16 1.0 = 00 3c; BF16 -2.0 = 00 c0; U8 200; BOOL 1 0.
// The header lists "b" before "a" and the buffer holds them in the other order, with spaces
// around the JSON: the reader must go by data_offsets, not by order.
// In place: the tensors whose data is aligned view the owner's bytes (no copy), equal to the
// copied ones, and stay readable after every other reference to the bytes is gone; bytes that
// start one byte off their alignment are copied instead, with the same values.
TEST(Safetensors, InPlaceTensorsViewTheBytesWhereAligned) {
  torch::manual_seed(4);
  const std::map<std::string, at::Tensor> tensors = {
      {"a", torch::randn({5, 8})},  // 160 bytes: b and c start 8-byte aligned too
      {"b", torch::randint(-1000, 1000, {3}, torch::kLong)},
      {"c", torch::randn({4}, torch::kDouble)}};
  const std::string file = safetensors_bytes(tensors, {}, "test bytes");
  auto owned = std::make_shared<std::string>(file);
  const std::string_view view(*owned);
  const char* begin = owned->data();
  const char* end = begin + owned->size();
  SafetensorsFile in_place = parse_safetensors_in_place(view, owned, "in place");
  const auto inside = [&](const at::Tensor& t) {
    const auto* p = static_cast<const char*>(t.data_ptr());
    return p >= begin && p < end;
  };
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(in_place.tensors.count(name)) << name;
    EXPECT_TRUE(inside(in_place.tensors.at(name))) << name << " was copied";
    EXPECT_TRUE(torch::equal(in_place.tensors.at(name), t)) << name;
  }
  owned.reset();  // the tensors' deleters keep the bytes alive
  for (const auto& [name, t] : tensors) {
    EXPECT_TRUE(torch::equal(in_place.tensors.at(name), t)) << name << " after the owner went";
  }
  // One byte off: every multi-byte tensor is misaligned, so copied.
  auto shifted = std::make_shared<std::string>(" " + file);
  const std::string_view off(shifted->data() + 1, file.size());
  const SafetensorsFile copied = parse_safetensors_in_place(off, shifted, "one byte off");
  for (const auto& [name, t] : tensors) {
    const auto* p = static_cast<const char*>(copied.tensors.at(name).data_ptr());
    EXPECT_FALSE(p >= shifted->data() && p < shifted->data() + shifted->size()) << name;
    EXPECT_TRUE(torch::equal(copied.tensors.at(name), t)) << name;
  }
}

TEST(Safetensors, ReadsAFileWrittenByHand) {
  TempDir dir;
  const std::string header =
      R"( {"b": {"dtype": "I16", "shape": [1, 2], "data_offsets": [8, 12]},)"
      R"( "__metadata__": {"format": "pt"},)"
      R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
      R"( "h": {"dtype": "F16", "shape": [], "data_offsets": [12, 14]},)"
      R"( "g": {"dtype": "BF16", "shape": [1], "data_offsets": [14, 16]},)"
      R"( "u": {"dtype": "U8", "shape": [1], "data_offsets": [16, 17]},)"
      R"( "z": {"dtype": "F64", "shape": [0, 3], "data_offsets": [17, 17]},)"
      R"( "t": {"dtype": "BOOL", "shape": [2], "data_offsets": [17, 19]}}  )";
  const Bytes buffer = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0,  // a
                        0x02, 0x01, 0xff, 0xff,                          // b
                        0x00, 0x3c,                                      // h
                        0x00, 0xc0,                                      // g
                        200,                                             // u
                        0x01, 0x00};                                     // t
  const std::string path = dir.file("hand.safetensors");
  write_bytes(path, file_bytes(header, buffer));
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(file.tensors.size(), 7u);
  EXPECT_TRUE(torch::equal(file.tensors.at("a"), torch::tensor({1.0f, -2.5f})));
  EXPECT_TRUE(
      torch::equal(file.tensors.at("b"), torch::tensor({258, -1}, torch::kShort).reshape({1, 2})));
  EXPECT_EQ(file.tensors.at("h").scalar_type(), torch::kHalf);
  EXPECT_EQ(file.tensors.at("h").dim(), 0);
  EXPECT_EQ(file.tensors.at("h").item<float>(), 1.0f);
  EXPECT_EQ(file.tensors.at("g").scalar_type(), torch::kBFloat16);
  EXPECT_EQ(file.tensors.at("g").item<float>(), -2.0f);
  EXPECT_EQ(file.tensors.at("u").item<std::uint8_t>(), 200);
  EXPECT_EQ(file.tensors.at("z").sizes(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(file.tensors.at("z").scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::equal(file.tensors.at("t"), torch::tensor({true, false})));
}

// The writer's bytes for a known input, byte for byte: compact JSON, __metadata__ first, names in
// order, header padded with spaces to a multiple of 8, then the buffer.
TEST(Safetensors, WritesTheReferenceLayout) {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  write_safetensors(
      path, {{"b", torch::tensor({258, -1}, torch::kShort)}, {"a", torch::tensor({1.0f, -2.5f})}},
      {{"format", "pt"}});
  std::string header = R"({"__metadata__":{"format":"pt"},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"I16","shape":[2],"data_offsets":[8,12]}})";
  ASSERT_EQ(header.size(), 139u);
  header += "     ";  // 139 -> 144
  const Bytes expected =
      file_bytes(header, {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0, 0x02, 0x01, 0xff, 0xff});
  EXPECT_EQ(read_bytes(path), expected);

  // No metadata: no __metadata__ key. 54 bytes of JSON -> 56.
  write_safetensors(path, {{"a", torch::tensor({1.0f, -2.5f})}});
  const std::string plain = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(plain.size(), 54u);
  EXPECT_EQ(read_bytes(path),
            file_bytes(plain + "  ", {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0}));
}

// A failed write leaves the file that was there untouched.
TEST(Safetensors, WriteErrorsKeepTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  write_safetensors(path, {{"a", torch::ones({3})}});
  const Bytes before = read_bytes(path);
  const auto expect_error = [&](const std::map<std::string, torch::Tensor>& tensors,
                                const std::string& needle) {
    try {
      write_safetensors(path, tensors);
      ADD_FAILURE() << "no UserError for " << needle;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_bytes(path), before);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  };
  expect_error({{"c", torch::ones({2}, torch::kComplexFloat)}}, "'c' has dtype");
  expect_error({{"__metadata__", torch::ones({2})}}, "reserved");
  expect_error({{"u", torch::Tensor()}}, "'u' is undefined");
  EXPECT_THROW(write_safetensors(dir.file("no/such/folder/x.safetensors"), {{"a", torch::ones(1)}}),
               UserError);
}

struct Malformed {
  std::string what;
  Bytes bytes;
  std::string needle;  // a part of the expected message
};

TEST(Safetensors, EveryMalformedFileNamesItsProblem) {
  const auto f32_2 = [](const std::string& offsets) {
    return R"({"dtype": "F32", "shape": [2], "data_offsets": )" + offsets + "}";
  };
  const Bytes eight(8, 0);
  const std::string good = R"({"a": )" + f32_2("[0, 8]") + "}";
  // Values nested deeper than any recursion could print (a stack overflow, before).
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  const std::vector<Malformed> cases = {
      {"short file", {1, 2, 3}, "too short for the 8-byte header size"},
      {"deeply nested shape",
       file_bytes(R"({"a": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 8]}})",
                  eight),
       "tensor 'a': shape [[[[[[[[[...]]]]]]]]] must hold non-negative integers"},
      {"deeply nested metadata",
       file_bytes(R"({"__metadata__": {"x": )" + deep + R"(}, "a": )" + f32_2("[0, 8]") + "}",
                  eight),
       "__metadata__ key 'x' is [[[[[[[[[...]]]]]]]]], expected a string"},
      {"long value cut",
       file_bytes(R"({"a": {"dtype": ")" + std::string(500, 'x') +
                      R"(", "shape": [2], "data_offsets": [0, 8]}})",
                  eight),
       "tensor 'a': dtype \"" + std::string(59, 'x') + "... is not one of"},
      {"size beyond 2^63 bytes",
       file_bytes(R"({"a": {"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 8]}})",
                  eight),
       "tensor 'a': shape [4611686018427387904] of F32 needs more than 2^63 bytes"},
      {"huge header size", file_bytes(100'000'000, good, eight), "expected less than 100000000"},
      {"header past the end", file_bytes(good.size() + 9, good, eight), "runs past the end"},
      {"not JSON", file_bytes("{\"a\": ", eight), "not valid UTF-8 JSON"},
      {"invalid UTF-8", file_bytes("{\"\xff\": 1}", eight), "not valid UTF-8 JSON"},
      {"array header", file_bytes("[1, 2]", eight), "not an object"},
      {"entry not an object", file_bytes(R"({"a": 3})", eight), "tensor 'a': entry is 3"},
      {"no dtype", file_bytes(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", eight),
       "tensor 'a': entry has no 'dtype'"},
      {"no shape", file_bytes(R"({"a": {"dtype": "F32", "data_offsets": [0, 8]}})", eight),
       "tensor 'a': entry has no 'shape'"},
      {"no data_offsets", file_bytes(R"({"a": {"dtype": "F32", "shape": [2]}})", eight),
       "tensor 'a': entry has no 'data_offsets'"},
      {"unknown dtype",
       file_bytes(R"({"a": {"dtype": "F8", "shape": [8], "data_offsets": [0, 8]}})", eight),
       "tensor 'a': dtype \"F8\" is not one of"},
      {"negative dim",
       file_bytes(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", eight),
       "non-negative integers"},
      {"offsets not a pair", file_bytes(R"({"a": )" + f32_2("[0]") + "}", eight),
       "tensor 'a': data_offsets [0] must be [begin, end]"},
      {"end before begin", file_bytes(R"({"a": )" + f32_2("[8, 0]") + "}", eight),
       "end before begin"},
      {"wrong span", file_bytes(R"({"a": )" + f32_2("[0, 6]") + "}", eight),
       "tensor 'a': data_offsets [0, 6] span 6 bytes, expected numel 2 x 4 bytes of F32 = 8"},
      {"past the buffer", file_bytes(R"({"a": )" + f32_2("[4, 12]") + "}", eight),
       "tensor 'a': data_offsets [4, 12] run past the end of the 8-byte data buffer"},
      {"overlap",
       file_bytes(R"({"a": )" + f32_2("[0, 8]") + R"(, "b": )" + f32_2("[4, 12]") + "}",
                  Bytes(12, 0)),
       "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"},
      {"hole",
       file_bytes(R"({"a": )" + f32_2("[0, 8]") + R"(, "b": )" + f32_2("[10, 18]") + "}",
                  Bytes(18, 0)),
       "tensor 'b': data_offsets [10, 18] leave a hole: bytes [8, 10)"},
      {"hole at the start", file_bytes(R"({"a": )" + f32_2("[2, 10]") + "}", Bytes(10, 0)),
       "leave a hole: bytes [0, 2)"},
      {"trailing bytes", file_bytes(good, Bytes(9, 0)), "trailing bytes belong to no tensor"},
      {"duplicate name",
       file_bytes(R"({"a": )" + f32_2("[0, 8]") + R"(, "a": )" + f32_2("[0, 8]") + "}", eight),
       "header names 'a' twice"},
      {"padded with NUL bytes",
       file_bytes(R"({"a": )" + f32_2("[0, 8]") + std::string("}\0\0\0", 4), eight),
       "header holds a NUL byte at offset"},
      {"duplicate field of an entry",
       file_bytes(R"({"a": {"dtype": "F16", "dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                  eight),
       "header's entry 'a' names 'dtype' twice"},
      {"metadata not strings",
       file_bytes(R"({"__metadata__": {"epoch": 3}, "a": )" + f32_2("[0, 8]") + "}", eight),
       "__metadata__ key 'epoch' is 3, expected a string"},
      {"bool byte",
       file_bytes(R"({"t": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}})", {1, 2}),
       "tensor 't': BOOL element 1 has byte value 2, expected 0 or 1"},
  };
  TempDir dir;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE(c.what);
    const std::string path = dir.file("bad" + std::to_string(k) + ".safetensors");
    write_bytes(path, c.bytes);
    try {
      read_safetensors(path);
      ADD_FAILURE() << "no UserError";
    } catch (const UserError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(c.needle), std::string::npos) << message;
      EXPECT_NE(message.find("safetensors file '" + path + "'"), std::string::npos) << message;
    }
  }
  // The good file of the same shape reads.
  const std::string path = dir.file("good.safetensors");
  write_bytes(path, file_bytes(good, eight));
  EXPECT_EQ(read_safetensors(path).tensors.at("a").numel(), 2);
  EXPECT_THROW(read_safetensors(dir.file("missing.safetensors")), UserError);
}

}  // namespace
}  // namespace lpdt::models
