// The experiment configuration: defaults, file and --set layers, every error path, round trips,
// the example configs and the generated key reference in docs/config.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/exp/config_schema.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/models/model.h"

namespace lpdt {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// A TOML file in a fresh folder under the system's temporary directory, removed at the end of
// the test. The folder is named after the running test, so tests never share files.
class TempToml {
 public:
  explicit TempToml(const std::string& text, const std::string& file_name = "experiment.toml") {
    static int counter = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("lpdt_config_test_") + info->name() + "_" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / file_name).string();
    std::ofstream(path_) << text;
  }
  ~TempToml() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempToml(const TempToml&) = delete;
  TempToml& operator=(const TempToml&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

// The message of the ConfigError that `f` throws; a test failure if it throws nothing.
std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

// The message of loading `text` as a file with `overrides`.
std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  const TempToml file(text);
  return config_error_of([&] { load_experiment_config(file.path(), overrides); });
}

std::string source_path(const std::string& relative) {
  return (std::filesystem::path(LPDT_SOURCE_DIR) / relative).string();
}

// ---------------------------------------------------------------------------------------------
// Layers

TEST(ExperimentConfigTest, DefaultsLoad) {
  const ExperimentConfig config = load_experiment_config(std::nullopt, {});
  EXPECT_EQ(config, ExperimentConfig{});
  EXPECT_EQ(config.run.name, "quickstart");
  EXPECT_EQ(config.run.seed, 1234u);
  EXPECT_EQ(config.run.epochs, 15);
  EXPECT_EQ(config.data.dataset, DataConfig::Dataset::kFashionMnist);
  EXPECT_EQ(config.data.partition, DataConfig::Partition::kSkew);
  EXPECT_DOUBLE_EQ(config.data.skew, 0.8);
  EXPECT_EQ(config.data.batch_size, 32);
  EXPECT_EQ(config.model.arch, ModelConfig::Arch::kLenet5);
  EXPECT_EQ(config.model.depth, 20);
  EXPECT_EQ(config.model.resnet_blocks_per_stage(), 3);
  EXPECT_EQ(config.graph.topology, GraphConfig::Topology::kDirectedRing);
  EXPECT_EQ(config.graph.nodes, 8);
  EXPECT_EQ(config.algo.name, AlgoConfig::Name::kChoco);
  EXPECT_EQ(config.algo.compressor, AlgoConfig::Compressor::kNone);
  EXPECT_DOUBLE_EQ(config.optim.lr, 0.1);
  EXPECT_DOUBLE_EQ(config.optim.weight_decay, 1e-4);
  EXPECT_EQ(config.optim.milestones, (std::vector<int>{100, 150}));
  EXPECT_EQ(config.eval.gossip_rounds, 50);
  EXPECT_EQ(config.ledger.accounting, LedgerConfig::Accounting::kLpdt);
}

TEST(ExperimentConfigTest, StructDefaultsAreTheSchemaDefaults) {
  EXPECT_TRUE(to_config(ExperimentConfig{}) == experiment_schema().defaults());
  const Config defaults = experiment_schema().defaults();
  for (std::size_t i = 0; i < experiment_schema().size(); ++i) {
    EXPECT_EQ(defaults.where(experiment_schema().key(i).name()), "default");
  }
}

TEST(ExperimentConfigTest, FileOverridesDefaults) {
  const TempToml file(R"(# a test experiment
[optim]
lr = 0.05
milestones = [10, 20, 30]

[graph]
topology = "torus"
nodes = 16

[data]
batch_size = 16
augment = false
)");
  const Config resolved = resolve_experiment_config(file.path(), {});
  const ExperimentConfig config = experiment_config_from(resolved);
  EXPECT_DOUBLE_EQ(config.optim.lr, 0.05);
  EXPECT_EQ(config.optim.milestones, (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(config.graph.topology, GraphConfig::Topology::kTorus);
  EXPECT_EQ(config.graph.nodes, 16);
  EXPECT_EQ(config.data.batch_size, 16);
  EXPECT_FALSE(config.data.augment);
  EXPECT_EQ(config.run.epochs, 15);  // untouched keys keep their defaults
  EXPECT_EQ(resolved.where("optim.lr"), file.path() + ":3");
  EXPECT_EQ(resolved.where("graph.nodes"), file.path() + ":8");
  EXPECT_EQ(resolved.where("run.epochs"), "default");
}

TEST(ExperimentConfigTest, IntsAreAcceptedWhereFloatsAreExpected) {
  const TempToml file("[optim]\nlr = 1\nweight_decay = 0\n[algo]\nconsensus_step = 1\n");
  const ExperimentConfig config = load_experiment_config(file.path(), {});
  EXPECT_EQ(config.optim.lr, 1.0);
  EXPECT_EQ(config.optim.weight_decay, 0.0);
  EXPECT_EQ(config.algo.consensus_step, 1.0);
}

TEST(ExperimentConfigTest, SetOverridesFile) {
  const TempToml file("[optim]\nlr = 0.05\n[graph]\ntopology = \"torus\"\n[run]\nname = \"x\"\n");
  const std::vector<std::string> overrides = {"optim.lr=0.02",           "graph.topology=ring",
                                              "optim.milestones=[5, 7]", "run.name=2024",
                                              "data.augment=false",      "data.dir=/data/my folder",
                                              "run.out_dir=\"quoted\"",  " optim.momentum = 0.5 ",
                                              "run.epochs=10",           "run.epochs=12"};
  const Config resolved = resolve_experiment_config(file.path(), overrides);
  const ExperimentConfig config = experiment_config_from(resolved);
  EXPECT_DOUBLE_EQ(config.optim.lr, 0.02);
  EXPECT_EQ(config.graph.topology, GraphConfig::Topology::kRing);  // a bare word is a string
  EXPECT_EQ(config.optim.milestones, (std::vector<int>{5, 7}));
  EXPECT_EQ(config.run.name, "2024");  // a string key takes the text as it is
  EXPECT_FALSE(config.data.augment);
  EXPECT_EQ(config.data.dir, "/data/my folder");
  EXPECT_EQ(config.run.out_dir, "quoted");  // a quoted TOML string is unquoted
  EXPECT_DOUBLE_EQ(config.optim.momentum, 0.5);
  EXPECT_EQ(config.run.epochs, 12);  // the later --set wins
  EXPECT_EQ(resolved.where("optim.lr"), "--set optim.lr=0.02");
  EXPECT_EQ(resolved.where("run.epochs"), "--set run.epochs=12");
}

TEST(ExperimentConfigTest, OverridesWorkWithoutAFile) {
  const ExperimentConfig config =
      load_experiment_config(std::nullopt, {"algo.name=dpsgd", "data.partition=iid"});
  EXPECT_EQ(config.algo.name, AlgoConfig::Name::kDpsgd);
  EXPECT_EQ(config.data.partition, DataConfig::Partition::kIid);
}

// ---------------------------------------------------------------------------------------------
// Errors in a file: each names the file, the line, the key, the value and the expectation.

TEST(ExperimentConfigErrorTest, UnknownKeySuggestsTheClosestKey) {
  const TempToml file("[run]\nepochs = 2\n[graph]\ntopolgy = \"ring\"\n");
  const std::string message = config_error_of([&] { load_experiment_config(file.path(), {}); });
  EXPECT_EQ(message, file.path() +
                         ":4: unknown key 'graph.topolgy'; did you mean 'graph.topology'? (keys of "
                         "[graph]: topology, nodes, mixing, torus_rows, random_out_degree)");
}

TEST(ExperimentConfigErrorTest, KeyInTheWrongSectionSuggestsItsSection) {
  const std::string message = load_error("[graph]\nlr = 0.1\n");
  EXPECT_THAT(message, HasSubstr(":2: unknown key 'graph.lr'; did you mean 'optim.lr'?"));
}

TEST(ExperimentConfigErrorTest, KeyWithoutSectionSuggestsItsSection) {
  const std::string message = load_error("epochs = 5\n");
  EXPECT_THAT(message, HasSubstr(":1: unknown key 'epochs'; did you mean 'run.epochs'?"));
}

TEST(ExperimentConfigErrorTest, UnknownSectionSuggestsTheClosestSection) {
  const std::string message = load_error("[grph]\nnodes = 4\n");
  EXPECT_THAT(message,
              HasSubstr(":1: unknown section [grph]; did you mean [graph]? (sections: "
                        "run, data, model, quant, graph, algo, optim, eval, ledger, faults)"));
}

TEST(ExperimentConfigErrorTest, SectionGivenAsAValue) {
  const std::string message = load_error("graph = \"ring\"\n");
  EXPECT_THAT(message, HasSubstr(":1: 'graph' is a section, not a key: write its keys under "
                                 "[graph] (keys of [graph]: topology,"));
}

TEST(ExperimentConfigErrorTest, WrongType) {
  const TempToml file(
      "[run]\nepochs = 2.5\n\n[optim]\nlr = \"fast\"\nnesterov = 1\n"
      "milestones = 100\n");
  const std::string message = config_error_of([&] { load_experiment_config(file.path(), {}); });
  EXPECT_THAT(message, HasSubstr(file.path() + ":2: key 'run.epochs' = 2.5 has the wrong type: "
                                               "expected an int >= 1, got a float"));
  EXPECT_THAT(message, HasSubstr(file.path() + ":5: key 'optim.lr' = \"fast\" has the wrong "
                                               "type: expected a float > 0, got a string"));
  EXPECT_THAT(message, HasSubstr(file.path() + ":6: key 'optim.nesterov' = 1 has the wrong type: "
                                               "expected a bool (true or false), got an int"));
  EXPECT_THAT(message, HasSubstr(file.path() + ":7: key 'optim.milestones' = 100 has the wrong "
                                               "type: expected a list of ints, each >= 1, got an "
                                               "int"));
}

TEST(ExperimentConfigErrorTest, OutOfRange) {
  const TempToml file("[run]\nname = \"q\"\nseed = 1\n\n[optim]\nmomentum = 0.9\nlr = -0.1\n");
  const std::string message = config_error_of([&] { load_experiment_config(file.path(), {}); });
  EXPECT_EQ(message,
            file.path() + ":7: key 'optim.lr' = -0.1 is out of range: expected a float > 0");
}

TEST(ExperimentConfigErrorTest, OutOfRangeNamesInclusiveAndExclusiveEnds) {
  EXPECT_THAT(load_error("[data]\nskew = 1.5\n"),
              HasSubstr(":2: key 'data.skew' = 1.5 is out of range: expected a float in [0, 1]"));
  EXPECT_THAT(load_error("[optim]\nmomentum = 1.0\n"),
              HasSubstr("key 'optim.momentum' = 1.0 is out of range: expected a float in [0, 1)"));
  EXPECT_THAT(
      load_error("[algo]\nkeep_fraction = 0\n"),
      HasSubstr("key 'algo.keep_fraction' = 0 is out of range: expected a float in (0, 1]"));
  EXPECT_THAT(load_error("[graph]\nnodes = 0\n"),
              HasSubstr("key 'graph.nodes' = 0 is out of range: expected an int in [1, 4096]"));
  EXPECT_THAT(load_error("[optim]\nmilestones = [100, 0]\n"),
              HasSubstr(":2: key 'optim.milestones' = [100, 0] is out of range at element 1 (0): "
                        "expected a list of ints, each >= 1"));
  EXPECT_THAT(load_error("[optim]\nlr = nan\n"),
              HasSubstr("key 'optim.lr' = nan is not a finite number: expected a float > 0"));
  EXPECT_THAT(load_error("[run]\nepochs = 3000000000\n"),
              HasSubstr(":2: key 'run.epochs' = 3000000000 is out of range: expected an int of at "
                        "most 2147483647"));
}

TEST(ExperimentConfigErrorTest, BadChoiceListsTheChoicesAndSuggestsOne) {
  const std::string message = load_error("[graph]\ntopology = \"tours\"\n");
  EXPECT_THAT(message, HasSubstr(":2: key 'graph.topology' = \"tours\" is not an accepted value: "
                                 "expected one of directed-ring, ring, torus, complete, "
                                 "exponential, random, one-peer-exponential; did you mean "
                                 "\"torus\"?"));
  EXPECT_THAT(load_error("[data]\ndataset = \"imagenet\"\n"),
              HasSubstr("expected one of fashion-mnist, mnist, cifar10, cifar100, synthetic"));
}

// toml++ garbles a quoted key it names as defined twice ('"epepochs" '); the message names the
// key as the file writes it.
TEST(ExperimentConfigErrorTest, KeyDefinedTwiceIsNamedAsWritten) {
  const struct {
    const char* text;
    const char* named;
  } cases[] = {
      {"[run]\nepochs = 1\nepochs = 2\n", "'epochs'"},
      {"[run]\n\"epochs\" = 1\n\"epochs\" = 2\n", "'\"epochs\"'"},
      {"[run]\n'epochs' = 1\n  'epochs'   = 2 # again\n", "''epochs''"},
      {"[optim]\n\"a=b\" = 1\n\"a=b\" = 2\n", "'\"a=b\"'"},
      {"run.epochs = 1\n\"run\".\"epochs\" = 2\n", "'\"run\".\"epochs\"'"},
      {"[\"run\"]\nepochs = 1\n[\"run\"]\n", "'\"run\"'"},
  };
  for (const auto& c : cases) {
    const TempToml file(c.text);
    const std::string message = config_error_of([&] { load_experiment_config(file.path(), {}); });
    EXPECT_THAT(message, HasSubstr("cannot redefine existing")) << c.text;
    EXPECT_THAT(message, EndsWith(c.named)) << c.text;
  }
}

TEST(ExperimentConfigErrorTest, TomlSyntaxErrorGivesLineAndColumn) {
  const TempToml file("[optim]\nlr = 0.1\nmomentum = = 0.9\n");
  const std::string message = config_error_of([&] { load_experiment_config(file.path(), {}); });
  EXPECT_THAT(message, HasSubstr(file.path() + ":3:"));
  EXPECT_THAT(message, HasSubstr("TOML syntax error: "));
  const TempToml duplicate("[optim]\nlr = 0.1\nlr = 0.2\n");
  EXPECT_THAT(config_error_of([&] { load_experiment_config(duplicate.path(), {}); }),
              HasSubstr(duplicate.path() + ":3:"));
}

TEST(ExperimentConfigErrorTest, MissingFile) {
  EXPECT_THAT(
      config_error_of([] { load_experiment_config("/nonexistent/lpdt/experiment.toml", {}); }),
      HasSubstr("config file '/nonexistent/lpdt/experiment.toml' cannot be read: no such "
                "file"));
}

TEST(ExperimentConfigErrorTest, ReportsAllErrorsOfAFile) {
  const std::string message = load_error(
      "[run]\nepochs = 0\n[graph]\nnodse = 8\n[optim]\nlr = \"x\"\n[algo]\nname = \"sgd\"\n");
  EXPECT_THAT(message, HasSubstr(":2: key 'run.epochs'"));
  EXPECT_THAT(message, HasSubstr(":4: unknown key 'graph.nodse'; did you mean 'graph.nodes'?"));
  EXPECT_THAT(message, HasSubstr(":6: key 'optim.lr'"));
  EXPECT_THAT(message, HasSubstr(":8: key 'algo.name' = \"sgd\" is not an accepted value"));
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 3);
  // In file order (toml++ itself iterates the sections alphabetically).
  EXPECT_LT(message.find(":2:"), message.find(":4:"));
  EXPECT_LT(message.find(":4:"), message.find(":6:"));
  EXPECT_LT(message.find(":6:"), message.find(":8:"));
}

// ---------------------------------------------------------------------------------------------
// Errors in --set: named by the --set argument.

TEST(ExperimentConfigErrorTest, SetWithoutEquals) {
  EXPECT_EQ(config_error_of([] { load_experiment_config(std::nullopt, {"foo"}); }),
            "--set 'foo': expected key=value, for example --set optim.lr=0.05");
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"=3"}); }),
              HasSubstr("--set '=3': expected key=value"));
}

