// Sweeps (exp/sweep.h): the sweep file's checks, the grid's expansion, mean and spread against
// their formulas, and a real tiny sweep that skips finished runs, resumes an interrupted one and
// extends its runs when run.epochs grows, and shards that split it between processes.
#include "lpdt/exp/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/file_text.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/run_folder.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("lpdt_sweep_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path write(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text;
  return file;
}

std::string load_error(const fs::path& file) {
  try {
    load_sweep(file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// A tiny synthetic experiment (an MLP on 4 nodes) that trains in a fraction of a second.
std::string tiny_sweep(const fs::path& out, int epochs) {
  return "out_dir = \"" + out.string() + "\"\nseeds = [1, 2]\n" +
         "metrics = [\"average_model_accuracy\"]\n"
         "[set]\n\"run.epochs\" = " +
         std::to_string(epochs) +
         "\n\"run.log_every\" = 0\n\"data.dataset\" = \"synthetic\"\n"
         "\"data.synthetic_samples_per_class\" = 16\n\"data.synthetic_size\" = 8\n"
         "\"data.augment\" = false\n\"model.arch\" = \"mlp\"\n\"model.norm\" = \"none\"\n"
         "\"graph.nodes\" = 4\n\"optim.warmup\" = \"none\"\n"
         "[grid]\n\"algo.name\" = [\"deep-squeeze\", \"choco\"]\n"
         "\"data.skew\" = [0.0, 0.5]\n"
         "[table]\nrows = [\"data.skew\"]\ncolumns = [\"algo.name\"]\n";
}

TEST(Sweep, LinkedKeysChangeTogether) {
  const fs::path dir = fresh_dir("linked");
  std::string text = tiny_sweep(dir / "out", 1);
  const auto replace = [&](const std::string& from, const std::string& to) {
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
  };
  const std::string key = "algo.compressor+algo.keep_fraction+algo.consensus_step";
  replace("\"data.skew\" = [0.0, 0.5]",
          "\"" + key + "\" = [[\"none\", 1.0, 1.0], [\"topk\", 0.01, 0.05]]");
  replace("rows = [\"data.skew\"]", "rows = [\"" + key + "\"]");
  const SweepSpec spec = load_sweep(write(dir / "s.toml", text));
  ASSERT_EQ(spec.grid.size(), 2u);
  EXPECT_EQ(spec.grid[1].linked_keys,
            (std::vector<std::string>{"algo.compressor", "algo.keep_fraction",
                                      "algo.consensus_step"}));
  const auto points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 2u * 2u * 2u);  // a linked axis is one axis: 2 values, not 4
  const ExperimentConfig config = sweep_point_config(spec, points[2]);
  EXPECT_EQ(config.algo.compressor, AlgoConfig::Compressor::kTopK);
  EXPECT_DOUBLE_EQ(config.algo.keep_fraction, 0.01);
  EXPECT_DOUBLE_EQ(config.algo.consensus_step, 0.05);
  EXPECT_DOUBLE_EQ(sweep_point_config(spec, points[0]).algo.consensus_step, 1.0);
  EXPECT_THAT(points[2].name, HasSubstr("algo.consensus+step-topk+0.01+0.05_seed-1"));
  // A value that is not a list of one value per key is refused, naming the key.
  replace("[\"topk\", 0.01, 0.05]", "[\"topk\", 0.01]");
  EXPECT_THAT(load_error(write(dir / "bad.toml", text)),
              AllOf(HasSubstr("bad.toml"), HasSubstr("links 3 keys"), HasSubstr(key)));
}

TEST(Sweep, ExpandsTheGridInFileOrder) {
  const fs::path dir = fresh_dir("expand");
  const SweepSpec spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  ASSERT_EQ(spec.grid.size(), 2u);
  EXPECT_EQ(spec.grid[0].key, "algo.name");  // file order, not toml++'s sorted order
  EXPECT_EQ(spec.grid[1].values, (std::vector<std::string>{"0.0", "0.5"}));
  const auto points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 2u * 2u * 2u);
  EXPECT_EQ(points[0].name, "algo.name-deep-squeeze_data.skew-0.0_seed-1");
  EXPECT_EQ(points[1].seed, 2u);
  EXPECT_EQ(points[2].values, (std::vector<std::string>{"\"deep-squeeze\"", "0.5"}));
  const ExperimentConfig config = sweep_point_config(spec, points[7]);
  EXPECT_EQ(config.algo.name, AlgoConfig::Name::kChoco);
  EXPECT_EQ(config.data.skew, 0.5);
  EXPECT_EQ(config.run.seed, 2u);
  EXPECT_EQ(config.run.epochs, 1);
  EXPECT_EQ(config.run.name, points[7].name);
}

// [table] with one side given: the other side holds the grid keys it leaves out, so one grid key
// in rows makes a one-column table (the defaults alone would place it twice).
TEST(Sweep, OneTableSideGivesTheOtherTheRest) {
  const fs::path dir = fresh_dir("one_side");
  const SweepSpec rows_only = load_sweep(
      write(dir / "a.toml", "[grid]\n\"data.skew\" = [0.0, 0.4]\n[table]\nrows = [\"data.skew\"]\n"));
  EXPECT_EQ(rows_only.rows, (std::vector<std::string>{"data.skew"}));
  EXPECT_TRUE(rows_only.columns.empty());
  const SweepSpec columns_only =
      load_sweep(write(dir / "b.toml",
                       "[grid]\n\"data.skew\" = [0.0]\n\"algo.name\" = [\"choco\"]\n"
                       "\"graph.nodes\" = [4]\n[table]\ncolumns = [\"algo.name\"]\n"));
  EXPECT_EQ(columns_only.rows, (std::vector<std::string>{"data.skew", "graph.nodes"}));
  EXPECT_EQ(columns_only.columns, (std::vector<std::string>{"algo.name"}));
  // A one-column table is headed by its metric.
  SweepCell cell;
  cell.values = {50.0};
  cell.mean = 50.0;
  const SweepTable table{"average_model_accuracy", {{"0.0"}}, {{}}, {{cell}}, rows_only.rows};
  EXPECT_THAT(sweep_table_markdown(rows_only, table),
              HasSubstr("| data.skew | average_model_accuracy |"));
}

TEST(Sweep, BadFilesNameTheProblem) {
  const fs::path dir = fresh_dir("errors");
  const std::string grid = "[grid]\n\"data.skew\" = [0.0, 0.4]\n";
  EXPECT_THAT(load_error(write(dir / "a.toml", "sedes = [1]\n" + grid)),
              HasSubstr("a.toml:1: unknown sweep key 'sedes'"));
  EXPECT_THAT(load_error(write(dir / "b.toml", "[grid]\n\"data.skew\" = []\n")),
              HasSubstr("b.toml:2: grid key 'data.skew' must be a non-empty list"));
  EXPECT_THAT(load_error(write(dir / "c.toml", grid + "[table]\nrows = [\"algo.name\"]\n")),
              HasSubstr("[table] names 'algo.name', which is not a [grid] key"));
  EXPECT_THAT(load_error(write(dir / "d.toml", grid + "\"algo.name\" = [\"choco\"]\n"
                                                      "[table]\ncolumns = [\"algo.name\"]\n"
                                                      "rows = []\n")),
              HasSubstr("[table] leaves grid key 'data.skew' out"));
  // A value the experiment schema rejects, found before anything runs.
  EXPECT_THAT(load_error(write(dir / "e.toml", "[grid]\n\"data.skew\" = [0.0, 2.0]\n")),
              AllOf(HasSubstr("e.toml: the run data.skew-2.0_seed-1234 is not a valid experiment"),
                    HasSubstr("data.skew")));
  // A base file that is not there is named with the key and the line that gives it.
  EXPECT_THAT(load_error(write(dir / "b2.toml", "base = \"sub/nothere.toml\"\n" + grid)),
              AllOf(HasSubstr("b2.toml:1: base = 'sub/nothere.toml'"),
                    HasSubstr("does not exist (a relative base is read from the sweep file's "
                              "folder)")));
  // An unknown experiment key is named at its line, in [grid] (each linked part) and in [set].
  EXPECT_THAT(load_error(write(dir / "f.toml", "[grid]\n\"data.skw\" = [0.0]\n")),
              HasSubstr("f.toml:2: [grid] key 'data.skw' is not an experiment key; did you mean "
                        "'data.skew'?"));
  EXPECT_THAT(load_error(write(dir / "f2.toml", "[set]\n\"run.epochs\" = 1\n\"foo\" = 1\n" + grid)),
              HasSubstr("f2.toml:3: [set] key 'foo' is not an experiment key"));
  EXPECT_THAT(load_error(write(dir / "f3.toml",
                               "[grid]\n\"data.skew+optim.lrr\" = [[0.0, 0.1]]\n")),
              HasSubstr("f3.toml:2: [grid] key 'optim.lrr' is not an experiment key"));
  EXPECT_THAT(load_error(write(dir / "g.toml", "seeds = [1]\n")), HasSubstr("no [grid]"));
  EXPECT_THAT(load_error(write(dir / "h.toml", "[grid]\n\"run.seed\" = [1, 2]\n")),
              AllOf(HasSubstr("grid key 'run.seed' is set by the sweep for each run"),
                    HasSubstr("seeds = [...] for seeds")));
  EXPECT_THAT(load_error(write(dir / "h2.toml", "metrics = [\"steps\", \"steps\"]\n" + grid)),
              HasSubstr("h2.toml:1: metrics names 'steps' twice"));
  // Run names hold every grid key and value: too long for a folder is the grid's doing, said so
  // (not as a run.name the file never set).
  EXPECT_THAT(load_error(write(dir / "h3.toml", "[grid]\n\"data.dir\" = [\"" +
                                                    std::string(240, 'd') + "\"]\n")),
              AllOf(HasSubstr("h3.toml: the run name made from the grid's keys and values"),
                    HasSubstr("expected at most 200"),
                    HasSubstr("use fewer or shorter [grid] keys or values"),
                    Not(HasSubstr("--set run.name"))));
  // What would silently train one run twice, show another run's value, or fail only after
  // every run trained.
  EXPECT_THAT(load_error(write(dir / "i.toml", "out_dir = \"\"\n" + grid)),
              HasSubstr("i.toml:1: out_dir is empty"));
  EXPECT_THAT(load_error(write(dir / "j.toml", "seeds = [1, 2, 1]\n" + grid)),
              HasSubstr("j.toml:1: seeds lists 1 twice"));
  // A seed that is not a whole number is named as the file spells it.
  EXPECT_THAT(load_error(write(dir / "k.toml", "seeds = [1, 1.5]\n" + grid)),
              HasSubstr("seeds must be a list of integers >= 0, and 1.5 is not one"));
  EXPECT_THAT(load_error(write(dir / "k.toml", "[grid]\n\"data.skew\" = [0.1, 0.1]\n")),
              HasSubstr("k.toml:2: grid key 'data.skew' lists 0.1 twice"));
  EXPECT_THAT(load_error(write(dir / "k2.toml", "[grid]\n\"data.skew\" = [1, 0.5, 1.0]\n")),
              HasSubstr("grid key 'data.skew' lists 1 and 1.0, one value twice"));
  EXPECT_THAT(load_error(write(dir / "k3.toml", "[grid]\n\"data.dir\" = [\"a/b\", \"a b\"]\n")),
              AllOf(HasSubstr("the grid values data.dir = \"a/b\" and \"a b\" give the same run "
                              "name 'data.dir-a+b_seed-"),
                    HasSubstr("make the values differ")));
  EXPECT_THAT(load_error(write(dir / "l.toml", grid + "\"data.skew+graph.nodes\" = [[0.2, 2]]\n")),
              HasSubstr("grid key 'data.skew' is varied by two [grid] entries"));
  EXPECT_THAT(load_error(write(dir / "m.toml", "[set]\n\"data.skew\" = 0.3\n" + grid)),
              HasSubstr("[set] fixes 'data.skew', which [grid] varies"));
  EXPECT_THAT(
      load_error(write(dir / "n.toml", "metrics = [\"bogus\"]\n" + grid)),
      AllOf(HasSubstr("n.toml:1: metrics names 'bogus'"), HasSubstr("average_model_accuracy")));
  // The keys the sweep sets itself, in [set] as in [grid].
  for (const std::string key : {"run.seed", "run.out_dir", "run.name"}) {
    EXPECT_THAT(load_error(write(dir / "o.toml", "[set]\n\"" + key + "\" = " +
                                                     (key == "run.seed" ? "5" : "\"x\"") + "\n" +
                                                     grid)),
                HasSubstr("[set] key '" + key + "' is set by the sweep for each run"))
        << key;
  }
  // Keys spelled with spaces would be other entries setting the same key.
  EXPECT_THAT(load_error(write(dir / "p.toml", grid + "\" data.skew\" = [0.2]\n")),
              HasSubstr("p.toml:3: [grid] key ' data.skew' is empty or holds spaces"));
  EXPECT_THAT(load_error(write(dir / "q.toml", "[set]\n\"optim.lr \" = 0.2\n" + grid)),
              HasSubstr("[set] key 'optim.lr ' is empty or holds spaces"));
  // An unquoted dotted key is a sub-table in TOML.
  EXPECT_THAT(load_error(write(dir / "u.toml", "[grid]\noptim.lr = [0.1]\n")),
              HasSubstr("[grid] takes quoted dotted keys"));
  // Linked keys with an empty part.
  for (const std::string key : {"+optim.lr", "optim.lr+", "optim.lr++data.skew"}) {
    EXPECT_THAT(load_error(write(dir / "r.toml", "[grid]\n\"" + key + "\" = [[0.1, 0.2]]\n")),
                HasSubstr("grid key '" + key + "' links an empty key"))
        << key;
  }
  // A grid key given twice is named as the file writes it (toml++ garbles quoted keys).
  EXPECT_THAT(load_error(write(dir / "d.toml",
                               "[grid]\n\"optim.lr\" = [0.1]\n\"optim.lr\" = [0.2]\n")),
              HasSubstr("d.toml:3: not valid TOML: Error while parsing key-value pair: cannot "
                        "redefine existing array '\"optim.lr\"'"));
  // A base file's seed, which the sweep's default seeds would replace without a word.
  write(dir / "seeded_base.toml", "[run]\nseed = 7\n");
  EXPECT_THAT(load_error(write(dir / "s.toml", "base = \"seeded_base.toml\"\n" + grid)),
              AllOf(HasSubstr("sets run.seed = 7, which the sweep would replace"),
                    HasSubstr("write seeds = [7] in the sweep file")));
  EXPECT_NO_THROW(load_sweep(write(dir / "t.toml", "base = \"seeded_base.toml\"\nseeds = [7]\n" +
                                                       grid)));
}

// Fake finished runs with known figures: the cells are their mean and sample standard
// deviation, "-" where no run finished.
TEST(Sweep, TablesHoldTheMeanAndSpreadOverSeeds) {
  const fs::path dir = fresh_dir("aggregate");
  const SweepSpec spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  const std::map<std::string, double> accuracy = {
      {"algo.name-deep-squeeze_data.skew-0.0_seed-1", 80.0},
      {"algo.name-deep-squeeze_data.skew-0.0_seed-2", 84.0},
      {"algo.name-choco_data.skew-0.5_seed-1", 70.0}};
  for (const SweepPoint& point : expand_sweep(spec)) {
    const auto it = accuracy.find(point.name);
    if (it == accuracy.end()) continue;
    const fs::path run = spec.out_dir / "runs" / (point.name + "-20260101-000000");
    fs::create_directories(run);
    nlohmann::json summary;
    summary["config"] = to_json(sweep_point_config(spec, point));
    summary["final"] = {{"average_model_accuracy", it->second}};
    write(run / "summary.json", summary.dump());
  }
  const auto tables = aggregate_sweep(spec);
  ASSERT_EQ(tables.size(), 1u);
  const SweepTable& t = tables[0];
  ASSERT_EQ(t.row_labels.size(), 2u);     // skew 0.0, 0.5
  ASSERT_EQ(t.column_labels.size(), 2u);  // deep-squeeze, choco
  EXPECT_DOUBLE_EQ(t.cells[0][0].mean, 82.0);
  EXPECT_DOUBLE_EQ(t.cells[0][0].spread, std::sqrt(8.0));  // ((80-82)^2 + (84-82)^2) / (2-1)
  EXPECT_EQ(t.cells[0][1].values.size(), 0u);
  EXPECT_DOUBLE_EQ(t.cells[1][1].mean, 70.0);
  EXPECT_DOUBLE_EQ(t.cells[1][1].spread, 0.0);
  const std::string md = sweep_table_markdown(spec, t);
  EXPECT_THAT(md, HasSubstr("| data.skew | deep-squeeze | choco |"));
  EXPECT_THAT(md, HasSubstr("| 0.0 | 82 ± 2.828 (2) | - |"));
  EXPECT_THAT(md, HasSubstr("| 0.5 | - | 70 |"));
  EXPECT_THAT(sweep_table_csv(spec, t),
              HasSubstr("0.0,deep-squeeze,average_model_accuracy,82,2.828427125,2,0\n"));
  // One run: no spread (empty), as the markdown shows none.
  EXPECT_THAT(sweep_table_csv(spec, t), HasSubstr("0.5,choco,average_model_accuracy,70,,1,0\n"));
  // A run whose configuration no longer matches the sweep is named, with the key.
  SweepSpec changed = spec;
  changed.set.push_back("optim.lr=0.5");
  try {
    aggregate_sweep(changed);
    FAIL() << "a changed sweep was aggregated";
  } catch (const ConfigError& e) {
    // ... with the sweep file and what to do.
    EXPECT_THAT(e.what(), AllOf(HasSubstr("optim.lr"), HasSubstr(spec.file.string() + ": its finished run differs"),
                                HasSubstr("give it another out_dir, or delete its runs")));
  }
}

// The tables go into out_dir: a file of that name that is not a sweep's table (or a folder) is
// refused before anything trains, and left as it was; a sweep's own tables are replaced.
TEST(Sweep, TablesDoNotReplaceOtherFiles) {
  const fs::path dir = fresh_dir("foreign-table");
  const SweepSpec spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  fs::create_directories(spec.out_dir);
  const fs::path table = spec.out_dir / "table-average_model_accuracy.md";
  write(table, "my notes\n");
  const auto quiet = [](const std::string&) {};
  for (const bool tables_only : {false, true}) {
    try {
      if (tables_only) {
        write_sweep_tables(spec);
      } else {
        run_sweep(spec, quiet);
      }
      FAIL() << "a foreign file was replaced";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr(table.string()),
                                  HasSubstr("exists and is not a table of a sweep")));
    }
  }
  std::ifstream in(table);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "my notes\n");
  EXPECT_FALSE(fs::exists(spec.out_dir / "runs"));  // nothing trained
  // A folder of that name is refused alike; the sweep's own tables are written over.
  fs::remove(table);
  fs::create_directories(spec.out_dir / "table-average_model_accuracy.csv");
  EXPECT_THROW(write_sweep_tables(spec), ConfigError);
  fs::remove(spec.out_dir / "table-average_model_accuracy.csv");
  const auto written = write_sweep_tables(spec);
  ASSERT_FALSE(written.empty());
  EXPECT_NO_THROW(write_sweep_tables(spec));
  fs::remove_all(dir);
}

