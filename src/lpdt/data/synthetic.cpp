#include "lpdt/data/synthetic.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::data {
namespace {

// Stream "node" ids inside StreamPurpose::kSynthetic.
constexpr std::uint64_t kPrototypeStream = 0;
constexpr std::uint64_t kTrainNoiseStream = 1;
constexpr std::uint64_t kTestNoiseStream = 2;
constexpr std::uint64_t kTrainOrderStream = 3;
constexpr std::uint64_t kTestOrderStream = 4;
// Keeps a generated dataset to a size a test or smoke run can hold (4 GiB of pixels).
constexpr int64_t kMaxSyntheticBytes = int64_t{1} << 32;

void check_options(const SyntheticOptions& o) {
  auto positive = [](const char* what, int64_t v) {
    if (v <= 0)
      throw ConfigError(std::string("synthetic: ") + what + " must be > 0, got " +
                        std::to_string(v));
  };
  positive("num_classes", o.num_classes_);
  positive("samples_per_class", o.samples_per_class_);
  positive("channels", o.channels_);
  positive("height", o.height_);
  positive("width", o.width_);
  if (!(o.noise_ >= 0.0) || !std::isfinite(o.noise_)) {
    throw ConfigError("synthetic: noise must be a finite value >= 0, got " +
                      std::to_string(o.noise_));
  }
  const double bytes = static_cast<double>(o.num_classes_) * o.samples_per_class_ * o.channels_ *
                       o.height_ * o.width_;
  if (bytes > static_cast<double>(kMaxSyntheticBytes)) {
    throw ConfigError("synthetic: " + std::to_string(bytes) + " pixel bytes is too large (limit " +
                      std::to_string(kMaxSyntheticBytes) + ")");
  }
}

}  // namespace

Dataset make_synthetic(const SyntheticOptions& o) {
  check_options(o);
  const int64_t pixels = o.channels_ * o.height_ * o.width_;
  const int64_t plane = o.height_ * o.width_;

  // Prototypes: uniform grey levels in [0, 255], one image per class.
  Rng proto_rng = Rng::stream(o.seed_, kPrototypeStream, StreamPurpose::kSynthetic);
  std::vector<double> prototypes(static_cast<std::size_t>(o.num_classes_ * pixels));
  for (double& p : prototypes) p = 255.0 * proto_rng.uniform();

  const bool train = o.split_ == Split::kTrain;
  Rng noise_rng =
      Rng::stream(o.seed_, train ? kTrainNoiseStream : kTestNoiseStream, StreamPurpose::kSynthetic);
  Rng order_rng =
      Rng::stream(o.seed_, train ? kTrainOrderStream : kTestOrderStream, StreamPurpose::kSynthetic);

  const int64_t n = o.num_classes_ * o.samples_per_class_;
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  lpdt::shuffle(order.begin(), order.end(), order_rng);

  auto images = torch::empty({n, o.channels_, o.height_, o.width_}, torch::kUInt8);
  auto labels = torch::empty({n}, torch::kInt64);
  auto* image_out = images.data_ptr<std::uint8_t>();
  auto* label_out = labels.data_ptr<int64_t>();
  const double noise_levels = 255.0 * o.noise_;
  // Sample s (class s / samples_per_class) is written to position order[s], so the noise drawn
  // for a sample does not depend on where the shuffle puts it.
  for (int64_t s = 0; s < n; ++s) {
    const int64_t c = s / o.samples_per_class_;
    const double* proto = prototypes.data() + c * pixels;
    std::uint8_t* out = image_out + order[s] * pixels;
    for (int64_t i = 0; i < pixels; ++i) {
      const double v = proto[i] + (noise_levels > 0.0 ? noise_levels * noise_rng.normal() : 0.0);
      out[i] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0));
    }
    label_out[order[s]] = c;
  }

  Dataset d;
  d.name = "synthetic";
  d.images = images;
  d.labels = labels;
  d.num_classes = o.num_classes_;
  // Expected statistics in [0, 1] units: mean of the prototypes; variance of the prototypes plus
  // the noise variance (clamping ignored). Split-independent so train and test agree.
  for (int64_t ch = 0; ch < o.channels_; ++ch) {
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t c = 0; c < o.num_classes_; ++c) {
      const double* p = prototypes.data() + c * pixels + ch * plane;
      for (int64_t i = 0; i < plane; ++i) {
        sum += p[i] / 255.0;
        sum_sq += (p[i] / 255.0) * (p[i] / 255.0);
      }
    }
    const double count = static_cast<double>(o.num_classes_ * plane);
    const double mean = sum / count;
    const double var = std::max(sum_sq / count - mean * mean, 0.0) + o.noise_ * o.noise_;
    d.mean.push_back(mean);
    d.std.push_back(std::max(std::sqrt(var), 1e-3));
  }
  check_dataset(d);
  return d;
}

}  // namespace lpdt::data
