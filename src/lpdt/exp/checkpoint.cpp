#include "lpdt/exp/checkpoint.h"

#include <fcntl.h>
#include <torch/serialize.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <limits>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>

#include "lpdt/build_info.h"
#include "lpdt/core/error.h"
#include "lpdt/core/file_text.h"
#include "lpdt/core/json_error_text.h"
#include "lpdt/exp/config_difference.h"
#include "lpdt/models/safetensors.h"

namespace lpdt::exp {
namespace fs = std::filesystem;
namespace {

// Where the JSON part starts: after the magic (8 bytes), the version (4) and its size (8).
constexpr std::size_t kJsonAt = 8 + 4 + 8;

constexpr std::array<char, 8> kMagic = {'L', 'P', 'D', 'T', 'C', 'K', 'P', 'T'};
// Version 2 holds the tensors as a safetensors section; version 1 held a LibTorch archive, still
// read (checkpoint.h).
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kVersionWithTorchArchive = 1;

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint64_t get_le(const std::string& in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  return v;
}

std::uint32_t crc_of(const char* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

// Writes every byte of `spans` in turn, then the CRC-32 of them all (a little-endian u32), and
// fsyncs, so that the rename that follows publishes a complete file. The bytes are checksummed
// and written a chunk at a time, each while it is still in cache, straight from where they are
// (the tensors' own memory): no copy of the whole file is made.
void write_synced(const fs::path& path, const std::vector<std::string_view>& spans) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw UserError("cannot write checkpoint '" + path.string() + "': " + std::strerror(errno));
  const auto write_bytes = [&](const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t w = ::write(fd, data + done, size - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw UserError("cannot write checkpoint '" + path.string() + "': " + why);
      }
      done += static_cast<std::size_t>(w);
    }
  };
  constexpr std::size_t kChunk = std::size_t{8} << 20;
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const std::string_view span : spans) {
    for (std::size_t at = 0; at < span.size(); at += kChunk) {
      const std::size_t size = std::min(kChunk, span.size() - at);
      crc = crc32(crc, reinterpret_cast<const Bytef*>(span.data() + at), static_cast<uInt>(size));
      write_bytes(span.data() + at, size);
    }
  }
  std::string trailer;
  put_u32(trailer, static_cast<std::uint32_t>(crc));
  write_bytes(trailer.data(), trailer.size());
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw UserError("cannot sync checkpoint '" + path.string() + "': " + why);
  }
  if (::close(fd) != 0) {
    throw UserError("cannot sync checkpoint '" + path.string() + "': " + std::strerror(errno));
  }
}

// The first line of a library's message, fit to quote: LibTorch's can run to a dozen lines of
// source excerpt holding the damaged bytes themselves.
std::string first_line(std::string_view message) {
  return printable_excerpt(message.substr(0, message.find('\n')), 200);
}

std::string corrupt(const fs::path& file, const std::string& what) {
  return "checkpoint '" + file.string() + "' is corrupt or truncated (" + what +
         "); resume from an intact copy or start the run again";
}

// The tensors of a checkpoint by name; a name the JSON part lists and the section lacks is a
// corrupt file.
struct TensorSection {
  std::function<at::Tensor(const std::string&)> get;
};

// Version 2: a safetensors section, read by the strict reader of pretrained weights
// (models/safetensors.h): every size checked against the bytes there are before anything is
// allocated. Its errors become the checkpoint's "corrupt" error.
TensorSection safetensors_section(std::string_view blob, std::shared_ptr<const void> owner,
                                  const fs::path& file) {
  auto tensors = std::make_shared<std::map<std::string, at::Tensor>>();
  try {
    *tensors =
        models::parse_safetensors_in_place(blob, std::move(owner), "tensor section").tensors;
  } catch (const UserError& e) {
    throw UserError(corrupt(file, e.what()));
  }
  return {[tensors, file](const std::string& name) {
    const auto it = tensors->find(name);
    if (it == tensors->end()) {
      throw UserError(corrupt(file, "no tensor '" + printable(name) + "' in the tensor section"));
    }
    return it->second;
  }};
}

