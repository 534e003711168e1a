#!/usr/bin/env bash
# README command (b): install dependencies, build ETS (Release) and run every test that needs no GPU.
# Build folder: build/ (reused when present). Set ETS_JOBS to change build parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=${ETS_JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build -LE cuda -j "$jobs" --output-on-failure
