#include "lpdt/exp/progress_meter.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>

namespace lpdt::exp {
namespace {

TEST(ProgressMeter, FormatsDurations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7620), "2h07m");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(ProgressMeter, BarShowsTheFractionDone) {
  const std::string line = progress_bar_line(ProgressState{45, 100, 3, 15, 83}, 20);
  EXPECT_EQ(line.substr(0, 22), "[#########...........]");
  EXPECT_NE(line.find(" 45%"), std::string::npos) << line;
  EXPECT_NE(line.find("epoch 3/15"), std::string::npos) << line;
  EXPECT_NE(line.find("run step 45/100"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 1m23s"), std::string::npos) << line;
  EXPECT_EQ(progress_bar_line(ProgressState{100, 100, 15, 15, 0}, 10).substr(0, 12),
            "[##########]");
}

TEST(ProgressMeter, EstimatesTimeLeftFromTheStepsItTimed) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  // A resumed run: 40 of 100 steps done before; the rate comes from the steps timed here only.
  ProgressMeter meter(100, 40, 10, /*terminal=*/true, sink);
  EXPECT_LT(meter.eta_s(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  meter.update(50, 5);  // 10 steps in ~0.1 s: 50 left take ~0.5 s
  EXPECT_GT(meter.eta_s(), 0.45);
  EXPECT_LT(meter.eta_s(), 1.5);
  meter.clear();
  std::rewind(sink);
  char buf[512] = {};
  const std::size_t read = std::fread(buf, 1, sizeof buf - 1, sink);
  const std::string written(buf, read);
  EXPECT_NE(written.find("run step 50/100"), std::string::npos) << written;
  EXPECT_EQ(written.substr(written.size() - 4), "\r\033[K");  // cleared for the next line
  std::fclose(sink);
}

}  // namespace
}  // namespace lpdt::exp
