// A C entry point to CuptiTracer for Python (ctypes), so a PyTorch training loop can be captured live on a GPU.
// Used by tools/gpu/nvtx_loop.py; returns a JSON summary, never throws across the C boundary.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "ets/cuda/cupti_tracer.hpp"

namespace {
std::unique_ptr<ets::cuda::CuptiTracer> g_tracer;
std::string g_result;

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}
}  // namespace

extern "C" {

/// Starts a capture; 0 on success, -1 on failure (the reason comes from ets_cupti_stop()).
__attribute__((visibility("default"))) int ets_cupti_start(int all_ranges_are_ops) {
  try {
    ets::cuda::CuptiTracerOptions o;
    o.all_ranges_are_ops = all_ranges_are_ops != 0;
    o.meta.framework = "pytorch";
    g_tracer = std::make_unique<ets::cuda::CuptiTracer>(o);
    g_tracer->start();
    g_result.clear();
    return 0;
  } catch (const std::exception& e) {
    g_result = "{\"error\":" + quote(e.what()) + "}";
    g_tracer.reset();
    return -1;
  }
}

/// Stops and returns {"stats":{...},"iterations":[{"index","ops","kernels","sum_us","measured_us"}]} or
/// {"error":"..."}; the string lives until the next call.
__attribute__((visibility("default"))) const char* ets_cupti_stop() {
  if (!g_tracer) return g_result.empty() ? "{\"error\":\"not started\"}" : g_result.c_str();
  try {
    const auto traces = g_tracer->stop();
    const auto& st = g_tracer->stats();
    std::string its;
    for (const auto& t : traces) {
      std::uint64_t kernels = 0;
      for (const auto& op : t.ops) kernels += op.kernels;
      if (!its.empty()) its += ",";
      its += fmt::format("{{\"index\":{},\"ops\":{},\"kernels\":{},\"sum_us\":{:.3f},\"measured_us\":{}}}", t.iteration,
                         t.ops.size(), kernels, t.sum_us(),
                         t.has_measurement() ? fmt::format("{:.3f}", t.measured_us) : "null");
    }
    g_result = fmt::format(
        "{{\"stats\":{{\"device\":{},\"api\":{},\"markers\":{},\"dropped\":{}}},\"iterations\":[{}]}}", st.device,
        st.api, st.markers, st.dropped, its);
  } catch (const std::exception& e) {
    g_result = "{\"error\":" + quote(e.what()) + "}";
  }
  g_tracer.reset();
  return g_result.c_str();
}

}  // extern "C"
