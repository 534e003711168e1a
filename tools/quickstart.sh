#!/usr/bin/env bash
# README command (a): install dependencies, build ETS and run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DETS_BUILD_TESTS=OFF
cmake --build build -j "${ETS_JOBS:-$(nproc)}" --target ets_cli
./build/ets --version
