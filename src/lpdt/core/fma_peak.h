#pragma once
// The CPU's float32 arithmetic peak, measured: every intra-op thread runs independent fused
// multiply-adds on registers for a fixed time (no memory traffic), at the widest vectors the
// CPU runs (cpu_dispatch.h). A profile's convolution time read against it says how much of a step
// is arithmetic the cores cannot do faster (docs/benchmarks.md, "where a step's time goes").
namespace lpdt {

// Float operations per second (a fused multiply-add counts 2), in GFLOP/s, summed over `threads`
// threads (each pinned to its own OpenMP worker) for about `seconds`.
double measured_fma_peak_gflops(int threads, double seconds = 0.2);

}  // namespace lpdt
