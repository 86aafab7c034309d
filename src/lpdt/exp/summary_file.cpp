#include "lpdt/exp/summary_file.h"

#include <cstring>
#include <fstream>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/core/json_error_text.h"

namespace lpdt::exp {

namespace fs = std::filesystem;
using nlohmann::json;

json read_run_summary(const fs::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw UserError("cannot read '" + file.string() + "': " + std::strerror(errno));
  }
  json summary;
  try {
    summary = json::parse(in);
  } catch (const json::parse_error& e) {
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
  return summary;
}

}  // namespace lpdt::exp
