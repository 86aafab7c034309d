#!/usr/bin/env bash
# Fuzzes the wire payload decoder with libFuzzer (docs/wire.md, "Fuzzing").
#
#   scripts/fuzz_wire.sh [seconds]       fuzz for `seconds` (default 60), starting from the corpus
#   scripts/fuzz_wire.sh --make-corpus   rewrite the generated seed payloads of the corpus
#   scripts/fuzz_wire.sh --merge         minimise the corpus plus what fuzzing found, into the corpus
#
# The target (tests/comm/fuzz/wire_decode_fuzzer.cpp) is built with clang, libFuzzer, ASan and
# UBSan from the codec's two source files alone (no LibTorch). Binaries, crash reproducers and
# the inputs a run finds go to build/fuzz/; the corpus in the repository (tests/comm/fuzz/corpus)
# changes only with --make-corpus or --merge. A crash leaves build/fuzz/crash-<sha1>; reproduce
# it with `build/fuzz/wire_decode_fuzzer build/fuzz/crash-<sha1>`.
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=tests/comm/fuzz/corpus
out=build/fuzz
mode=fuzz
seconds=60
case "${1:-}" in
  --make-corpus) mode=make-corpus ;;
  --merge) mode=merge ;;
  "") ;;
  *[!0-9]*)
    echo "usage: scripts/fuzz_wire.sh [seconds] | --make-corpus | --merge" >&2
    exit 2
    ;;
  *) seconds=$1 ;;
esac

cxx=""
for candidate in clang++-14 clang++; do
  if command -v "$candidate" >/dev/null 2>&1; then
    cxx=$candidate
    break
  fi
done
install_hint="install clang and libFuzzer with: apt-get install clang libclang-rt-14-dev"
if [ -z "$cxx" ]; then
  echo "fuzz_wire: clang++ not found; $install_hint" >&2
  exit 2
fi
mkdir -p "$out"
# libFuzzer ships separately from the compiler on Debian (libclang-rt-*-dev).
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
    "$cxx" -x c++ -fsanitize=fuzzer - -o "$out/libfuzzer_probe" 2>/dev/null; then
  echo "fuzz_wire: $cxx cannot link libFuzzer (-fsanitize=fuzzer); $install_hint" >&2
  exit 2
fi

codec=(src/lpdt/comm/wire_payload.cpp src/lpdt/core/error.cpp)
flags=(-std=c++20 -O1 -g -I src -fno-sanitize-recover=all)

if [ "$mode" = make-corpus ]; then
  "$cxx" "${flags[@]}" -fsanitize=address,undefined tests/comm/fuzz/make_corpus.cpp "${codec[@]}" \
    -lz -o "$out/make_corpus"
  "$out/make_corpus" "$corpus"
  exit 0
fi

"$cxx" "${flags[@]}" -fsanitize=fuzzer,address,undefined tests/comm/fuzz/wire_decode_fuzzer.cpp \
  "${codec[@]}" -lz -o "$out/wire_decode_fuzzer"

# Inputs stay small (the corpus is kept in the repository); a decode never needs much memory, so
# a large allocation is itself a finding.
limits=(-max_len=4096 -malloc_limit_mb=256 -timeout=10)

if [ "$mode" = merge ]; then
  # The seeds first, so they keep their names; then, smallest first, each input that reaches a
  # code edge no earlier one reached (edges only, not hit counts: a few dozen files, not hundreds).
  rm -rf "$out/merged"
  mkdir -p "$out/merged" "$out/found"
  cp "$corpus"/seed_* "$out/merged/"
  "$out/wire_decode_fuzzer" "${limits[@]}" -merge=1 -use_counters=0 "$out/merged" "$corpus" \
    "$out/found"
  find "$corpus" -maxdepth 1 -type f -delete
  cp "$out/merged"/* "$corpus/"
  echo "fuzz_wire: the corpus now holds $(find "$corpus" -type f | wc -l) files," \
    "$(du -sb "$corpus" | cut -f1) bytes"
  exit 0
fi

mkdir -p "$out/found"
"$out/wire_decode_fuzzer" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/found" "$corpus"
echo "fuzz_wire: no crash in $seconds s; new inputs are in $out/found" \
  "(scripts/fuzz_wire.sh --merge adds the useful ones to $corpus)"
