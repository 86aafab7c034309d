// The quantizer CUDA kernels' walk over a node's elements (quant/cuda/line_walk.h), run on the
// CPU for every thread of every block: each element visited exactly once, at the position the
// kernels address, and the range kernel's chunks tiling each group's lines.
#include "lpdt/quant/cuda/line_walk.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::quant::cuda_kernels {
namespace {

struct Shape {
  std::int64_t samples, rows, cols;
};

const std::vector<Shape> kShapes = {
    {3, 7, 16},  {2, 64, 32}, {1, 1, 1},   {4, 9, 5},  {2, 3, 256},
    {2, 2, 300}, {1, 5, 600}, {2, 1, 601}, {50, 1, 1}, {3, 11, 34},
};

Geometry geometry_of(const Shape& s) {
  Geometry g;
  g.nodes = 1;
  g.samples = s.samples;
  g.rows = s.rows;
  g.cols = s.cols;
  g.row_stride = s.cols * 3;  // lines further apart than their length, as channels-last
  g.sample_stride = s.rows * g.row_stride;
  g.node_stride = s.cols;
  return g;
}

// visits[line * units + unit] after every thread of `blocks` blocks walked [0, lines).
std::vector<int> walk_all(const Geometry& g, std::int64_t units, std::uint32_t blocks) {
  const std::int64_t lines = g.samples * g.rows;
  const LineWalk<std::uint32_t> w = line_walk<std::uint32_t>(g, units);
  std::vector<int> visits(static_cast<std::size_t>(lines * units), 0);
  for (std::uint32_t block = 0; block < blocks; ++block) {
    for (std::uint32_t thread = 0; thread < kQuantizerThreads; ++thread) {
      for_each_unit(w, std::uint32_t{0}, static_cast<std::uint32_t>(lines), block, blocks, thread,
                    [&](std::uint32_t line, std::uint32_t unit) {
                      ASSERT_LT(line, lines);
                      ASSERT_LT(unit, units);
                      ++visits[line * units + unit];
                    });
    }
  }
  return visits;
}

TEST(LineWalk, EveryElementAndEveryPairOnce) {
  for (const Shape& s : kShapes) {
    const Geometry g = geometry_of(s);
    const std::string what =
        std::to_string(s.samples) + "x" + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    for (const std::uint32_t blocks : {1u, 3u, 64u}) {
      for (const std::int64_t units : {s.cols, s.cols % 2 == 0 ? s.cols / 2 : s.cols}) {
        const std::vector<int> visits = walk_all(g, units, blocks);
        for (std::size_t i = 0; i < visits.size(); ++i) {
          ASSERT_EQ(visits[i], 1) << what << ", " << units << " units, " << blocks
                                  << " blocks: unit " << i;
        }
      }
    }
  }
}

TEST(LineWalk, RangeChunksTileEachGroup) {
  for (const Shape& s : kShapes) {
    // And a node of many lines: more chunks than the 1,024 a whole tensor may have.
    for (const std::int64_t scale : {1, 700}) {
      Shape big = s;
      big.rows *= scale;
      const Geometry g = geometry_of(big);
      for (const RangeKind kind : {RangeKind::kWholeTensor, RangeKind::kSampleMean}) {
        const Chunks c = chunks_of(g, kind);
        EXPECT_EQ(c.groups * c.group_lines, g.samples * g.rows);
        if (kind == RangeKind::kWholeTensor) {
          EXPECT_LE(c.per_group, 1024);
        }
        std::vector<int> lines(static_cast<std::size_t>(g.samples * g.rows), 0);
        for (std::int64_t segment = 0; segment < c.segments(); ++segment) {
          const LineRange<std::int64_t> r =
              chunk_lines(segment, c.per_group, c.group_lines, c.chunk_lines);
          const std::int64_t group = segment / c.per_group;
          EXPECT_GE(r.begin, group * c.group_lines);
          EXPECT_LE(r.end, (group + 1) * c.group_lines);
          for (std::int64_t line = r.begin; line < r.end; ++line) ++lines[line];
        }
        for (std::size_t i = 0; i < lines.size(); ++i) {
          ASSERT_EQ(lines[i], 1) << big.samples << "x" << big.rows << "x" << big.cols << " line "
                                 << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lpdt::quant::cuda_kernels
