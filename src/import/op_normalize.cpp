// Operator naming, hyper-parameter derivation and analytic FLOPs / bytes for the common ops (all importers).
// The tables mirror docs/trace-format.md; keep both in step when adding an op.
#include "import/op_normalize.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ets/detail/ascii.hpp"

namespace ets::import {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.compare(0, p.size(), p) == 0; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Forward-op table over the stripped aten name (no "aten::", no leading '_', no trailing in-place '_').
// The tables are never destroyed: a host thread still importing while the process exits would read freed maps.
const std::unordered_map<std::string, std::string>& aten_table() {
  static const auto& t = *new const std::unordered_map<std::string, std::string>{
      {"conv2d", "conv2d"}, {"cudnn_convolution", "conv"}, {"convolution", "conv"}, {"mkldnn_convolution", "conv"},
      {"thnn_conv2d", "conv2d"}, {"slow_conv2d", "conv2d"}, {"slow_conv2d_forward", "conv2d"},
      {"miopen_convolution", "conv"}, {"convolution_overrideable", "conv"}, {"nnpack_spatial_convolution", "conv2d"},
      {"conv1d", "conv1d"}, {"conv3d", "conv3d"}, {"slow_conv3d", "conv3d"}, {"slow_conv3d_forward", "conv3d"},
      {"cudnn_convolution_relu", "conv2d"}, {"cudnn_convolution_add_relu", "conv2d"},
      {"conv_transpose1d", "conv_transpose1d"}, {"conv_transpose2d", "conv_transpose2d"},
      {"conv_transpose3d", "conv_transpose3d"}, {"cudnn_convolution_transpose", "conv_transpose2d"},
      {"slow_conv_transpose2d", "conv_transpose2d"},
      {"linear", "linear"}, {"addmm", "linear"}, {"matmul", "matmul"}, {"mm", "mm"}, {"bmm", "bmm"},
      {"baddbmm", "bmm"}, {"addbmm", "bmm"}, {"einsum", "einsum"},
      {"batch_norm", "batch_norm"}, {"batch_norm_impl_index", "batch_norm"}, {"cudnn_batch_norm", "batch_norm"},
      {"native_batch_norm", "batch_norm"}, {"miopen_batch_norm", "batch_norm"},
      {"native_batch_norm_legit", "batch_norm"}, {"native_batch_norm_legit_no_training", "batch_norm"},
      {"layer_norm", "layer_norm"}, {"native_layer_norm", "layer_norm"}, {"group_norm", "group_norm"},
      {"native_group_norm", "group_norm"},
      {"relu", "relu"}, {"threshold", "relu"}, {"clamp_min", "relu"}, {"gelu", "gelu"}, {"silu", "silu"},
      {"tanh", "tanh"}, {"sigmoid", "sigmoid"}, {"hardtanh", "hardtanh"}, {"leaky_relu", "leaky_relu"},
      {"max_pool2d", "max_pool2d"}, {"max_pool2d_with_indices", "max_pool2d"}, {"avg_pool2d", "avg_pool2d"},
      {"adaptive_avg_pool2d", "adaptive_avg_pool2d"}, {"adaptive_avg_pool2d_backward", "adaptive_avg_pool2d"},
      {"mkldnn_adaptive_avg_pool2d", "adaptive_avg_pool2d"},
      {"cross_entropy_loss", "cross_entropy"}, {"nll_loss", "nll_loss"}, {"nll_loss_nd", "nll_loss"},
      {"nll_loss2d", "nll_loss"}, {"nll_loss_forward", "nll_loss"}, {"mse_loss", "mse_loss"},
      {"log_softmax", "log_softmax"}, {"softmax", "softmax"}, {"safe_softmax", "softmax"},
      {"dropout", "dropout"}, {"native_dropout", "dropout"}, {"fused_dropout", "dropout"},
      {"feature_dropout", "dropout"},
      {"embedding", "embedding"}, {"embedding_bag", "embedding_bag"}, {"embedding_dense", "embedding"},
      {"lstm", "lstm"}, {"gru", "gru"}, {"scaled_dot_product_attention", "attention"},
      {"scaled_dot_product_efficient_attention", "attention"}, {"scaled_dot_product_flash_attention", "attention"},
      {"add", "add"}, {"sub", "sub"}, {"rsub", "sub"}, {"mul", "mul"}, {"div", "div"}, {"addcmul", "addcmul"},
      {"addcdiv", "addcdiv"}, {"sqrt", "sqrt"}, {"rsqrt", "rsqrt"}, {"pow", "pow"}, {"exp", "exp"},
      {"mean", "mean"}, {"sum", "sum"}, {"var", "var"}, {"var_mean", "var"}, {"cat", "cat"}, {"stack", "stack"},
      {"view", "view"}, {"reshape", "view"}, {"reshape_alias", "view"}, {"unsafe_view", "view"},
      {"flatten", "flatten"}, {"t", "transpose"}, {"transpose", "transpose"}, {"permute", "permute"},
      {"contiguous", "contiguous"}, {"clone", "clone"}, {"copy", "copy"}, {"to", "to"}, {"zero", "zero"},
      {"fill", "fill"}, {"ones_like", "ones_like"}, {"zeros_like", "zeros_like"}, {"empty", "empty"},
      {"zeros", "zeros"}, {"ones", "ones"}, {"empty_like", "empty_like"},
  };
  return t;
}

// Autograd node class (without Backward<N>) -> forward op type.
const std::unordered_map<std::string, std::string>& backward_table() {
  static const auto& t = *new const std::unordered_map<std::string, std::string>{
      {"Convolution", "conv"}, {"CudnnConvolution", "conv"}, {"MkldnnConvolution", "conv"},
      {"ThnnConv2D", "conv2d"}, {"SlowConv2D", "conv2d"}, {"CudnnConvolutionTranspose", "conv_transpose2d"},
      {"Addmm", "linear"}, {"Linear", "linear"}, {"Mm", "mm"}, {"Bmm", "bmm"}, {"Baddbmm", "bmm"},
      {"Matmul", "matmul"}, {"Relu", "relu"}, {"Threshold", "relu"}, {"Gelu", "gelu"}, {"Silu", "silu"},
      {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Hardtanh", "hardtanh"}, {"LeakyRelu", "leaky_relu"},
      {"MaxPool2DWithIndices", "max_pool2d"}, {"MaxPool2D", "max_pool2d"}, {"AvgPool2D", "avg_pool2d"},
      {"AdaptiveAvgPool2D", "adaptive_avg_pool2d"}, {"MkldnnAdaptiveAvgPool2D", "adaptive_avg_pool2d"},
      {"CudnnBatchNorm", "batch_norm"}, {"NativeBatchNorm", "batch_norm"}, {"BatchNorm", "batch_norm"},
      {"MiopenBatchNorm", "batch_norm"}, {"NativeLayerNorm", "layer_norm"}, {"NativeGroupNorm", "group_norm"},
      {"NllLoss", "nll_loss"}, {"NllLoss2D", "nll_loss"}, {"MseLoss", "mse_loss"}, {"LogSoftmax", "log_softmax"},
      {"Softmax", "softmax"}, {"NativeDropout", "dropout"}, {"FusedDropout", "dropout"},
      {"Embedding", "embedding"}, {"EmbeddingBag", "embedding_bag"}, {"Add", "add"}, {"Sub", "sub"},
      {"Rsub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Sqrt", "sqrt"}, {"Rsqrt", "rsqrt"}, {"Pow", "pow"},
      {"Exp", "exp"}, {"Mean", "mean"}, {"Sum", "sum"}, {"Var", "var"}, {"Cat", "cat"}, {"Stack", "stack"},
      {"View", "view"}, {"Reshape", "view"}, {"ReshapeAlias", "view"}, {"UnsafeView", "view"},
      {"T", "transpose"}, {"Transpose", "transpose"}, {"Permute", "permute"}, {"Clone", "clone"},
      {"Copy", "copy"}, {"ToCopy", "to"}, {"Expand", "expand"}, {"Select", "select"}, {"Slice", "slice"},
      {"Index", "index"}, {"Squeeze", "squeeze"}, {"Unsqueeze", "unsqueeze"},
      {"ScaledDotProductEfficientAttention", "attention"}, {"ScaledDotProductFlashAttention", "attention"},
  };
  return t;
}

std::string snake(std::string_view camel) {
  std::string out;
  for (std::size_t i = 0; i < camel.size(); ++i) {
    const char c = camel[i];
    if (ets::detail::ascii_upper(c)) {
      if (i > 0 && ets::detail::ascii_lower(camel[i - 1])) out += '_';
      out += ets::detail::ascii_tolower(c);
    } else {
      out += c;
    }
  }
  return out;
}

std::string conv_by_rank(const std::string& n, int weight_rank) {
  if (n != "conv") return n;
  if (weight_rank == 3) return "conv1d";
  if (weight_rank == 5) return "conv3d";
  return "conv2d";
}

std::string forward_name(std::string_view stripped, int weight_rank) {
  // leading underscores cut at once: one erase each was quadratic in a (hostile) name's length
  const std::size_t first = stripped.find_first_not_of('_');
  std::string s(first == std::string_view::npos ? std::string_view() : stripped.substr(first));
  const auto& t = aten_table();
  auto it = t.find(s);
  if (it == t.end() && !s.empty() && s.back() == '_') {
    s.pop_back();
    it = t.find(s);
  }
  if (it != t.end()) return conv_by_rank(it->second, weight_rank);
  // Optimizer kernels: _foreach_add_ -> foreach_add, _fused_adam_ -> fused_adam.
  return s;
}

// "conv2d" "[1, 1]" "2" -> integers; empty on anything else.
std::vector<std::int64_t> parse_ints(const std::string& s) {
  std::vector<std::int64_t> out;
  const char* p = s.c_str();
  while (*p) {
    if (*p == '-' || std::isdigit(static_cast<unsigned char>(*p))) {
      char* end = nullptr;
      const long long v = std::strtoll(p, &end, 10);
      if (end == p) return {};  // a lone '-': not a number, and the loop would not advance
      out.push_back(v);
      p = end;
      if (*p == '.' || *p == 'e' || *p == 'E') return {};  // a float, not an int list
    } else if (*p == '[' || *p == ']' || *p == ',' || *p == ' ') {
      ++p;
    } else {
      return {};
    }
  }
  return out;
}

bool is_tensor_type(const std::string& t) {
  return !t.empty() && t != "Scalar" && t != "ScalarList" && t != "GenericList" && t != "None" && t != "Device" &&
         t != "str" && t != "ScalarType" && t != "Layout" && t != "MemoryFormat";
}

double numel(const std::vector<std::int64_t>& d);

// Element count of the shapes' broadcast (numpy rules, aligned at the last dim); where two dims clash the shapes
// do not broadcast, and the largest element count stands in.
double broadcast_numel(const std::vector<const std::vector<std::int64_t>*>& shapes) {
  std::size_t rank = 0;
  for (const auto* s : shapes) rank = std::max(rank, s->size());
  double n = 1, largest = 1;
  bool clash = false;
  // Each shape's own dims merged into the broadcast (j-th dim from the end): the sum of the ranks, not the largest
  // rank times the number of shapes.
  std::vector<std::int64_t> out(rank, 1);
  for (const auto* s : shapes)
    for (std::size_t j = 0; j < s->size(); ++j) {
      const std::int64_t e = std::max<std::int64_t>(0, (*s)[s->size() - 1 - j]);  // as numel(): unknown is 0
      std::int64_t& d = out[j];
      if (e == d || e == 1) continue;
      if (d == 1) d = e;
      else clash = true;
    }
  for (const std::int64_t d : out) n *= static_cast<double>(d);
  for (const auto* s : shapes) largest = std::max(largest, numel(*s));
  return clash ? largest : n;
}

double numel(const std::vector<std::int64_t>& d) {
  double n = 1;
  for (auto x : d) n *= static_cast<double>(x > 0 ? x : 0);
  return n;
}

void set_pair(HyperParams& h, Hyper a, Hyper b, const std::vector<std::int64_t>& v) {
  if (v.empty()) return;
  h.set(a, static_cast<double>(v[0]));
  h.set(b, static_cast<double>(v.size() > 1 ? v[1] : v[0]));
}

}  // namespace

std::uint8_t scope_phase_flags(std::string_view name) {
  if (starts_with(name, "autograd::engine::evaluate_function")) return kScopeBackward;
  if (starts_with(name, "Optimizer.step#")) return kScopeUpdate;
  if (starts_with(name, "Optimizer.zero_grad#")) return kScopeUpdate | kScopeZeroGrad;
  return 0;
}

Phase op_phase(std::uint8_t scope_flags, bool backward_name, bool closure_step, std::int64_t sequence) {
  if ((scope_flags & kScopeBackward) || backward_name) return Phase::Backward;
  const bool closure_forward = closure_step && !(scope_flags & kScopeZeroGrad) && sequence >= 0;
  return (scope_flags & kScopeUpdate) && !closure_forward ? Phase::Update : Phase::Forward;
}

bool is_record_function_bookkeeping(std::string_view raw) { return raw == "aten::zeros" || raw == "aten::empty"; }

namespace {
// "<prefix><Class><suffix>" -> "class" (lower case), the class a single name without dots; "" otherwise.
std::string optimizer_class(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (!starts_with(name, prefix)) return "";
  const std::string_view rest = name.substr(prefix.size());
  const std::size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos || rest.substr(dot) != suffix) return "";
  std::string cls;
  for (char ch : rest.substr(0, dot)) cls += ets::detail::ascii_tolower(ch);
  return cls;
}
}  // namespace

