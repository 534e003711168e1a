// The BPTT engine compiled a second time for AVX2+FMA (8-float packets), chosen at run time by make_grad_engine on
// CPUs without AVX-512. Eigen is renamed here so no template instance is shared with the baseline build (ODR).
#include "train/grad_engine.hpp"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX2__)
#define ETS_TRAIN_AVX2_BUILD 1
#include "train/isa_build_prelude.inc"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define Eigen ets_eigen_avx2
#define ETS_GRAD_ISA_NS avx2
#define ETS_GRAD_ISA_NAME "avx2-fma"
#define ETS_GRAD_ISA_AVX512 0
#include "train/isa_build_engine.inc"
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