// The same sweep started twice at once: a point with no run folder yet is claimed by one process
// (a lock under out_dir/.claims), and the other skips it instead of training it in a second
// folder.
TEST(Sweep, APointClaimedByAnotherProcessIsNotStartedTwice) {
  const fs::path dir = fresh_dir("claimed");
  const SweepSpec spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  const SweepPoint claimed = expand_sweep(spec)[0];
  const fs::path claim_dir = spec.out_dir / ".claims" / claimed.name;
  fs::create_directories(claim_dir);
  std::vector<std::string> lines;
  {
    RunFolderLock held_elsewhere(claim_dir);
    const SweepOutcome outcome =
        run_sweep(spec, [&](const std::string& line) { lines.push_back(line); });
    EXPECT_EQ(outcome.trained, 7);
    EXPECT_EQ(outcome.skipped, 1);
  }
  EXPECT_EQ(find_sweep_run(spec, claimed).kind, SweepRunState::Kind::kNew);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.find(claimed.name + ": being trained by another process (it holds the claim " +
                     claim_dir.string()) != std::string::npos;
  }));
  // Released, the point trains.
  EXPECT_EQ(run_sweep(spec, [](const std::string&) {}).trained, 1);
  fs::remove_all(dir);
}

// A real sweep: 4 points x 2 seeds of 1 epoch; run again, everything is skipped; an interrupted
// run (checkpoint, no summary) is resumed; run.epochs raised extends every run.
TEST(Sweep, RunsSkipsResumesAndExtends) {
  const fs::path dir = fresh_dir("run");
  const auto quiet = [](const std::string&) {};
  SweepSpec spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  SweepOutcome first = run_sweep(spec, quiet);
  EXPECT_EQ(first.trained, 8);
  EXPECT_TRUE(fs::exists(spec.out_dir / "table-average_model_accuracy.md"));
  const auto tables = aggregate_sweep(spec);
  for (const auto& row : tables[0].cells) {
    for (const auto& cell : row) EXPECT_EQ(cell.values.size(), 2u);
  }
  // Every metric a sweep may name is a number in a real run's summary.
  {
    std::ifstream summary_in(find_sweep_run(spec, expand_sweep(spec)[0]).dir / "summary.json");
    const nlohmann::json final = nlohmann::json::parse(summary_in).at("final");
    for (const std::string& metric : sweep_metric_names()) {
      EXPECT_TRUE(final.contains(metric) && final.at(metric).is_number()) << metric;
    }
  }
  SweepOutcome again = run_sweep(spec, quiet);
  EXPECT_EQ(again.trained + again.resumed, 0);
  EXPECT_EQ(again.skipped, 8);
  {
    // A run another process is training (it holds the folder's lock) is neither resumed nor
    // trained anew in a second folder: skipped, and said so.
    const SweepPoint busy = expand_sweep(spec)[1];
    const fs::path busy_dir = find_sweep_run(spec, busy).dir;
    fs::rename(busy_dir / "summary.json", busy_dir / "summary.kept");
    {
      RunFolderLock held_elsewhere(busy_dir);
      EXPECT_EQ(find_sweep_run(spec, busy).kind, SweepRunState::Kind::kInUse);
      std::vector<std::string> lines;
      const SweepOutcome busy_run =
          run_sweep(spec, [&](const std::string& line) { lines.push_back(line); });
      EXPECT_EQ(busy_run.trained + busy_run.resumed, 0);
      EXPECT_EQ(busy_run.skipped, 8);
      EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
        return line.find("being trained by another process (" + busy_dir.string()) !=
               std::string::npos;
      }));
    }
    EXPECT_EQ(find_sweep_run(spec, busy).kind, SweepRunState::Kind::kResumable);
    fs::rename(busy_dir / "summary.kept", busy_dir / "summary.json");
  }

  // Interrupted after its checkpoint: the summary is missing.
  const SweepPoint point = expand_sweep(spec)[3];
  const SweepRunState done = find_sweep_run(spec, point);
  ASSERT_EQ(done.kind, SweepRunState::Kind::kDone);
  // Every epoch done but no summary.json (stopped before its final evaluation): resumed to
  // finish, not trained anew in another folder.
  fs::rename(done.dir / "summary.json", done.dir / "summary.kept");
  EXPECT_EQ(find_sweep_run(spec, point).kind, SweepRunState::Kind::kResumable);
  fs::rename(done.dir / "summary.kept", done.dir / "summary.json");
  spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 2)));
  EXPECT_EQ(find_sweep_run(spec, point).kind, SweepRunState::Kind::kResumable);
  fs::remove(done.dir / "summary.json");
  EXPECT_EQ(find_sweep_run(spec, point).kind, SweepRunState::Kind::kResumable);
  SweepOutcome extended = run_sweep(spec, quiet);
  EXPECT_EQ(extended.resumed, 8);
  EXPECT_EQ(extended.trained, 0);
  EXPECT_EQ(find_sweep_run(spec, point).dir, done.dir);  // continued in place
  std::ifstream in(done.dir / "summary.json");
  EXPECT_EQ(nlohmann::json::parse(in).at("config").at("run").at("epochs").get<int>(), 2);
  // Lowered again: the finished runs trained more epochs than the file says; tables of their
  // figures would be mislabelled, so the sweep stops and says which way out.
  spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  try {
    run_sweep(spec, quiet);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("run.epochs = 1"), HasSubstr("trained 2 epochs")));
  }
  // The same for a run stopped after its checkpoint, before its summary.json.
  fs::rename(done.dir / "summary.json", done.dir / "summary.kept");
  try {
    find_sweep_run(spec, point);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("run.epochs = 1"), HasSubstr("checkpoint after 2 epochs")));
  }
  fs::rename(done.dir / "summary.kept", done.dir / "summary.json");
  // A damaged or foreign summary.json is named with what is wrong, not a JSON library error.
  spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 2)));
  const auto sweep_error = [&] {
    try {
      run_sweep(spec, quiet);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"[]", "expected a JSON object, got array"},
           {"{}", "no \"config\" object"},
           {"{\"config\": {\"run\": {}}, \"final\": {}}", "no whole number \"config\".run.epochs"},
           {"{\"con", "is not valid JSON (line 1, column"}}) {
    write(done.dir / "summary.json", text);
    EXPECT_THAT(sweep_error(), AllOf(HasSubstr((done.dir / "summary.json").string()),
                                     HasSubstr(expected), Not(HasSubstr("json.exception"))))
        << text;
  }
  fs::remove_all(dir);
}

