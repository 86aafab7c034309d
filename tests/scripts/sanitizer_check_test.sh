#!/usr/bin/env bash
# scripts/sanitizer_check.sh refuses a missing or unknown sanitizer and a bad FACTOR with exit
# code 2 and a message naming it, before it configures or builds anything (a sanitizer build
# takes about 25 minutes, so the test stops there).
set -uo pipefail
script="$(dirname "$0")/../../scripts/sanitizer_check.sh"
failed=0
expect_refused() {
  local pattern="$1"
  shift
  local out code
  out=$(bash "$script" "$@" 2>&1)
  code=$?
  if [ "$code" != 2 ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: sanitizer_check.sh $* -> exit $code (expected 2 and '$pattern'): $out"
    failed=1
  fi
}
expect_refused "usage: scripts/sanitizer_check.sh asan|ubsan"
expect_refused "usage: scripts/sanitizer_check.sh asan|ubsan" msan
expect_refused "FACTOR '0' must be a whole number >= 1" asan 0
expect_refused "FACTOR 'x' must be a whole number >= 1" ubsan x
expect_refused "FACTOR '-3' must be a whole number >= 1" asan -3
[ "$failed" = 0 ] && echo "sanitizer_check usage: passed"
exit "$failed"
