// cuBLAS loaded on first use (cublas_loader.hpp says why).
#include "cublas_loader.hpp"

#include <dlfcn.h>

#include <cuda_runtime.h>

#include <string>

#include "ets/error.hpp"

namespace ets::cuda::detail {
namespace {

const char* dl_message() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// The folder of the CUDA runtime library this process resolved cudaGetDeviceCount from ("" when unknown).
std::string cudart_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) || !info.dli_fname) return {};
  const std::string file = info.dli_fname;
  const auto slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

template <class Fn>
void resolve(void* lib, const char* name, Fn& fn, const std::string& path) {
  dlerror();
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn)
    ETS_THROW(Errc::backend, "ets.cuda.14", "cuBLAS library '{}' lacks {} ({}): not the cuBLAS {} this was built with",
              path, name, dl_message(), CUBLAS_VER_MAJOR);
}

CublasApi load() {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib ? std::string() : dl_message();
  if (!lib) {
    const std::string folder = cudart_folder();
    if (!folder.empty()) {
      lib = dlopen((folder + name).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) why += std::string("; beside the CUDA runtime: ") + dl_message();
    }
  }
  if (!lib)
    ETS_THROW(Errc::backend, "ets.cuda.14", "cannot load cuBLAS ({}), which the cuDNN backend's output layer needs: {}",
              name, why);
  CublasApi api;
  api.path = name;
  resolve(lib, "cublasCreate_v2", api.create, name);
  resolve(lib, "cublasDestroy_v2", api.destroy, name);
  resolve(lib, "cublasSetStream_v2", api.set_stream, name);
  resolve(lib, "cublasSetMathMode", api.set_math_mode, name);
  resolve(lib, "cublasSgemm_v2", api.sgemm, name);
  resolve(lib, "cublasGetStatusString", api.status_string, name);
  if (Dl_info info{}; dladdr(reinterpret_cast<void*>(api.create), &info) && info.dli_fname) api.path = info.dli_fname;
  return api;  // the handle stays open for the life of the process: handles made from it may outlive any owner
}

}  // namespace

const CublasApi& cublas_api() {
  static const CublasApi api = load();  // a throw leaves it uninitialised: the next call tries again
  return api;
}

}  // namespace ets::cuda::detail
