// ets-test-labels: cuda
// cuBLAS is loaded when the cuDNN backend first needs it, not linked (cuda/cublas_loader.hpp): a program with
// ets_cuda in it no longer maps libcublasLt at start (~215 MB resident). The loader finds the library of the major
// version ETS was built with and every function the backend calls. Needs no device: loading a library runs nothing.
#include <catch2/catch.hpp>

#include <link.h>

#include <string>

#include "cublas_loader.hpp"
#include "ets/cuda/cudnn_backend.hpp"

namespace {
bool cublas_mapped() {
  return dl_iterate_phdr(
             [](dl_phdr_info* info, std::size_t, void*) {
               return info->dlpi_name && std::string(info->dlpi_name).find("libcublas") != std::string::npos ? 1 : 0;
             },
             nullptr) != 0;
}
}  // namespace

TEST_CASE("cuBLAS is loaded on first use, with every function the backend calls") {
  // The backend is linked in (enable() lives beside it, and a static ets_cuda brings only what is referenced) but has
  // not run: were it still linked to cuBLAS, the dynamic loader would have mapped the library with the program.
  void (*volatile backend)() noexcept = &ets::cuda::enable;
  CHECK(backend != nullptr);
  CHECK_FALSE(cublas_mapped());
  const ets::cuda::detail::CublasApi& api = ets::cuda::detail::cublas_api();
  CHECK(cublas_mapped());
  CHECK(api.path.find("libcublas.so." + std::to_string(CUBLAS_VER_MAJOR)) != std::string::npos);
  CHECK(api.create != nullptr);
  CHECK(api.destroy != nullptr);
  CHECK(api.set_stream != nullptr);
  CHECK(api.set_math_mode != nullptr);
  CHECK(api.sgemm != nullptr);
  REQUIRE(api.status_string != nullptr);
  // cuBLAS's own texts ("the library was not initialized"): one per status, none empty
  const std::string failed = api.status_string(CUBLAS_STATUS_NOT_INITIALIZED), ok = api.status_string(CUBLAS_STATUS_SUCCESS);
  CHECK_FALSE(failed.empty());
  CHECK(failed != ok);
  CHECK(&ets::cuda::detail::cublas_api() == &api);  // loaded once
}