// A grid point whose learning rate overflows the weights diverges: the sweep records it, goes on
// to the next point, shows it in the tables, and does not train it again.
TEST(Sweep, ADivergedRunIsRecordedAndTheSweepGoesOn) {
  const fs::path dir = fresh_dir("diverged");
  std::vector<std::string> lines;
  const auto keep = [&](const std::string& line) { lines.push_back(line); };
  std::string text = tiny_sweep(dir / "out", 1);
  const auto replace = [&](const std::string& from, const std::string& to) {
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
  };
  replace("seeds = [1, 2]", "seeds = [1]");
  replace("\"algo.name\" = [\"deep-squeeze\", \"choco\"]", "\"optim.lr\" = [1e30, 0.05]");
  replace("\"data.skew\" = [0.0, 0.5]", "\"algo.name\" = [\"choco\"]");
  replace("rows = [\"data.skew\"]", "rows = [\"optim.lr\"]");
  SweepSpec spec = load_sweep(write(dir / "s.toml", text));
  ASSERT_EQ(expand_sweep(spec).size(), 2u);
  const SweepOutcome first = run_sweep(spec, keep);
  EXPECT_EQ(first.trained, 2);
  EXPECT_EQ(first.diverged, 1);
  const SweepPoint bad = expand_sweep(spec)[0];
  const SweepRunState state = find_sweep_run(spec, bad);
  ASSERT_EQ(state.kind, SweepRunState::Kind::kDiverged);
  std::ifstream in(state.dir / kDivergedFile);
  const nlohmann::json record = nlohmann::json::parse(in);
  EXPECT_EQ(record.at("epoch").get<int>(), 1);
  EXPECT_GT(record.at("step").get<int>(), 0);
  EXPECT_EQ(record.at("config").at("optim").at("lr").get<double>(), 1e30);
  EXPECT_EQ(find_sweep_run(spec, expand_sweep(spec)[1]).kind, SweepRunState::Kind::kDone);

  const auto tables = aggregate_sweep(spec);
  ASSERT_FALSE(tables.empty());
  const std::string markdown = sweep_table_markdown(spec, tables[0]);
  EXPECT_NE(markdown.find("| 1e+30 | diverged |"), std::string::npos) << markdown;
  EXPECT_NE(sweep_table_csv(spec, tables[0]).find(",,0,1\n"), std::string::npos);

  const SweepOutcome again = run_sweep(spec, keep);
  EXPECT_EQ(again.trained + again.resumed, 0);
  EXPECT_EQ(again.skipped, 2);
  fs::remove_all(dir);
}

