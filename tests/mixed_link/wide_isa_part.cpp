// Built against ets::ets_header_only with a wider instruction set than the rest of mixed_link_test (AVX2 + FMA, or
// AVX-512): a plugin compiled with its own -march flags. Linked as objects ahead of libets, its inline kernels come
// first in the link; they must not replace the compiled library's (another panel width: wrong sums or a crash).
#include <vector>

#include <ets/bilstm_predictor.hpp>

#include "lstm_reference.hpp"

#ifndef ETS_WIDE_ISA_NAME
#error "ETS_WIDE_ISA_NAME names the function this object defines"
#endif

namespace mixed {
// The sum of the outputs of a forward pass on the CPU backend of this object's instruction set. Called only where
// the CPU has that set.
double ETS_WIDE_ISA_NAME(const ets::LstmWeights& w, const std::vector<float>& x, int windows, int width) {
  const ets::BiLstmPredictor p(w, ets::Backend::Cpu);
  std::vector<float> y(static_cast<std::size_t>(windows) * static_cast<std::size_t>(width) *
                       static_cast<std::size_t>(w.config.outputs));
  p.predict(x.data(), windows, width, y.data());
  double sum = 0;
  for (float v : y) sum += v;
  return sum;
}
}  // namespace mixed
