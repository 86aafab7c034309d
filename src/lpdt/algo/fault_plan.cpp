#include "lpdt/algo/fault_plan.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::algo {
namespace {

constexpr std::uint64_t kFaultPurpose = 0x6661756c74ULL;  // "fault"

}  // namespace

double capped_loss_fraction(double drop_probability) {
  return std::pow(drop_probability, static_cast<double>(kMaxConsecutiveLosses));
}

FaultPlan::FaultPlan(FaultOptions options) : options_(std::move(options)) {
  const auto check_probability = [](const char* key, double p) {
    if (!(p >= 0 && p < 1)) {
      std::ostringstream msg;
      msg << key << " must be in [0, 1), got " << p;
      throw ConfigError(msg.str());
    }
  };
  check_probability("faults.drop_probability", options_.drop_probability);
  check_probability("faults.delay_probability", options_.delay_probability);
  if (options_.delay_rounds < 1) {
    throw ConfigError("faults.delay_rounds must be >= 1, got " +
                      std::to_string(options_.delay_rounds));
  }
  for (const std::int64_t node : options_.kill_nodes) {
    if (node < 0) throw ConfigError("faults.kill_nodes holds a negative node id " + std::to_string(node));
  }
  std::sort(options_.kill_nodes.begin(), options_.kill_nodes.end());
}

double FaultPlan::uniform(std::int64_t round, std::int64_t sender, std::int64_t receiver,
                          std::uint64_t draw) const {
  std::uint64_t h = mix64(options_.seed ^ kFaultPurpose);
  h = mix64(h ^ static_cast<std::uint64_t>(round));
  h = mix64(h ^ (static_cast<std::uint64_t>(sender) << 32 ^ static_cast<std::uint64_t>(receiver)));
  h = mix64(h ^ draw);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

MessageFate FaultPlan::fate(std::int64_t round, std::int64_t sender, std::int64_t receiver) const {
  MessageFate fate;
  if (!options_.any_link_fault()) return fate;
  // Draw 0, 1, ...: is the k-th send of this message lost?
  while (fate.losses < kMaxConsecutiveLosses &&
         uniform(round, sender, receiver, static_cast<std::uint64_t>(fate.losses)) <
             options_.drop_probability) {
    ++fate.losses;
  }
  fate.late_rounds = fate.losses;
  if (uniform(round, sender, receiver, 1000) < options_.delay_probability) {
    fate.late_rounds += options_.delay_rounds;
  }
  return fate;
}

bool FaultPlan::killed(std::int64_t node, std::int64_t round) const {
  return round >= options_.kill_step &&
         std::binary_search(options_.kill_nodes.begin(), options_.kill_nodes.end(), node);
}

}  // namespace lpdt::algo
