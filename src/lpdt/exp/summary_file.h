#pragma once
// Reading a run folder's summary.json (written by lpdt train at the end of a run: exp/trainer.cpp)
// for the sweep and the report, with errors that name the file and what is wrong with it.
#include <filesystem>
#include <nlohmann/json.hpp>

namespace lpdt::exp {

// The parsed file: a JSON object with a "config" object (the resolved configuration) and a
// "final" object (the final figures). UserError naming `file` when it
// cannot be read, is not valid JSON (the line and column), or has another shape, e.g. a
// hand-edited file or another tool's summary.json; or when a final figure the trainer writes
// is not a number (or null) within its bounds (accuracies 0 to 100 %, counts, times and
// distances at least 0).
nlohmann::json read_run_summary(const std::filesystem::path& file);

}  // namespace lpdt::exp