TEST(ExperimentConfigErrorTest, SetUnknownKey) {
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"optim.lrr=0.1"}); }),
              HasSubstr("--set optim.lrr=0.1: unknown key 'optim.lrr'; did you mean "
                        "'optim.lr'? (keys of [optim]: lr, optimizer, momentum,"));
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"optim=3"}); }),
              HasSubstr("--set optim=3: 'optim' is a section, not a key"));
}

TEST(ExperimentConfigErrorTest, SetValueErrors) {
  EXPECT_EQ(config_error_of([] { load_experiment_config(std::nullopt, {"optim.lr=-1"}); }),
            "--set optim.lr=-1: key 'optim.lr' = -1 is out of range: expected a float > 0");
  EXPECT_EQ(config_error_of([] { load_experiment_config(std::nullopt, {"graph.topology=tours"}); }),
            "--set graph.topology=tours: key 'graph.topology' = \"tours\" is not an accepted "
            "value: expected one of directed-ring, ring, torus, complete, exponential, random, "
            "one-peer-exponential; did you mean \"torus\"?");
  // A quoted string shows as the string, not as its quoted text.
  EXPECT_THAT(
      config_error_of([] { load_experiment_config(std::nullopt, {"algo.name=\"Choco\""}); }),
      HasSubstr("key 'algo.name' = \"Choco\" is not an accepted value"));
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"data.augment=yes"}); }),
              HasSubstr("--set data.augment=yes: key 'data.augment' = \"yes\" has the wrong type: "
                        "expected a bool (true or false), got a string"));
  EXPECT_THAT(
      config_error_of([] { load_experiment_config(std::nullopt, {"optim.milestones=[100,"}); }),
      HasSubstr("--set optim.milestones=[100,: key 'optim.milestones' = \"[100,\" has the wrong "
                "type: expected a list of ints, each >= 1, got a string (the value is not valid "
                "TOML: "));
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"run.epochs="}); }),
              HasSubstr("--set run.epochs=: key 'run.epochs' = \"\" has the wrong type"));
}

