// The cap on the process's data (core/runtime.h): set from the memory available, kept by later
// calls, and met by a tensor larger than it as an allocation error that lpdt reports, where the
// kernel's out-of-memory killer would have ended the process without a word.
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/types.h>

#include <fstream>
#include <string>

#include "lpdt/core/runtime.h"

namespace lpdt {
namespace {

std::uint64_t meminfo_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

TEST(MemoryCap, IsSetFromTheAvailableMemoryAndMetByALargerTensor) {
  const std::uint64_t available_before = meminfo_available_bytes();
  ASSERT_GT(available_before, 0u) << "no MemAvailable in /proc/meminfo";
  const std::uint64_t cap = limit_data_to_available_memory(1);
  ASSERT_GT(cap, 0u);
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_DATA, &limit), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(limit.rlim_cur), cap);
  // 90% of the available memory plus what the test process holds (well under 2 GiB).
  EXPECT_LE(cap, available_before + (2ull << 30));
  EXPECT_GE(cap, available_before / 2);
  // Later calls (a sweep's next run, another process count) keep the first cap.
  EXPECT_EQ(limit_data_to_available_memory(4), cap);
  EXPECT_EQ(configure_runtime(1, /*on_cuda=*/false).data_limit_bytes, cap);
  EXPECT_NE(configure_runtime(1, /*on_cuda=*/false).description().find("memory cap"),
            std::string::npos);
  // One tensor as large as the cap cannot fit under it: the allocation fails with LibTorch's
  // error, which main() turns into "out of memory: ...", and the process lives on.
  const auto elements = static_cast<std::int64_t>(cap / sizeof(float));
  EXPECT_THROW(at::empty({elements}, at::kFloat), c10::Error);
  // Small allocations still work after the failed one.
  EXPECT_EQ(at::ones({1024}).sum().item<float>(), 1024.0f);
}

}  // namespace
}  // namespace lpdt