std::string torch_optimizer_class(std::string_view name) { return optimizer_class(name, "Optimizer.step#", ".step"); }

std::string torch_zero_grad_class(std::string_view name) {
  return optimizer_class(name, "Optimizer.zero_grad#", ".zero_grad");
}

std::string normalize_op_name_by_args(std::string_view raw, bool* backward, int second_rank, int third_rank) {
  bool bwd = false;
  std::string name = normalize_op_name(raw, &bwd, std::max(second_rank, 0));
  if (bwd && third_rank >= 0) name = normalize_op_name(raw, &bwd, third_rank);
  if (backward) *backward = bwd;
  return name;
}

std::string normalize_op_name(std::string_view raw, bool* backward, int weight_rank) {
  if (backward) *backward = false;
  std::string_view s = raw;
  constexpr std::string_view kEval = "autograd::engine::evaluate_function: ";
  if (starts_with(s, kEval)) s.remove_prefix(kEval.size());
  // Autograd node: "AddmmBackward0", "torch::autograd::AccumulateGrad", "CudnnConvolutionBackward".
  if (ends_with(s, "AccumulateGrad")) {
    if (backward) *backward = true;
    return "accumulate_grad";
  }
  {
    std::string_view c = s;
    while (!c.empty() && std::isdigit(static_cast<unsigned char>(c.back()))) c.remove_suffix(1);
    if (ends_with(c, "Backward") && c.find("::") == std::string_view::npos) {
      c.remove_suffix(8);
      if (backward) *backward = true;
      const auto& t = backward_table();
      auto it = t.find(std::string(c));
      if (it != t.end()) return conv_by_rank(it->second, weight_rank);
      return forward_name(snake(c), weight_rank);
    }
  }
  if (starts_with(s, "aten::")) s.remove_prefix(6);
  else if (starts_with(s, "prim::")) s.remove_prefix(6);
  std::string n(s);
  // *_backward, *_backward_data, *_backward_input, *_backward_weight, *_backward_elemt -> forward op.
  const std::size_t b = n.find("_backward");
  if (b != std::string::npos && b > 0 && n.find("::") == std::string::npos) {
    if (backward) *backward = true;
    n.erase(b);
  }
  return forward_name(n, weight_rank);
}