// ---------------------------------------------------------------------------------------------
// Cross-key rules: reported where the last of the involved keys was set, with every involved
// key's value and origin.

TEST(ExperimentConfigErrorTest, KeepFractionWithoutCompressor) {
  const TempToml file("[algo]\nname = \"choco\"\nkeep_fraction = 0.01\n");
  const std::string message = config_error_of([&] { load_experiment_config(file.path(), {}); });
  EXPECT_THAT(message, HasSubstr(file.path() + ":3: algo.keep_fraction = 0.01 < 1 asks for "
                                               "compression, but algo.compressor = \"none\": set "
                                               "algo.compressor=topk or randomk"));
  EXPECT_THAT(message, HasSubstr("'algo.keep_fraction' = 0.01 from " + file.path() + ":3"));
  EXPECT_THAT(message, HasSubstr("'algo.compressor' = \"none\" from default"));
}

TEST(ExperimentConfigErrorTest, CompressionNeedsDeepSqueezeOrChoco) {
  const TempToml file("[algo]\nname = \"dpsgd\"\n");
  const std::string message = config_error_of([&] {
    load_experiment_config(file.path(), {"algo.compressor=topk", "algo.keep_fraction=0.1"});
  });
  EXPECT_THAT(message, HasSubstr("--set algo.compressor=topk: algo.compressor = \"topk\" needs "
                                 "algo.name = deep-squeeze or choco"));
  EXPECT_THAT(message, HasSubstr("'algo.name' = \"dpsgd\" from " + file.path() + ":2"));
}

