# A static libets.a's ets.pc must say where each dependency found outside the linker's default folders is: configures
# ETS (library only) against a copy of zlib in a prefix of its own and checks that the generated ets.pc's Libs line
# has that folder's -L, and no -L for the dependencies found in the default folders (simdjson, SQLite here).
# Usage: cmake -DETS_SOURCE=<src> -DWORK_DIR=<scratch> -DZLIB_FILE=<the zlib library ETS found> -DZLIB_INCLUDE=<dir>
#              -DGENERATOR=<gen> -P pc_dependency_dirs.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(zdir ${WORK_DIR}/zlib-prefix/lib)
get_filename_component(zname "${ZLIB_FILE}" NAME)
file(MAKE_DIRECTORY ${zdir})
file(COPY_FILE "${ZLIB_FILE}" "${zdir}/${zname}" ONLY_IF_DIFFERENT)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${ETS_SOURCE} -B ${WORK_DIR}/build -G ${GENERATOR}
                -DBUILD_SHARED_LIBS=OFF -DETS_WITH_CUDA=OFF -DETS_INSTALL=ON -DETS_BUILD_TESTS=OFF
                -DETS_BUILD_EXAMPLES=OFF -DETS_BUILD_CLI=OFF -DETS_BUILD_BENCH=OFF
                -DZLIB_LIBRARY=${zdir}/${zname} -DZLIB_INCLUDE_DIR=${ZLIB_INCLUDE}
                -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "configure failed (${rc}):\n${out}")
endif()
file(STRINGS ${WORK_DIR}/build/ets.pc libs REGEX "^Libs:")
string(REGEX MATCHALL "-L[^ ]+" dirs "${libs}")
set(want "-L${zdir}" "-L\${libdir}")
list(SORT dirs)
list(SORT want)
if(NOT dirs STREQUAL want)
  message(FATAL_ERROR "ets.pc's Libs has the folders '${dirs}', expected '${want}' (${libs})")
endif()
message(STATUS "pc dependency dirs ok: ${libs}")
