// CUDA / cuDNN / CUPTI status → ets::Error with the failing call, its status text and file:line.
// Private to ets_cuda: these macros need the CUDA headers. The _NAMED forms take a status kept from an earlier call
// and the name of that call (a string, formatted only on failure): the message names the call, not the variable.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>
#include <cupti.h>

#include "ets/error.hpp"

#define ETS_CUDA_CHECK(call) ETS_CUDA_CHECK_NAMED(call, #call)
#define ETS_CUDA_CHECK_NAMED(status, name)                                                       \
  do {                                                                                           \
    cudaError_t ets_status_ = (status);                                                          \
    if (ets_status_ != cudaSuccess)                                                              \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.2", "{} failed: {} ({})", name,                  \
                cudaGetErrorString(ets_status_), static_cast<int>(ets_status_));                 \
  } while (false)

#define ETS_CUDNN_CHECK(call) ETS_CUDNN_CHECK_NAMED(call, #call)
#define ETS_CUDNN_CHECK_NAMED(status, name)                                                      \
  do {                                                                                           \
    cudnnStatus_t ets_status_ = (status);                                                        \
    if (ets_status_ != CUDNN_STATUS_SUCCESS)                                                     \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.3", "{} failed: {} ({})", name,                  \
                cudnnGetErrorString(ets_status_), static_cast<int>(ets_status_));                \
  } while (false)

#define ETS_CUPTI_CHECK(call) ETS_CUPTI_CHECK_NAMED(call, #call)
#define ETS_CUPTI_CHECK_NAMED(status, name)                                                      \
  do {                                                                                           \
    CUptiResult ets_status_ = (status);                                                          \
    if (ets_status_ != CUPTI_SUCCESS) {                                                          \
      const char* ets_text_ = nullptr;                                                           \
      cuptiGetResultString(ets_status_, &ets_text_);                                             \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.4", "{} failed: {} ({})", name,                  \
                ets_text_ ? ets_text_ : "?", static_cast<int>(ets_status_));                      \
    }                                                                                            \
  } while (false)