TEST(ExperimentConfigErrorTest, MetropolisNeedsAnUndirectedTopology) {
  const std::string message = load_error("[graph]\nmixing = \"metropolis\"\n");
  EXPECT_THAT(message, HasSubstr(":2: graph.mixing = \"metropolis\" needs an undirected topology "
                                 "(ring, torus, complete), but graph.topology = "
                                 "\"directed-ring\" is a directed kind"));
  EXPECT_NO_THROW(
      load_experiment_config(std::nullopt, {"graph.mixing=metropolis", "graph.topology=ring"}));
}

TEST(ExperimentConfigErrorTest, ResnetDepthMustBe6nPlus2) {
  const std::string message = load_error("[model]\narch = \"resnet\"\ndepth = 21\n");
  EXPECT_THAT(message, HasSubstr(":3: model.depth = 21 is not a ResNet depth: expected 6n+2 with "
                                 "n >= 1 blocks per stage, e.g. 20, 32, 44, 56, 110, or 54 (the "
                                 "paper's ResNet-54"));
  EXPECT_THAT(load_error("[model]\narch = \"resnet\"\ndepth = 2\n"),
              HasSubstr("is not a ResNet depth"));
  for (const int depth : {8, 20, 32, 44, 50, 56, 110}) {
    const auto config = load_experiment_config(
        std::nullopt, {"model.arch=resnet", "model.depth=" + std::to_string(depth)});
    EXPECT_EQ(config.model.resnet_blocks_per_stage(), (depth - 2) / 6);
  }
  // The paper's ResNet-54 is built as the official code builds it: n = int(52 / 6) = 8.
  EXPECT_EQ(
      load_experiment_config(std::nullopt, {"model.depth=54"}).model.resnet_blocks_per_stage(), 8);
  // Other architectures ignore the depth.
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"model.arch=vgg11", "model.depth=21"}));
}

// DistilBERT has 512 positions: a longer data.max_length is a config error, found before the run
// folder is made, not at the first forward pass.
// A run name the run folder's name cannot hold is said before anything runs.
TEST(ExperimentConfigErrorTest, RunNameFitsAFolderName) {
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"run.name=" + std::string(200, 'a')}));
  EXPECT_THAT(config_error_of([] {
                load_experiment_config(std::nullopt, {"run.name=" + std::string(201, 'a')});
              }),
              HasSubstr("run.name is 201 bytes long: expected at most 200"));
}

TEST(ExperimentConfigErrorTest, DistilbertReadsAtMostItsPositions) {
  EXPECT_EQ(kDistilbertPositions, models::TransformerOptions::distilbert_base().max_positions);
  const std::string message =
      load_error("[data]\ndataset = \"ag-news\"\nmax_length = 513\n[model]\narch = \"distilbert\"\n");
  EXPECT_THAT(message, AllOf(HasSubstr("data.max_length = 513"), HasSubstr("512 positions")));
  EXPECT_NO_THROW(load_experiment_config(
      std::nullopt, {"data.dataset=ag-news", "model.arch=distilbert", "data.max_length=512"}));
  EXPECT_NO_THROW(load_experiment_config(
      std::nullopt, {"data.dataset=ag-news", "model.arch=transformer", "data.max_length=1000"}));
}

TEST(ExperimentConfigErrorTest, NormGroupsMustDivideTheChannels) {
  EXPECT_THAT(load_error("[model]\narch = \"resnet\"\ngroups = 3\n"),
              HasSubstr(":3: model.groups = 3 does not divide the 16 channels of resnet's first "
                        "stage: expected one of 1, 2, 4, 8, 16"));
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"model.groups=3", "model.norm=batchnorm"}));
}

TEST(ExperimentConfigErrorTest, ReferenceSkewModeNeedsTheSkewPartition) {
  const std::string message =
      load_error("[data]\npartition = \"iid\"\nskew_mode = \"reference\"\n");
  EXPECT_THAT(message, HasSubstr(":3: data.skew_mode = \"reference\" reproduces the official skew "
                                 "partition and needs data.partition = \"skew\""));
}

TEST(ExperimentConfigErrorTest, Bf16NeedsAModelWithConvolutions) {
  for (const char* arch : {"mlp", "transformer", "distilbert"}) {
    EXPECT_THAT(load_error(std::string("[model]\narch = \"") + arch + "\"\nprecision = \"bf16\"\n"),
                HasSubstr("model.precision = \"bf16\" runs convolutions in bfloat16, and "
                          "model.arch = \"" + std::string(arch) + "\" has none"));
  }
  for (const char* arch : {"lenet5", "resnet", "vgg11", "mobilenetv2"}) {
    EXPECT_NO_THROW(load_experiment_config(
        std::nullopt, {std::string("model.arch=") + arch, "model.precision=bf16"}));
  }
}