// Version 1: a LibTorch archive (torch::serialize). Kept to resume runs checkpointed before
// version 2; LibTorch reads it by importing a TorchScript module, whose parser a damaged archive
// that still matches the checksum can crash, which is why version 2 does not use it.
TensorSection torch_archive_section(std::string_view blob) {
  auto archive = std::make_shared<torch::serialize::InputArchive>();
  archive->load_from(blob.data(), blob.size());
  return {[archive](const std::string& name) {
    at::Tensor t;
    archive->read(name, t);
    return t;
  }};
}

}  // namespace

void zero_node_rows(TrainingState& state, const std::set<std::int64_t>& nodes) {
  if (nodes.empty()) return;
  const std::int64_t n = state.params.size(0);
  for (const std::int64_t node : nodes) {
    LPDT_CHECK(node >= 0 && node < n, "zero_node_rows: node outside the checkpoint's nodes");
  }
  const at::Tensor rows = at::tensor(std::vector<std::int64_t>(nodes.begin(), nodes.end()));
  // Out of place: an in-process run's state holds its live training tensors, not copies.
  const auto zero_rows = [&](at::Tensor& t) {
    if (t.defined() && t.dim() >= 1 && t.size(0) == n) t = t.index_fill(0, rows.to(t.device()), 0);
  };
  zero_rows(state.params);
  for (at::Tensor& b : state.buffers) zero_rows(b);
  for (auto& [name, t] : state.optimizer) zero_rows(t);
}