// Shards split a sweep between processes: together they run every point exactly once, each only
// its own, and the tables then hold every run whichever shard trained it.
TEST(Sweep, ShardsRunEveryPointOnceBetweenThem) {
  const fs::path dir = fresh_dir("shards");
  std::vector<std::string> lines;
  const auto keep = [&](const std::string& line) { lines.push_back(line); };
  const SweepSpec spec = load_sweep(write(dir / "s.toml", tiny_sweep(dir / "out", 1)));
  const std::vector<SweepPoint> points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 8u);

  // Three shards of 8 points: 3, 3 and 2, disjoint.
  std::vector<int> owners(points.size(), 0);
  for (int index = 1; index <= 3; ++index) {
    const SweepShard shard = parse_sweep_shard(std::to_string(index) + "/3");
    const SweepOutcome listed = run_sweep(spec, keep, /*dry_run=*/true, false, shard);
    EXPECT_EQ(listed.trained, index < 3 ? 3 : 2);
    EXPECT_EQ(listed.trained + listed.other_shards, 8);
    for (std::size_t p = 0; p < points.size(); ++p) owners[p] += shard.owns(p) ? 1 : 0;
  }
  for (std::size_t p = 0; p < points.size(); ++p) EXPECT_EQ(owners[p], 1) << p;

  const SweepOutcome first = run_sweep(spec, keep, false, false, parse_sweep_shard("1/2"));
  EXPECT_EQ(first.trained, 4);
  for (std::size_t p = 0; p < points.size(); ++p) {
    EXPECT_EQ(find_sweep_run(spec, points[p]).kind,
              p % 2 == 0 ? SweepRunState::Kind::kDone : SweepRunState::Kind::kNew)
        << p;
  }
  const SweepOutcome second = run_sweep(spec, keep, false, false, parse_sweep_shard("2/2"));
  EXPECT_EQ(second.trained, 4);
  EXPECT_EQ(second.skipped, 0);  // it never looked at the first shard's runs
  const std::vector<SweepTable> tables = aggregate_sweep(spec);
  ASSERT_EQ(tables.size(), 1u);
  for (const auto& row : tables[0].cells) {
    for (const auto& cell : row) EXPECT_EQ(cell.values.size(), 2u);
  }
  const SweepOutcome whole = run_sweep(spec, keep);
  EXPECT_EQ(whole.trained + whole.resumed, 0);
  EXPECT_EQ(whole.skipped, 8);

  for (const std::string bad : {"0/2", "3/2", "1/0", "2", "a/2", "1/", "/2", "-1/2", "1/2/3"}) {
    try {
      parse_sweep_shard(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr("--shard '" + bad + "'"), HasSubstr("I/N")));
    }
  }
  fs::remove_all(dir);
}

