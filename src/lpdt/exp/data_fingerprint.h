#pragma once
// What a resume checks about the data: a run continued on other files (a data.dir whose files
// changed, another vocab.txt) would train a mix of two experiments while its folder describes the
// first. Cheap to compute at start-up: a CRC-32 over each split's inputs and labels.
#include <nlohmann/json.hpp>

#include "lpdt/data/dataset.h"

namespace lpdt::exp {

// {"train": {"samples", "inputs_crc32", "labels_crc32"}, "test": {...}}: inputs are the pixels
// ([N, C, H, W] uint8) or, for text, the token ids ([N, L] int64) the tokenizer made with
// data.vocab. `test` is the evaluated test set (after data.test_subset).
nlohmann::json data_fingerprint(const data::Dataset& train, const data::Dataset& test);

}  // namespace lpdt::exp
