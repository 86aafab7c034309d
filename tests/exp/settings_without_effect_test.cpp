// Keys set to a value that the rest of the configuration ignores are named (exp/
// settings_without_effect.h); keys that do act, and the shipped configurations, are not.
#include "lpdt/exp/settings_without_effect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace lpdt::exp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> warnings_of(const std::vector<std::string>& overrides) {
  return settings_without_effect(load_experiment_config(std::nullopt, overrides));
}

TEST(SettingsWithoutEffect, QuantKeysOfAFloatModel) {
  EXPECT_THAT(warnings_of({"model.precision=fp32", "quant.bits=4"}),
              ElementsAre(HasSubstr("quant.bits = 4 has no effect: model.precision = \"fp32\"")));
  EXPECT_THAT(warnings_of({"model.precision=bf16", "quant.backend=integer"}),
              ElementsAre(HasSubstr("quant.backend = \"integer\" has no effect")));
  // In an 8-bit model the same keys act.
  EXPECT_THAT(warnings_of({"model.precision=int8", "quant.bits=6", "quant.grad_bits=6"}),
              IsEmpty());
}

TEST(SettingsWithoutEffect, OptimizerKeysOfTheOtherOptimizer) {
  EXPECT_THAT(warnings_of({"optim.optimizer=adam", "optim.momentum=0.5", "optim.nesterov=false"}),
              ElementsAre(HasSubstr("optim.momentum = 0.5 has no effect: optim.optimizer = "
                                    "\"adam\""),
                          HasSubstr("optim.nesterov = false has no effect")));
  EXPECT_THAT(warnings_of({"optim.optimizer=sgd", "optim.beta2=0.9"}),
              ElementsAre(HasSubstr("optim.beta2 = 0.9 has no effect")));
  EXPECT_THAT(warnings_of({"optim.optimizer=adam", "optim.beta2=0.9", "optim.eps=1e-6"}),
              IsEmpty());
}

TEST(SettingsWithoutEffect, PartitionTopologyAndDatasetKeys) {
  EXPECT_THAT(warnings_of({"data.partition=iid", "data.skew=0.3"}),
              ElementsAre(HasSubstr("data.skew = 0.3 has no effect: data.partition = \"iid\"")));
  EXPECT_THAT(warnings_of({"graph.topology=ring", "graph.torus_rows=2"}),
              ElementsAre(HasSubstr("graph.torus_rows = 2 has no effect")));
  EXPECT_THAT(warnings_of({"data.dataset=synthetic", "data.dir=/somewhere"}),
              ElementsAre(HasSubstr("data.dir = \"/somewhere\" has no effect")));
  EXPECT_THAT(warnings_of({"data.max_length=64"}),
              ElementsAre(HasSubstr("data.max_length = 64 has no effect")));
  // The keys of the partition, topology and dataset in use act.
  EXPECT_THAT(warnings_of({"data.partition=dirichlet", "data.dirichlet_alpha=0.1",
                           "graph.topology=torus", "graph.nodes=9", "graph.torus_rows=3",
                           "data.dataset=synthetic", "data.synthetic_size=8"}),
              IsEmpty());
}

TEST(SettingsWithoutEffect, ScheduleCompressionAndFaultPartners) {
  EXPECT_THAT(warnings_of({"optim.schedule=cosine", "optim.milestones=[1,2]", "optim.gamma=0.5"}),
              ElementsAre(HasSubstr("optim.milestones = [1, 2] has no effect: optim.schedule = "
                                    "\"cosine\""),
                          HasSubstr("optim.gamma = 0.5 has no effect")));
  EXPECT_THAT(warnings_of({"algo.qgm=true", "optim.momentum=0", "optim.nesterov=false"}),
              ElementsAre(HasSubstr("algo.qgm = true has no effect: its momentum is "
                                    "optim.momentum = 0")));
  EXPECT_THAT(warnings_of({"algo.compressor=topk", "algo.keep_fraction=1"}),
              ElementsAre(HasSubstr("algo.compressor = \"topk\" has no effect: "
                                    "algo.keep_fraction = 1 keeps every entry")));
  EXPECT_THAT(warnings_of({"algo.message_values=bf16", "algo.message_rounding=nearest"}),
              ElementsAre(HasSubstr("algo.message_rounding = \"nearest\" has no effect")));
  EXPECT_THAT(warnings_of({"faults.delay_rounds=5", "faults.kill_step=5"}),
              ElementsAre(HasSubstr("faults.delay_rounds = 5 has no effect"),
                          HasSubstr("faults.kill_step = 5 has no effect")));
  // With their partners they act.
  EXPECT_THAT(warnings_of({"optim.schedule=multistep", "optim.milestones=[1,2]",
                           "optim.gamma=0.5", "algo.qgm=true", "optim.momentum=0.9",
                           "algo.compressor=topk", "algo.keep_fraction=0.1",
                           "algo.message_values=int8", "algo.message_rounding=nearest",
                           "faults.delay_probability=0.1", "faults.delay_rounds=5",
                           "faults.kill_nodes=[1]", "faults.kill_step=5"}),
              IsEmpty());
}