TEST(ExperimentConfigErrorTest, PadToMustNotShrinkImages) {
  EXPECT_THAT(load_error("[data]\npad_to = 20\n"),
              HasSubstr(":2: data.pad_to = 20 is smaller than the 28x28 images of fashion-mnist: "
                        "expected 0 (no padding) or a side >= 28"));
  EXPECT_EQ(load_experiment_config(std::nullopt, {"data.pad_to=32"}).data.pad_to, 32);
}

TEST(ExperimentConfigErrorTest, TopologyShapesAreCheckedWithTheConfiguration) {
  EXPECT_THAT(load_error("[graph]\ntopology = \"torus\"\nnodes = 12\ntorus_rows = 12\n"),
              HasSubstr("graph.torus_rows = 12 gives a 12 x 1 torus for graph.nodes = 12: expected "
                        "rows and columns >= 3"));
  EXPECT_THAT(load_error("[graph]\ntopology = \"torus\"\nnodes = 10\n"),
              HasSubstr("topology 'torus' needs a node count"));
  EXPECT_THAT(load_error("[graph]\ntopology = \"one-peer-exponential\"\nnodes = 1\n"),
              HasSubstr("graph.topology = \"one-peer-exponential\" needs graph.nodes >= 2; got 1"));
  EXPECT_NO_THROW(load_experiment_config(
      std::nullopt, {"graph.topology=\"torus\"", "graph.nodes=12", "graph.torus_rows=3"}));
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"graph.topology=\"torus\"", "graph.nodes=16"}));
}

TEST(ExperimentConfigErrorTest, DirichletAlphaHasABound) {
  EXPECT_THAT(load_error("[data]\ndirichlet_alpha = 1.7e308\n"),
              HasSubstr("key 'data.dirichlet_alpha' = 1.7e308 is out of range: expected a float "
                        "in (0, 1000000]"));
  // Every node trains on at least one sample.
  EXPECT_THAT(load_error("[data]\ndirichlet_min_samples = 0\n"),
              HasSubstr("key 'data.dirichlet_min_samples' = 0 is out of range: expected an int >= 1"));
}

TEST(ExperimentConfigErrorTest, ImageSidesHaveABound) {
  for (const char* key : {"data.pad_to", "data.crop_size", "data.image_size", "data.synthetic_size"}) {
    EXPECT_THAT(load_error(std::string("[data]\n") + (std::string(key).substr(5)) + " = 100000\n"),
                HasSubstr(std::string("key '") + key + "' = 100000 is out of range: expected an int in"));
  }
}

TEST(ExperimentConfigErrorTest, BatchesOnTheDeviceCannotTakeResizedCrops) {
  EXPECT_THAT(load_error("[data]\ncrop_size = 24\non_device = \"on\"\n"),
              HasSubstr("data.on_device = \"on\" cannot make fashion-mnist's batches on the "
                        "device: the random resized crop and the centre crop (data.crop_size, "
                        "imagenette) run on the CPU only; expected \"auto\" or \"off\""));
  EXPECT_EQ(load_experiment_config(std::nullopt, {"data.on_device=\"on\""}).data.on_device,
            DataConfig::OnDevice::kOn);
  EXPECT_NO_THROW(
      load_experiment_config(std::nullopt, {"data.crop_size=24", "data.on_device=\"auto\""}));
}

TEST(ExperimentConfigErrorTest, GraphShapeRules) {
  EXPECT_THAT(load_error("[graph]\ntopology = \"torus\"\ntorus_rows = 3\n"),
              HasSubstr(":3: graph.torus_rows = 3 does not divide graph.nodes = 8"));
  EXPECT_THAT(load_error("[graph]\ntopology = \"random\"\nrandom_out_degree = 8\n"),
              HasSubstr(":3: graph.random_out_degree = 8 is more than the 7 other nodes: expected "
                        "an int in [1, 7]"));
}

// A cross-key rule broken by two --set arguments is reported at the later one, whichever key it
// sets.
TEST(ExperimentConfigErrorTest, ACrossKeyErrorIsReportedAtTheLaterOverride) {
  const auto error_of = [](const std::vector<std::string>& overrides) {
    try {
      load_experiment_config(std::nullopt, overrides);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of({"model.precision=int8", "quant.backend=integer", "quant.bits=4"}),
              ::testing::StartsWith("--set quant.bits=4: quant.backend = \"integer\""));
  EXPECT_THAT(error_of({"model.precision=int8", "quant.bits=4", "quant.backend=integer"}),
              ::testing::StartsWith("--set quant.backend=integer: quant.backend = \"integer\""));
}

TEST(ExperimentConfigErrorTest, OptimizerRules) {
  EXPECT_THAT(load_error("[optim]\nmomentum = 0\n"),
              HasSubstr(":2: optim.nesterov = true needs momentum: expected optim.momentum in "
                        "(0, 1), or set optim.nesterov=false"));
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"optim.momentum=0", "algo.qgm=true"}));
  // Adam reads no momentum; Adam with QGM is refused, saying why.
  EXPECT_NO_THROW(
      load_experiment_config(std::nullopt, {"optim.momentum=0", "optim.optimizer=adam"}));
  EXPECT_THAT(load_error("[optim]\noptimizer = \"adamw\"\n[algo]\nqgm = true\n"),
              HasSubstr("optim.optimizer = \"adamw\" cannot run with algo.qgm = true"));
  EXPECT_THAT(load_error("[optim]\noptimizer = \"lion\"\n"), HasSubstr("lion"));
  EXPECT_THAT(load_error("[optim]\nbeta2 = 1.0\n"), HasSubstr("optim.beta2"));
  EXPECT_THAT(load_error("[optim]\neps = 0.0\n"), HasSubstr("optim.eps"));
  const auto adam = load_experiment_config(
      std::nullopt,
      {"optim.optimizer=adamw", "optim.beta1=0.8", "optim.beta2=0.9", "optim.eps=1e-6"});
  EXPECT_EQ(adam.optim.optimizer, OptimConfig::Optimizer::kAdamW);
  EXPECT_EQ(adam.optim.beta1, 0.8);
  EXPECT_EQ(adam.optim.beta2, 0.9);
  EXPECT_EQ(adam.optim.eps, 1e-6);
  EXPECT_THAT(load_error("[optim]\nmilestones = [150, 100]\n"),
              HasSubstr(":2: optim.milestones = [150, 100] is not strictly increasing"));
}

