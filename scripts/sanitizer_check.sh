#!/usr/bin/env bash
# Builds the test programs with a sanitizer and runs every one of them (docs/architecture.md,
# "Errors"):
#
#   scripts/sanitizer_check.sh asan [FACTOR]    AddressSanitizer, into build-asan/
#   scripts/sanitizer_check.sh ubsan [FACTOR]   UndefinedBehaviorSanitizer, into build-ubsan/
#
# FACTOR (default 1) multiplies the trials of the seeded damaged-file and random-override tests
# (LPDT_DAMAGE_TRIAL_FACTOR). The programs run whole, two at a time, one log each in
# <build>/sanitizer-logs/. It fails if a program fails or a sanitizer reports anything.
# A first build takes about 25 minutes on 2 cores; LibTorch, oneDNN and libjpeg are not
# instrumented, so what is checked is lpdt's own code and what it hands them.
set -euo pipefail
cd "$(dirname "$0")/.."

kind="${1:-}"
factor="${2:-1}"
case "$kind" in
  asan)
    flags="-fsanitize=address -fno-omit-frame-pointer"
    # LibTorch allocates and frees across its own libraries (new/delete pairs ASan cannot match)
    # and keeps its caches for the process's life.
    export ASAN_OPTIONS="detect_leaks=0:new_delete_type_mismatch=0:alloc_dealloc_mismatch=0"
    # What the tests measure through glibc's malloc statistics (mallinfo2) or the address space
    # limit reads differently under ASan, which replaces the allocator and reserves terabytes.
    skip="CostAnalysis.AnalyticActivationMemoryMatchesARealStep:PrecisionBench.RatiosToFp32WhereverItStandsInTheModes:ScalingBench.RowsAreConsistent:MemoryCap.*"
    ;;
  ubsan)
    # vptr checks need the type information of LibTorch's classes across its shared libraries.
    flags="-fsanitize=undefined -fno-sanitize=vptr -fno-omit-frame-pointer"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0"
    skip=""
    ;;
  *)
    echo "usage: scripts/sanitizer_check.sh asan|ubsan [FACTOR]" >&2
    exit 2
    ;;
esac
case "$factor" in
  "" | *[!0-9]* | 0)
    echo "sanitizer_check: FACTOR '$factor' must be a whole number >= 1" >&2
    exit 2
    ;;
esac
export LPDT_DAMAGE_TRIAL_FACTOR="$factor"

build="build-$kind"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" >/dev/null
programs=(test_core test_graph test_data test_quant test_nn test_models test_compress test_comm
          test_metrics test_algo test_dist test_exp)
ninja -C "$build" "${programs[@]}"

logs="$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
export logs build skip
run_one() {
  local program="$1"
  local filter="*"
  [ -n "$skip" ] && filter="*:-$skip"
  if "$build/tests/$program" --gtest_brief=1 --gtest_filter="$filter" >"$logs/$program.log" 2>&1; then
    echo "$program: passed"
  else
    echo "$program: FAILED (exit $?, $logs/$program.log)"
  fi
}
export -f run_one
printf '%s\n' "${programs[@]}" | xargs -P 2 -I{} bash -c 'run_one {}' | tee "$logs/summary.txt"

failed=$(grep -c FAILED "$logs/summary.txt" || true)
reports=$(grep -l -E "ERROR: AddressSanitizer|runtime error:" "$logs"/*.log || true)
if [ -n "$reports" ]; then
  echo "sanitizer_check: the sanitizer reported in:"
  echo "$reports"
  grep -h -E "ERROR: AddressSanitizer|runtime error:" $reports | sort | uniq -c | sort -rn | head -20
fi
if [ "$failed" != 0 ] || [ -n "$reports" ]; then
  exit 1
fi
echo "sanitizer_check: $kind: ${#programs[@]} test programs passed, nothing reported"
