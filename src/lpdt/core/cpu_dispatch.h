#pragma once
// Runtime CPU dispatch for hot loops: GCC compiles a function marked LPDT_CPU_CLONES once per
// listed ISA level and picks the best one the CPU supports when the program starts, so one binary
// uses AVX-512 on the machines that have it (x86-64-v4: AVX-512 F/BW/DQ/VL, e.g. 64-bit integer
// multiplies for the stochastic-rounding hash) and still runs on older CPUs. Plain C++ loops
// written to auto-vectorise (no calls, restrict pointers) are all it needs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LPDT_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LPDT_CPU_CLONES
#endif