std::string launch_scope_op_name(std::string_view raw, bool* backward) {
  const std::size_t hash = raw.rfind('#');
  const std::string_view s = hash == std::string_view::npos || hash + 1 == raw.size() ? raw : raw.substr(hash + 1);
  bool bwd = false;
  std::string n = normalize_op_name(s, &bwd);
  if (backward) *backward = bwd;
  return bwd ? n : snake(s);
}

std::size_t recurrent_weights_argument(const std::vector<std::string>& types) {
  for (std::size_t i = types.size(); i-- > 1;)
    if (types[i] == "TensorList" || types[i] == "GenericList") return i;
  return types.size();
}

void fill_from_args(OpRecord& rec, const RawArgs& a) {
  // Concrete args are positional over all arguments; tensor inputs are the tensor-typed ones in order.
  std::vector<std::vector<std::int64_t>> tdims;
  rec.inputs.clear();
  const std::size_t n = std::max(a.dims.size(), a.types.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string empty;
    const std::string& ty = i < a.types.size() ? a.types[i] : empty;
    const bool has_dims = i < a.dims.size() && !a.dims[i].empty();
    // Tensor arguments carry their dtype as type ("float", "c10::Half"); scalars say "Scalar". Old traces without
    // "Input type" only have dims: a non-empty shape is a tensor.
    const bool tensor = a.types.empty() ? has_dims : (parse_dtype(ty) != DType::Unknown || (has_dims && is_tensor_type(ty)));
    if (!tensor) continue;
    TensorInfo t;
    if (i < a.dims.size()) t.dims = a.dims[i];
    t.dtype = parse_dtype(ty);
    rec.inputs.push_back(t);
  }
  auto conc = [&](std::size_t i) -> std::vector<std::int64_t> {
    return i < a.concrete.size() ? parse_ints(a.concrete[i]) : std::vector<std::int64_t>{};
  };
  HyperParams& h = rec.hyper;
  const std::string& op = rec.name;
  const bool bwd = rec.phase == Phase::Backward;
  if ((op == "conv1d" || op == "conv2d" || op == "conv3d") && rec.inputs.size() >= (bwd ? 3u : 2u)) {
    // convolution_backward lists (grad_out, input, weight, ...).
    const auto& x = rec.inputs[bwd ? 1 : 0].dims;
    const auto& w = rec.inputs[bwd ? 2 : 1].dims;
    if (w.size() >= 3 && x.size() >= 2) {
      h.set(Hyper::InChannels, static_cast<double>(x[1]));
      h.set(Hyper::OutChannels, static_cast<double>(w[0]));
      h.set(Hyper::KernelH, static_cast<double>(w[2]));
      h.set(Hyper::KernelW, static_cast<double>(w.size() >= 4 ? w[3] : 1));
      if (w[1] > 0) h.set(Hyper::Groups, static_cast<double>(x[1] / w[1]));
    }
    if (bwd) return;  // convolution_backward's int args are (bias_sizes, stride, ...): not worth a second table
    // Argument positions of stride, padding, dilation and groups, by exact schema name (torch >= 1.8); a
    // substring test would read cudnn_convolution_relu (conv2d's order) as cudnn_convolution.
    struct Positions {
      std::size_t stride, pad, dilation, groups;
    };
    constexpr std::size_t none = static_cast<std::size_t>(-1);  // conc() of it is empty
    const std::string_view raw = rec.raw_name;
    const std::string_view schema = raw.substr(raw.rfind("::") == std::string_view::npos ? 0 : raw.rfind("::") + 2);
    const Positions at =
        // (self, weight, padding, stride, dilation, groups, ...)
        schema == "cudnn_convolution" ? Positions{3, 2, 4, 5}
        // (self, weight, bias, padding, stride, dilation, groups, ...)
        : schema == "mkldnn_convolution" || schema == "miopen_convolution" || schema == "miopen_depthwise_convolution"
            ? Positions{4, 3, 5, 6}
        // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
        : schema == "convolution" || schema == "_convolution" ? Positions{3, 4, 5, 8}
        // (self, weight, z, alpha, bias, stride, padding, dilation, groups)
        : schema == "cudnn_convolution_add_relu" ? Positions{5, 6, 7, 8}
        // (input, weight, bias, padding, stride)
        : schema == "_nnpack_spatial_convolution" ? Positions{4, 3, none, none}
        // (self, weight, kernel_size, bias, stride, padding[, dilation])
        : schema == "thnn_conv2d" || schema == "slow_conv2d" || schema == "_slow_conv2d_forward" ||
                schema == "slow_conv3d" || schema == "slow_conv3d_forward"
            ? Positions{4, 5, none, none}
        : schema == "_conv_depthwise2d" ? Positions{4, 5, 6, none}
        // conv1d / conv2d / conv3d, cudnn_convolution_relu: (input, weight, bias, stride, padding, dilation, groups)
                                          : Positions{3, 4, 5, 6};
    set_pair(h, Hyper::StrideH, Hyper::StrideW, conc(at.stride));
    set_pair(h, Hyper::PadH, Hyper::PadW, conc(at.pad));
    set_pair(h, Hyper::DilationH, Hyper::DilationW, conc(at.dilation));
    const auto g = conc(at.groups);
    if (g.size() == 1 && g[0] > 0) h.set(Hyper::Groups, static_cast<double>(g[0]));
  } else if ((op == "linear" || op == "matmul" || op == "mm") && rec.inputs.size() >= 2 && !bwd) {
    // addmm lists (bias, x, w); one without its three tensors is read like mm (as fill_analytic does).
    const bool addmm = rec.raw_name.find("addmm") != std::string::npos && rec.inputs.size() >= 3;
    const auto& x = rec.inputs[addmm ? 1 : 0].dims;
    const auto& w = rec.inputs[addmm ? 2 : 1].dims;
    if (addmm && rec.inputs.size() >= 3 && w.size() == 2) {
      h.set(Hyper::InChannels, static_cast<double>(w[0]));
      h.set(Hyper::OutChannels, static_cast<double>(w[1]));
    } else if (op == "linear" && w.size() == 2) {
      h.set(Hyper::InChannels, static_cast<double>(w[1]));
      h.set(Hyper::OutChannels, static_cast<double>(w[0]));
    } else if (!x.empty() && w.size() >= 2) {
      h.set(Hyper::InChannels, static_cast<double>(x.back()));
      h.set(Hyper::OutChannels, static_cast<double>(w.back()));
    }
  } else if ((op == "max_pool2d" || op == "avg_pool2d") && !bwd) {
    set_pair(h, Hyper::KernelH, Hyper::KernelW, conc(1));
    set_pair(h, Hyper::StrideH, Hyper::StrideW, conc(2));
    set_pair(h, Hyper::PadH, Hyper::PadW, conc(3));
    if (op == "max_pool2d") set_pair(h, Hyper::DilationH, Hyper::DilationW, conc(4));
  } else if ((op == "gru" || op == "lstm" || op == "rnn_tanh" || op == "rnn_relu") && !bwd) {
    // gru.input(input, hx, params[], has_biases, num_layers, dropout, train, bidirectional, batch_first) and
    // gru.data(data, batch_sizes, hx, params[], has_biases, num_layers, ...); lstm's hx is a list ([h0, c0]). So
    // the last list argument is the weights, hx stands before it and num_layers two after it, in all four. Input
    // size is the input's last dim in every layout; hidden is hx's ([layers × directions, N, hidden]; an lstm's
    // list records its first tensor, or nothing as torch 1.13 writes it).
    const std::size_t params = recurrent_weights_argument(a.types);
    if (params < a.types.size()) {
      if (!a.dims.empty() && !a.dims[0].empty() && a.dims[0].back() > 0)
        h.set(Hyper::InChannels, static_cast<double>(a.dims[0].back()));
      const auto& hx = params - 1 < a.dims.size() ? a.dims[params - 1] : std::vector<std::int64_t>{};
      if (hx.size() == 3 && hx[2] > 0) h.set(Hyper::Hidden, static_cast<double>(hx[2]));
      const auto layers = conc(params + 2);
      if (layers.size() == 1 && layers[0] > 0) h.set(Hyper::Layers, static_cast<double>(layers[0]));
    }
  } else if ((op == "batch_norm" || op == "group_norm") && !rec.inputs.empty() && rec.inputs[0].dims.size() >= 2) {
    h.set(Hyper::InChannels, static_cast<double>(rec.inputs[0].dims[1]));
  } else if (op == "layer_norm" && !rec.inputs.empty() && !rec.inputs[0].dims.empty()) {
    h.set(Hyper::Hidden, static_cast<double>(rec.inputs[0].dims.back()));
  } else if ((op == "embedding" || op == "embedding_bag") && !rec.inputs.empty() && rec.inputs[0].dims.size() == 2) {
    h.set(Hyper::InChannels, static_cast<double>(rec.inputs[0].dims[0]));
    h.set(Hyper::Hidden, static_cast<double>(rec.inputs[0].dims[1]));
  }
}

