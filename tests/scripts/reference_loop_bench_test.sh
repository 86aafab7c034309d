#!/usr/bin/env bash
# scripts/reference_loop_bench.py end to end: both layouts and precisions run, the re-created
# models hold the official parameter counts (the script exits non-zero otherwise), the lpdt
# comparison reads `lpdt bench`'s JSON, and bad options are refused with a message. Needs a
# python3 with PyTorch (Debian's python3-torch); prints SKIPPED without one.
set -euo pipefail
lpdt="$1"
script="$(dirname "$0")/../../scripts/reference_loop_bench.py"
py=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c "import torch" 2>/dev/null; then
    py="$candidate"
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIPPED: no python3 with PyTorch (apt-get install python3-torch)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$py" "$script" --nodes 2 --steps 1 --warmup 0 --precision fp32 --layout in-turn \
  --lpdt "$lpdt" --lpdt-nodes 1 --json "$work/fp32.json" > "$work/fp32.txt"
"$py" "$script" --nodes 2 --steps 1 --warmup 0 --precision fp32 --layout in-turn \
  --lpdt "$lpdt" --lpdt-nodes 1 --lpdt-precision bf16 --json "$work/bf16.json" > "$work/bf16.txt"
"$py" "$script" --nodes 2 --steps 1 --warmup 0 --precision int8 --layout in-turn \
  --lpdt "$lpdt" --lpdt-nodes 1 --json "$work/int8.json" > "$work/int8.txt"
"$py" "$script" --nodes 2 --steps 1 --warmup 0 --precision fp32 --layout processes \
  --json "$work/processes.json" > "$work/processes.txt"
"$py" "$script" --nodes 2 --steps 1 --warmup 0 --precision fp32 --layout processes \
  --reference-malloc glibc --json "$work/glibc.json" > "$work/glibc.txt"
"$py" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
for name, lpdt in (("fp32", True), ("bf16", True), ("int8", True), ("processes", False),
                   ("glibc", False)):
    result = json.load(open(f"{work}/{name}.json"))
    # The reference loop's allocator: lpdt's setting unless glibc's default is asked for.
    assert result["config"]["reference_malloc"] == ("glibc" if name == "glibc" else "lpdt"), name
    for key in ("date", "revision", "machine", "torch", "threads", "config"):
        assert key in result, f"{name}.json lacks {key}"
    (row,) = result["rounds"]
    assert row["reference_step_ms"] > 0 and row["reference_images_per_s"] > 0, row
    if lpdt:
        assert row["lpdt_images_per_s"] > 0, row
        ratio = row["lpdt_images_per_s"] / row["reference_images_per_s"]
        assert abs(row["ratio"] - ratio) < 1e-9 * ratio, row
    else:
        assert "lpdt_images_per_s" not in row, row
print("json ok")
PY
grep -q "reference loop int8 in-turn, 2 nodes" "$work/int8.txt" || fail "int8 line: $(cat "$work/int8.txt")"
grep -q "lpdt engine bf16, 1 nodes" "$work/bf16.txt" || fail "bf16 line: $(cat "$work/bf16.txt")"
grep -q "2 nodes, lpdt malloc:" "$work/fp32.txt" || fail "fp32 line: $(cat "$work/fp32.txt")"
grep -q "2 nodes, glibc malloc:" "$work/glibc.txt" || fail "glibc line: $(cat "$work/glibc.txt")"

expect_refused() {  # expect_refused MESSAGE ARGS...: exits non-zero and says MESSAGE
  local message="$1"
  shift
  if "$py" "$script" "$@" > "$work/out.txt" 2>&1; then fail "accepted: $*"; fi
  grep -q -- "$message" "$work/out.txt" || fail "$*: expected '$message', got: $(cat "$work/out.txt")"
}
expect_refused "needs 32" --size 28
expect_refused "expected at least 1" --nodes 0
expect_refused "not an executable file" --lpdt "$work/no-such-binary"
expect_refused "needs at least 2 nodes" --nodes 1 --layout processes
expect_refused "compares with the fp32 reference loop" --precision int8 --lpdt-precision bf16
echo "reference_loop_bench: ok"
