// BPTT for the bidirectional LSTM in PyTorch nn.LSTM semantics (gate order i, f, g, o; both biases; the
// reverse direction reads the window backwards). Column t·n + j holds window j at position t in every buffer.
#include "train/bilstm_grad.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

#include "ets/error.hpp"
#include "train/aligned_buffer.hpp"
#include "train/grad_engine.hpp"

namespace ets::train {

#include "train/bilstm_grad_defs.inc"

template class BiLstmGrad<float>;
template class BiLstmGrad<double>;

namespace {
#define ETS_GRAD_ISA_NAME "generic"
#include "train/grad_engine_adapter.inc"
#undef ETS_GRAD_ISA_NAME
}  // namespace

std::unique_ptr<GradEngine> make_grad_engine(const ParamLayout& layout, bool allow_simd) {
  // ETS_TRAIN_ISA caps the instruction set: generic, avx2 or avx512 (the default: the widest the CPU runs).
  const char* env = std::getenv("ETS_TRAIN_ISA");
  const std::string cap = env ? env : "";
  ETS_CHECK(cap.empty() || cap == "generic" || cap == "avx2" || cap == "avx512", Errc::invalid_argument, "ets.train.19",
            "ETS_TRAIN_ISA is '{}': expected generic, avx2 or avx512 (or unset for the widest this CPU runs)", cap);
  if (allow_simd && cap != "generic") {
    if (cap != "avx2")
      if (auto e = make_grad_engine_avx512(layout)) return e;
    if (auto e = make_grad_engine_avx2(layout)) return e;
  }
  return std::make_unique<Engine>(layout);
}

}  // namespace ets::train
