#!/usr/bin/env bash
# lpdt used as a library by a project of its own (examples/consumer, README "lpdt as a library"):
# configures it in a build folder of its own (default build-consumer), builds it and runs its
# program, which exits non-zero when its nodes do not reach the central fit. Needs what
# scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build-consumer}"
cmake -S examples/consumer -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$out"
"$out/gossip_least_squares"
