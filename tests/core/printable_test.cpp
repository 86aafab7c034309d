// printable / printable_excerpt: text quoted from a user's file in a message. Control bytes and
// bytes outside well-formed UTF-8 become \xNN; printable ASCII and UTF-8 characters stay.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "lpdt/core/error.h"

namespace lpdt {
namespace {

TEST(Printable, KeepsTextAndUtf8AndEscapesControlAndBrokenBytes) {
  EXPECT_EQ(printable("epoch,lr"), "epoch,lr");
  EXPECT_EQ(printable("82 \xC2\xB1 2.8 \xE2\x80\x94 \xF0\x9F\x98\x80"),
            "82 \xC2\xB1 2.8 \xE2\x80\x94 \xF0\x9F\x98\x80");  // ±, an em dash, an emoji
  EXPECT_EQ(printable("a\rb\x1B[31m\x7F"), "a\\x0Db\\x1B[31m\\x7F");
  EXPECT_EQ(printable(std::string("\0", 1)), "\\x00");
  // A lone continuation byte, a cut sequence, an overlong form, a surrogate, beyond U+10FFFF.
  EXPECT_EQ(printable("\x80"), "\\x80");
  EXPECT_EQ(printable("\xE2\x80"), "\\xE2\\x80");
  EXPECT_EQ(printable("\xC0\xAF"), "\\xC0\\xAF");
  EXPECT_EQ(printable("\xED\xA0\x80"), "\\xED\\xA0\\x80");
  EXPECT_EQ(printable("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");
  EXPECT_EQ(printable("\xFF" "ok"), "\\xFFok");
}

// The first byte that breaks UTF-8, as printable judges it; none in ASCII or well-formed UTF-8.
TEST(FirstInvalidUtf8Byte, FindsTheFirstBrokenByte) {
  EXPECT_EQ(first_invalid_utf8_byte(""), std::nullopt);
  EXPECT_EQ(first_invalid_utf8_byte("run \xC2\xB1 \xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8_byte("bad\xFFname"), 3u);
  EXPECT_EQ(first_invalid_utf8_byte("ab\x80"), 2u);              // a lone continuation byte
  EXPECT_EQ(first_invalid_utf8_byte("\xC2\xB1\xE2\x80"), 2u);     // cut after a good character
  EXPECT_EQ(first_invalid_utf8_byte("x\xC0\xAF"), 1u);           // overlong
  EXPECT_EQ(first_invalid_utf8_byte("\xED\xA0\x80"), 0u);        // a surrogate
  EXPECT_EQ(first_invalid_utf8_byte("\xF4\x90\x80\x80"), 0u);    // above U+10FFFF
}

// On random bytes: the output holds no control byte, and is well-formed UTF-8 (checked by a
// plain decoder of its own); undoing the escapes gives the input back when the input has no
// backslash.
TEST(Printable, RandomBytesComeOutAsWellFormedTextThatUndoesToTheInput) {
  std::mt19937 rng(11);
  const auto well_formed = [](const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
      const auto b = static_cast<unsigned char>(s[i]);
      if (b < 0x20 || b == 0x7F) return false;
      if (b < 0x80) {
        ++i;
        continue;
      }
      const std::size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
      if (n == 0 || i + n > s.size()) return false;
      std::uint32_t code = b & (0x7F >> n);
      for (std::size_t k = 1; k < n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xC0) != 0x80) return false;
        code = (code << 6) | (c & 0x3F);
      }
      const std::uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (code < least[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
      i += n;
    }
    return true;
  };
  const auto undo = [](const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
        out += static_cast<char>(std::stoi(s.substr(i + 2, 2), nullptr, 16));
        i += 3;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes(rng() % 24, '\0');
    for (char& c : bytes) {
      c = static_cast<char>(rng() & 0xFF);
      if (c == '\\') c = 'x';
    }
    const std::string out = printable(bytes);
    ASSERT_TRUE(well_formed(out)) << trial;
    ASSERT_EQ(undo(out), bytes) << trial;
  }
}

TEST(Printable, ExcerptCutsLongTextAndSaysHowLong) {
  EXPECT_EQ(printable_excerpt("short"), "short");
  const std::string line(200, 'a');
  EXPECT_EQ(printable_excerpt(line, 10), "aaaaaaaaaa... (200 bytes)");
  EXPECT_EQ(printable_excerpt("\x01\x02\x03", 2), "\\x01\\x02... (3 bytes)");
}

TEST(Printable, LinesKeepTheirBreaksAndEscapeTheRest) {
  EXPECT_EQ(printable_lines("one\ntwo"), "one\ntwo");
  EXPECT_EQ(printable_lines("a\tb\n\x7F\r\n"), "a\\x09b\n\\x7F\\x0D\n");
  EXPECT_EQ(printable_lines("\n\n"), "\n\n");
  EXPECT_EQ(printable_lines(""), "");
  EXPECT_EQ(printable_lines("\xC3\xA9\n\xC3"), "\xC3\xA9\n\\xC3");  // UTF-8 kept, a cut one not
}

}  // namespace
}  // namespace lpdt
