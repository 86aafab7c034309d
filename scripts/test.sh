#!/usr/bin/env bash
# The test suite: set up, build, and run every test labelled `fast` (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build -L fast --output-on-failure -j "$(nproc)" "$@"
