# Locates the CUDA toolkit, cuDNN and CUPTI for ets::ets_cuda. Any missing piece stops configure:
# asking for CUDA and silently getting a CPU-only build is the failure mode this module exists to prevent.
find_package(CUDAToolkit)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR
    "ETS_WITH_CUDA=ON but the CUDA Toolkit was not found. Install it (e.g. /usr/local/cuda) and set "
    "CUDAToolkit_ROOT, or configure with -DETS_WITH_CUDA=OFF.")
endif()
if(NOT TARGET CUDA::cupti)
  message(FATAL_ERROR
    "ETS_WITH_CUDA=ON but CUPTI was not found with CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_DIR}. "
    "Install the CUPTI component of the toolkit, or configure with -DETS_WITH_CUDA=OFF.")
endif()
find_path(ETS_CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
# The nvidia-cudnn pip wheel ships only libcudnn.so.9 (no unversioned link), so ask for that name as well.
find_library(ETS_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)
if(NOT ETS_CUDNN_INCLUDE_DIR OR NOT ETS_CUDNN_LIBRARY)
  message(FATAL_ERROR
    "ETS_WITH_CUDA=ON but cuDNN was not found (cudnn.h: ${ETS_CUDNN_INCLUDE_DIR}, libcudnn: ${ETS_CUDNN_LIBRARY}). "
    "Install cuDNN 9 and set CUDNN_ROOT, or configure with -DETS_WITH_CUDA=OFF.")
endif()
file(STRINGS ${ETS_CUDNN_INCLUDE_DIR}/cudnn_version.h _ets_cudnn_major REGEX "^#define CUDNN_MAJOR [0-9]+")
string(REGEX REPLACE "^#define CUDNN_MAJOR ([0-9]+).*" "\\1" ETS_CUDNN_MAJOR "${_ets_cudnn_major}")
if(ETS_CUDNN_MAJOR LESS 9)
  message(FATAL_ERROR "ETS_WITH_CUDA=ON needs cuDNN >= 9 (found major ${ETS_CUDNN_MAJOR} at ${ETS_CUDNN_INCLUDE_DIR}).")
endif()
if(NOT TARGET ets::cudnn)
  add_library(ets::cudnn UNKNOWN IMPORTED)
  set_target_properties(ets::cudnn PROPERTIES
    IMPORTED_LOCATION ${ETS_CUDNN_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${ETS_CUDNN_INCLUDE_DIR})
endif()
message(STATUS "ETS CUDA: toolkit ${CUDAToolkit_VERSION}, cuDNN ${ETS_CUDNN_MAJOR} (${ETS_CUDNN_LIBRARY}), CUPTI found")
