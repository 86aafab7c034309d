// The comparison of two resolved configurations (exp/config_difference.h) behind a resume's
// "same experiment" check and MPI ranks' "one configuration" check.
#include "lpdt/exp/config_difference.h"

#include <gtest/gtest.h>

namespace lpdt::exp {
namespace {

const nlohmann::json kOurs = {
    {"optim", {{"lr", 0.1}, {"momentum", 0.9}}},
    {"run", {{"epochs", 3}, {"threads", 2}, {"out_dir", "runs"}}},
};

TEST(ConfigDifferences, EqualConfigurationsHaveNone) {
  EXPECT_TRUE(config_differences(kOurs, kOurs, {}).empty());
}

TEST(ConfigDifferences, NamesEachChangedKeyWithBothValuesInOrder) {
  nlohmann::json theirs = kOurs;
  theirs["optim"]["lr"] = 0.5;
  theirs["run"]["out_dir"] = "elsewhere";
  const auto differences = config_differences(kOurs, theirs, {});
  ASSERT_EQ(differences.size(), 2u);
  EXPECT_EQ(differences[0].key, "optim.lr");
  EXPECT_EQ(differences[0].ours, "0.1");
  EXPECT_EQ(differences[0].theirs, "0.5");
  EXPECT_EQ(differences[1].key, "run.out_dir");
  EXPECT_EQ(differences[1].ours, "\"runs\"");
  EXPECT_EQ(differences[1].theirs, "\"elsewhere\"");
}

TEST(ConfigDifferences, SkipsIgnoredKeys) {
  nlohmann::json theirs = kOurs;
  theirs["run"]["threads"] = 16;
  theirs["run"]["epochs"] = 9;
  const auto differences = config_differences(kOurs, theirs, {"run.threads"});
  ASSERT_EQ(differences.size(), 1u);
  EXPECT_EQ(differences[0].key, "run.epochs");
}

TEST(ConfigDifferences, AKeyOrSectionTheOtherLacksIsAbsent) {
  nlohmann::json theirs = kOurs;
  theirs["optim"].erase("momentum");
  theirs.erase("run");
  const auto differences = config_differences(kOurs, theirs, {});
  ASSERT_EQ(differences.size(), 4u);
  EXPECT_EQ(differences[0].key, "optim.momentum");
  EXPECT_EQ(differences[0].theirs, "(absent)");
  EXPECT_EQ(differences[3].key, "run.threads");
  EXPECT_EQ(differences[3].theirs, "(absent)");
}

TEST(ConfigDifferences, KeysOnlyTheOtherHasAreNotDifferences) {
  nlohmann::json theirs = kOurs;
  theirs["optim"]["nesterov"] = true;
  theirs["extra"] = {{"key", 1}};
  EXPECT_TRUE(config_differences(kOurs, theirs, {}).empty());
}

}  // namespace
}  // namespace lpdt::exp
