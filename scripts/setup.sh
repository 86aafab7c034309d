#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks (as root, from Debian's archive) and builds lpdt
# into ./build. Safe to run again: it installs only missing packages and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache git pkg-config
  libtorch-dev libopenblas0-openmp libdnnl-dev libopenmpi-dev openmpi-bin
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libspdlog-dev libfmt-dev zlib1g-dev
  libjpeg62-turbo-dev  # Imagenette: JPEG decoding
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  chromium  # tests/cli/report_browser_test.sh renders lpdt report's page headless
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${LPDT_CMAKE_ARGS:-}
cmake --build build -j "$jobs"
