#!/usr/bin/env bash
# README command (a): install dependencies, build the `ets` tool and predict a bundled trace with the shipped model.
# The trace (examples/traces/) is a SqueezeNet training iteration, a family the shipped model never saw in training.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "${ETS_JOBS:-$(nproc)}" --target ets_cli
trace=examples/traces/squeezenet-0048.etst.gz
echo "== ets predict $trace (model: models/default.etsm)"
./build/ets predict "$trace"
