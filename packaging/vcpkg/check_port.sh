#!/usr/bin/env bash
# Stand-in for `vcpkg install ets --overlay-ports=packaging/vcpkg` where vcpkg is unavailable: configures, builds and
# installs ETS with exactly the options ets/portfile.cmake passes (parsed from it), then builds a find_package consumer.
#
# usage: packaging/vcpkg/check_port.sh [--work-dir DIR] [--features cuda] [--shared] [--keep]
#   --work-dir  scratch folder (default: a mktemp dir, removed afterwards unless --keep)
#   --features  comma-separated port features to enable (default: none, like `vcpkg install ets`)
#   --shared    BUILD_SHARED_LIBS=ON, as a dynamic triplet (x64-linux-dynamic) would pass; default static (x64-linux)
# env: ETS_JOBS (build parallelism, default nproc), CMAKE_GENERATOR (default Ninja when available)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
portfile=$here/ets/portfile.cmake
work= features= shared=OFF keep=0
while (($#)); do
  case $1 in
    --work-dir) work=$2; shift 2 ;;
    --features) features=$2; shift 2 ;;
    --shared) shared=ON; shift ;;
    --keep) keep=1; shift ;;
    *) echo "check_port: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z $work ]]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/ets-vcpkg-port.XXXXXX")
  ((keep)) || trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work" && work=$(cd "$work" && pwd)
jobs=${ETS_JOBS:-$(nproc)}
gen=${CMAKE_GENERATOR:-}
if [[ -z $gen ]]; then command -v ninja >/dev/null && gen=Ninja || gen="Unix Makefiles"; fi

# The -D options listed under OPTIONS in vcpkg_cmake_configure(...), one per line.
mapfile -t port_opts < <(awk '/^vcpkg_cmake_configure\(/{on=1; next} on && /^\)/{on=0} on' "$portfile" |
                         grep -oE '^[[:space:]]*-D[^[:space:]]+' | sed 's/^[[:space:]]*//')
# ${FEATURE_OPTIONS}: vcpkg_check_features emits -D<OPT>=ON for requested features and =OFF for the others.
mapfile -t feature_map < <(awk '/^vcpkg_check_features\(/{on=1; next} on && /^\)/{on=0} on' "$portfile" |
                           grep -vE 'OUT_FEATURE_OPTIONS|FEATURES' | awk 'NF==2{print $1" "$2}')
if ((${#port_opts[@]} == 0)) || ! grep -q '\${FEATURE_OPTIONS}' "$portfile"; then
  echo "check_port: could not parse vcpkg_cmake_configure OPTIONS from $portfile" >&2; exit 1
fi
feature_opts=()
for fm in "${feature_map[@]}"; do
  read -r feat opt <<<"$fm"
  if [[ ",$features," == *",$feat,"* ]]; then feature_opts+=("-D$opt=ON"); else feature_opts+=("-D$opt=OFF"); fi
done

# The port's version must be the project's.
port_version=$(grep -oE '"version": *"[^"]+"' "$here/ets/vcpkg.json" | grep -oE '[0-9][^"]*')
project_version=$(grep -oE 'project\(ets VERSION [0-9.]+' "$root/CMakeLists.txt" | awk '{print $3}')
if [[ $port_version != "$project_version" ]]; then
  echo "check_port: vcpkg.json version $port_version != CMakeLists.txt version $project_version" >&2; exit 1
fi

# What vcpkg_cmake_configure adds itself (release half; the debug half differs only in CMAKE_BUILD_TYPE).
vcpkg_opts=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=$shared -DCMAKE_INSTALL_LIBDIR:STRING=lib
            -DCMAKE_INSTALL_BINDIR:STRING=bin -DCMAKE_EXPORT_NO_PACKAGE_REGISTRY=ON
            -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
echo "check_port: options from portfile: ${port_opts[*]} ${feature_opts[*]}"
echo "check_port: work dir $work (BUILD_SHARED_LIBS=$shared)"
cmake -S "$root" -B "$work/build" -G "$gen" "${vcpkg_opts[@]}" "${port_opts[@]}" "${feature_opts[@]}" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
# The port must not build anything a consumer does not get: no tests, CLI, examples or benchmarks.
if grep -qE '^(ETS_BUILD_(TESTS|CLI|EXAMPLES|BENCH)):BOOL=ON' "$work/build/CMakeCache.txt"; then
  echo "check_port: the portfile options leave a test/CLI/example/bench build enabled" >&2; exit 1
fi
cmake --build "$work/build" -j "$jobs"
cmake -DETS_BUILD_DIR="$work/build" -DWORK_DIR="$work/consumer" -DCONSUMER_DIR="$root/tests/package/consumer" \
      -DGENERATOR="$gen" -DCONFIG=Release -P "$root/tests/package/run_consumer.cmake"
prefix=$work/consumer/prefix
# What the portfile's fixup steps and file(INSTALL) expect to find.
for f in "$prefix"/lib/cmake/ets/etsConfig.cmake "$prefix"/lib/cmake/ets/etsTargets.cmake "$prefix"/lib/pkgconfig/ets.pc \
         "$prefix"/include/ets/config.hpp "$root"/LICENSE "$here"/ets/usage; do
  [[ -f $f ]] || { echo "check_port: $f missing" >&2; exit 1; }
done
echo "check_port: OK"
