# Install + export: headers, generated config, targets under ets::, etsConfig.cmake, version file, pkg-config.
# Two install components, for packagers who split a runtime package from a -dev one
# (`cmake --install build --component ets_Runtime`): ets_Runtime holds what a program needs to run (the shared
# library, the ets tool, the default model); ets_Development what a build needs (headers, static library, the
# .so link, CMake and pkg-config files). Every installed file is in one of the two (test package_install_components).
include(CMakePackageConfigHelpers)
set(ETS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ets CACHE STRING "Where etsConfig.cmake is installed")

# ets/cuda/ declares the CUDA backend, CUPTI tracer and NVTX ranges, which only an ETS_WITH_CUDA build defines: a
# CPU-only install leaves them out (a consumer's __has_include would find them and fail to link), all but the cuDNN
# weight slicing, which ets::ets defines.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ets DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT ets_Development FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "cuda" EXCLUDE)
if(ETS_WITH_CUDA)
  file(GLOB _ets_cuda_headers ${PROJECT_SOURCE_DIR}/include/ets/cuda/*.hpp)
else()
  file(GLOB _ets_cuda_headers ${PROJECT_SOURCE_DIR}/include/ets/cuda/cudnn_weight_slice*.hpp)
endif()
install(FILES ${_ets_cuda_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ets/cuda COMPONENT ets_Development)
install(FILES ${ETS_GENERATED_INCLUDE}/ets/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ets
        COMPONENT ets_Development)

set(_ets_targets ets_header_only ets)
if(ETS_WITH_CUDA)
  list(APPEND _ets_targets ets_cuda)
endif()
install(TARGETS ${_ets_targets} EXPORT etsTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ets_Development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ets_Runtime NAMELINK_COMPONENT ets_Development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ets_Runtime)  # include dirs: $<INSTALL_INTERFACE:...>
if(ETS_BUILD_CLI)
  install(TARGETS ets_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ets_Runtime)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/models/default.etsm)
  install(FILES ${PROJECT_SOURCE_DIR}/models/default.etsm DESTINATION ${CMAKE_INSTALL_DATADIR}/ets/models
          COMPONENT ets_Runtime)
endif()
install(EXPORT etsTargets NAMESPACE ets:: DESTINATION ${ETS_INSTALL_CMAKEDIR} COMPONENT ets_Development)

if(BUILD_SHARED_LIBS)  # a static libets.a needs its private dependencies at the consumer's link
  set(ETS_PACKAGE_STATIC 0)
else()
  set(ETS_PACKAGE_STATIC 1)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/etsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/etsConfig.cmake INSTALL_DESTINATION ${ETS_INSTALL_CMAKEDIR})
# Before 1.0 a minor version may change the API (CHANGELOG): find_package(ets 0.1) must not accept 0.2.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_ets_compat SameMinorVersion)
else()
  set(_ets_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/etsConfigVersion.cmake COMPATIBILITY ${_ets_compat})
install(FILES ${PROJECT_BINARY_DIR}/etsConfig.cmake ${PROJECT_BINARY_DIR}/etsConfigVersion.cmake
        DESTINATION ${ETS_INSTALL_CMAKEDIR} COMPONENT ets_Development)
# The same config also works from the build tree (find_package(ets) with ets_DIR=<build dir>): the
# docs-snippet check and in-tree consumers link the freshly built targets without installing.
export(EXPORT etsTargets NAMESPACE ets:: FILE ${PROJECT_BINARY_DIR}/etsTargets.cmake)

# pkg-config for non-CMake users: `pkg-config --cflags --libs ets` links the compiled library.
# pkg-config splits Libs and Cflags as a shell does and reads '#' as a comment, so every path written into the file
# has its blanks, quotes, backslashes and '#' escaped with a backslash; pkgconf and pkg-config undo that on reading
# and escape the output again for the shell (`-L/opt/my\ libs`), so a folder with a space stays one argument. A '$'
# has no escape in a .pc file and is left as it is; the relocatable prefix is pkg-config's own ${pcfiledir}.
function(_ets_pc_escape out path)
  string(REPLACE "\\" "\\\\" path "${path}")
  foreach(_ets_c " " "\t" "#" "'" "\"")
    string(REPLACE "${_ets_c}" "\\${_ets_c}" path "${path}")
  endforeach()
  set(${out} "${path}" PARENT_SCOPE)
endfunction()
# A static libets.a cannot carry its dependencies, so they go on Libs (plain --libs must link);
# a shared libets.so already records them, so they are only Libs.private there. libets.a is C++: a C program
# linked by the C compiler (the C ABI's users) also needs the C++ runtime and libm.
set(_ets_pc_deps "-lsimdjson -lsqlite3 -lz")
# A dependency found outside the linker's default folders (a prefix of its own, -DZLIB_ROOT=...) also needs its
# folder on the line, or a static link fails there; one in the folder ETS installs into is covered by -L${libdir}.
# The file is the one of this build's configuration: a find module's "optimized;A;debug;B" list and an imported
# target's per-configuration locations (vcpkg's debug/lib beside lib) both name two.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _ets_cfg)
set(_ets_pc_dep_files "")
set(_ets_want_keyword optimized)  # the keyword whose item is this configuration's
if(_ets_cfg STREQUAL "DEBUG")
  set(_ets_want_keyword debug)
endif()
set(_ets_keyword general)
foreach(_ets_item IN LISTS SQLite3_LIBRARIES ZLIB_LIBRARIES)
  if(_ets_item MATCHES "^(debug|optimized|general)$")
    set(_ets_keyword "${_ets_item}")
    continue()
  endif()
  if(_ets_keyword STREQUAL "general" OR _ets_keyword STREQUAL _ets_want_keyword)
    list(APPEND _ets_pc_dep_files "${_ets_item}")
  endif()
  set(_ets_keyword general)
endforeach()
if(TARGET simdjson::simdjson)
  get_target_property(_ets_imported simdjson::simdjson IMPORTED)
  if(_ets_imported)
    # this configuration's file, then the one without a configuration, then any (a Release-only install)
    get_target_property(_ets_cfgs simdjson::simdjson IMPORTED_CONFIGURATIONS)
    set(_ets_suffixes "_${_ets_cfg}" "")
    foreach(_ets_c IN LISTS _ets_cfgs)
      list(APPEND _ets_suffixes "_${_ets_c}")
    endforeach()
    set(_ets_loc "")
    foreach(_ets_suffix IN LISTS _ets_suffixes)
      if(NOT _ets_loc)
        get_target_property(_ets_loc simdjson::simdjson IMPORTED_LOCATION${_ets_suffix})
      endif()
    endforeach()
    if(_ets_loc)
      list(APPEND _ets_pc_dep_files "${_ets_loc}")
    endif()
  endif()
endif()
# The compiler's implicit folders, less those that only LIBRARY_PATH of this configure's environment put there (a
# consumer without that variable would not search them).
set(_ets_library_path "$ENV{LIBRARY_PATH}")
string(REPLACE ":" ";" _ets_library_path "${_ets_library_path}")
set(_ets_implicit ${CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES})
foreach(_ets_dir IN LISTS _ets_library_path)
  if(_ets_dir)
    get_filename_component(_ets_dir "${_ets_dir}" ABSOLUTE)
    list(REMOVE_ITEM _ets_implicit "${_ets_dir}")
  endif()
endforeach()
set(_ets_pc_default_dirs "")  # compared by their real paths (/lib is /usr/lib on a merged-/usr system)
foreach(_ets_dir IN LISTS _ets_implicit CMAKE_INSTALL_FULL_LIBDIR)
  get_filename_component(_ets_real "${_ets_dir}" REALPATH)
  list(APPEND _ets_pc_default_dirs "${_ets_real}")
endforeach()
set(_ets_pc_dirs "")
foreach(_ets_file IN LISTS _ets_pc_dep_files)
  if(NOT IS_ABSOLUTE "${_ets_file}")  # a bare name or a flag: nothing to add
    continue()
  endif()
  get_filename_component(_ets_dir "${_ets_file}" DIRECTORY)
  get_filename_component(_ets_real "${_ets_dir}" REALPATH)
  _ets_pc_escape(_ets_dir "${_ets_dir}")
  if(NOT _ets_real IN_LIST _ets_pc_default_dirs AND NOT "-L${_ets_dir}" IN_LIST _ets_pc_dirs)
    list(APPEND _ets_pc_dirs "-L${_ets_dir}")
  endif()
endforeach()
if(_ets_pc_dirs)
  list(JOIN _ets_pc_dirs " " _ets_pc_dirs)
  set(_ets_pc_deps "${_ets_pc_dirs} ${_ets_pc_deps}")
endif()
foreach(_ets_dl IN LISTS CMAKE_DL_LIBS)  # dladdr: libdl before glibc 2.34
  string(APPEND _ets_pc_deps " -l${_ets_dl}")
endforeach()
if(BUILD_SHARED_LIBS)
  set(ETS_PC_LIBS "-pthread")
  set(ETS_PC_LIBS_PRIVATE "${_ets_pc_deps}")
else()
  set(ETS_PC_LIBS "${_ets_pc_deps} -lstdc++ -lm -pthread")
  set(ETS_PC_LIBS_PRIVATE "")
endif()
# Relocatable: the prefix is found from the .pc file's own location, so `cmake --install --prefix X`,
# Conan and vcpkg packages all point at where the files actually are.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  _ets_pc_escape(ETS_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _ets_pc_up "/r/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/r")
  string(REGEX REPLACE "/$" "" _ets_pc_up "${_ets_pc_up}")
  set(ETS_PC_PREFIX "\${pcfiledir}/${_ets_pc_up}")
endif()
# An absolute libdir / includedir (some distributions pass them) is used as is, not appended to the prefix.
foreach(_ets_dir LIBDIR INCLUDEDIR)
  _ets_pc_escape(_ets_path "${CMAKE_INSTALL_${_ets_dir}}")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_ets_dir}}")
    set(ETS_PC_${_ets_dir} "${_ets_path}")
  else()
    set(ETS_PC_${_ets_dir} "\${prefix}/${_ets_path}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ets.pc.in ${PROJECT_BINARY_DIR}/ets.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ets.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ets_Development)
