#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace lpdt::exp {

// One key whose value differs between two resolved configurations (`to_json(ExperimentConfig)`,
// sections of keys). Values are JSON texts; a key one side lacks reads "(absent)".
struct ConfigDifference {
  std::string key;     // "section.key", e.g. "optim.lr"
  std::string ours;    // its value in the configuration compared against
  std::string theirs;  // its value in the other one
};

// The keys of `ours` whose value in `theirs` differs or is absent, in `ours`' order, except those
// in `ignored` ("section.key"). Keys only `theirs` has are not differences: an older file may
// lack keys added since, and newer ones are compared from the side that has them.
std::vector<ConfigDifference> config_differences(const nlohmann::json& ours,
                                                 const nlohmann::json& theirs,
                                                 const std::set<std::string>& ignored);

}  // namespace lpdt::exp
