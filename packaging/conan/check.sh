#!/usr/bin/env bash
# Runs `conan create` with the Debian 12 profile (dependencies from the system, no remote needed) for each variant
# and lets test_package build and run against it. Exits 77 (skipped) when conan is not installed.
# usage: packaging/conan/check.sh [static] [shared] [header_only]     (default: all three)
# env: CONAN (conan executable, default `conan` on PATH); CONAN_HOME (default <repo>/build-conan/home, a private
#      Conan home so the user's own is untouched); ETS_JOBS (build parallelism, default nproc)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
conan=${CONAN:-conan}
if ! command -v "$conan" >/dev/null; then
  echo "conan check: '$conan' not found; skipped (pip install conan)"; exit 77
fi
export CONAN_HOME=${CONAN_HOME:-$root/build-conan/home}
jobs=${ETS_JOBS:-$(nproc)}
"$conan" profile detect --exist-ok >/dev/null 2>&1  # the build profile; the host profile is ours
variants=("$@")
((${#variants[@]})) || variants=(static shared header_only)
cd "$root"
for v in "${variants[@]}"; do
  case $v in
    static) opts=() ;;
    shared) opts=(-o "ets/*:shared=True") ;;
    header_only) opts=(-o "ets/*:header_only=True") ;;
    *) echo "conan check: unknown variant '$v'" >&2; exit 2 ;;
  esac
  echo "=== conan create ($v)"
  "$conan" create . -pr:h packaging/conan/profiles/debian12 --build=missing --no-remote \
    -c "tools.build:jobs=$jobs" "${opts[@]}" 2>&1 | tee "$CONAN_HOME/create-$v.log" | grep -E "test_package ok|ERROR" || true
  grep -q "test_package ok" "$CONAN_HOME/create-$v.log" || { echo "conan check: $v failed (log: $CONAN_HOME/create-$v.log)" >&2; exit 1; }
done
echo "conan check: OK (${variants[*]})"
