# Sourced by tools/check_windows.sh and tools/check_libcxx.sh: the header-only test (tests/header_only: every public
# header in two translation units, and the portable file handling cases) built by another toolchain than the
# project's. Both scripts run from the repository root with `caller` set to the folder they were started in.

# header_only_build_dir TAG [BUILD_DIR]: sets `build` (a relative BUILD_DIR is the caller's; the default is the
# repository's build), `config` and `all`; exit 2 when it is not a configured build with tests.
header_only_build_dir() {
  local tag=$1
  build=${2:-build}
  [[ $build = /* || -z ${2:-} ]] || build=$caller/$build
  config=$build/generated/include/ets/config.hpp
  all=$build/tests/header_only/ets_all_headers.hpp
  if [[ ! -f $config || ! -f $all ]]; then
    echo "$tag: $build is not a configured build with tests (no $config or $all)" >&2
    exit 2
  fi
}

# header_only_compile TAG CXX WORK FLAGS...: compiles the test's sources into WORK; sets `objects`.
header_only_compile() {
  local tag=$1 cxx=$2 work=$3 src obj
  shift 3
  objects=()
  for src in tests/header_only/header_only_test.cpp tests/header_only/second_unit.cpp \
             tests/header_only/portable_io_test.cpp; do
    obj="$work/$(basename "$src" .cpp).o"
    echo "$tag: compiling $src"
    "$cxx" "$@" -c "$src" -o "$obj"
    objects+=("$obj")
  done
}