TEST(ExperimentConfigErrorTest, ReportsAllCrossKeyErrors) {
  const std::string message = load_error(
      "[graph]\nmixing = \"metropolis\"\n[algo]\nkeep_fraction = 0.5\n[model]\narch = "
      "\"resnet\"\ndepth = 19\n");
  EXPECT_THAT(message, HasSubstr(":2: graph.mixing"));
  EXPECT_THAT(message, HasSubstr(":4: algo.keep_fraction"));
  EXPECT_THAT(message, HasSubstr(":7: model.depth = 19"));
}

// ---------------------------------------------------------------------------------------------
// Writing the resolved configuration

ExperimentConfig unusual_config() {
  ExperimentConfig c;
  c.run.name = "a \"quoted\" name # not a comment";
  c.run.seed = 987654321987ull;
  c.run.device = RunConfig::Device::kCuda;
  c.run.max_steps_per_epoch = 7;
  c.data.dataset = DataConfig::Dataset::kSynthetic;
  c.data.dir = "C:\\data\\set";
  c.data.partition = DataConfig::Partition::kDirichlet;
  c.data.skew = 1.0 / 3.0;
  c.data.dirichlet_alpha = 1e-3;
  c.data.pad_to = 24;
  c.model.arch = ModelConfig::Arch::kVgg11;
  c.model.depth = 21;
  c.model.norm = ModelConfig::Norm::kGroupnorm;
  c.model.groups = 32;
  c.graph.topology = GraphConfig::Topology::kOnePeerExponential;
  c.graph.nodes = 16;
  c.algo.name = AlgoConfig::Name::kDeepSqueeze;
  c.algo.compressor = AlgoConfig::Compressor::kTopK;
  c.algo.keep_fraction = 0.01;
  c.algo.consensus_step = 0.01;
  c.algo.qgm = true;
  c.optim.lr = 0.1 + 0.2;
  c.optim.schedule = OptimConfig::Schedule::kCosine;
  c.optim.milestones = {};
  c.optim.weight_decay = 5e-4;
  c.optim.warmup = OptimConfig::Warmup::kNone;
  c.optim.beta2 = 0.9;
  c.optim.eps = 1e-7;
  c.eval.protocol = EvalConfig::Protocol::kReference;
  c.eval.per_node = false;
  c.ledger.accounting = LedgerConfig::Accounting::kReference;
  return c;
}

TEST(ExperimentConfigOutputTest, ResolvedTomlRoundTrips) {
  const ExperimentConfig original = unusual_config();
  const std::string text = to_toml(original);
  const TempToml file(text, "config.toml");
  EXPECT_EQ(load_experiment_config(file.path(), {}), original) << text;

  const ExperimentConfig defaults;
  const TempToml default_file(to_toml(defaults), "config.toml");
  EXPECT_EQ(load_experiment_config(default_file.path(), {}), defaults);
}

TEST(ExperimentConfigOutputTest, TomlOfAStructHasNoOriginComments) {
  ExperimentConfig config;
  config.graph.nodes = 4;
  const std::string text = to_toml(config);
  EXPECT_THAT(text, HasSubstr("\nnodes = 4\n"));
  EXPECT_THAT(text, Not(HasSubstr("program")));
  // Nor does its header promise them.
  EXPECT_THAT(text, Not(HasSubstr("names its origin")));
}

TEST(ExperimentConfigOutputTest, ResolvedTomlRecordsOriginsAndDocs) {
  const TempToml file("[optim]\nlr = 0.05\n");
  const Config resolved = resolve_experiment_config(file.path(), {"graph.nodes=4"});
  const std::string text = resolved.to_toml();
  EXPECT_THAT(text, HasSubstr("[optim]\n# Base learning rate. (float; > 0)\nlr = 0.05  # " +
                              file.path() + ":2\n"));
  EXPECT_THAT(text, HasSubstr("nodes = 4  # --set graph.nodes=4\n"));
  EXPECT_THAT(text, HasSubstr("epochs = 15\n"));
  EXPECT_THAT(text, HasSubstr("a value set by a file or --set names its origin"));
  // Every key is written, sections in schema order.
  for (std::size_t i = 0; i < experiment_schema().size(); ++i) {
    std::string line(1, '\n');  // built by appending: GCC 12 -O3 warns on "\n" + std::string
    line += experiment_schema().key(i).leaf();
    line += " = ";
    EXPECT_THAT(text, HasSubstr(line));
  }
  EXPECT_LT(text.find("[run]"), text.find("[data]"));
  EXPECT_LT(text.find("[eval]"), text.find("[ledger]"));
  // Parsing the written file again gives the same configuration.
  const TempToml written(text, "config.toml");
  EXPECT_TRUE(resolve_experiment_config(written.path(), {}) == resolved);
}

TEST(ExperimentConfigOutputTest, JsonHasEverySectionAndTypedValues) {
  const nlohmann::json json = to_json(ExperimentConfig{});
  EXPECT_EQ(json["run"]["name"], "quickstart");
  EXPECT_EQ(json["run"]["seed"], 1234);
  EXPECT_EQ(json["data"]["augment"], true);
  EXPECT_EQ(json["optim"]["lr"], 0.1);
  EXPECT_EQ(json["optim"]["milestones"], nlohmann::json({100, 150}));
  EXPECT_EQ(json["graph"]["topology"], "directed-ring");
  std::size_t keys = 0;
  for (const auto& [section, values] : json.items()) keys += values.size();
  EXPECT_EQ(keys, experiment_schema().size());
}

TEST(ExperimentConfigOutputTest, ToConfigRejectsInvalidStructs) {
  ExperimentConfig config;
  config.optim.lr = -1;
  EXPECT_THAT(config_error_of([&] { to_config(config); }),
              HasSubstr("program: key 'optim.lr' = -1.0 is out of range: expected a float > 0"));
  config = ExperimentConfig{};
  config.algo.keep_fraction = 0.5;
  EXPECT_THAT(config_error_of([&] { to_config(config); }),
              HasSubstr("program: algo.keep_fraction = 0.5 < 1 asks for compression"));
}

