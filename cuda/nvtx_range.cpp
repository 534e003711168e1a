// NvtxRange (include/ets/cuda/nvtx_range.hpp): nvtxRangePushA / nvtxRangePop from NVTX v3.
// NVTX v3 is header-only and loads its tool (CUPTI, Nsight) itself; with no tool loaded the calls are no-ops.
#include "ets/cuda/nvtx_range.hpp"

#include <nvtx3/nvToolsExt.h>

namespace ets::cuda {

NvtxRange::NvtxRange(const std::string& name) noexcept { nvtxRangePushA(name.c_str()); }

NvtxRange::~NvtxRange() { nvtxRangePop(); }

}  // namespace ets::cuda
