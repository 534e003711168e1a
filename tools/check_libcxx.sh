#!/usr/bin/env bash
# Builds the header-only test (tests/header_only: every public header in two translation units, and the portable file
# handling cases) with clang++ against LLVM's libc++ instead of libstdc++, and runs it. This is where the headers'
# use of the standard library is checked against a second implementation (libc++ is macOS's and Android's): the
# 64-byte aligned BufferAllocator's ::operator new(size, align_val_t), <charconv>, <filesystem>. The compiled
# library is not built here: Debian's fmt and simdjson are built against libstdc++. .ci/run runs this where libc++
# is installed (it is not a dependency of ETS).
# Usage: tools/check_libcxx.sh [BUILD_DIR=build]
#        tools/check_libcxx.sh --compiler   (prints the clang++ it would use, or exits 77 without clang++ and libc++)
#   BUILD_DIR: a configured Linux build with tests on (it provides ets/config.hpp and the list of every header);
#   a relative path is taken from the current folder, the default from the repository root.
# Needs (Debian): clang, libc++-dev and libc++abi-dev (e.g. libc++-14-dev libc++abi-14-dev); libfmt-dev,
# libeigen3-dev and catch2 for the headers.
# Exit: 0 passed, 1 failed, 2 no build folder or headers, 77 no clang++ with libc++ (skipped: not a dependency).
set -euo pipefail
caller=$PWD  # BUILD_DIR is the caller's path, relative to where the script was run from
cd "$(dirname "$0")/.."
cxx=$(command -v clang++ || true)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# libc++ is there when a trivial program links against it
if [[ -z $cxx ]] || ! echo 'int main() {}' | "$cxx" -x c++ -stdlib=libc++ - -o "$work/probe" 2>/dev/null; then
  echo "check_libcxx: no clang++ with libc++ (apt-get install clang libc++-dev libc++abi-dev)" >&2
  exit 77
fi
if [[ ${1:-} == --compiler ]]; then
  echo "$cxx"
  exit 0
fi
source tools/header_only_build.sh
header_only_build_dir check_libcxx "${1:-}"
# fmt header-only: the system libfmt.so is libstdc++'s
flags=(-std=c++17 -O1 -Wall -Wextra -Werror -stdlib=libc++ -DFMT_HEADER_ONLY -Iinclude "-I$build/generated/include"
       "-I$(dirname "$all")" -I/usr/include/eigen3)
header_only_compile check_libcxx "$cxx" "$work" "${flags[@]}"
"$cxx" -stdlib=libc++ "${objects[@]}" -o "$work/header_only_test" -pthread
# the test must really run on libc++, not on a libstdc++ that a stray flag pulled in
if ! ldd "$work/header_only_test" | grep -q 'libc++\.so'; then
  echo "check_libcxx: FAILED, the test is not linked against libc++" >&2
  exit 1
fi
echo "check_libcxx: running header_only_test (libc++)"
if (cd "$work" && ./header_only_test); then
  echo "check_libcxx: passed"
else
  echo "check_libcxx: FAILED" >&2
  exit 1
fi
