#!/usr/bin/env bash
# Builds lpdt against the LibTorch inside a CUDA-enabled PyTorch (pip or conda) into build-cuda/.
#
#   scripts/build_cuda.sh [target ...]        (default targets: lpdt and the GPU-checked tests)
#
# Needs python3 with a CUDA PyTorch, CMake >= 3.25, ninja, a C++20 compiler and the CUDA toolkit
# that PyTorch was built for. toml++, CLI11, nlohmann-json and GoogleTest come from the system, or
# from LPDT_DEPS_PREFIX (a prefix with include/, lib/ and their CMake package files, e.g. Debian's
# -dev packages unpacked with dpkg -x). ZLIB likewise, or ZLIB_LIBRARY/ZLIB_INCLUDE_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
prefix_path="$torch_prefix"
extra=()
if [ -n "${LPDT_DEPS_PREFIX:-}" ]; then
  prefix_path="$prefix_path;$LPDT_DEPS_PREFIX"
  zlib=$(find "$LPDT_DEPS_PREFIX" -name libz.a -print -quit)
  [ -n "$zlib" ] && extra+=(-DZLIB_LIBRARY="$zlib" -DZLIB_INCLUDE_DIR="$LPDT_DEPS_PREFIX/include")
fi
# The CUDA kernels are built for this machine's GPU unless LPDT_CUDA_ARCHITECTURES names one
# (e.g. 90 for an H100: needed where the building machine has no GPU).
[ -n "${LPDT_CUDA_ARCHITECTURES:-}" ] && extra+=(-DLPDT_CUDA_ARCHITECTURES="$LPDT_CUDA_ARCHITECTURES")
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix_path" \
  "${extra[@]}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(lpdt test_quant test_models)
cmake --build build-cuda --target "${targets[@]}"
