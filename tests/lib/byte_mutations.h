#pragma once
// Damaged copies of valid files, for the readers' tests: every reader of a user's file (datasets,
// pretrained weights, checkpoints, configurations) must either read a damaged copy or refuse it
// with a UserError that names the problem; never crash, hang, allocate what the file only claims,
// or throw another exception (a LibTorch c10::Error, a JSON parser's exception, std::bad_alloc,
// an internal error). The damage is seeded, so a failure names the seed and trial that reproduce
// it; run under AddressSanitizer (docs/testing.md) the same tests also check memory safety.
//
// The mutations are those that find bugs in readers of length-prefixed and text formats: a bit
// flipped; a byte set to 0x00, 0xFF, 0x7F, 0x80 or a random value; the file cut short; a span
// deleted, repeated or replaced by random bytes; bytes of the file itself inserted elsewhere (for
// text formats: quotes, commas, brackets and newlines of the format's own alphabet); and 2, 4 or
// 8 bytes overwritten by an extreme integer in either byte order (the size fields).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt::mutation_testing {

using Bytes = std::vector<std::uint8_t>;

struct DamagedCopy {
  Bytes bytes;
  std::string damage;  // what was done, e.g. "bit 3 of byte 17 flipped; cut to 40 bytes"
};

// One to three mutations of `valid`, drawn from `rng`.
inline DamagedCopy damaged_copy(const Bytes& valid, std::mt19937_64& rng) {
  DamagedCopy copy{valid, ""};
  Bytes& b = copy.bytes;
  const auto below = [&](std::size_t n) { return n == 0 ? std::size_t{0} : rng() % n; };
  const int count = 1 + static_cast<int>(rng() % 3);
  for (int m = 0; m < count; ++m) {
    if (!copy.damage.empty()) copy.damage += "; ";
    const std::size_t at = below(b.size());
    switch (rng() % 9) {
      case 0: {
        if (b.empty()) break;
        const int bit = static_cast<int>(rng() % 8);
        b[at] ^= static_cast<std::uint8_t>(1u << bit);
        copy.damage += "bit " + std::to_string(bit) + " of byte " + std::to_string(at) + " flipped";
        break;
      }
      case 1: {
        if (b.empty()) break;
        static constexpr std::uint8_t kValues[] = {0x00, 0xFF, 0x7F, 0x80};
        const std::uint8_t value =
            rng() % 5 == 4 ? static_cast<std::uint8_t>(rng()) : kValues[rng() % 4];
        b[at] = value;
        copy.damage += "byte " + std::to_string(at) + " set to " + std::to_string(value);
        break;
      }
      case 2: {
        // Cuts near the end are the commonest damage (an interrupted copy).
        const std::size_t keep =
            rng() % 2 ? at : b.size() - below(std::min<std::size_t>(b.size(), 16));
        b.resize(keep);
        copy.damage += "cut to " + std::to_string(keep) + " bytes";
        break;
      }
      case 3: {
        const std::size_t length = std::min(b.size() - at, 1 + below(32));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                b.begin() + static_cast<std::ptrdiff_t>(at + length));
        copy.damage += std::to_string(length) + " bytes deleted at " + std::to_string(at);
        break;
      }
      case 4: {
        const std::size_t length = std::min(b.size() - at, 1 + below(32));
        const Bytes span(b.begin() + static_cast<std::ptrdiff_t>(at),
                         b.begin() + static_cast<std::ptrdiff_t>(at + length));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), span.begin(), span.end());
        copy.damage += std::to_string(length) + " bytes repeated at " + std::to_string(at);
        break;
      }
      case 5: {
        const std::size_t length = std::min(b.size() - at, 1 + below(16));
        for (std::size_t i = 0; i < length; ++i) b[at + i] = static_cast<std::uint8_t>(rng());
        copy.damage += std::to_string(length) + " random bytes at " + std::to_string(at);
        break;
      }
      case 6:
      case 7: {
        // A byte of the file itself inserted elsewhere: a quote, a comma, a bracket, a newline in
        // a text format; a marker byte in a binary one.
        if (b.empty()) break;
        const std::uint8_t value = b[below(b.size())];
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(below(b.size() + 1)), value);
        copy.damage += "byte " + std::to_string(value) + " inserted";
        break;
      }
      case 8: {
        static constexpr std::uint64_t kExtremes[] = {0,
                                                      1,
                                                      0x7F,
                                                      0xFF,
                                                      0x7FFF,
                                                      0xFFFF,
                                                      0x7FFFFFFF,
                                                      0x80000000,
                                                      0xFFFFFFFF,
                                                      0x7FFFFFFFFFFFFFFFull,
                                                      0xFFFFFFFFFFFFFFFFull,
                                                      0x100000000ull};
        const std::size_t width = std::size_t{2} << (rng() % 3);  // 2, 4 or 8 bytes
        if (b.size() < width) break;
        const std::size_t where = below(b.size() - width + 1);
        const std::uint64_t value = kExtremes[rng() % std::size(kExtremes)];
        const bool big_endian = rng() % 2 == 1;
        for (std::size_t i = 0; i < width; ++i) {
          const std::size_t shift = 8 * (big_endian ? width - 1 - i : i);
          b[where + i] = static_cast<std::uint8_t>(value >> shift);
        }
        copy.damage += std::to_string(width) + " bytes at " + std::to_string(where) + " set to " +
                       std::to_string(value) + (big_endian ? " (big-endian)" : " (little-endian)");
        break;
      }
    }
  }
  return copy;
}

