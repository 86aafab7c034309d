#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Tests are deterministic and small; one intra-op thread keeps them reproducible and lets
  // CTest run two executables side by side on a 2-core machine.
  torch::set_num_threads(1);
  return RUN_ALL_TESTS();
}
