#include "lpdt/data/synthetic.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include "lpdt/core/error.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

SyntheticOptions small() {
  return SyntheticOptions()
      .seed(3)
      .num_classes(4)
      .samples_per_class(25)
      .channels(2)
      .height(6)
      .width(5);
}

TEST(Synthetic, ShapesAndBalancedLabels) {
  const Dataset d = make_synthetic(small());
  EXPECT_EQ(d.images.sizes(), (std::vector<int64_t>{100, 2, 6, 5}));
  EXPECT_EQ(d.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(d.num_classes, 4);
  EXPECT_TRUE(torch::equal(class_counts(d.labels, 4), torch::full({4}, 25, torch::kInt64)));
  EXPECT_EQ(d.mean.size(), 2u);
  for (double s : d.std) EXPECT_GT(s, 0.0);
}

TEST(Synthetic, DeterministicBySeed) {
  const Dataset a = make_synthetic(small());
  const Dataset b = make_synthetic(small());
  EXPECT_TRUE(torch::equal(a.images, b.images));
  EXPECT_TRUE(torch::equal(a.labels, b.labels));
  EXPECT_EQ(a.mean, b.mean);
  const Dataset c = make_synthetic(small().seed(4));
  EXPECT_FALSE(torch::equal(a.images, c.images));
}

TEST(Synthetic, LabelsAreShuffled) {
  const Dataset d = make_synthetic(small());
  const auto sorted = std::get<0>(d.labels.sort());
  EXPECT_FALSE(torch::equal(d.labels, sorted));
}

TEST(Synthetic, TrainAndTestShareThePrototypes) {
  const auto opts = small().noise(0.05);
  const Dataset train = make_synthetic(opts);
  const Dataset test = make_synthetic(SyntheticOptions(opts).split(Split::kTest));
  EXPECT_FALSE(torch::equal(train.images, test.images));
  EXPECT_EQ(train.mean, test.mean);
  // A nearest-class-mean classifier fit on train labels test perfectly: the data is learnable.
  const auto x_train = train.images.to(torch::kFloat32).flatten(1);
  const auto x_test = test.images.to(torch::kFloat32).flatten(1);
  std::vector<torch::Tensor> centres;
  for (int64_t c = 0; c < 4; ++c) centres.push_back(x_train.index({train.labels == c}).mean(0));
  const auto distances = torch::cdist(x_test, torch::stack(centres));
  EXPECT_TRUE(torch::equal(distances.argmin(1), test.labels));
}

TEST(Synthetic, ZeroNoiseGivesThePrototypes) {
  const Dataset d = make_synthetic(small().noise(0.0));
  for (int64_t c = 0; c < 4; ++c) {
    const auto members = d.images.index({d.labels == c});
    EXPECT_TRUE(torch::equal(members, members[0].unsqueeze(0).expand_as(members)));
  }
}

TEST(Dataset, FirstSamplesIsAPrefixView) {
  const Dataset d = make_synthetic(small());
  const Dataset head = first_samples(d, 7);
  EXPECT_EQ(head.size(), 7);
  EXPECT_TRUE(torch::equal(head.images, d.images.narrow(0, 0, 7)));
  EXPECT_TRUE(torch::equal(head.labels, d.labels.narrow(0, 0, 7)));
  EXPECT_EQ(first_samples(d, 0).size(), 100);
  EXPECT_EQ(first_samples(d, 1000).size(), 100);
  check_dataset(head);
}

TEST(Synthetic, RejectsBadOptions) {
  testing::expect_error<ConfigError>([] { make_synthetic(small().num_classes(0)); },
                                     {"num_classes must be > 0"});
  testing::expect_error<ConfigError>([] { make_synthetic(small().noise(-1)); }, {"noise"});
}

}  // namespace
}  // namespace lpdt::data
