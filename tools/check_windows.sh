#!/usr/bin/env bash
# Builds the header-only test (tests/header_only: every public header in two translation units, and the portable file
# handling cases of portable_io_test.cpp) for Windows with MinGW-w64, and runs it under Wine when Wine is there. This
# is how the Windows branches of the headers (_open with _O_EXCL | _O_NOINHERIT, _dup, _write, fopen "N", rename
# over an existing file) are compiled and run at all; ETS is built and tested on Linux, and .ci/run runs this only
# where MinGW-w64 is installed (it is not a dependency).
# Usage: tools/check_windows.sh [BUILD_DIR=build]
#        tools/check_windows.sh --compiler   (prints the MinGW-w64 compiler it would use, or exits 77 without one)
#   BUILD_DIR: a configured Linux build with tests on (it provides ets/config.hpp and the list of every header);
#   a relative path is taken from the current folder, the default from the repository root.
# Needs (Debian): g++-mingw-w64-x86-64-posix, and wine64 to run; libfmt-dev, libeigen3-dev, catch2 for the headers.
# Exit: 0 passed (or built, when Wine is absent: said so), 1 failed, 2 no build folder or headers, 77 no MinGW-w64
# compiler (ctest's and .ci/run's "skipped": it is not a dependency of ETS).
set -euo pipefail
caller=$PWD  # BUILD_DIR is the caller's path, relative to where the script was run from
cd "$(dirname "$0")/.."
cxx=$(command -v x86_64-w64-mingw32-g++-posix || command -v x86_64-w64-mingw32-g++ || true)
if [[ -z $cxx ]]; then
  echo "check_windows: no MinGW-w64 compiler (apt-get install g++-mingw-w64-x86-64-posix wine64)" >&2
  exit 77
fi
if [[ ${1:-} == --compiler ]]; then
  echo "$cxx"
  exit 0
fi
source tools/header_only_build.sh
header_only_build_dir check_windows "${1:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Only the header-only libraries the headers need, so that no Linux system header is found by mistake.
mkdir -p "$work/include"
for dir in /usr/include/fmt /usr/include/eigen3/Eigen /usr/include/catch2; do
  [[ -d $dir ]] || { echo "check_windows: $dir missing (libfmt-dev, libeigen3-dev, catch2)" >&2; exit 2; }
  ln -s "$dir" "$work/include/$(basename "$dir")"
done
flags=(-std=c++17 -O1 -Wall -Wextra -DFMT_HEADER_ONLY -Iinclude "-I$build/generated/include" "-I$(dirname "$all")"
       "-I$work/include")
header_only_compile check_windows "$cxx" "$work" "${flags[@]}"
exe="$work/header_only_test.exe"
"$cxx" -static "${objects[@]}" -o "$exe"  # static: no MinGW runtime DLLs to find under Wine
wine=$(command -v wine64 || command -v wine || { [[ -x /usr/lib/wine/wine64 ]] && echo /usr/lib/wine/wine64; } || true)
if [[ -z $wine ]]; then
  echo "check_windows: built header_only_test.exe for Windows; not run (no Wine: apt-get install wine64)"
  exit 0
fi
export WINEDEBUG=-all WINEPREFIX="$work/wineprefix"
wineserver=$(command -v wineserver || echo "$(dirname "$wine")/wineserver")
# Wine's server outlives the program: it is waited for before the prefix it writes to is removed
trap '"$wineserver" -w 2>/dev/null || true; rm -rf "$work"' EXIT
echo "check_windows: running header_only_test.exe under $wine"
rc=0
"$wine" "$exe" 2>"$work/wine.err" || rc=$?
grep -v -e 'rundll32' -e "configuration" "$work/wine.err" >&2 || true  # a new prefix's set-up notes
if [[ $rc -eq 0 ]]; then
  echo "check_windows: passed"
else
  echo "check_windows: FAILED" >&2
  exit 1
fi
