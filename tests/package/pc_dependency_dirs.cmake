# A static libets.a's ets.pc must say where each dependency found outside the linker's default folders is. Configures
# ETS (library only) twice against copies of zlib in a prefix of its own and reads the generated ets.pc's Libs line:
# (a) a Release build given a release and a debug zlib (FindZLIB's "optimized;A;debug;B" list) gets the release
#     folder's -L and not the debug one's;
# (b) a zlib folder that only this configure's LIBRARY_PATH names still gets its -L (a consumer may not set it);
# and neither gets a -L for the folders the linker searches anyway (where simdjson and SQLite are found here).
# Usage: cmake -DETS_SOURCE=<src> -DWORK_DIR=<scratch> -DZLIB_FILE=<the zlib library ETS found> -DZLIB_INCLUDE=<dir>
#              -DGENERATOR=<gen> -P pc_dependency_dirs.cmake
cmake_minimum_required(VERSION 3.25)  # IN_LIST
file(REMOVE_RECURSE ${WORK_DIR})
set(release_dir ${WORK_DIR}/zlib-prefix/lib)
set(debug_dir ${WORK_DIR}/zlib-prefix/debug/lib)
get_filename_component(zname "${ZLIB_FILE}" NAME)
foreach(d ${release_dir} ${debug_dir})
  file(MAKE_DIRECTORY ${d})
  file(COPY_FILE "${ZLIB_FILE}" "${d}/${zname}")
endforeach()

set(failures "")
# Configures into WORK_DIR/<name>, then checks its ets.pc: `want` must be on Libs, `unwanted` not, nor any folder the
# linker searches by default. ARGN: the configure's extra arguments.
function(check_configure name want unwanted env)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${CMAKE_COMMAND} -S ${ETS_SOURCE} -B ${WORK_DIR}/${name}
                  -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DETS_WITH_CUDA=OFF
                  -DETS_INSTALL=ON -DETS_BUILD_TESTS=OFF -DETS_BUILD_EXAMPLES=OFF -DETS_BUILD_CLI=OFF
                  -DETS_BUILD_BENCH=OFF -DZLIB_INCLUDE_DIR=${ZLIB_INCLUDE} -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix
                  ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "(${name}) configure failed (${rc}):\n${out}")
  endif()
  file(STRINGS ${WORK_DIR}/${name}/ets.pc libs REGEX "^Libs:")
  # the folders the compiler driver passes to the linker, as the configure recorded them, less LIBRARY_PATH's
  file(GLOB compiler_files ${WORK_DIR}/${name}/CMakeFiles/*/CMakeCXXCompiler.cmake)
  include(${compiler_files})  # sets CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES (in this function's scope)
  set(implicit ${CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES})
  if(NOT implicit)
    message(FATAL_ERROR "(${name}) no implicit link folders read from '${compiler_files}'")
  endif()
  string(REGEX REPLACE "^LIBRARY_PATH=" "" library_path "${env}")
  string(REPLACE ":" ";" library_path "${library_path}")
  foreach(d IN LISTS library_path)
    if(d)
      list(REMOVE_ITEM implicit "${d}")
    endif()
  endforeach()
  string(REGEX MATCHALL "-L[^ ]+" dirs "${libs}")
  if(NOT "-L${want}" IN_LIST dirs)
    list(APPEND failures "(${name}) no -L${want} in '${libs}'")
  endif()
  foreach(d IN LISTS unwanted implicit)
    if("-L${d}" IN_LIST dirs)
      list(APPEND failures "(${name}) -L${d} in '${libs}'")
    endif()
  endforeach()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

check_configure(release_and_debug ${release_dir} ${debug_dir} "LIBRARY_PATH=$ENV{LIBRARY_PATH}"
                -DZLIB_LIBRARY_RELEASE=${release_dir}/${zname} -DZLIB_LIBRARY_DEBUG=${debug_dir}/${zname})
set(lp ${release_dir})
if(DEFINED ENV{LIBRARY_PATH} AND NOT "$ENV{LIBRARY_PATH}" STREQUAL "")
  string(APPEND lp ":$ENV{LIBRARY_PATH}")
endif()
check_configure(library_path ${release_dir} "" "LIBRARY_PATH=${lp}" -DZLIB_LIBRARY=${release_dir}/${zname})
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "ets.pc's dependency folders:\n  ${text}")
endif()
message(STATUS "pc dependency dirs ok")
