# A static libets.a's ets.pc must say where each dependency found outside the linker's default folders is. Configures
# ETS (library only) twice against copies of zlib in a prefix of its own and reads the generated ets.pc's Libs line:
# (a) a Release build given a release and a debug zlib (FindZLIB's "optimized;A;debug;B" list) gets the release
#     folder's -L and not the debug one's;
# (b) a zlib folder that only this configure's LIBRARY_PATH names still gets its -L (a consumer may not set it);
# and neither gets a -L for the folders the linker searches anyway (where simdjson and SQLite are found here);
# (c) paths with blanks, quotes and '#' (a zlib folder, an absolute install libdir, a relative includedir) come back
#     from pkg-config as one argument each, unchanged (and are escaped in the file where pkg-config is absent).
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
function(configure_ets name env)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${CMAKE_COMMAND} -S ${ETS_SOURCE} -B ${WORK_DIR}/${name}
                  -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DETS_WITH_CUDA=OFF
                  -DETS_INSTALL=ON -DETS_BUILD_TESTS=OFF -DETS_BUILD_EXAMPLES=OFF -DETS_BUILD_CLI=OFF
                  -DETS_BUILD_BENCH=OFF -DZLIB_INCLUDE_DIR=${ZLIB_INCLUDE} -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix
                  ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "(${name}) configure failed (${rc}):\n${out}")
  endif()
endfunction()

function(check_configure name want unwanted env)
  configure_ets(${name} "${env}" ${ARGN})
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
  # each -L argument as pkg-config reads it: a blank (a checkout under "My Projects") is escaped with a backslash
  string(REGEX MATCHALL "-L([^ \\\\]|\\\\.)+" escaped_dirs "${libs}")
  set(dirs "")
  foreach(d IN LISTS escaped_dirs)
    string(REGEX REPLACE "\\\\(.)" "\\1" d "${d}")
    list(APPEND dirs "${d}")
  endforeach()
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
# (c) One configure with all three odd paths.
set(odd_zlib_dir "${WORK_DIR}/zlib prefix #1 'q\"/lib")
set(odd_prefix "${WORK_DIR}/ets prefix #2")
file(MAKE_DIRECTORY "${odd_zlib_dir}")
file(COPY_FILE "${ZLIB_FILE}" "${odd_zlib_dir}/${zname}")
configure_ets(odd_paths "LIBRARY_PATH=$ENV{LIBRARY_PATH}" "-DZLIB_LIBRARY=${odd_zlib_dir}/${zname}"
              "-DCMAKE_INSTALL_PREFIX=${odd_prefix}" "-DCMAKE_INSTALL_LIBDIR=${odd_prefix}/lib 64"
              "-DCMAKE_INSTALL_INCLUDEDIR=inc lude")
set(wanted "-L${odd_zlib_dir}" "-L${odd_prefix}/lib 64" "-I${odd_prefix}/inc lude")
find_program(pkg_config NAMES pkg-config pkgconf)
set(args_read FALSE)
if(pkg_config)
  # the arguments a shell makes of pkg-config's output, one per line
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${WORK_DIR}/odd_paths" "PKG_CONFIG=${pkg_config}"
                  sh -c [=[out=$("$PKG_CONFIG" --static --cflags --libs ets) && eval "set -- $out" && printf '%s\n' "$@"]=]
                  RESULT_VARIABLE rc OUTPUT_VARIABLE args ERROR_VARIABLE err)
  if(rc EQUAL 0)
    set(args_read TRUE)
    string(REPLACE "\n" ";" args "${args}")
    foreach(w IN LISTS wanted)
      if(NOT w IN_LIST args)
        list(APPEND failures "(odd_paths) pkg-config gave no argument '${w}': ${args}")
      endif()
    endforeach()
  else()
    message(STATUS "pkg-config could not read ets.pc (${err}); checking its text only")
  endif()
endif()
if(NOT args_read)  # no pkg-config (or not ets.pc's Requires): each path must appear escaped in the file's text
  function(escaped out path)  # a backslash before each blank, quote, backslash and '#'
    foreach(c "\\" " " "#" "'" "\"")
      string(REPLACE "${c}" "\\${c}" path "${path}")
    endforeach()
    set(${out} "${path}" PARENT_SCOPE)
  endfunction()
  escaped(z "${odd_zlib_dir}")
  escaped(l "${odd_prefix}/lib 64")
  file(READ ${WORK_DIR}/odd_paths/ets.pc pc)
  foreach(w "-L${z} " "libdir=${l}\n" "includedir=\${prefix}/inc\\ lude\n")
    string(FIND "${pc}" "${w}" at)
    if(at LESS 0)
      list(APPEND failures "(odd_paths) '${w}' not in ets.pc:\n${pc}")
    endif()
  endforeach()
endif()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "ets.pc's dependency folders:\n  ${text}")
endif()
message(STATUS "pc dependency dirs ok")
