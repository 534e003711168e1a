// The BPTT engine compiled a third time for AVX-512 (16-float packets: F, DQ, VL, BW, with FMA), chosen at run time
// by make_grad_engine where the CPU has it. Eigen is renamed here so no template instance is shared (ODR).
#include "train/grad_engine.hpp"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX512F__)
#define ETS_TRAIN_AVX512_BUILD 1
#include "train/isa_build_prelude.inc"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")
// GCC 12 warns inside its own AVX-512 intrinsics (the _mm512_undefined_* idiom, GCC bug 105593; fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define __AVX512F__ 1
#define __AVX512DQ__ 1
#define __AVX512VL__ 1
#define __AVX512BW__ 1
#define Eigen ets_eigen_avx512
#define ETS_GRAD_ISA_NS avx512
#define ETS_GRAD_ISA_NAME "avx512"
#define ETS_GRAD_ISA_AVX512 1
#include "train/isa_build_engine.inc"
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

namespace ets::train {

std::unique_ptr<GradEngine> make_grad_engine_avx512(const ParamLayout& layout) {
#ifdef ETS_TRAIN_AVX512_BUILD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw"))
    return avx512::make(layout);
#endif
  (void)layout;
  return nullptr;
}

}  // namespace ets::train
