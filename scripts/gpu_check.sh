#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds the CUDA build (scripts/build_cuda.sh), runs the GPU
# tests, then the GPU benchmarks of docs/benchmarks.md ("GPU"). Logs go to OUTDIR; the last lines
# printed are a summary.
#
#   scripts/gpu_check.sh [OUTDIR]        (default: gpu-check)
#
# LPDT_GPU_BENCH=0 skips the benchmarks. LPDT_GPU_TRAIN=DIR also trains end to end (16-node
# Fashion-MNIST LP-Choco, 10 epochs in 8 bits, then 3 float32 epochs with batches made on the GPU
# and on the host; the files read from DIR; docs/benchmarks.md). LPDT_DEPS_PREFIX as for
# build_cuda.sh. LPDT_GPU_PROFILE=1 also profiles one 8-bit and one float32 step kernel by kernel
# under Nsight Compute (scripts/gpu_kernel_profile.sh; needs ncu on the PATH).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

start=$(date +%s)
if ! scripts/build_cuda.sh lpdt test_core test_quant test_nn test_models test_data >"$out/build.log" 2>&1; then
  grep -E "error|Error" "$out/build.log" | head -40
  tail -30 "$out/build.log"
  note "build: FAILED (see $out/build.log)"
  exit 1
fi
note "build: $(($(date +%s) - start)) s"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$summary" 2>&1

status=0
run_tests() {  # binary, gtest filter
  if ./build-cuda/tests/"$1" --gtest_filter="$2" >"$out/$1.log" 2>&1; then
    note "$1: $(grep -E '^\[  PASSED  \]' "$out/$1.log") $(grep -E '^\[  SKIPPED \] [0-9]' "$out/$1.log")"
  else
    status=1
    note "$1: FAILED"
    grep -E "FAILED|Failure|error" "$out/$1.log" | head -20 | tee -a "$summary"
  fi
}
run_tests test_core '*Spread*'
run_tests test_quant '*Cuda*:QuantizerTensorOps*:StochasticRounding*:FakeQuantize*'
run_tests test_nn '*Cuda*:EvoNorm*:RangeEvoNorm*:*Spread*:QuantizedParams*'
run_tests test_models "*Cuda*"
run_tests test_data "Loader*:Transforms*"

if [ "${LPDT_GPU_BENCH:-1}" != 0 ]; then
  bench() {  # name, bench arguments...
    local name=$1
    shift
    if ./build-cuda/lpdt bench --device cuda "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1; then
      note "== $name: lpdt bench --device cuda $*"
      grep -vE "^lpdt bench:" "$out/$name.log" >>"$summary"
    else
      status=1
      note "== $name: FAILED"
      tail -5 "$out/$name.log" | tee -a "$summary"
    fi
  }
  bench fp32_evonorm --nodes 8,16 --steps 30 --warmup 5
  bench fp32_batchnorm --norm batchnorm --nodes 16 --steps 30 --warmup 5
  bench int8_simulated --model-precision int8 --nodes 8,16 --steps 20 --warmup 5
  bench bf16_evonorm --model-precision bf16 --nodes 16 --steps 30 --warmup 5
fi
if [ "${LPDT_GPU_PROFILE:-0}" != 0 ]; then
  if ! command -v ncu >/dev/null; then
    note "profile: skipped, no ncu on the PATH"
  else
    for precision in int8 fp32; do
      dir="$out/profile-$precision"
      if scripts/gpu_kernel_profile.sh "$dir" --model-precision "$precision" --nodes 16 \
        >/dev/null 2>&1; then
        note "== profile: scripts/gpu_kernel_profile.sh $dir --model-precision $precision --nodes 16"
        head -25 "$dir/summary.txt" >>"$summary"
        rm -f "$dir/kernels.csv"  # tens of MB; the summary and the sequence keep what it says
      else
        status=1
        note "== profile $precision: FAILED (see $dir/bench.log)"
      fi
    done
  fi
fi
if [ -n "${LPDT_GPU_TRAIN:-}" ]; then
  train() {  # name, train arguments...
    local name=$1
    shift
    local start_s
    start_s=$(date +%s)
    if ./build-cuda/lpdt train -c configs/fmnist_resnet20_lp_vs_fp.toml --set graph.nodes=16 \
      --set run.device=cuda --set run.log_every=0 --set run.out_dir="$out/runs" \
      --set run.name="$name" --set data.dir="$LPDT_GPU_TRAIN" "$@" >"$out/$name.log" 2>&1; then
      note "== train $name ($(($(date +%s) - start_s)) s): lpdt train ... $*"
      grep -iE "epoch|cuda graph|img/s|accuracy" "$out/$name.log" | tail -14 >>"$summary"
    else
      status=1
      note "== train $name: FAILED"
      tail -8 "$out/$name.log" | tee -a "$summary"
    fi
  }
  train lp-choco-int8 --set model.precision=int8 --set run.epochs=10
  # Batches made on the GPU (data.on_device = auto) against the host loader, float32, 3 epochs.
  train fp32-batches-on-gpu --set run.epochs=3
  train fp32-batches-on-host --set run.epochs=3 --set data.on_device=off
fi
echo
cat "$summary"
exit $status
