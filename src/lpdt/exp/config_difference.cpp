#include "lpdt/exp/config_difference.h"

namespace lpdt::exp {

std::vector<ConfigDifference> config_differences(const nlohmann::json& ours,
                                                 const nlohmann::json& theirs,
                                                 const std::set<std::string>& ignored) {
  std::vector<ConfigDifference> differences;
  for (const auto& [section, keys] : ours.items()) {
    for (const auto& [key, value] : keys.items()) {
      const std::string name = section + "." + key;
      if (ignored.count(name)) continue;
      const bool present = theirs.contains(section) && theirs[section].contains(key);
      if (present && theirs[section][key] == value) continue;
      differences.push_back(
          {name, value.dump(), present ? theirs[section][key].dump() : std::string("(absent)")});
    }
  }
  return differences;
}

}  // namespace lpdt::exp
