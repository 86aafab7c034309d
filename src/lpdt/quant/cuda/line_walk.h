#pragma once
// How the quantizer's CUDA kernels (quantizer_kernels.cu) cover a node's elements, as host-device
// code: the kernels call it with their thread index, and tests/quant/line_walk_test.cpp walks
// every thread of every block on the CPU to check that each element is visited exactly once.
//
// Every NodeView (node_view.h) has sample_stride = rows * row_stride, so element (sample, row,
// col) of a node is at line * row_stride + col with line = sample * rows + row, and its position
// in the node's order is line * cols + col. The element kernels walk lines of "units" (an
// element, or a pair of neighbouring elements) with the thread's column fixed and the line
// stepped, so that no thread divides by a run-time value inside its loop (two 32-bit divisions
// per element took longer than the element's load: docs/benchmarks.md, GPU, item 12).
#include <algorithm>
#include <cstdint>

#include "lpdt/core/host_device.h"
#include "lpdt/quant/cuda/quantizer_kernels.h"

// Unrolled by nvcc (independent loads in flight); the host compiler takes the loop as it is.
#if defined(__CUDACC__)
#define LPDT_UNROLL_4 _Pragma("unroll 4")
#else
#define LPDT_UNROLL_4
#endif

namespace lpdt::quant::cuda_kernels {

// Threads per block of every quantizer kernel.
constexpr int kQuantizerThreads = 256;

template <typename Index>
struct LineWalk {
  Index row_stride;      // elements between consecutive lines
  Index units;           // units per line
  Index lines_per_pass;  // lines one block covers at a time: threads / units, or 1
};

template <typename Index>
LineWalk<Index> line_walk(const Geometry& g, std::int64_t units) {
  const std::int64_t per_pass =
      units >= 1 && units <= kQuantizerThreads ? kQuantizerThreads / units : 1;
  return LineWalk<Index>{static_cast<Index>(g.row_stride), static_cast<Index>(units),
                         static_cast<Index>(per_pass)};
}

// Calls visit(line, unit) for the (line, unit) pairs thread `thread` of block `block` of `blocks`
// takes of lines [begin, end): grid-stride over passes of lines_per_pass lines, each unit of a
// line taken by one thread of the block.
template <typename Index, typename Visit>
LPDT_HOST_DEVICE void for_each_unit(const LineWalk<Index>& w, Index begin, Index end, Index block,
                                    Index blocks, Index thread, Visit&& visit) {
  if (w.units <= kQuantizerThreads) {
    const Index lane_line = thread / w.units;
    if (lane_line >= w.lines_per_pass) return;
    const Index unit = thread - lane_line * w.units;
    const Index step = blocks * w.lines_per_pass;
    LPDT_UNROLL_4
    for (Index line = begin + block * w.lines_per_pass + lane_line; line < end; line += step) {
      visit(line, unit);
    }
  } else {
    for (Index line = begin + block; line < end; line += blocks) {
      LPDT_UNROLL_4
      for (Index unit = thread; unit < w.units; unit += kQuantizerThreads) visit(line, unit);
    }
  }
}

// How node_ranges splits a node: groups of lines (each sample, or the whole node), each group in
// chunks of about kChunkElements elements, one block per (chunk, node).
constexpr std::int64_t kChunkElements = 4096;
struct Chunks {
  std::int64_t groups, group_lines, per_group, chunk_lines;
  std::int64_t segments() const { return groups * per_group; }
};

inline Chunks chunks_of(const Geometry& g, RangeKind kind) {
  Chunks c{};
  const bool per_sample = kind == RangeKind::kSampleMean;
  c.groups = per_sample ? g.samples : 1;
  c.group_lines = per_sample ? g.rows : g.samples * g.rows;
  const std::int64_t group_elements = c.group_lines * g.cols;
  c.per_group = std::clamp<std::int64_t>((group_elements + kChunkElements - 1) / kChunkElements, 1,
                                         std::max<std::int64_t>(1, c.group_lines));
  if (!per_sample) c.per_group = std::min<std::int64_t>(c.per_group, 1024);
  c.chunk_lines = std::max<std::int64_t>(1, (c.group_lines + c.per_group - 1) / c.per_group);
  return c;
}

// Lines [begin, end) of chunk `segment` (group segment / per_group, chunk segment % per_group);
// the last chunks of a group may be empty.
template <typename Index>
struct LineRange {
  Index begin, end;
};
template <typename Index>
LPDT_HOST_DEVICE LineRange<Index> chunk_lines(Index segment, Index per_group, Index group_lines,
                                              Index chunk_lines) {
  const Index group = segment / per_group, chunk = segment - group * per_group;
  const Index group_begin = group * group_lines, group_end = group_begin + group_lines;
  const Index begin = group_begin + chunk * chunk_lines;
  const Index end = begin + chunk_lines < group_end ? begin + chunk_lines : group_end;
  return {begin < group_end ? begin : group_end, end};
}

}  // namespace lpdt::quant::cuda_kernels