// A file's bytes (empty for a file that cannot be read: the test's own copy, which exists).
inline Bytes read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes{std::istreambuf_iterator<char>(in), {}};
}

// Replaces `path` with `bytes`.
inline void write_file_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// LPDT_DAMAGE_TRIAL_FACTOR (a whole number, default 1): how many times the suite's trials a
// seeded random test runs, for a longer search. 0 and a test failure when it is not a number >= 1.
inline int trial_factor() {
  const char* text = std::getenv("LPDT_DAMAGE_TRIAL_FACTOR");
  if (text == nullptr) return 1;
  const int factor = std::atoi(text);
  if (factor < 1) {
    ADD_FAILURE() << "LPDT_DAMAGE_TRIAL_FACTOR = '" << text << "': expected a whole number >= 1";
    return 0;
  }
  return factor;
}

struct DamageOutcomes {
  int read = 0;     // damaged copies the reader accepted
  int refused = 0;  // damaged copies refused with a UserError
};

// Feeds `trials` damaged copies of `valid` (seeded by `seed`) to `read`; each must return or
// throw UserError. Anything else is a test failure naming the seed, the trial and the damage.
// `what` names the format in those failures. LPDT_DAMAGE_TRIAL_FACTOR (trial_factor) multiplies
// `trials` for a longer search than the test suite's: the first copies are the same as the
// suite's, the others new. The counts returned are those
// of the first `trials` copies, whatever the factor.
inline DamageOutcomes expect_damage_read_or_refused(const std::string& what, const Bytes& valid,
                                                    int trials, std::uint64_t seed,
                                                    const std::function<void(const Bytes&)>& read) {
  std::mt19937_64 rng(seed);
  DamageOutcomes outcomes;
  const int factor = trial_factor();
  if (factor < 1) return outcomes;
  DamageOutcomes beyond;  // copies past the first `trials`
  const bool failed_before = ::testing::Test::HasFailure();
  for (int trial = 0; trial < trials * factor; ++trial) {
    DamageOutcomes& counts = trial < trials ? outcomes : beyond;
    const DamagedCopy copy = damaged_copy(valid, rng);
    const std::string where = what + ", seed " + std::to_string(seed) + ", trial " +
                              std::to_string(trial) + " (" + copy.damage + ")";
    try {
      read(copy.bytes);
      ++counts.read;
    } catch (const UserError& e) {
      ++counts.refused;
      // A refusal says what is wrong, in text a terminal shows as it is: bytes quoted from the
      // damaged file are escaped (core/error.h, printable), never written raw.
      const std::string message = e.what();
      EXPECT_GT(message.size(), 10u) << where;
      EXPECT_EQ(printable_lines(message), message) << where << ": raw bytes in the message";
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << ": not a UserError: " << e.what();
    } catch (...) {
      ADD_FAILURE() << where << ": an exception that is not a std::exception";
    }
    // The first failure is the useful one.
    if (!failed_before && ::testing::Test::HasFailure()) return outcomes;
  }
  return outcomes;
}

}  // namespace lpdt::mutation_testing