void fill_analytic(OpRecord& rec) {
  // A count past a double's range (a recorded 1e308 summed over nested events, dims of 2^63) is no count: unknown,
  // as the ETS trace format and the encoder take it, so that the same op reads the same wherever it is written.
  if (!std::isfinite(rec.flops)) rec.flops = kUnknown;
  if (!std::isfinite(rec.bytes)) rec.bytes = kUnknown;
  const auto& in = rec.inputs;
  const std::string& op = rec.name;
  const bool bwd = rec.phase == Phase::Backward;
  double out_numel = -1;
  double flops = kUnknown;
  if ((op == "conv1d" || op == "conv2d" || op == "conv3d") && in.size() >= 2) {
    // Forward: inputs (x, w); backward (convolution_backward): (grad_out, x, w) and the grad_out shape is exact.
    const auto& w = in[bwd && in.size() >= 3 ? 2 : 1].dims;
    const auto& x = in[bwd && in.size() >= 3 ? 1 : 0].dims;
    if (w.size() >= 3 && x.size() == w.size()) {
      double spatial_out = 1;
      if (bwd && in.size() >= 3 && in[0].dims.size() == x.size()) {
        for (std::size_t i = 2; i < in[0].dims.size(); ++i) spatial_out *= static_cast<double>(in[0].dims[i]);
      } else {
        for (std::size_t i = 2; i < x.size(); ++i) {
          const double k = static_cast<double>(w[i]);
          const Hyper sh = i == 2 ? Hyper::StrideH : Hyper::StrideW;
          const Hyper ph = i == 2 ? Hyper::PadH : Hyper::PadW;
          const Hyper dh = i == 2 ? Hyper::DilationH : Hyper::DilationW;
          double s = rec.hyper.get(sh, 1), p = rec.hyper.get(ph, (k - 1) / 2), d = rec.hyper.get(dh, 1);
          if (!(s >= 1)) s = 1;  // a stride or dilation below 1 is not a convolution's: keep the output finite
          if (!(d >= 1)) d = 1;
          spatial_out *= std::max(1.0, std::floor((static_cast<double>(x[i]) + 2 * p - d * (k - 1) - 1) / s) + 1);
        }
      }
      double kvol = 1;
      for (std::size_t i = 1; i < w.size(); ++i) kvol *= static_cast<double>(w[i]);
      const double f = 2.0 * static_cast<double>(x[0]) * static_cast<double>(w[0]) * spatial_out * kvol;
      flops = bwd ? 2 * f : f;
      out_numel = static_cast<double>(x[0]) * static_cast<double>(w[0]) * spatial_out;
    }
  } else if ((op == "linear" || op == "mm" || op == "matmul") && in.size() >= 2 && !bwd) {
    const bool addmm = rec.raw_name.find("addmm") != std::string::npos && in.size() >= 3;
    const auto& a = in[addmm ? 1 : 0].dims;
    const auto& b = in[addmm ? 2 : 1].dims;
    const bool linear_w = op == "linear" && !addmm;  // weight [out, in]
    if (op == "matmul" && a.size() >= 2 && b.size() >= 2) {
      // batch dims of both operands broadcast: [20,16] @ [3,16,32] is 3 products of 20 × 16 × 32
      const std::vector<std::int64_t> ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
      const double batch = broadcast_numel({&ba, &bb});
      const double m = static_cast<double>(a[a.size() - 2]), k = static_cast<double>(a.back());
      const double nn = static_cast<double>(b.back());
      flops = 2 * batch * m * k * nn;
      out_numel = batch * m * nn;
    } else if (!a.empty() && (b.size() >= 2 || (op == "matmul" && b.size() == 1))) {
      // a's leading dims are rows; a 1-D second operand (matrix × vector) has one column
      const double k = static_cast<double>(a.back());
      const double m = numel(a) / (k > 0 ? k : 1);
      const double nn = b.size() == 1 ? 1.0 : static_cast<double>(linear_w ? b[0] : b.back());
      flops = 2 * m * k * nn;
      out_numel = m * nn;
    }
  } else if (op == "bmm" && in.size() >= 2 && !bwd) {
    const bool badd = rec.raw_name.find("baddbmm") != std::string::npos && in.size() >= 3;
    const auto& a = in[badd ? 1 : 0].dims;
    const auto& b = in[badd ? 2 : 1].dims;
    if (a.size() == 3 && b.size() == 3) {
      flops = 2.0 * a[0] * a[1] * a[2] * b[2];
      out_numel = static_cast<double>(a[0]) * a[1] * b[2];
    }
  } else if (!in.empty() && (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "relu" ||
                             op == "sigmoid" || op == "tanh" || op == "gelu" || op == "silu" || op == "sqrt" ||
                             op == "rsqrt" || op == "exp" || op == "addcmul" || op == "addcdiv" ||
                             op == "batch_norm" || op == "layer_norm" || op == "softmax" || op == "log_softmax" ||
                             op == "dropout")) {
    // Binary / ternary element-wise ops output their inputs' broadcast shape ([64,1] + [1,32] is 64 × 32
    // elements). Norms list per-channel [C] tensors beside [N,C,H,W], which are not broadcast at the last dim: for
    // them, as for unary ops, the largest input is the output.
    const bool binary = op == "add" || op == "sub" || op == "mul" || op == "div" || op == "addcmul" || op == "addcdiv";
    double n = 0;
    if (binary) {
      std::vector<const std::vector<std::int64_t>*> shapes;
      for (const auto& t : in) shapes.push_back(&t.dims);
      n = broadcast_numel(shapes);
    } else {
      for (const auto& t : in) n = std::max(n, t.dims.empty() ? 1.0 : numel(t.dims));
    }
    const double per = (op == "batch_norm" || op == "layer_norm" || op == "softmax" || op == "log_softmax") ? 5 : 1;
    flops = per * n;
    out_numel = n;
  }
  if (std::isnan(rec.flops) && std::isfinite(flops)) rec.flops = flops;
  if (std::isnan(rec.bytes) && !in.empty()) {
    double bytes = 0;
    int elem = 0;
    for (const auto& t : in) {
      const int sz = dtype_size(t.dtype);
      if (sz == 0) continue;
      elem = elem ? elem : sz;
      bytes += (t.dims.empty() ? 1.0 : numel(t.dims)) * sz;
    }
    if (out_numel > 0 && elem) bytes += out_numel * elem;
    if (bytes > 0 && std::isfinite(bytes)) rec.bytes = bytes;
  }
}

}  // namespace ets::import
