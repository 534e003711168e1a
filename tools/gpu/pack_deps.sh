#!/usr/bin/env bash
# Packs this Debian machine's C++ build dependencies (Eigen, fmt, simdjson, SQLite, zlib, Catch2: headers, shared
# libraries and CMake package files) into one archive for the GPU machine, which has a compiler, CMake and CUDA but no
# package registry. The archive is build input for one device run, never part of the repository (.gitignore).
#
#   tools/gpu/pack_deps.sh [ARCHIVE]     # default .gpu-deps/deps.tar.xz (≈ 3 MB)
#
# tools/gpu/validate.sh unpacks .gpu-deps/deps.tar.xz when it exists (the device tool's run carries .gpu-deps).
# Layout: the packages' files under /usr (and /lib) with that prefix removed, so each CMake package file finds its
# headers and libraries relative to itself. Symbolic links are stored as the files they point to.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ARCHIVE=${1:-$ROOT/.gpu-deps/deps.tar.xz}
PKGS=(libeigen3-dev libfmt-dev libfmt9 libsimdjson-dev libsimdjson14 libsqlite3-dev libsqlite3-0 zlib1g-dev zlib1g
      catch2)
LIST=$(mktemp)
trap 'rm -f "$LIST"' EXIT
for p in "${PKGS[@]}"; do
  if ! dpkg -L "$p" >/dev/null 2>&1; then
    echo "pack_deps.sh: package $p is not installed (run tools/install-deps.sh)" >&2
    exit 1
  fi
  # Plain files and links only (a directory entry would pull in all of /usr/include); no docs or manuals.
  dpkg -L "$p" | while IFS= read -r f; do
    case $f in /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*) continue ;; esac
    { [ -f "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ] && echo "${f#/}"
  done
done | sort -u >"$LIST"
mkdir -p "$(dirname "$ARCHIVE")"
tar -C / --dereference --transform 's,^usr/,,' -cJf "$ARCHIVE.tmp" -T "$LIST"
mv "$ARCHIVE.tmp" "$ARCHIVE"
echo "pack_deps.sh: $(wc -l <"$LIST") files from ${#PKGS[@]} packages -> $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
