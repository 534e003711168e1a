// The BPTT engine compiled a second time for AVX2+FMA (about 2.5× the GEMM rate of the baseline SSE2 build), chosen
// at run time by make_grad_engine. Eigen is renamed here so no template instance is shared with SSE2 code (ODR).
#include "train/grad_engine.hpp"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX2__)
#define ETS_TRAIN_AVX2_BUILD 1
// Every standard header Eigen uses is included first, so none of their inline functions is compiled for AVX2.
#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <immintrin.h>

#include "ets/error.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
// In C++ the target pragma does not define the ISA macros, and Eigen picks its packets from them: without these it
// would use 4-float SSE packets here (which the compiler merely fuses into 128-bit FMAs), not 8-float AVX ones.
#define __SSE3__ 1
#define __SSSE3__ 1
#define __SSE4_1__ 1
#define __SSE4_2__ 1
#define __AVX__ 1
#define __AVX2__ 1
#define __FMA__ 1
#define Eigen ets_eigen_avx2
#include <Eigen/Core>
#if !defined(EIGEN_VECTORIZE_AVX2) || !defined(EIGEN_VECTORIZE_FMA)
#error "the AVX2 build of the BPTT kernels must vectorise with Eigen's AVX2 + FMA packets"
#endif

namespace ets::train::avx2 {
#include "train/bilstm_grad_decl.inc"
#include "train/bilstm_grad_defs.inc"
template class BiLstmGrad<float>;

#define ETS_GRAD_ISA_NAME "avx2-fma"
#include "train/grad_engine_adapter.inc"
#undef ETS_GRAD_ISA_NAME

std::unique_ptr<GradEngine> make(const ParamLayout& layout) { return std::make_unique<Engine>(layout); }
}  // namespace ets::train::avx2

#undef Eigen
#undef __SSE3__
#undef __SSSE3__
#undef __SSE4_1__
#undef __SSE4_2__
#undef __AVX__
#undef __AVX2__
#undef __FMA__
#pragma GCC pop_options
#endif

namespace ets::train {

std::unique_ptr<GradEngine> make_grad_engine_avx2(const ParamLayout& layout) {
#ifdef ETS_TRAIN_AVX2_BUILD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2::make(layout);
#endif
  (void)layout;
  return nullptr;
}

}  // namespace ets::train
