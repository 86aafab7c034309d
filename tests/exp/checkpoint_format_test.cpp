// The checkpoint file's format (exp/checkpoint.h): version 2 keeps every tensor bit for bit in
// a safetensors section; version 1 files (a LibTorch archive, written before version 2) are
// still read; the JSON part naming a tensor the section lacks is a corrupt file.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/exp/checkpoint.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The state tests/exp/fixtures/checkpoint_v1.lpdt was written from (by the version 1 writer).
TrainingState fixture_state() {
  TrainingState state;
  state.epochs_done = 2;
  state.rounds_done = 40;
  state.train_time_s = 1.5;
  state.elapsed_s = 2.25;
  state.params = torch::arange(21, torch::kFloat).reshape({3, 7}) * 0.5;
  state.buffers = {torch::arange(6, torch::kFloat).reshape({3, 2}), torch::arange(3, torch::kLong)};
  state.optimizer = {{"momentum", torch::full({3, 7}, 0.25)},
                     {"ps_weight", torch::ones({3}, torch::kDouble)}};
  state.torch_rng_state = torch::arange(16, torch::kByte);
  state.ledger = {{"bytes_sent", {1, 2, 3}}};
  state.epochs = nlohmann::json::array({{{"epoch", 1}}, {{"epoch", 2}}});
  state.config = {{"run", {{"epochs", 4}}}};
  return state;
}

void expect_same_tensor(const at::Tensor& got, const at::Tensor& expected,
                        const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.scalar_type(), expected.scalar_type());
  EXPECT_EQ(got.sizes(), expected.sizes());
  EXPECT_TRUE(torch::equal(got, expected));
}

void expect_same_state(const TrainingState& got, const TrainingState& expected) {
  EXPECT_EQ(got.epochs_done, expected.epochs_done);
  EXPECT_EQ(got.rounds_done, expected.rounds_done);
  EXPECT_EQ(got.train_time_s, expected.train_time_s);
  EXPECT_EQ(got.elapsed_s, expected.elapsed_s);
  EXPECT_EQ(got.ledger, expected.ledger);
  EXPECT_EQ(got.epochs, expected.epochs);
  EXPECT_EQ(got.config, expected.config);
  expect_same_tensor(got.params, expected.params, "params");
  ASSERT_EQ(got.buffers.size(), expected.buffers.size());
  for (std::size_t i = 0; i < expected.buffers.size(); ++i) {
    expect_same_tensor(got.buffers[i], expected.buffers[i], "buffer " + std::to_string(i));
  }
  ASSERT_EQ(got.optimizer.size(), expected.optimizer.size());
  for (const auto& [name, tensor] : expected.optimizer) {
    ASSERT_TRUE(got.optimizer.count(name)) << name;
    expect_same_tensor(got.optimizer.at(name), tensor, name);
  }
  expect_same_tensor(got.torch_rng_state, expected.torch_rng_state, "torch_rng_state");
}

class CheckpointFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lpdt_checkpoint_format_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CheckpointFormat, Version1CheckpointsAreStillRead) {
  const fs::path fixture = fs::path(LPDT_SOURCE_DIR) / "tests/exp/fixtures/checkpoint_v1.lpdt";
  const std::string bytes = read_all(fixture);
  ASSERT_GT(bytes.size(), 12u) << fixture;
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), 1) << "the fixture is a version 1 file";
  expect_same_state(read_checkpoint(fixture), fixture_state());
}

TEST_F(CheckpointFormat, Version2KeepsEveryTensorBitForBit) {
  TrainingState state = fixture_state();
  torch::manual_seed(11);
  state.params = torch::randn({4, 9});
  state.buffers = {torch::randn({4, 3}, torch::kDouble), torch::randint(0, 1000, {4}, torch::kLong),
                   torch::randn({4, 2}).to(torch::kBFloat16), torch::rand({4}) > 0.5};
  state.optimizer = {{"momentum", torch::randn({4, 9})}, {"ps_weight", torch::rand({4})}};
  state.torch_rng_state = torch::randint(0, 256, {5056}, torch::kByte);
  const fs::path file = dir_ / kCheckpointFile;
  write_checkpoint(file, state);
  const std::string bytes = read_all(file);
  ASSERT_GT(bytes.size(), 12u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), 2);
  EXPECT_EQ(bytes.find("PK\x03\x04"), std::string::npos) << "no LibTorch (zip) archive";
  expect_same_state(read_checkpoint(file), state);
}

// The tensor section starts at a multiple of 64 bytes into the file (spaces pad the JSON part),
// so a read views the tensors in the file's bytes instead of copying them: they lie within one
// buffer of the file's size, each aligned to its element size.
TEST_F(CheckpointFormat, TheTensorSectionIsAlignedAndReadInPlace) {
  TrainingState state = fixture_state();
  torch::manual_seed(13);
  for (const std::int64_t width : {1, 5, 63, 64, 1000}) {  // JSON parts of other lengths
    state.params = torch::randn({3, width});
    state.optimizer["momentum"] = torch::randn({3, width});
    state.epochs = nlohmann::json::array({{{"epoch", width}}});
    const fs::path file = dir_ / kCheckpointFile;
    write_checkpoint(file, state);
    const std::string bytes = read_all(file);
    std::uint64_t json_size = 0;
    for (int i = 0; i < 8; ++i) {
      json_size |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[12 + i])) << (8 * i);
    }
    EXPECT_EQ((20 + json_size + 8) % 64, 0u) << width;
    const TrainingState read = read_checkpoint(file);
    expect_same_state(read, state);
    const auto* a = static_cast<const char*>(read.params.data_ptr());
    const auto* b = static_cast<const char*>(read.optimizer.at("momentum").data_ptr());
    EXPECT_LT(static_cast<std::size_t>(std::abs(a - b)), bytes.size()) << width << ": not one buffer";
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % read.params.element_size(), 0u) << width;
  }
}

