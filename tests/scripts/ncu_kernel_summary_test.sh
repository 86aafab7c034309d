#!/usr/bin/env bash
# scripts/ncu_kernel_summary.py on a small CSV in Nsight Compute's raw-page layout (its own
# messages before the header, a units row, thousands separators, template names with commas): the
# per-kernel sums, shares and counts per step, the launch sequence, and bad input refused with a
# message naming it.
set -euo pipefail
script="$(dirname "$0")/../../scripts/ncu_kernel_summary.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$work/step.csv" <<'CSV'
==PROF== Connected to process 1 (lpdt)
"ID","Process ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum"
"","","","","","ns"
"0","1","void quantize<float, 2>(const float *, int)","(256, 1, 1)","(64, 16, 1)","7,000"
"1","1","combine","(256, 1, 1)","(1, 1, 1)","1,000"
"2","1","void quantize<float, 2>(const float *, int)","(256, 1, 1)","(64, 16, 1)","5,000"
"3","1","combine","(256, 1, 1)","(1, 1, 1)","1,000"
==PROF== Disconnected from process 1
CSV
python3 "$script" "$work/step.csv" --steps 2 --sequence "$work/seq.txt" >"$work/out.txt"
cat "$work/out.txt"
grep -q "^2 kernels per step, 0.007 ms of kernel time per step" "$work/out.txt" ||
  fail "per-step totals"
# quantize: 12 us over 2 steps = 6.0 us/step, 85.7% of 14 us, 1 call per step, 6.00 us per call.
grep -Eq "^ +6\.0 +85\.7% +1\.0 +6\.00  void quantize<float, 2>\(const float \*, int\)$" \
  "$work/out.txt" || fail "the quantize row"
grep -Eq "^ +1\.0 +14\.3% +1\.0 +1\.00  combine$" "$work/out.txt" || fail "the combine row"
grep -q "launches under 5 us: 1 per step, 0.001 ms per step" "$work/out.txt" ||
  fail "the small launches"
[ "$(wc -l <"$work/seq.txt")" -eq 4 ] || fail "the sequence has not 4 launches"
grep -q " 5.00 .*(64, 16, 1)" "$work/seq.txt" || fail "the sequence lacks a launch's grid"

# Microseconds in the units row are read as such.
sed 's/"ns"/"usecond"/' "$work/step.csv" >"$work/us.csv"
# (Into a file, not a pipe: grep -q would close the pipe early and pipefail would see SIGPIPE.)
python3 "$script" "$work/us.csv" >"$work/us.txt"
grep -q "^4 kernels per step, 14.000 ms" "$work/us.txt" || fail "usecond units"

# A CSV without the duration column, and an empty one, are refused by name.
printf '"ID","Kernel Name"\n"0","k"\n' >"$work/no_metric.csv"
if python3 "$script" "$work/no_metric.csv" 2>"$work/err.txt"; then fail "accepted no metric"; fi
grep -q "gpu__time_duration.sum" "$work/err.txt" || fail "error does not name the column"
: >"$work/empty.csv"
if python3 "$script" "$work/empty.csv" 2>"$work/err.txt"; then fail "accepted an empty file"; fi
grep -q "empty.csv: no CSV rows" "$work/err.txt" || fail "error does not name the file"
echo "ncu_kernel_summary: ok"