// An out_dir that is a file, or under one, is named before anything runs (a dry run too), where
// it was the library's "filesystem error" when the first claim folder was made.
TEST(Sweep, AnOutDirThatIsNotAFolderIsNamed) {
  const fs::path dir = fresh_dir("out-dir-file");
  const auto quiet = [](const std::string&) {};
  const fs::path file = write(dir / "taken", "not a folder");
  for (const fs::path& out : {file, file / "under"}) {
    std::string text = tiny_sweep(out, 1);
    const SweepSpec spec = load_sweep(write(dir / "s.toml", text));
    for (const bool dry_run : {true, false}) {
      try {
        run_sweep(spec, quiet, dry_run);
        ADD_FAILURE() << out << " was accepted";
      } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("s.toml: out_dir = '" + out.string() + "'"),
                                    HasSubstr("'" + file.string() + "' is not a folder")));
      }
    }
  }
  fs::remove_all(dir);
}

// Per-epoch tables: every evaluated epoch of every finished run, the same cells as the final
// tables; the last epoch's values are the final ones and each value is its run's epochs.csv.
TEST(Sweep, PerEpochTablesHoldEveryEvaluatedEpoch) {
  const fs::path dir = fresh_dir("epochs");
  const auto quiet = [](const std::string&) {};
  std::string text = tiny_sweep(dir / "out", 2);
  const std::string metrics = "metrics = [\"average_model_accuracy\"]";
  ASSERT_NE(text.find(metrics), std::string::npos);
  text.replace(text.find(metrics), metrics.size(),
               "metrics = [\"average_model_accuracy\", \"mean_node_accuracy\"]");
  const SweepSpec spec = load_sweep(write(dir / "s.toml", text));
  run_sweep(spec, quiet);
  const std::vector<SweepTable> finals = aggregate_sweep(spec);
  const std::vector<SweepTable> epochs = aggregate_sweep_by_epoch(spec);
  ASSERT_EQ(epochs.size(), 2u);
  for (std::size_t m = 0; m < epochs.size(); ++m) {
    const SweepTable& table = epochs[m];
    EXPECT_EQ(table.metric, finals[m].metric);
    EXPECT_EQ(table.row_keys, (std::vector<std::string>{"data.skew", "epoch"}));
    ASSERT_EQ(table.row_labels.size(), 4u);  // 2 skews x 2 epochs
    for (std::size_t r = 0; r < 4; ++r) {
      EXPECT_EQ(table.row_labels[r][1], std::to_string(r % 2 + 1));
      ASSERT_EQ(table.cells[r].size(), 2u);
      for (std::size_t c = 0; c < 2; ++c) {
        ASSERT_EQ(table.cells[r][c].values.size(), 2u);  // both seeds
        if (r % 2 == 1) {  // the last epoch: the final table's cell (epochs.csv keeps 6 digits)
          EXPECT_NEAR(table.cells[r][c].mean, finals[m].cells[r / 2][c].mean, 1e-3);
        }
      }
    }
  }
  // A value read back from one run's epochs.csv (mean_node_accuracy is its mean_accuracy column).
  const SweepPoint point = expand_sweep(spec)[0];  // skew 0, deep-squeeze, seed 1
  std::ifstream in(find_sweep_run(spec, point).dir / "epochs.csv");
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  ASSERT_EQ(header.rfind("epoch,lr,train_loss,mean_accuracy,", 0), 0u) << header;
  std::vector<std::string> fields;
  std::stringstream split(first);
  for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
  const std::vector<double>& seeds = epochs[1].cells[0][0].values;
  EXPECT_THAT(seeds, ::testing::Contains(::testing::DoubleNear(std::stod(fields[3]), 1e-9)));
  EXPECT_TRUE(fs::exists(spec.out_dir / "epochs-mean_node_accuracy.md"));
  const std::string markdown = sweep_table_markdown(spec, epochs[0]);
  EXPECT_THAT(markdown, HasSubstr("| data.skew | epoch | deep-squeeze | choco |"));
  // A finished run's epochs.csv damaged so that its cells would count it twice, or leave it out
  // where the final tables count it, is named.
  const fs::path history = find_sweep_run(spec, point).dir / "epochs.csv";
  const std::string intact = read_file_text(history).value();
  const std::string last_row = intact.substr(intact.rfind('\n', intact.size() - 2) + 1);
  const std::vector<std::pair<std::string, std::string>> damages = {
      {header + "\n", "ends at its header, but the run trained 2 epochs"},
      {intact + last_row, "epoch 2 after epoch 2 (expected each epoch once, in rising order)"},
      {intact.substr(0, intact.find('\n', intact.find('\n') + 1) + 1),
       "ends at epoch 1, but the run trained 2 epochs"},
      {"epoch,lr,train_loss\n1,0.1,2.3\n2,0.1,2.2\n",
       "has no column 'average_model_accuracy' (metric average_model_accuracy)"}};
  for (const auto& [text_of_file, expected] : damages) {
    write(history, text_of_file);
    try {
      aggregate_sweep_by_epoch(spec);
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr(history.string()), HasSubstr(expected),
                                  HasSubstr("delete the run folder to train the run again")));
    }
  }
  write(history, intact);
  EXPECT_NO_THROW(aggregate_sweep_by_epoch(spec));
  // A finished run whose epochs.csv is gone is named, not left out of these tables only.
  fs::remove(find_sweep_run(spec, point).dir / "epochs.csv");
  try {
    aggregate_sweep_by_epoch(spec);
    ADD_FAILURE() << "a finished run without epochs.csv was left out silently";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("epochs.csv is missing from a finished run of"),
                                HasSubstr("delete the run folder to train the run again")));
  }
  fs::remove_all(dir);
}

