#include "lpdt/exp/summary_file.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/core/file_text.h"
#include "lpdt/core/json_error_text.h"

namespace lpdt::exp {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The final figures the trainer writes (exp/trainer.cpp) and the bounds they lie within: one
// outside them (an accuracy of 1e308 %, negative gigabytes) is a damaged or hand-edited file,
// named here rather than averaged into a sweep's tables or drawn on a report. null is a figure
// the run did not compute (JSON writes NaN as null).
struct FigureBounds {
  const char* key;
  double low, high;
  bool whole;
  const char* expected;
};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr FigureBounds kFinalFigures[] = {
    {"average_model_accuracy", 0, 100, false, "a percentage from 0 to 100"},
    {"mean_node_accuracy", 0, 100, false, "a percentage from 0 to 100"},
    {"min_node_accuracy", 0, 100, false, "a percentage from 0 to 100"},
    {"max_node_accuracy", 0, 100, false, "a percentage from 0 to 100"},
    {"consensus_distance", 0, kInf, false, "a number, at least 0"},
    {"mean_gb_sent_per_node", 0, kInf, false, "a number, at least 0"},
    {"steps", 0, kInf, true, "a whole number, at least 0"},
    {"wall_time_s", 0, kInf, false, "a number, at least 0"},
    {"train_images_per_s", 0, kInf, false, "a number, at least 0"},
};
// The per-node figures: arrays by node id, each entry within the bounds or null (a dead node).
constexpr FigureBounds kFinalNodeFigures[] = {
    {"node_accuracy", 0, 100, false, "a percentage from 0 to 100"},
    {"bytes_sent_per_node", 0, kInf, true, "a whole number of bytes, at least 0"},
};

}  // namespace

json read_run_summary(const fs::path& file) {
  const std::optional<std::string> text = read_file_text(file);
  if (!text) throw UserError("cannot read '" + file.string() + "': no such file");
  json summary;
  try {
    summary = json::parse(*text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw UserError("'" + file.string() + "' is not valid JSON (" + json_error_text(e) +
                    "): a damaged summary.json; restore it, or delete its run folder to train "
                    "the run again");
  }
  const auto shape_error = [&](const std::string& what) {
    return UserError("'" + file.string() + "' is not a summary.json as lpdt train writes it: " +
                     what);
  };
  if (!summary.is_object()) {
    throw shape_error("expected a JSON object, got " + std::string(summary.type_name()));
  }
  const auto config = summary.find("config");
  if (config == summary.end() || !config->is_object()) {
    throw shape_error("no \"config\" object (the run's resolved configuration)");
  }
  const auto final = summary.find("final");
  if (final == summary.end() || !final->is_object()) {
    throw shape_error("no \"final\" object (the run's final figures)");
  }
  const auto check = [&](const FigureBounds& figure, const json& value, const std::string& where) {
    if (value.is_null()) return;
    if (!value.is_number()) {
      throw UserError(where + " must be a number, got " + json_excerpt(value));
    }
    const double number = value.get<double>();
    if (!(number >= figure.low && number <= figure.high) ||
        (figure.whole && number != std::floor(number))) {
      throw UserError(where + " = " + value.dump() + " is out of range (expected " +
                      figure.expected + ", or null): a damaged summary.json; restore it, or "
                      "delete its run folder to train the run again");
    }
  };
  std::string final_key = "'";  // (appended in steps: GCC 12 warns on `"'" + file.string()`)
  final_key += file.string();
  final_key += "': \"final\".";
  for (const FigureBounds& figure : kFinalFigures) {
    const auto value = final->find(figure.key);
    if (value != final->end()) check(figure, *value, final_key + figure.key);
  }
  for (const FigureBounds& figure : kFinalNodeFigures) {
    const auto values = final->find(figure.key);
    if (values == final->end() || values->is_null()) continue;
    if (!values->is_array()) {
      throw UserError(final_key + figure.key + " must be an array (one entry per node), got " +
                      json_excerpt(*values));
    }
    for (std::size_t node = 0; node < values->size(); ++node) {
      check(figure, (*values)[node],
            final_key + figure.key + "[" + std::to_string(node) + "] (node " +
                std::to_string(node) + ")");
    }
  }
  return summary;
}

}  // namespace lpdt::exp
