// cuBLAS, loaded when the cuDNN backend first needs it (the head's GEMM) instead of linked: libcublas.so pulls in
// libcublasLt, whose relocations alone cost a process ~215 MB of resident memory at start. Linked, every program
// with ets_cuda in it paid that at start, also when it never ran a network on the GPU (`ets --version`, `ets
// inspect`, a CPU-backend prediction), and could not start under an address-space limit of 0.5 GiB.
// Private to ets_cuda: the types need the cuBLAS headers.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace ets::cuda::detail {

/// The cuBLAS functions the backend calls, from one process-wide dlopen of libcublas.so.<CUBLAS_VER_MAJOR> (the
/// major version this was compiled against), never unloaded.
struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  std::string path;  ///< the file loaded (as dladdr reports it), for messages and tests
};

/// Loads cuBLAS on the first call (thread-safe; a failed load is tried again by the next call). Looked up as the
/// loader finds libraries, then beside the CUDA runtime library this process uses (the toolkit keeps them in one
/// folder, which an installed program's search path may not name). Throws ets.cuda.14 when the library or one of
/// the functions cannot be found.
const CublasApi& cublas_api();

}  // namespace ets::cuda::detail
