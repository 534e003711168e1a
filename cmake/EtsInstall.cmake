# Install + export: headers, generated config, targets under ets::, etsConfig.cmake, version file, pkg-config.
include(CMakePackageConfigHelpers)
set(ETS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ets CACHE STRING "Where etsConfig.cmake is installed")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ets DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(FILES ${ETS_GENERATED_INCLUDE}/ets/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ets)

set(_ets_targets ets_header_only ets)
if(ETS_WITH_CUDA)
  list(APPEND _ets_targets ets_cuda)
endif()
install(TARGETS ${_ets_targets} EXPORT etsTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(ETS_BUILD_CLI)
  install(TARGETS ets_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/models/default.etsm)
  install(FILES ${PROJECT_SOURCE_DIR}/models/default.etsm DESTINATION ${CMAKE_INSTALL_DATADIR}/ets/models)
endif()
install(EXPORT etsTargets NAMESPACE ets:: DESTINATION ${ETS_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/etsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/etsConfig.cmake INSTALL_DESTINATION ${ETS_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/etsConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/etsConfig.cmake ${PROJECT_BINARY_DIR}/etsConfigVersion.cmake
        DESTINATION ${ETS_INSTALL_CMAKEDIR})

# pkg-config for non-CMake users: `pkg-config --cflags --libs ets` links the compiled library.
set(ETS_PC_LIBS_PRIVATE "-lsimdjson -lsqlite3 -lz -lpthread")
configure_file(${PROJECT_SOURCE_DIR}/cmake/ets.pc.in ${PROJECT_BINARY_DIR}/ets.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ets.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
