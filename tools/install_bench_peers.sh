#!/usr/bin/env bash
# Optional benchmark peer for `ets bench`: ONNX Runtime from PyPI in a venv that also sees Debian's torch 1.13.
# Idempotent; run as root. Without it `ets bench` still runs and reports the ORT columns as null.
set -euo pipefail
VENV=${ETS_BENCH_VENV:-/opt/ets-venv}
if ! /usr/bin/python3 -c "import ensurepip" 2>/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv
fi
# A venv without its pip (a run interrupted while ensurepip ran) is made again: skipping it failed every later run.
"$VENV/bin/python" -m pip --version >/dev/null 2>&1 || /usr/bin/python3 -m venv --clear --system-site-packages "$VENV"
"$VENV/bin/python" -c "import onnxruntime" 2>/dev/null || "$VENV/bin/python" -m pip install -q onnxruntime
"$VENV/bin/python" -c "import onnxruntime, torch; print('bench peers: torch', torch.__version__, 'onnxruntime', onnxruntime.__version__)"
