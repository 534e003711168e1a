# vcpkg overlay port for ETS. Use: vcpkg install ets --overlay-ports=<repo>/packaging/vcpkg
# packaging/vcpkg/check_port.sh re-runs the vcpkg_cmake_configure OPTIONS below verbatim; keep them one per line.

# Where the sources come from, first match wins:
#   1. ETS_SOURCE_PATH set in an overlay triplet (or passed through the environment, see VCPKG_ENV_PASSTHROUGH):
#      a local checkout, used in place.
#   2. ETS_GIT_URL + ETS_GIT_REF (a commit sha) set the same way: vcpkg_from_git.
#   3. Otherwise the checkout this overlay port lives in (three directories up).
if(NOT DEFINED ETS_SOURCE_PATH AND DEFINED ENV{ETS_SOURCE_PATH})
  set(ETS_SOURCE_PATH "$ENV{ETS_SOURCE_PATH}")
endif()
if(DEFINED ETS_SOURCE_PATH)
  set(SOURCE_PATH "${ETS_SOURCE_PATH}")
elseif(DEFINED ETS_GIT_URL)
  vcpkg_from_git(
    OUT_SOURCE_PATH SOURCE_PATH
    URL "${ETS_GIT_URL}"
    REF "${ETS_GIT_REF}"
  )
else()
  get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
endif()
if(NOT EXISTS "${SOURCE_PATH}/cmake/etsConfig.cmake.in")
  message(FATAL_ERROR "ets: ${SOURCE_PATH} is not an ETS source tree; set ETS_SOURCE_PATH")
endif()

# No dllexport annotations: a Windows DLL would export nothing.
if(VCPKG_TARGET_IS_WINDOWS)
  vcpkg_check_linkage(ONLY_STATIC_LIBRARY)
endif()

vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  FEATURES
    cuda ETS_WITH_CUDA
)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DETS_BUILD_TESTS=OFF
    -DETS_BUILD_EXAMPLES=OFF
    -DETS_BUILD_CLI=OFF
    -DETS_BUILD_BENCH=OFF
    -DETS_INSTALL=ON
    -DETS_NATIVE=OFF
    ${FEATURE_OPTIONS}
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH lib/cmake/ets)
vcpkg_fixup_pkgconfig()

file(REMOVE_RECURSE
  "${CURRENT_PACKAGES_DIR}/debug/include"
  "${CURRENT_PACKAGES_DIR}/debug/share")

vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
