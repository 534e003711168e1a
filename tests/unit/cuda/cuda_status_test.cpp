// ets-test-labels: cuda
// cuda/status.hpp turns a failed CUDA, cuDNN or CUPTI status into ets::Error naming the call. A status kept from an
// earlier call is checked with the _NAMED forms, whose message names that call: the plain forms printed the variable
// ("s failed: CUDNN_STATUS_NOT_SUPPORTED"). Needs no device: only the libraries' status texts.
#include <catch2/catch.hpp>

#include <string>

#include "status.hpp"
#include "test_support.hpp"

using ets_test::error_text;

TEST_CASE("a kept status is reported under the name of the call that returned it") {
  const std::string cudnn = error_text([] {
    const cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    ETS_CUDNN_CHECK_NAMED(s, "cudnnRNNForward");
  });
  CHECK(cudnn.find("[ets.cuda.3] cudnnRNNForward failed: ") != std::string::npos);
  CHECK(cudnn.find("status_test.cpp:") != std::string::npos);  // file:line of the check
  const std::string cupti = error_text([] {
    const CUptiResult r = CUPTI_ERROR_UNKNOWN;
    ETS_CUPTI_CHECK_NAMED(r, fmt::format("cuptiActivityEnable(activity kind {})", 3));
  });
  CHECK(cupti.find("[ets.cuda.4] cuptiActivityEnable(activity kind 3) failed: ") != std::string::npos);
  const std::string cuda = error_text([] {
    const cudaError_t e = cudaErrorInvalidValue;
    ETS_CUDA_CHECK_NAMED(e, "cudaMemcpyAsync");
  });
  CHECK(cuda.find("[ets.cuda.2] cudaMemcpyAsync failed: ") != std::string::npos);
  // the plain forms name the call they run, and a success throws nothing
  const std::string plain = error_text([] { ETS_CUDNN_CHECK(static_cast<cudnnStatus_t>(CUDNN_STATUS_BAD_PARAM)); });
  CHECK(plain.find("static_cast<cudnnStatus_t>(CUDNN_STATUS_BAD_PARAM) failed") != std::string::npos);
  CHECK(error_text([] { ETS_CUDNN_CHECK_NAMED(CUDNN_STATUS_SUCCESS, "cudnnRNNForward"); }).empty());
}
