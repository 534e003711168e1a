#!/usr/bin/env bash
# Non-CMake consumer: installs an ETS build tree into a scratch prefix, compiles the package consumer with
# `$CXX $(pkg-config --cflags --libs ets)` alone and runs it, then a C program of the C ABI linked by `$CC` the
# same way. Also checks the .pc file is relocatable.
# usage: check_pkgconfig.sh <ets build dir> <work dir> [config]   env: CXX (default g++), CC (default cc)
set -euo pipefail
build=$1 work=$2 config=${3:-Release}
here=$(cd "$(dirname "$0")" && pwd)
cxx=${CXX:-g++}
cc=${CC:-cc}
rm -rf "$work" && mkdir -p "$work"
prefix=$(cd "$work" && pwd)/prefix
cmake --install "$build" --prefix "$prefix" --config "$config" >"$work/install.log"
pc=$(find "$prefix" -name ets.pc -path '*/pkgconfig/*' | head -n1)
[[ -n $pc ]] || { echo "pkgconfig: ets.pc not installed under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}

# pkg-config escapes blanks, quotes and backslashes with a backslash, for a shell to read (`eval`, a Makefile) and not
# for the plain word splitting of $(...): xargs undoes the escapes as a shell would, expanding nothing. So a work dir
# with a blank in its path (a checkout under "My Projects") is one argument, as it would be for a user's Makefile.
unescape() { xargs printf '%s\n'; }

# Installed with --prefix somewhere else than CMAKE_INSTALL_PREFIX: the flags must still point here.
incdir=$(pkg-config --variable=includedir ets | unescape)
[[ -f $incdir/ets/config.hpp ]] || { echo "pkgconfig: includedir '$incdir' lacks ets/config.hpp" >&2; exit 1; }
libdir=$(pkg-config --variable=libdir ets | unescape)
ls "$libdir"/libets.* >/dev/null 2>&1 || { echo "pkgconfig: libdir '$libdir' lacks libets" >&2; exit 1; }

flags=$(pkg-config --cflags --libs ets)
mapfile -t flag_args < <(printf '%s\n' "$flags" | unescape)
echo "pkgconfig: $cxx -std=c++17 main.cpp $flags"
"$cxx" -std=c++17 -o "$work/consumer" "$here/../consumer/main.cpp" "${flag_args[@]}"
out=$(LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/consumer")
echo "pkgconfig: consumer says: $out"
[[ $out == "ets $(pkg-config --modversion ets) ok" ]] || { echo "pkgconfig: unexpected output" >&2; exit 1; }

# The C ABI's users link with the C compiler: the flags alone must bring libstdc++ and libm for a static libets.a.
echo "pkgconfig: $cc -std=c99 c_consumer/main.c $flags"
"$cc" -std=c99 -Wall -Wextra -pedantic -o "$work/c_consumer" "$here/../c_consumer/main.c" "${flag_args[@]}"
out=$(LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/c_consumer")
echo "pkgconfig: C consumer says: $out"
[[ $out == "ets $(pkg-config --modversion ets) abi "*" ok" ]] || { echo "pkgconfig: unexpected C output" >&2; exit 1; }
