#!/usr/bin/env bash
# scripts/compare_builds.py end to end, with one lpdt binary as both builds: every round runs
# both in swapped order, the summary's speedups are the runs' step-time ratios, the JSON records
# the runs, and bad input is refused with a message naming it.
set -euo pipefail
lpdt="$1"
script="$(dirname "$0")/../../scripts/compare_builds.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$script" --before "$lpdt" --after "$lpdt" --rounds 2 --json "$work/compare.json" -- \
  --modes fp32 int8-simulated --nodes 1 --steps 1 --warmup 0 --channels 1 --size 8 \
  --threads 1 > "$work/out.txt"
grep -q "round 1 (before first)" "$work/out.txt" || fail "no first round: $(cat "$work/out.txt")"
grep -q "round 2 (after first)" "$work/out.txt" || fail "the second round did not swap the order"
grep -q "int8-simulated" "$work/out.txt" || fail "no int8-simulated row"
python3 - "$work/compare.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
for key in ("date", "cpu", "cores", "before", "after", "bench_args", "runs", "summary"):
    assert key in result, f"compare.json lacks {key}"
runs = result["runs"]
assert [(r["round"], r["build"]) for r in runs] == [
    (1, "before"), (1, "after"), (2, "after"), (2, "before")], runs
for entry in result["summary"]:
    step = {(r["round"], r["build"]): row["step_ms"]
            for r in runs for row in r["results"]["rows"]
            if (row["nodes"], row["mode"]) == (entry["nodes"], entry["mode"])}
    expected = [step[(i, "before")] / step[(i, "after")] for i in (1, 2)]
    assert all(abs(a - e) < 1e-12 for a, e in zip(entry["after_speedup"], expected)), entry
assert {e["mode"] for e in result["summary"]} == {"fp32", "int8-simulated"}, result["summary"]
PY

# Operators' self times from the profile, in each run.
python3 "$script" --before "$lpdt" --after "$lpdt" --rounds 1 \
  --operators aten::add lpdt::evonorm_s0_forward -- --modes fp32 --nodes 1 \
  --steps 1 --warmup 0 --channels 1 --size 8 --threads 1 --profile 60 > "$work/ops.txt"
grep -Eq "aten::add: [0-9.]+ ms before, [0-9.]+ ms after" "$work/ops.txt" ||
  fail "no residual-add time: $(cat "$work/ops.txt")"
grep -q "lpdt::evonorm_s0_forward: " "$work/ops.txt" || fail "no EvoNorm time"

# Refusals: a missing binary, --json meant for the script, a mode lpdt does not have, operators
# without a profile, an operator the profile does not have.
if python3 "$script" --before "$work/missing" --after "$lpdt" -- --nodes 1 > "$work/e1.txt" 2>&1; then
  fail "a missing binary was accepted"
fi
grep -q -- "--before $work/missing: no such file" "$work/e1.txt" || fail "$(cat "$work/e1.txt")"
if python3 "$script" --before "$lpdt" --after "$lpdt" -- --json x.json > "$work/e2.txt" 2>&1; then
  fail "--json among the bench arguments was accepted"
fi
grep -q "give --json to this script" "$work/e2.txt" || fail "$(cat "$work/e2.txt")"
if python3 "$script" --before "$lpdt" --after "$lpdt" --rounds 1 -- --modes fp64 --nodes 1 \
    > "$work/e3.txt" 2>&1; then
  fail "a failing lpdt run was accepted"
fi
grep -q "the before build failed" "$work/e3.txt" || fail "$(cat "$work/e3.txt")"
grep -q "'fp64' is not a mode" "$work/e3.txt" || fail "lpdt's own message was not shown"
if python3 "$script" --before "$lpdt" --after "$lpdt" --operators aten::add -- --nodes 1 \
    > "$work/e4.txt" 2>&1; then
  fail "--operators without --profile was accepted"
fi
grep -q "add --profile K to the bench arguments" "$work/e4.txt" || fail "$(cat "$work/e4.txt")"
if python3 "$script" --before "$lpdt" --after "$lpdt" --rounds 1 --operators no::such_op -- \
    --modes fp32 --nodes 1 --steps 1 --warmup 0 --channels 1 --size 8 --profile 5 \
    > "$work/e5.txt" 2>&1; then
  fail "an operator missing from the profile was accepted"
fi
grep -q "no::such_op: not among the before build's profiled operators" "$work/e5.txt" ||
  fail "$(cat "$work/e5.txt")"
echo "compare_builds: ok"
