#pragma once
// AG News topic classification (Zhang et al. 2015, the "ag_news_csv" archive): train.csv
// (120,000 rows) and test.csv (7,600 rows), no header, three quoted fields per row:
//   "class index (1-4)","title","description"
// Classes 1..4 become labels 0..3: World, Sports, Business, Sci/Tech. The text of a row is
// title + " " + description. The archive's descriptions mark lost line breaks with a backslash
// ("dwindling\band" is "dwindling" + line break + "band"; sometimes the two characters "\n").
#include <string>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/text_dataset.h"
#include "lpdt/data/wordpiece_tokenizer.h"

namespace lpdt::data {

inline constexpr int64_t kAgNewsClasses = 4;

// "World", "Sports", "Business", "Sci/Tech".
const std::vector<std::string>& ag_news_class_names();

// What happens to backslashes in the title and description.
enum class AgNewsBackslash {
  // Every backslash becomes a space: "dwindling\band" -> "dwindling band". The sequence "\n"
  // becomes " n" (a stray one-letter word) rather than risking "\newsletter" -> "ewsletter".
  kSpace,
  // The text exactly as in the file, as Hugging Face's ag_news loader gives it (BERT's tokenizer
  // then makes every backslash a "\" punctuation token).
  kKeep,
};

// Raw rows of one file: text (title + " " + description, backslashes handled by `backslash`)
// and label 0..3. UserError "ag-news: <path>: line N: ..." for a missing or empty file, a CSV
// syntax error (unterminated quote, ...), a row without exactly 3 fields, or a class index other
// than 1..4.
std::vector<TextSample> read_ag_news_csv(const std::string& path,
                                         AgNewsBackslash backslash = AgNewsBackslash::kSpace);

// train.csv (kTrain) or test.csv (kTest) from `dir` or its "ag_news_csv" sub-folder, tokenized.
TextDataset load_ag_news(const std::string& dir, Split split, const WordPieceTokenizer& tokenizer,
                         int64_t max_length, AgNewsBackslash backslash = AgNewsBackslash::kSpace);

}  // namespace lpdt::data
