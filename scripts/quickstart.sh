#!/usr/bin/env bash
# The main job: set up, build, and run the quickstart (`lpdt train` with no arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/lpdt train "$@"
