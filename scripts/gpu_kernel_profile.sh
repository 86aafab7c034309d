#!/usr/bin/env bash
# Where a GPU training step's time goes, kernel by kernel: one timed eager step of the engine
# (`lpdt bench --device cuda`, after 3 warm-up steps, so cuDNN's autotuning is not in it) under
# Nsight Compute, collecting only each kernel's duration, then summarised by
# scripts/ncu_kernel_summary.py. Kernels run one at a time under ncu: read the shares, not the sum,
# as the step's time. docs/benchmarks.md, GPU.
#
#   scripts/gpu_kernel_profile.sh OUTDIR [bench options, e.g. --model-precision int8 --nodes 16]
#
# Needs ncu on the PATH and the CUDA build (scripts/build_cuda.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_kernel_profile.sh OUTDIR [bench options]}
shift
mkdir -p "$out"
ncu --profile-from-start off --clock-control none --cache-control none \
  --metrics gpu__time_duration.sum --csv --page raw --log-file "$out/kernels.csv" \
  ./build-cuda/lpdt bench --device cuda --steps 1 --warmup 3 --cuda-profiler-range engine "$@" \
  >"$out/bench.log" 2>&1
python3 scripts/ncu_kernel_summary.py "$out/kernels.csv" --steps 1 --rows 60 \
  --sequence "$out/sequence.txt" | tee "$out/summary.txt"
