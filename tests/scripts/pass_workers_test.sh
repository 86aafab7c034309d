#!/usr/bin/env bash
# Passes side by side (run.pass_workers) end to end: a training run whose passes run on two
# one-thread workers (run.threads = 2, automatic) ends in the same training state, value for value,
# as the run with one thread and its passes in turn, for float32 and for the 8-bit integer backend
# (stochastic rounding included); the resolved count is recorded; a count the run cannot honour is
# refused with the key's name.
# Usage: pass_workers_test.sh path/to/lpdt path/to/checkpoint_equal [1|0: whether CMake found
# oneDNN, i.e. whether the integer backend is built; default 1]
set -u
lpdt="$1"
equal="$2"
precisions=(fp32 int8)
[ "${3:-1}" = 0 ] && precisions=(fp32)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
# shellcheck source=../lib/check.sh
source "$(dirname "$0")/../lib/check.sh"
tiny=(--set data.dataset=synthetic --set data.synthetic_samples_per_class=12
      --set data.synthetic_size=12 --set graph.nodes=4 --set data.batch_size=4
      --set run.log_every=0 --set run.max_steps_per_epoch=3 --set data.test_subset=32
      --set run.epochs=1 --set run.nodes_per_pass=1 --set model.arch=resnet --set model.depth=8)
ckpt() { echo "$work/$1/$1-"*/"$2"; }
train() {  # train NAME ARGS...
  local name="$1"
  shift
  check "$name" "$lpdt" train --out "$work/$name" --set run.name="$name" "${tiny[@]}" "$@"
}
for precision in "${precisions[@]}"; do
  extra=()
  [ "$precision" = int8 ] && extra=(--set model.precision=int8 --set quant.backend=integer)
  train "${precision}_workers" --set run.threads=2 "${extra[@]}"
  train "${precision}_in_turn" --set run.threads=1 "${extra[@]}"
  check "$precision: two workers = passes in turn at one thread" "$equal" \
    "$(ckpt "${precision}_workers" checkpoint.lpdt)" "$(ckpt "${precision}_in_turn" checkpoint.lpdt)"
  check "$precision: two workers recorded" grep -q '"pass_workers": 2' \
    "$(ckpt "${precision}_workers" summary.json)"
done
out=$("$lpdt" train --out "$work/vgg" "${tiny[@]}" --set model.arch=vgg11 --set run.threads=2 \
  --set data.synthetic_size=32 --set run.pass_workers=2 2>&1)
code=$?
if [ "$code" = 2 ] && grep -q "run.pass_workers = 2" <<<"$out" && grep -q dropout <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: vgg11 with run.pass_workers = 2 -> exit $code: $out"
fi
echo "pass_workers: $passed passed, $failed failed"
[ "$failed" = 0 ]