// A table of the nodes' own accuracies from runs that do not evaluate them is refused before any
// run trains, naming the metric and the key; the averaged model's accuracy is still allowed.
TEST(Sweep, NodeAccuracyMetricsNeedPerNodeEvaluation) {
  const fs::path dir = fresh_dir("per-node");
  const auto quiet = [](const std::string&) {};
  std::string text = tiny_sweep(dir / "out", 1);
  const std::string set = "[set]\n";
  ASSERT_NE(text.find(set), std::string::npos);
  text.replace(text.find(set), set.size(), set + "\"eval.per_node\" = false\n");
  const std::string metrics = "metrics = [\"average_model_accuracy\"]";
  std::string with_node_metric = text;
  with_node_metric.replace(with_node_metric.find(metrics), metrics.size(),
                           "metrics = [\"average_model_accuracy\", \"min_node_accuracy\"]");
  const SweepSpec refused = load_sweep(write(dir / "refused.toml", with_node_metric));
  try {
    run_sweep(refused, quiet);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("min_node_accuracy"), HasSubstr("eval.per_node")));
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "runs")) << "a run trained before the error";
  const SweepSpec allowed = load_sweep(write(dir / "allowed.toml", text));
  run_sweep(allowed, quiet);
  const std::vector<SweepTable> tables = aggregate_sweep(allowed);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_GT(tables[0].cells[0][0].mean, 0.0);
  fs::remove_all(dir);
}