void write_checkpoint(const fs::path& file, const TrainingState& state) {
  nlohmann::json meta;
  meta["epochs_done"] = state.epochs_done;
  meta["rounds_done"] = state.rounds_done;
  meta["train_time_s"] = state.train_time_s;
  meta["elapsed_s"] = state.elapsed_s;
  meta["ledger"] = state.ledger;
  meta["epochs"] = state.epochs;
  if (!state.fault_counts.is_null()) meta["fault_counts"] = state.fault_counts;
  meta["config"] = state.config;
  if (!state.data.is_null()) meta["data"] = state.data;
  meta["buffers"] = state.buffers.size();
  meta["build"] = {{"version", build_info::kVersion}, {"git_revision", build_info::kGitRevision}};
  std::vector<std::string> optimizer_names;
  std::map<std::string, at::Tensor> tensors = {{"params", state.params},
                                               {"torch_rng_state", state.torch_rng_state}};
  for (std::size_t i = 0; i < state.buffers.size(); ++i) {
    tensors.emplace("buffer." + std::to_string(i), state.buffers[i]);
  }
  for (const auto& [name, tensor] : state.optimizer) {
    optimizer_names.push_back(name);
    tensors.emplace("optimizer." + name, tensor);
  }
  meta["optimizer"] = optimizer_names;

  // Spaces after the JSON (which its parser skips) start the tensor section at a multiple of 64
  // bytes into the file, and so every tensor whose offset in the section is a multiple of its
  // element size at an address the reader can view in place.
  std::string json = meta.dump();
  json.append((64 - (kJsonAt + json.size() + 8) % 64) % 64, ' ');
  std::string target = "checkpoint '";  // (in steps: GCC 12 warns on `"'" + file.string()`)
  target += file.string();
  target += "'";
  // The tensor section is written from the tensors' own memory. Copied into one string first,
  // a 1,024-node LeNet-5 checkpoint (723 MiB) took 4.4-5.1 s to write against 0.4-1.6 s, and
  // raised the peak resident set by 2,170 MiB against 0.4 (docs/benchmarks.md, "Scaling with
  // the node count", 2026-11-29).
  const models::SafetensorsPieces blob = models::safetensors_pieces(tensors, {}, target);
  std::string head(kMagic.begin(), kMagic.end());
  put_u32(head, kVersion);
  put_u64(head, json.size());
  head += json;
  put_u64(head, blob.size());
  std::vector<std::string_view> spans = {head, blob.head};
  for (const at::Tensor& t : blob.data) {
    spans.emplace_back(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }

  fs::path temporary = file;
  temporary += ".tmp";
  // A write that fails (a full disk) leaves no partial file taking the space, and the last
  // complete checkpoint, if any, as it was.
  const auto remove_temporary = [&] {
    std::error_code ignored;
    if (fs::is_regular_file(temporary, ignored)) fs::remove(temporary, ignored);
  };
  const std::string kept = fs::exists(file) ? "; the previous checkpoint is kept" : "";
  try {
    write_synced(temporary, spans);
  } catch (const UserError& e) {
    remove_temporary();
    throw UserError(e.what() + kept);
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  if (ec) {
    remove_temporary();
    throw UserError("cannot replace checkpoint '" + file.string() + "': " + ec.message() + kept);
  }
  // Make the rename itself durable.
  const int dir = ::open(file.parent_path().empty() ? "." : file.parent_path().c_str(), O_RDONLY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

TrainingState read_checkpoint(const fs::path& file) {
  std::optional<std::string> text = read_file_text(file);
  if (!text) {
    throw UserError("no checkpoint '" + file.string() +
                    "': the run wrote none (it stopped before its first checkpoint, which "
                    "comes every run.checkpoint_every epochs, or ran with run.checkpoint_every "
                    "= 0), or the folder is not a run folder");
  }
  // Owned by a shared pointer: the tensors read from a version 2 file view these bytes in place
  // (the writer aligns them), until the run has copied them into its own state.
  // (Not a const string: the tensors are writable, as LibTorch tensors are.)
  const auto owned = std::make_shared<std::string>(std::move(*text));
  const std::string& bytes = *owned;
  constexpr std::size_t kFixed = kJsonAt;
  // Shorter than its magic: a write cut short (an empty file, most often), not another format.
  if (bytes.size() < kMagic.size()) {
    throw UserError(corrupt(file, std::to_string(bytes.size()) + " bytes"));
  }
  if (!std::equal(kMagic.begin(), kMagic.end(), bytes.begin())) {
    throw UserError("'" + file.string() + "' is not an lpdt checkpoint (no LPDTCKPT magic)");
  }
  if (bytes.size() < kFixed + 8 + 4) {
    throw UserError(corrupt(file, std::to_string(bytes.size()) + " bytes"));
  }
  // The checksum (the last 4 bytes in every version) first: a flipped bit in the version field
  // is a damaged file, not a newer format.
  const std::uint32_t stored_crc = static_cast<std::uint32_t>(get_le(bytes, bytes.size() - 4, 4));
  if (crc_of(bytes.data(), bytes.size() - 4) != stored_crc) {
    throw UserError(corrupt(file, "checksum mismatch"));
  }
  const auto version = static_cast<std::uint32_t>(get_le(bytes, 8, 4));
  if (version != kVersion && version != kVersionWithTorchArchive) {
    throw UserError("checkpoint '" + file.string() + "' has format version " +
                    std::to_string(version) + "; this lpdt reads versions " +
                    std::to_string(kVersionWithTorchArchive) + " and " + std::to_string(kVersion));
  }
  const std::uint64_t json_size = get_le(bytes, 12, 8);
  if (json_size > bytes.size() - kFixed - 8 - 4) throw UserError(corrupt(file, "bad JSON size"));
  const std::size_t blob_at = kFixed + json_size + 8;
  const std::uint64_t blob_size = get_le(bytes, kFixed + json_size, 8);
  if (blob_size != bytes.size() - blob_at - 4) throw UserError(corrupt(file, "bad tensor size"));

  TrainingState state;
  try {
    const nlohmann::json meta = nlohmann::json::parse(bytes.substr(kFixed, json_size));
    // Counters are whole numbers from 0: a fraction, a negative or an overflowing value would be
    // read as another count.
    const auto counter = [&](const char* key, std::int64_t most) {
      const nlohmann::json& value = meta.at(key);
      if (!value.is_number_integer() ||
          (value.is_number_unsigned() ? value.get<std::uint64_t>() > static_cast<std::uint64_t>(most)
                                      : value.get<std::int64_t>() < 0)) {
        throw UserError(corrupt(file, std::string(key) + " = " + value.dump() +
                                          " (expected a whole number from 0 to " +
                                          std::to_string(most) + ")"));
      }
      return value.get<std::int64_t>();
    };
    state.epochs_done = static_cast<int>(counter("epochs_done", std::numeric_limits<int>::max()));
    state.rounds_done = counter("rounds_done", std::numeric_limits<std::int64_t>::max());
    state.train_time_s = meta.at("train_time_s").get<double>();
    state.elapsed_s = meta.at("elapsed_s").get<double>();
    state.ledger = meta.at("ledger");
    state.epochs = meta.at("epochs");
    if (state.epochs.is_array() &&
        state.epochs.size() > static_cast<std::size_t>(state.epochs_done)) {
      throw UserError(corrupt(file, "an \"epochs\" record of more epochs than epochs_done = " +
                                        std::to_string(state.epochs_done)));
    }
    state.fault_counts = meta.value("fault_counts", nlohmann::json());
    // Times a run wrote are finite and not negative; others mark a damaged header, as does a
    // buffer count beyond any model's (it would be taken as an allocation request). (The
    // counters are checked against each other where the run is resumed.)
    constexpr std::size_t kMostBuffers = 1 << 20;
    if (!std::isfinite(state.train_time_s) || state.train_time_s < 0 ||
        !std::isfinite(state.elapsed_s) || state.elapsed_s < 0) {
      throw UserError(corrupt(file, "a negative or non-finite time"));
    }
    if (meta.at("buffers").get<std::size_t>() > kMostBuffers) {
      throw UserError(corrupt(file, meta.at("buffers").dump() + " buffers"));
    }
    state.config = meta.at("config");
    state.data = meta.value("data", nlohmann::json());
    const std::string_view blob(bytes.data() + blob_at, blob_size);
    const TensorSection tensors = version == kVersionWithTorchArchive
                                      ? torch_archive_section(blob)
                                      : safetensors_section(blob, owned, file);
    state.params = tensors.get("params");
    const auto buffers = meta.at("buffers").get<std::size_t>();
    state.buffers.resize(buffers);
    for (std::size_t i = 0; i < buffers; ++i) {
      state.buffers[i] = tensors.get("buffer." + std::to_string(i));
    }
    for (const auto& name : meta.at("optimizer")) {
      state.optimizer.emplace(name.get<std::string>(),
                              tensors.get("optimizer." + name.get<std::string>()));
    }
    state.torch_rng_state = tensors.get("torch_rng_state");
  } catch (const nlohmann::json::exception& e) {
    throw UserError(corrupt(file, json_error_text(e)));
  } catch (const c10::Error& e) {
    throw UserError(corrupt(file, first_line(e.what_without_backtrace())));
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    // LibTorch's archive reader has errors of its own beside c10::Error: TorchScript's parser
    // (torch::jit::ErrorReport, "Unexpected token in code import") for a damaged record of the
    // archive, and std::bad_alloc for a size a damaged record claims.
    throw UserError(corrupt(file, first_line(e.what())));
  }
  return state;
}

void check_resumable(const nlohmann::json& saved, const nlohmann::json& now, const fs::path& file,
                     bool data_checked) {
  std::set<std::string> may_change = {"run.epochs",           "run.log_every", "run.threads",
                                      "run.eval_every",       "run.checkpoint_every",
                                      "run.out_dir",          "run.name",
                                      "run.receive_timeout_s"};
  if (data_checked) may_change.insert({"data.dir", "data.vocab"});
  std::ostringstream problems;
  int count = 0;
  for (const ConfigDifference& d : config_differences(now, saved, may_change)) {
    problems << (count++ ? "; " : "") << d.key << " = " << d.theirs << " in "
             << file.filename().string() << ", " << d.ours << " now";
  }
  if (count > 0) {
    throw ConfigError("cannot resume from '" + file.string() + "': " + problems.str() +
                      ". A resumed run must be the same experiment; only run.epochs, "
                      "run.eval_every, run.checkpoint_every, run.log_every, run.threads and "
                      "run.receive_timeout_s may change" +
                      std::string(data_checked ? ", and the paths data.dir and data.vocab (the "
                                                 "data read is checked against the checkpoint's)"
                                               : ""));
  }
}

}  // namespace lpdt::exp