TEST(ExperimentConfigOutputTest, HelpListsEveryKey) {
  const std::string help = experiment_schema().help_text();
  EXPECT_THAT(help, HasSubstr("--set section.key=value"));
  EXPECT_THAT(help, HasSubstr("[graph]\n  topology = \"directed-ring\""));
  for (std::size_t i = 0; i < experiment_schema().size(); ++i) {
    EXPECT_THAT(help, HasSubstr(experiment_schema().key(i).doc()));
  }
}

TEST(ExperimentConfigOutputTest, EnumNamesRoundTrip) {
  const auto check = [](auto tag) {
    using E = decltype(tag);
    for (std::size_t i = 0; i < config_names<E>().size(); ++i) {
      const auto value = static_cast<E>(i);
      EXPECT_EQ(config_enum_from_string<E>(to_string(value)), value);
    }
    EXPECT_FALSE(config_enum_from_string<E>("no-such-name").has_value());
  };
  check(RunConfig::Device{});
  check(DataConfig::Dataset{});
  check(DataConfig::Partition{});
  check(DataConfig::SkewMode{});
  check(ModelConfig::Arch{});
  check(ModelConfig::Norm{});
  check(GraphConfig::Topology{});
  check(GraphConfig::Mixing{});
  check(AlgoConfig::Name{});
  check(AlgoConfig::Compressor{});
  check(AlgoConfig::ChocoInit{});
  check(OptimConfig::Schedule{});
  check(OptimConfig::Warmup{});
  check(EvalConfig::Protocol{});
  check(LedgerConfig::Accounting{});
  EXPECT_EQ(to_string(GraphConfig::Topology::kOnePeerExponential), "one-peer-exponential");
  EXPECT_TRUE(GraphConfig::is_directed(GraphConfig::Topology::kDirectedRing));
  EXPECT_FALSE(GraphConfig::is_directed(GraphConfig::Topology::kTorus));
}

// ---------------------------------------------------------------------------------------------
// The shipped configs and the key reference

TEST(ExperimentConfigFilesTest, EveryShippedConfigLoads) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("configs"))) {
    if (entry.path().extension() != ".toml") continue;
    ++count;
    EXPECT_NO_THROW(load_experiment_config(entry.path().string(), {})) << entry.path();
  }
  EXPECT_GE(count, 4u);
}

TEST(ExperimentConfigFilesTest, QuickstartIsTheDefaults) {
  EXPECT_EQ(load_experiment_config(source_path("configs/quickstart.toml"), {}), ExperimentConfig{});
}

TEST(ExperimentConfigFilesTest, PaperCifar10ConfigHasThePaperSettings) {
  const ExperimentConfig c =
      load_experiment_config(source_path("configs/cifar10_resnet20_paper.toml"), {});
  EXPECT_EQ(c.data.dataset, DataConfig::Dataset::kCifar10);
  EXPECT_EQ(c.model.arch, ModelConfig::Arch::kResnet);
  EXPECT_EQ(c.model.depth, 20);
  EXPECT_EQ(c.graph.nodes, 8);
  EXPECT_EQ(c.graph.topology, GraphConfig::Topology::kDirectedRing);
  EXPECT_EQ(c.data.batch_size, 32);
  EXPECT_EQ(c.run.epochs, 200);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.1);
  EXPECT_EQ(c.optim.milestones, (std::vector<int>{100, 150}));
  EXPECT_DOUBLE_EQ(c.algo.consensus_step, 1.0);
  EXPECT_EQ(c.algo.compressor, AlgoConfig::Compressor::kNone);
}

// docs/config.md carries the key reference generated from the schema between two markers. Run
// with LPDT_UPDATE_CONFIG_DOC=1 to rewrite it after changing the schema.
TEST(ExperimentConfigFilesTest, DocsListEveryKey) {
  constexpr std::string_view kBegin = "<!-- BEGIN GENERATED KEY REFERENCE -->\n";
  constexpr std::string_view kEnd = "<!-- END GENERATED KEY REFERENCE -->";
  const std::string path = source_path("docs/config.md");
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string doc = buffer.str();
  const auto begin = doc.find(kBegin);
  const auto end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << path << " has no begin marker";
  ASSERT_NE(end, std::string::npos) << path << " has no end marker";
  const std::string generated = experiment_schema().markdown();
  const std::string current = doc.substr(begin + kBegin.size(), end - begin - kBegin.size());
  if (current != generated && std::getenv("LPDT_UPDATE_CONFIG_DOC") != nullptr) {
    doc.replace(begin + kBegin.size(), end - begin - kBegin.size(), generated);
    std::ofstream(path) << doc;
    return;
  }
  EXPECT_EQ(current, generated)
      << "docs/config.md is out of date: run this test with LPDT_UPDATE_CONFIG_DOC=1";
}

TEST(ExperimentConfigErrorTest, LowPrecisionCombinations) {
  EXPECT_THAT(
      load_error("[model]\narch = \"resnet\"\nprecision = \"int8\"\nnorm = \"groupnorm\"\n"),
      HasSubstr("has no 8-bit version"));
  // LeNet-5 (the default) has no normalisation layers: the key changes nothing there.
  {
    const TempToml lenet("[model]\nprecision = \"int8\"\nnorm = \"groupnorm\"\n");
    EXPECT_NO_THROW(load_experiment_config(lenet.path(), {}));
  }
  EXPECT_THAT(load_error("[model]\nprecision = \"int4\"\n"),
              HasSubstr("expected one of fp32, bf16, int8; did you mean \"int8\"?"));
  EXPECT_THAT(load_error("[quant]\nbackend = \"integer\"\nscheme = \"reference\"\n"),
              HasSubstr("needs quant.scheme = \"gemmlowp\""));
  EXPECT_THAT(load_error("[quant]\nbackend = \"integer\"\nbits = 4\n"),
              HasSubstr("computes with 8-bit codes"));
  EXPECT_THAT(load_error("[quant]\nbits = 1\n"), HasSubstr("quant.bits"));
  EXPECT_THAT(load_error("[quant]\nrange_momentum = 0\n"), HasSubstr("quant.range_momentum"));
}