// The writer checksums and writes each tensor 8 MiB at a time straight from its memory: a
// tensor of several chunks and a partial last one, between small ones, reads back bit for bit
// (the reader checks the CRC over the whole file), and a byte flipped in its third chunk is
// found.
TEST_F(CheckpointFormat, TensorsLongerThanAWriteChunkRoundTrip) {
  TrainingState state = fixture_state();
  torch::manual_seed(12);
  state.params = torch::randn({3, 2'000'003});  // 22.9 MiB: two whole 8 MiB chunks and a part
  state.optimizer["momentum"] = torch::randn({3, 2'000'003});
  const fs::path file = dir_ / kCheckpointFile;
  write_checkpoint(file, state);
  expect_same_state(read_checkpoint(file), state);
  std::string bytes = read_all(file);
  ASSERT_GT(bytes.size(), 45u << 20);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  write_all(file, bytes);
  EXPECT_THROW(
      {
        try {
          read_checkpoint(file);
        } catch (const UserError& e) {
          EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos)
              << e.what();
          throw;
        }
      },
      UserError);
}

// A JSON part naming an optimizer tensor the tensor section does not hold (the name changed in
// the JSON, the checksum written again): a corrupt checkpoint, naming the tensor.
TEST_F(CheckpointFormat, ATensorTheSectionLacksIsNamed) {
  const fs::path file = dir_ / kCheckpointFile;
  write_checkpoint(file, fixture_state());
  std::string bytes = read_all(file);
  const std::size_t at = bytes.find("\"momentum\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 10, "\"momentun\"");  // same length: the sizes stay valid
  bytes.resize(bytes.size() - 4);
  const auto crc = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                                    reinterpret_cast<const Bytef*>(bytes.data()),
                                                    static_cast<uInt>(bytes.size())));
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(crc >> (8 * i)));
  write_all(file, bytes);
  try {
    read_checkpoint(file);
    FAIL() << "read a checkpoint lacking a tensor";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no tensor 'optimizer.momentun' in the tensor section"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;
    EXPECT_NE(message.find("corrupt"), std::string::npos) << message;
  }
}

// A dead node's rows (docs/results.md): exactly the named rows of every [n, ...] tensor become
// zeros, whatever their dtype, in copies; other rows, 0-d tensors and tensors of another length
// stay, and the tensors the state held before are not written to.
TEST(CheckpointRows, ZeroNodeRowsZeroesExactlyTheNamedNodesRows) {
  torch::manual_seed(5);
  TrainingState state;
  state.params = torch::randn({5, 6}) + 10;  // no zero anywhere
  state.buffers = {torch::randint(1, 100, {5, 2, 3}, torch::kLong), torch::randn({3, 2}) + 10};
  state.optimizer = {{"momentum", torch::randn({5, 6}) + 10},
                     {"rounds", torch::tensor(7, torch::kLong)},
                     {"ps", torch::rand({5}, torch::kDouble) + 1}};
  TrainingState before = state;
  before.params = state.params.clone();
  for (auto& b : before.buffers) b = b.clone();
  for (auto& [name, t] : before.optimizer) t = t.clone();

  const std::set<std::int64_t> dead{1, 4};
  const at::Tensor live_params = state.params;  // an in-process run's live tensors
  const at::Tensor live_momentum = state.optimizer.at("momentum");
  zero_node_rows(state, dead);
  EXPECT_TRUE(torch::equal(live_params, before.params)) << "the live parameters were written to";
  EXPECT_TRUE(torch::equal(live_momentum, before.optimizer.at("momentum")))
      << "the live momentum was written to";
  const auto check_rows = [&](const at::Tensor& got, const at::Tensor& was,
                              const std::string& what) {
    SCOPED_TRACE(what);
    for (std::int64_t r = 0; r < got.size(0); ++r) {
      if (dead.count(r)) {
        EXPECT_EQ(got[r].count_nonzero().item<std::int64_t>(), 0) << "row " << r;
      } else {
        EXPECT_TRUE(torch::equal(got[r], was[r])) << "row " << r;
      }
    }
  };
  check_rows(state.params, before.params, "params");
  check_rows(state.buffers[0], before.buffers[0], "buffer 0");
  EXPECT_TRUE(torch::equal(state.buffers[1], before.buffers[1]))
      << "a [3, 2] buffer is not per node";
  check_rows(state.optimizer.at("momentum"), before.optimizer.at("momentum"), "momentum");
  check_rows(state.optimizer.at("ps"), before.optimizer.at("ps"), "ps");
  EXPECT_EQ(state.optimizer.at("rounds").item<std::int64_t>(), 7);

  zero_node_rows(state, {});  // nothing dead: nothing changes
  check_rows(state.params, before.params, "params after an empty set");
  EXPECT_THROW(zero_node_rows(state, {5}), std::exception) << "node 5 of 5";
}

}  // namespace
}  // namespace lpdt::exp