// Every shipped sweep preset loads and resolves each of its points as an experiment.
TEST(SweepPresets, EveryPresetResolves) {
  std::size_t presets = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(LPDT_SOURCE_DIR) / "configs/sweeps")) {
    if (entry.path().extension() != ".toml") continue;
    ++presets;
    const SweepSpec spec = load_sweep(entry.path());
    const auto points = expand_sweep(spec);
    EXPECT_FALSE(points.empty()) << entry.path();
    for (const SweepPoint& point : points) {
      EXPECT_NO_THROW(sweep_point_config(spec, point)) << entry.path() << " " << point.name;
    }
  }
  EXPECT_GE(presets, 10u);
}

// The paper's tables and figures (table*.toml, figure*.toml) compare fp32 with the paper's 8-bit
// training, whose messages are 8-bit too (its "Data (GB)" is a quarter of fp32's): every 8-bit
// point sends 8-bit values and every fp32 point fp32 values.
TEST(SweepPresets, PaperPresetsSendEightBitMessagesFromEightBitModels) {
  std::size_t eight_bit_points = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(LPDT_SOURCE_DIR) / "configs/sweeps")) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".toml" ||
        (file.rfind("table", 0) != 0 && file.rfind("figure", 0) != 0)) {
      continue;
    }
    const SweepSpec spec = load_sweep(entry.path());
    for (const SweepPoint& point : expand_sweep(spec)) {
      const ExperimentConfig config = sweep_point_config(spec, point);
      if (config.graph.nodes == 1) continue;  // Table 2: one node sends nothing
      const bool int8_model = config.model.precision == ModelConfig::Precision::kInt8;
      const auto expected = int8_model ? AlgoConfig::MessageValues::kInt8
                                       : AlgoConfig::MessageValues::kFp32;
      EXPECT_EQ(config.algo.message_values, expected) << file << " " << point.name;
      eight_bit_points += int8_model ? 1 : 0;
    }
  }
  EXPECT_GE(eight_bit_points, 50u);
}

}  // namespace
}  // namespace lpdt::exp