TEST(ExperimentConfigTest, LowPrecisionKeysRoundTrip) {
  const ExperimentConfig c = load_experiment_config(
      std::nullopt, {"model.precision=int8", "quant.backend=integer", "quant.range_state=param",
                     "quant.eval_rounding=stochastic", "quant.range_evonorm=paper"});
  EXPECT_EQ(c.model.precision, ModelConfig::Precision::kInt8);
  EXPECT_EQ(c.quant.backend, QuantConfig::Backend::kInteger);
  EXPECT_EQ(c.quant.range_state, QuantConfig::RangeState::kParam);
  EXPECT_EQ(c.quant.eval_rounding, QuantConfig::Rounding::kStochastic);
  EXPECT_EQ(c.quant.range_evonorm, QuantConfig::RangeEvonorm::kPaper);
  const TempToml file(to_toml(c));
  EXPECT_EQ(load_experiment_config(file.path(), {}), c);
}

}  // namespace
}  // namespace lpdt

namespace lpdt {
namespace {

TEST(ExperimentConfigTest, FaultKeysAreChecked) {
  EXPECT_THAT(load_error("", {"graph.nodes=4", "faults.kill_nodes=[1, 4]"}),
              HasSubstr("faults.kill_nodes = [1, 4] names node 4, but the nodes are 0 .. 3"));
  EXPECT_THAT(load_error("", {"graph.nodes=4", "faults.kill_nodes=[1, 1]"}),
              HasSubstr("names a node twice"));
  EXPECT_THAT(load_error("", {"graph.nodes=2", "faults.kill_nodes=[0, 1]"}),
              HasSubstr("kills every node"));
  EXPECT_THAT(load_error("[faults]\ndrop_probability = 1.0\n"),
              HasSubstr("faults.drop_probability"));
  EXPECT_THAT(load_error("[faults]\ndelay_rounds = 0\n"), HasSubstr("faults.delay_rounds"));
  const ExperimentConfig ok = load_experiment_config(
      std::nullopt,
      {"faults.kill_nodes=[3]", "faults.kill_step=10", "faults.drop_probability=0.1"});
  EXPECT_EQ(ok.faults.kill_nodes, std::vector<int>{3});
  EXPECT_EQ(ok.faults.kill_step, 10);
  EXPECT_TRUE(ok.faults.any());
  EXPECT_FALSE(ExperimentConfig{}.faults.any());
}

}  // namespace
}  // namespace lpdt

namespace lpdt::exp {
namespace {

// Adam's eps is added in float32: one beyond float32's normal range (inf, or flushed to zero)
// would stop the model or break the quotient's bound, so it is refused, naming the key.
TEST(ExperimentConfigErrorTest, AdamEpsIsANormalFloat32) {
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"optim.eps=1e-8"}));
  for (const char* eps : {"optim.eps=1e300", "optim.eps=1e-300", "optim.eps=1e39"}) {
    EXPECT_THAT(config_error_of([eps] { load_experiment_config(std::nullopt, {eps}); }),
                HasSubstr("is outside float32's normal range"))
        << eps;
  }
}

// The rates the step applies in float32: an lr that is 0 there (below float32's normal range)
// would train nothing; Adam's first step lr / (1 - beta1) and AdamW's lr wd must be float32
// numbers, or LibTorch stops the run naming no key.
TEST(ExperimentConfigErrorTest, RatesMustBeFloat32NumbersInTheStep) {
  const auto error_of = [](std::vector<std::string> sets) {
    return config_error_of([&] { load_experiment_config(std::nullopt, sets); });
  };
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"optim.lr=1e-30"}));
  EXPECT_THAT(error_of({"optim.lr=1e-46"}),
              HasSubstr("optim.lr = 1e-46 is below float32's smallest normal number"));
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"optim.optimizer=adam", "optim.lr=3e37"}));
  EXPECT_THAT(error_of({"optim.optimizer=adam", "optim.lr=1e38"}),
              HasSubstr("optim.lr / (1 - optim.beta1) = 1e+38 / (1 - 0.9) is larger than"));
  EXPECT_THAT(error_of({"optim.optimizer=adamw", "optim.lr=1e34", "optim.beta1=0.99999"}),
              HasSubstr("optim.lr / (1 - optim.beta1)"));
  EXPECT_THAT(error_of({"optim.optimizer=adamw", "optim.lr=1e30", "optim.weight_decay=1e10"}),
              HasSubstr("optim.lr * optim.weight_decay = 1e+30 * 1e+10 is larger than"));
  // SGD's rates are applied one at a time: only each alone is checked.
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"optim.lr=1e38"}));
}

// Layer counts far beyond any model would build blocks until the memory runs out: refused.
TEST(ExperimentConfigErrorTest, LayerCountsHaveAnUpperLimit) {
  EXPECT_NO_THROW(load_experiment_config(std::nullopt, {"model.depth=1202"}));
  EXPECT_THAT(config_error_of([] {
                load_experiment_config(std::nullopt, {"model.depth=2000000000"});
              }),
              HasSubstr("'model.depth' = 2000000000 is out of range: expected an int in [1, 1202]"));
  EXPECT_THAT(config_error_of([] {
                load_experiment_config(std::nullopt, {"model.transformer_layers=257"});
              }),
              HasSubstr("expected an int in [1, 256]"));
}

// A string key takes a bare word as it is, and a quoted TOML string as its contents; a quote that
// does not close, a list or a table is a mistake, not a name.
TEST(ExperimentConfigErrorTest, StringKeysRefuseMalformedQuotesListsAndTables) {
  EXPECT_EQ(load_experiment_config(std::nullopt, {"run.name=\"two words\""}).run.name,
            "two words");
  EXPECT_EQ(load_experiment_config(std::nullopt, {"run.name=plain"}).run.name, "plain");
  EXPECT_THAT(config_error_of([] {
                load_experiment_config(std::nullopt, {"run.name=\"unterminated"});
              }),
              HasSubstr("opens a TOML string but does not close it"));
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"run.name={a=1}"}); }),
              HasSubstr("got a table"));
  EXPECT_THAT(config_error_of([] { load_experiment_config(std::nullopt, {"data.dir=[1, 2]"}); }),
              HasSubstr("got a list"));
}

}  // namespace
}  // namespace lpdt::exp
