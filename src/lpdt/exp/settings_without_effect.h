#pragma once
// Settings that change nothing in a run: a key given another value than its default while another
// key makes it irrelevant (quant.bits in a float32 model, optim.momentum with Adam, data.skew with
// an IID partition, ...). The run still does what its other keys say, so these are warnings, not
// errors; a run says them when it starts and keeps them in summary.json ("warnings"), so that its
// record does not seem to claim what did not happen.
#include <string>
#include <vector>

#include "lpdt/exp/experiment_config.h"

namespace lpdt::exp {

// One line per such key: the key, its value, and the key that makes it irrelevant.
std::vector<std::string> settings_without_effect(const ExperimentConfig& config);

}  // namespace lpdt::exp
