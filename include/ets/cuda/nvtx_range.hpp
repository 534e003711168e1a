// RAII NVTX range for host C++ programs, so they can mark ops and iterations for CuptiTracer without NVTX headers.
// A thin wrapper over nvtxRangePushA / nvtxRangePop (NVTX v3, header-only inside ets_cuda).
#pragma once

#include <string>

namespace ets::cuda {

/// Pushes an NVTX range on construction and pops it on destruction (same thread, strictly nested).
/// Name ops PyTorch-style ("aten::conv2d": by default only a name with "::" is an op, others are scopes; see
/// CuptiTracerOptions::all_ranges_are_ops) and iterations "ProfilerStep#N" (CuptiTracerOptions::step_prefix). Costs
/// nothing measurable when no tool listens.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) noexcept;
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace ets::cuda
