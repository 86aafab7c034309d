#!/usr/bin/env bash
# scripts/onednn_step_share.py end to end on a tiny model: oneDNN's time per step is found for
# every mode (convolutions among its kinds), the rest and the bound follow from the step times,
# and bad input is refused with a message naming it.
set -euo pipefail
lpdt="$1"
script="$(dirname "$0")/../../scripts/onednn_step_share.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$script" --lpdt "$lpdt" --modes fp32,int8-integer --threads 1 --warmup 1 --short 1 \
  --long 3 --json "$work/share.json" -- --channels 1 --size 8 > "$work/out.txt"
grep -Eq "^fp32: step [0-9.]+ ms \([0-9.]+ without ONEDNN_VERBOSE, another run\), oneDNN [0-9.]+ ms" "$work/out.txt" ||
  fail "no fp32 line: $(cat "$work/out.txt")"
grep -Eq "^int8-integer: step [0-9.]+ ms \([0-9.]+ without ONEDNN_VERBOSE, another run\), oneDNN [0-9.]+ ms" "$work/out.txt" ||
  fail "no int8-integer line: $(cat "$work/out.txt")"
python3 - "$work/share.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
modes = {m["mode"]: m for m in result["modes"]}
assert set(modes) == {"fp32", "int8-integer"}, modes
for mode in modes.values():
    kinds = mode["onednn_ms_by_kind"]
    assert any(k.startswith("convolution") for k in kinds), kinds
    steps = sorted(mode["onednn_ms_per_step"])
    assert len(steps) == 3 and all(ms > 0 for ms in steps), mode  # --long 3
    assert mode["onednn_ms"] == steps[1], mode  # the median
    assert abs(sum(kinds.values()) - sum(steps) / 3) < 1e-9, mode  # the kinds: means
    assert mode["pass_workers"] == 1, mode  # one node: one pass
    assert mode["plain_step_ms"] > 0, mode
    assert mode["thread_ms"] == mode["step_ms"], mode
    assert abs(mode["step_ms"] - mode["onednn_ms"] - mode["rest_ms"]) < 1e-9, mode
    assert abs(modes["fp32"]["step_ms"] / mode["onednn_ms"] - mode["bound_vs_reference"]) < 1e-9
# Both keep their weight gradients in float: oneDNN's backward-weights convolutions.
for mode in modes.values():
    assert "convolution backward_weights" in mode["onednn_ms_by_kind"], mode
PY

# Bad input: each refused with a message that names it.
if python3 "$script" --lpdt "$work/no-such-lpdt" > "$work/err.txt" 2>&1; then
  fail "a missing binary was accepted"
fi
grep -q "no-such-lpdt: not an executable file" "$work/err.txt" || fail "$(cat "$work/err.txt")"
if python3 "$script" --lpdt "$lpdt" --short 5 --long 3 > "$work/err.txt" 2>&1; then
  fail "--short above --long was accepted"
fi
grep -q "need 1 <= short < long" "$work/err.txt" || fail "$(cat "$work/err.txt")"
if python3 "$script" --lpdt "$lpdt" --modes fp32,no-such-mode --short 1 --long 2 -- --size 8 \
  > "$work/err.txt" 2>&1; then
  fail "an unknown mode was accepted"
fi
grep -q "no-such-mode" "$work/err.txt" || fail "$(cat "$work/err.txt")"
echo "onednn_step_share: ok"