TEST(SettingsWithoutEffect, DepthChocoInitAndGossipRoundsOffTheirSettings) {
  EXPECT_THAT(warnings_of({"model.arch=mlp", "model.depth=32", "algo.name=deep-squeeze",
                           "algo.choco_init=model", "eval.gossip_rounds=10"}),
              ElementsAre(HasSubstr("model.depth = 32 has no effect: model.arch = \"mlp\""),
                          HasSubstr("algo.choco_init = \"model\" has no effect"),
                          HasSubstr("eval.gossip_rounds = 10 has no effect: eval.protocol = ")));
  EXPECT_THAT(warnings_of({"model.arch=resnet", "model.depth=32", "algo.name=choco",
                           "algo.choco_init=model", "eval.protocol=reference",
                           "eval.gossip_rounds=10"}),
              IsEmpty());
}

TEST(SettingsWithoutEffect, RangeEvoNormAndResidualInitWithoutTheirLayers) {
  EXPECT_THAT(warnings_of({"model.arch=resnet", "model.precision=int8", "model.norm=batchnorm",
                           "quant.range_evonorm=std"}),
              ElementsAre(HasSubstr("quant.range_evonorm = \"std\" has no effect: the model has "
                                    "no Range EvoNorm")));
  EXPECT_THAT(warnings_of({"model.arch=resnet", "model.norm=none", "model.residual_init=one"}),
              ElementsAre(HasSubstr("model.residual_init = \"one\" has no effect: model.norm = "
                                    "\"none\"")));
  EXPECT_THAT(warnings_of({"model.arch=resnet", "model.precision=int8", "model.norm=evonorm",
                           "quant.range_evonorm=std", "model.residual_init=one"}),
              IsEmpty());
}

TEST(SettingsWithoutEffect, ModelAndAugmentationKeysOfOtherModels) {
  EXPECT_THAT(warnings_of({"model.arch=lenet5", "model.dropout=0.5", "model.transformer_layers=3",
                           "model.groups=4", "model.residual_init=one"}),
              ElementsAre(HasSubstr("model.dropout = 0.5 has no effect: model.arch = \"lenet5\""),
                          HasSubstr("model.transformer_layers = 3 has no effect"),
                          HasSubstr("model.groups = 4 has no effect: model.arch = \"lenet5\" has "
                                    "no normalisation layers"),
                          HasSubstr("model.residual_init = \"one\" has no effect")));
  EXPECT_THAT(warnings_of({"model.arch=resnet", "model.norm=batchnorm", "model.groups=4"}),
              ElementsAre(HasSubstr("model.groups = 4 has no effect: model.norm = \"batchnorm\"")));
  EXPECT_THAT(warnings_of({"data.augment=false", "data.crop_padding=2"}),
              ElementsAre(HasSubstr("data.crop_padding = 2 has no effect: data.augment = false")));
  EXPECT_THAT(warnings_of({"model.arch=resnet", "model.norm=evonorm", "model.groups=4",
                           "model.residual_init=one", "data.augment=true",
                           "data.crop_padding=2"}),
              IsEmpty());
}

// Every shipped configuration sets only keys that act.
TEST(SettingsWithoutEffect, NoneInTheShippedConfigurations) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(LPDT_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() != ".toml") continue;
    EXPECT_THAT(settings_without_effect(load_experiment_config(entry.path().string(), {})),
                IsEmpty())
        << entry.path();
  }
}

}  // namespace
}  // namespace lpdt::exp
