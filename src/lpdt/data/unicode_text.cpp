#include "lpdt/data/unicode_text.h"

#include <algorithm>
#include <iterator>

#include "lpdt/data/unicode_tables.h"

namespace lpdt::data::unicode {
namespace {

// True when `cp` lies in one of the sorted, disjoint [first, last] ranges.
template <typename Range, std::size_t N>
bool in_ranges(const Range (&table)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), cp,
                                    [](char32_t v, const Range& r) { return v < r[0]; });
  return it != std::begin(table) && cp <= (*std::prev(it))[1];
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

std::vector<char32_t> decode_utf8(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char b = s[i];
    int extra = 0;
    char32_t cp = 0;
    char32_t min = 0;  // smallest value the sequence length may encode (no overlong forms)
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      extra = 1, cp = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      extra = 2, cp = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      extra = 3, cp = b & 0x07, min = 0x10000;
    } else {
      out.push_back(kReplacement);  // a continuation byte or 0xF8..0xFF where a lead is expected
      ++i;
      continue;
    }
    bool ok = i + extra < n;
    for (int k = 1; ok && k <= extra; ++k) {
      ok = is_continuation(s[i + k]);
      if (ok) cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      out.push_back(kReplacement);  // only the lead byte is consumed; the rest is re-read
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(extra) + 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return in_ranges(unicode_tables::kSpaceRanges, cp);
}

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return true;  // Cc
  return in_ranges(unicode_tables::kControlRanges, cp);      // Cf, Co, Cs, Cn
}

bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  return in_ranges(unicode_tables::kPunctuationRanges, cp);
}

bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_nonspacing_mark(char32_t cp) { return in_ranges(unicode_tables::kMarkRanges, cp); }

Folded fold_lower_strip(char32_t cp) {
  Folded out;
  out.count = 1;
  out.code_points[0] = cp;
  if (cp < 0x80) {
    if (cp >= 'A' && cp <= 'Z') out.code_points[0] = cp + ('a' - 'A');
    return out;
  }
  // Hangul syllables: NFD by the formula of Unicode 3.12 (leading consonant, vowel, trailing
  // consonant if any); jamo have no case and no marks.
  constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;
  if (cp >= kHangulFirst && cp <= kHangulLast) {
    const char32_t index = cp - kHangulFirst;
    constexpr char32_t kVowels = 21, kTrailing = 28;
    out.code_points[0] = 0x1100 + index / (kVowels * kTrailing);
    out.code_points[1] = 0x1161 + (index % (kVowels * kTrailing)) / kTrailing;
    out.count = 2;
    if (index % kTrailing != 0) out.code_points[out.count++] = 0x11A7 + index % kTrailing;
    return out;
  }
  const auto find = [cp](const auto& table) {
    const auto* it = std::lower_bound(std::begin(table), std::end(table), cp,
                                      [](const auto& row, char32_t v) { return row[0] < v; });
    return (it != std::end(table) && (*it)[0] == cp) ? it : nullptr;
  };
  if (cp <= 0xFFFF) {
    if (const auto* row = find(unicode_tables::kFoldPairs)) {
      out.code_points[0] = (*row)[1];
      return out;
    }
  }
  if (const auto* row = find(unicode_tables::kFoldPairsAstral)) {
    out.code_points[0] = (*row)[1];
    return out;
  }
  if (const auto* row = find(unicode_tables::kFoldMulti)) {
    out.count = 0;
    for (int i = 1; i <= 3 && (*row)[i] != 0; ++i) out.code_points[out.count++] = (*row)[i];
  }
  return out;
}

}  // namespace lpdt::data::unicode
