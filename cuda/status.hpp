// CUDA / cuDNN / CUPTI status → ets::Error with the failing call, its status text and file:line.
// Private to ets_cuda: these macros need the CUDA headers.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>
#include <cupti.h>

#include "ets/error.hpp"

#define ETS_CUDA_CHECK(call)                                                                     \
  do {                                                                                           \
    cudaError_t ets_status_ = (call);                                                            \
    if (ets_status_ != cudaSuccess)                                                              \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.2", "{} failed: {} ({})", #call,                 \
                cudaGetErrorString(ets_status_), static_cast<int>(ets_status_));                 \
  } while (false)

#define ETS_CUDNN_CHECK(call)                                                                    \
  do {                                                                                           \
    cudnnStatus_t ets_status_ = (call);                                                          \
    if (ets_status_ != CUDNN_STATUS_SUCCESS)                                                     \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.3", "{} failed: {} ({})", #call,                 \
                cudnnGetErrorString(ets_status_), static_cast<int>(ets_status_));                \
  } while (false)

#define ETS_CUPTI_CHECK(call)                                                                    \
  do {                                                                                           \
    CUptiResult ets_status_ = (call);                                                            \
    if (ets_status_ != CUPTI_SUCCESS) {                                                          \
      const char* ets_text_ = nullptr;                                                           \
      cuptiGetResultString(ets_status_, &ets_text_);                                             \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.4", "{} failed: {} ({})", #call,                 \
                ets_text_ ? ets_text_ : "?", static_cast<int>(ets_status_));                      \
    }                                                                                            \
  } while (false)
