#!/usr/bin/env bash
# README command (b): install dependencies, build ETS (Release) and run every test that needs no GPU.
# Build folder: build/ (reused when present). ETS_JOBS sets build parallelism. Where the CUDA toolkit with cuDNN
# is installed, ets::ets_cuda is built too (ETS_WITH_CUDA=auto|ON|OFF); its tests skip without a device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=${ETS_JOBS:-$(nproc)}
cuda=${ETS_WITH_CUDA:-auto}
if [[ $cuda == auto ]]; then
  cuda=OFF
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [[ -x $nvcc ]] && [[ -f $(dirname "$nvcc")/../include/cudnn.h || -f /usr/include/cudnn.h ]]; then cuda=ON; fi
fi
echo "test.sh: ETS_WITH_CUDA=$cuda"
# ETS_BUILD_TESTS=ON: a reused build/ configured without tests must not "pass" with none (hence --no-tests=error)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DETS_WITH_CUDA="$cuda" -DETS_BUILD_TESTS=ON
cmake --build build -j "$jobs"
ctest --test-dir build -LE cuda -j "$jobs" --output-on-failure --no-tests=error
