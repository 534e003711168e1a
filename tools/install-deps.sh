#!/usr/bin/env bash
# Installs everything ETS needs to build, test and collect data on Debian 12 (run as root; idempotent).
# Only Debian's archive (and PyPI for optional peers) is used; nothing is downloaded by the build itself.
set -euo pipefail

pkgs=(build-essential cmake ninja-build pkg-config git
      libeigen3-dev libfmt-dev catch2 libsimdjson-dev libsqlite3-dev zlib1g-dev
      clang libclang-rt-dev
      python3 python3-numpy python3-torch python3-torchvision python3-matplotlib pyflakes3
      libopenblas0-pthread locales
      libc++-dev libc++abi-dev)  # tools/check_libcxx.sh: the headers on LLVM's libc++

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  if [[ -n $SUDO ]] && ! command -v sudo >/dev/null; then
    echo "install-deps: missing ${missing[*]}; run this as root (there is no sudo here)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#pkgs[@]} packages present"
