// Reader for the ETS authors' reference CSV (iscas-system/ETS benchmark/datasets/*/*.csv): one file = one iteration.
// Times are nanoseconds; op ids follow the authors' opCodes table; the 30-int params list is decoded where clear.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trace.hpp"
#include "import/importers.hpp"
#include "import/op_normalize.hpp"

namespace ets::import {
namespace {

// The authors' operator ids (benchmark/analyzer/config/opCodes.dict at commit ceab3e8), inverted to id -> name.
// Ids the dict assigns no name to (123, 125, 145, 157, 161, 177) and anything outside stay "op<id>".
struct OpId {
  int id;
  const char* name;
};
constexpr OpId kOpIds[] = {
    {0, "layer_norm"}, {1, "local_response_norm"}, {2, "abs"}, {3, "abs_"}, {4, "neg"}, {5, "neg_"},
    {6, "reciprocal"}, {7, "reciprocal_"}, {8, "__abs__"}, {9, "__neg__"}, {10, "__invert__"}, {11, "add"},
    {12, "add_"}, {13, "div"}, {14, "div_"}, {15, "mul"}, {16, "mul_"}, {17, "remainder"}, {18, "remainder_"},
    {19, "sub"}, {20, "sub_"}, {21, "__add__"}, {22, "__sub__"}, {23, "__mul__"}, {24, "__floordiv__"},
    {25, "__truediv__"}, {26, "__mod__"}, {27, "__radd__"}, {28, "__rsub__"}, {29, "__rmul__"}, {30, "__rdiv__"},
    {31, "__rtruediv__"}, {32, "__rfloordiv__"}, {33, "fmod"}, {34, "fmod_"}, {35, "__iadd__"}, {36, "__isub__"},
    {37, "__imul__"}, {38, "__itruediv__"}, {39, "lt"}, {40, "lt_"}, {41, "gt"}, {42, "gt_"}, {43, "ge"},
    {44, "ge_"}, {45, "le"}, {46, "le_"}, {47, "eq"}, {48, "eq_"}, {49, "ne"}, {50, "ne_"}, {51, "__lt__"},
    {52, "__gt__"}, {53, "__ge__"}, {54, "__le__"}, {55, "__eq__"}, {56, "__ne__"}, {57, "__and__"},
    {58, "__or__"}, {59, "__xor__"}, {60, "__lshift__"}, {61, "__rshift__"}, {62, "__iand__"}, {63, "__ior__"},
    {64, "__ixor__"}, {65, "__ilshift__"}, {66, "__irshift__"}, {67, "addcdiv"}, {68, "addcdiv_"},
    {69, "addcmul"}, {70, "addcmul_"}, {71, "exp"}, {72, "exp_"}, {73, "exp1m"}, {74, "exp1m_"}, {75, "log"},
    {76, "log_"}, {77, "log10"}, {78, "log10_"}, {79, "log1p"}, {80, "log1p_"}, {81, "log2"}, {82, "log2_"},
    {83, "pow"}, {84, "pow_"}, {85, "__pow__"}, {86, "__rpow__"}, {87, "rsqrt"}, {88, "rsqrt_"}, {89, "sqrt"},
    {90, "sqrt_"}, {91, "ceil"}, {92, "ceil_"}, {93, "clamp"}, {94, "clamp_"}, {95, "floor"}, {96, "floor_"},
    {97, "frac"}, {98, "frac_"}, {99, "round"}, {100, "round_"}, {101, "sign"}, {102, "sign_"}, {103, "trunc"},
    {104, "trunc_"}, {105, "acos"}, {106, "acos_"}, {107, "asin"}, {108, "asin_"}, {109, "atan"},
    {110, "atan_"}, {111, "atan2"}, {112, "atan2_"}, {113, "cos"}, {114, "cos_"}, {115, "cosh"},
    {116, "cosh_"}, {117, "sin"}, {118, "sin_"}, {119, "sinh"}, {120, "sinh_"}, {121, "tan"}, {122, "tan_"},
    {124, "sigmoid_"}, {126, "tanh_"}, {127, "erf"}, {128, "erf_"}, {129, "erfc"}, {130, "erfc_"},
    {131, "erfinv"}, {132, "erfinv_"}, {133, "digamma"}, {134, "lerp"}, {135, "lerp_"}, {136, "mvlgamma"},
    {137, "byte"}, {138, "char"}, {139, "double"}, {140, "float"}, {141, "half"}, {142, "int"}, {143, "long"},
    {144, "short"}, {146, "ones"}, {147, "ones_like"}, {148, "zero_"}, {149, "zeros"}, {150, "zeros_like"},
    {151, "threshold"}, {152, "relu"}, {153, "rrelu"}, {154, "hardtanh"}, {155, "relu6"}, {156, "sigmoid"},
    {158, "tanh"}, {159, "silu"}, {160, "mish"}, {162, "elu"}, {163, "celu"}, {164, "selu"}, {165, "glu"},
    {166, "gelu"}, {167, "hardshrink"}, {168, "leaky_relu"}, {169, "logsigmoid"}, {170, "softplus"},
    {171, "softshrink"}, {172, "multi_head_attention_forward"}, {173, "prelu"}, {174, "softsign"},
    {175, "tanhshrink"}, {176, "softmin"}, {178, "softmax2d"}, {179, "logsoftmax"}, {180, "DivBackward1"},
    {181, "cross_entropy"}, {182, "max_pool1d"}, {183, "max_pool2d"}, {184, "max_pool3d"},
    {185, "max_unpool1d"}, {186, "max_unpool2d"}, {187, "max_unpool3d"}, {188, "avg_pool1d"},
    {189, "avg_pool2d"}, {190, "avg_pool3d"}, {191, "fractional_max_pool2d"}, {192, "fractional_max_pool3d"},
    {193, "lp_pool1d"}, {194, "lp_pool2d"}, {195, "adaptive_max_pool1d"}, {196, "adaptive_max_pool2d"},
    {197, "adaptive_max_pool3d"}, {198, "adaptive_avg_pool1d"}, {199, "adaptive_avg_pool2d"},
    {200, "adaptive_avg_pool3d"}, {201, "linear"}, {202, "bias"}, {203, "conv2d"}, {204, "conv1d"},
    {205, "batch_norm"}, {206, "__matmul__"}, {207, "matmul"}, {208, "embedding"}, {209, "sum"}, {210, "mean"},
    {211, "norm"}, {212, "dropout"}, {213, "cat"}, {214, "reshape"}, {215, "masked_scatter_"}, {216, "gather"},
    {217, "nonzero"}, {218, "index_select"}, {219, "masked_select"}, {220, "addmm"}, {221, "addmm_"},
    {222, "mm"}, {223, "bmm"}, {224, "softmax"}, {225, "log_softmax"}, {226, "mse_loss"}, {227, "adam"},
    {228, "randperm"}, {229, "pad"}, {230, "normalize"}, {231, "roll"}, {232, "new_zeros"}, {233, "index"},
    {234, "bernoulli_"}, {235, "fill_"}, {236, "full"}, {237, "copy_"}, {238, "clone"}, {239, "clone"},
    {240, "contiguous"}, {241, "any"}, {242, "to"}, {243, "hardswish"}, {244, "hardsigmoid"},
};

// The authors' names are PyTorch functional names; the shared normaliser maps them onto the names every other
// importer produces (in-place "add_" -> "add", ...).
std::string op_name(std::int64_t id) {
  for (const auto& e : kOpIds)
    if (e.id == id) return normalize_op_name(std::string("aten::") + e.name);
  return fmt::format("op{}", id);
}

constexpr int kConv2dId = 203;
constexpr int kLinearId = 201;

const char* const kRequired[] = {"op",    "dir",  "params",     "flops",   "bytes",     "kStartTime", "kEndTime",
                                 "space", "seq",  "kernels",    "kduration", "batch",   "input_type"};
enum Col { cOp, cDir, cParams, cFlops, cBytes, cKStart, cKEnd, cSpace, cSeq, cKernels, cKDur, cBatch, cInputType, cH, cW, cCount };
const char* const kOptional[] = {"h", "w"};

struct Csv {
  std::string_view bytes;
  const std::string& path;
  std::size_t pos = 0;
  std::size_t line = 0;

  // One record; quoted fields may hold commas and doubled quotes (RFC 4180). Returns false at end of input.
  bool next(std::vector<std::string>& fields) {
    fields.clear();
    if (pos >= bytes.size()) return false;
    ++line;
    std::string cur;
    bool quoted = false, was_quoted = false;  // in a quoted section; the field had one
    while (true) {
      if (pos >= bytes.size()) {
        if (quoted) ETS_THROW(Errc::parse, "ets.csv.2", "{}:{}: unterminated quoted field", path, line);
        fields.push_back(std::move(cur));
        return true;
      }
      const char c = bytes[pos++];
      if (quoted) {
        if (c == '"') {
          if (pos < bytes.size() && bytes[pos] == '"') { cur.push_back('"'); ++pos; }
          else quoted = false;
        } else {
          cur.push_back(c);
        }
      } else if (c == '"' && cur.find_first_not_of(" \t") == std::string::npos && !was_quoted) {
        // a quote opens a quoted field only at its start (after blanks); inside one (1"0") it is a character, so
        // the cell is not a number instead of reading as 10
        cur.clear();
        quoted = was_quoted = true;
      } else if (c == ',') {
        fields.push_back(std::move(cur));
        cur.clear();
        was_quoted = false;
      } else if (c == '\n' || c == '\r') {
        if (c == '\r' && pos < bytes.size() && bytes[pos] == '\n') ++pos;
        fields.push_back(std::move(cur));
        return true;
      } else {
        cur.push_back(c);
      }
    }
  }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A cell as a number, in the syntax of detail::parse_double (the C locale's, one leading '+' allowed) for both
// integers and reals: a spreadsheet that writes "+5" writes it in every numeric column.
template <typename T>
T number(std::string_view s, const std::string& path, std::size_t line, const char* column) {
  s = trim(s);
  std::string_view digits = s;
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
  T v{};
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
    ETS_THROW(Errc::parse, "ets.csv.3", "{}:{}: column {} is not a number: '{}'", path, line, column, s);
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) ETS_THROW(Errc::parse, "ets.csv.3", "{}:{}: column {} is not finite", path, line, column);
  }
  return v;
}

std::vector<std::int64_t> parse_params(std::string_view s, const std::string& path, std::size_t line) {
  s = trim(s);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']')
    ETS_THROW(Errc::parse, "ets.csv.4", "{}:{}: params is not a [..] list", path, line);
  s = s.substr(1, s.size() - 2);
  std::vector<std::int64_t> out;
  while (!trim(s).empty()) {
    const auto comma = s.find(',');
    const std::string_view item = trim(s.substr(0, comma));
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      ETS_THROW(Errc::parse, "ets.csv.4", "{}:{}: params entry '{}' is not an integer", path, line, item);
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
    if (trim(s).empty()) ETS_THROW(Errc::parse, "ets.csv.4", "{}:{}: params ends in a comma", path, line);
  }
  if (out.size() > 30) ETS_THROW(Errc::parse, "ets.csv.4", "{}:{}: params has {} entries (at most 30)", path, line, out.size());
  out.resize(30, 0);
  return out;
}

DType dtype_of_size(std::int64_t element_size) {
  switch (element_size) {
    case 2: return DType::Float16;
    case 4: return DType::Float32;
    case 8: return DType::Float64;
    default: return DType::Unknown;
  }
}

bool is_element_size(std::int64_t v) { return v == 1 || v == 2 || v == 4 || v == 8; }

// params layout (PyProf parameter strings flattened by the authors' analyzer, see docs/trace-format.md):
//  conv2d: N C H W K P Q R S pad_h pad_w stride_h stride_w dil_h dil_w groups element_size;
//  others: 1, 2 or 3 tensors in slots of 30, 15 or 10 ints, each "element_size, dims..., 0-padding".
void decode_params(std::int64_t op, const std::vector<std::int64_t>& p, OpRecord& rec) {
  if (op == kConv2dId) {
    const std::int64_t N = p[0], C = p[1], H = p[2], W = p[3], K = p[4], R = p[7], S = p[8], g = p[15];
    if (N <= 0 || C <= 0 || H <= 0 || W <= 0 || K <= 0 || R <= 0 || S <= 0 || g <= 0) return;
    const DType dt = dtype_of_size(p[16]);
    rec.inputs.push_back(TensorInfo{{N, C, H, W}, dt});
    rec.inputs.push_back(TensorInfo{{K, C / g, R, S}, dt});
    rec.hyper.set(Hyper::KernelH, R);
    rec.hyper.set(Hyper::KernelW, S);
    rec.hyper.set(Hyper::PadH, p[9]);
    rec.hyper.set(Hyper::PadW, p[10]);
    rec.hyper.set(Hyper::StrideH, p[11]);
    rec.hyper.set(Hyper::StrideW, p[12]);
    rec.hyper.set(Hyper::DilationH, p[13]);
    rec.hyper.set(Hyper::DilationW, p[14]);
    rec.hyper.set(Hyper::Groups, g);
    rec.hyper.set(Hyper::InChannels, C);
    rec.hyper.set(Hyper::OutChannels, K);
    return;
  }
  if (!is_element_size(p[0])) return;
  int slots = 1;
  if (is_element_size(p[10]) && is_element_size(p[20])) slots = 3;
  else if (is_element_size(p[15])) slots = 2;
  const std::size_t width = 30 / slots;
  for (int s = 0; s < slots; ++s) {
    const std::size_t base = s * width;
    std::size_t last = base + 1;  // one past the last non-zero dim
    for (std::size_t i = base + 1; i < base + width; ++i)
      if (p[i] != 0) last = i + 1;
    if (last == base + 1) continue;  // no recorded dims: shape unknown, not a scalar
    // a negative dim is no shape: the op's shapes are unknown, as a conv's are when one of its sizes is not positive
    if (std::any_of(p.begin() + static_cast<std::ptrdiff_t>(base + 1), p.begin() + static_cast<std::ptrdiff_t>(last),
                    [](std::int64_t d) { return d < 0; })) {
      rec.inputs.clear();
      return;
    }
    TensorInfo t;
    t.dtype = dtype_of_size(p[base]);
    t.dims.assign(p.begin() + static_cast<std::ptrdiff_t>(base + 1), p.begin() + static_cast<std::ptrdiff_t>(last));
    rec.inputs.push_back(std::move(t));
  }
  if (op == kLinearId && rec.inputs.size() >= 2 && rec.inputs[1].dims.size() == 2) {
    rec.hyper.set(Hyper::InChannels, static_cast<double>(rec.inputs[1].dims[1]));
    rec.hyper.set(Hyper::OutChannels, static_cast<double>(rec.inputs[1].dims[0]));
  }
}

// "T4CPUALL__alexnet.1_7.csv": optional "<dataset>__" prefix, model, ".<config>", "_<iteration>".
void meta_from_name(const std::string& path, ExecutionTrace& t) {
  std::string_view name = path;
  if (const auto slash = name.find_last_of("/\\"); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  // gzip is transparent to every reader, so "x.csv.gz" names the same trace as "x.csv"
  if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") name.remove_suffix(3);
  if (name.size() > 4 && name.substr(name.size() - 4) == ".csv") name.remove_suffix(4);
  if (const auto sep = name.find("__"); sep != std::string_view::npos) {
    t.meta.environment = std::string(name.substr(0, sep));
    t.meta.extra["dataset"] = t.meta.environment;
    name.remove_prefix(sep + 2);
  }
  const auto dot = name.find('.');
  t.meta.model = std::string(name.substr(0, dot));
  if (dot == std::string_view::npos) return;
  std::string_view rest = name.substr(dot + 1);
  const auto us = rest.rfind('_');
  t.meta.extra["config"] = std::string(rest.substr(0, us));
  if (us != std::string_view::npos) {
    const std::string_view it = rest.substr(us + 1);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(it.data(), it.data() + it.size(), v);
    if (ec == std::errc() && end == it.data() + it.size()) t.iteration = v;
  }
}

// Column positions from the header row; "" when every required column is there once, else what is wrong.
std::string find_columns(const std::vector<std::string>& header, int (&col)[cCount]) {
  std::fill(std::begin(col), std::end(col), -1);
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::string_view h = trim(header[i]);
    for (int c = 0; c < cCount; ++c) {
      const char* name = c < cH ? kRequired[c] : kOptional[c - cH];
      if (h != name) continue;
      // two columns of one name: which one holds the op (or its time) is anyone's guess
      if (col[c] >= 0) return fmt::format("has the column '{}' twice (columns {} and {})", name, col[c] + 1, i + 1);
      col[c] = static_cast<int>(i);
    }
  }
  for (int c = 0; c < cH; ++c)
    if (col[c] < 0) return fmt::format("lacks the ETS CSV column '{}'", kRequired[c]);
  return "";
}

}  // namespace

bool is_ets_csv_header(std::string_view bytes) {
  const std::string path;
  Csv csv{skip_bom(bytes.substr(0, std::min<std::size_t>(bytes.size(), 4096))), path};
  std::vector<std::string> f;
  try {
    if (!csv.next(f)) return false;
  } catch (const Error&) {  // an unterminated quote within the first 4 KiB: not a header we read
    return false;
  }
  // op, dir and params in any order identify the format; the reader then names any other column that is missing.
  int found = 0;
  for (const auto& h : f) {
    const std::string_view t = trim(h);
    found |= (t == kRequired[cOp] ? 1 : 0) | (t == kRequired[cDir] ? 2 : 0) | (t == kRequired[cParams] ? 4 : 0);
  }
  return found == 7;
}

std::vector<ExecutionTrace> read_ets_csv(std::string_view bytes, const std::string& path, const Options&) {
  Csv csv{skip_bom(bytes), path};
  std::vector<std::string> f;
  do {  // the header is the first non-blank line (detection skips leading blank lines too)
    if (!csv.next(f)) ETS_THROW(Errc::parse, "ets.csv.1", "'{}' is empty", path);
  } while (f.size() == 1 && trim(f[0]).empty());
  int col[cCount];
  const std::string header_problem = find_columns(f, col);
  if (!header_problem.empty()) ETS_THROW(Errc::parse, "ets.csv.1", "'{}' {}", path, header_problem);
  const std::size_t ncols = f.size();

  ExecutionTrace t;
  t.meta.source_format = "ets-csv";
  t.meta.source_path = path;
  t.meta.framework = "pytorch";
  meta_from_name(path, t);

  std::int64_t first_start = 0, last_end = 0, sum_ns = 0;
  // The run's batch, input type and image size, repeated on every row: read from the first, checked on the others
  // (a row that disagrees, or holds no number there, was taken silently).
  std::int64_t batch = 0, input_type = 0;
  std::string size_of[2];
  while (csv.next(f)) {
    if (f.size() == 1 && trim(f[0]).empty()) continue;  // blank line (e.g. trailing)
    if (f.size() != ncols)
      ETS_THROW(Errc::parse, "ets.csv.2", "{}:{}: {} fields, header has {}", path, csv.line, f.size(), ncols);
    const auto line = csv.line;
    auto get_i = [&](Col c) { return number<std::int64_t>(f[col[c]], path, line, kRequired[c]); };
    auto get_d = [&](Col c) { return number<double>(f[col[c]], path, line, kRequired[c]); };

    OpRecord op;
    const std::int64_t id = get_i(cOp);
    op.name = op_name(id);
    op.raw_name = fmt::format("op{}", id);
    const std::int64_t dir = get_i(cDir);
    if (dir < 1 || dir > 3)
      ETS_THROW(Errc::invalid_trace, "ets.csv.5", "{}:{}: dir is {}; expected 1, 2 or 3", path, line, dir);
    op.phase = static_cast<Phase>(dir - 1);
    decode_params(id, parse_params(f[col[cParams]], path, line), op);
    op.flops = get_d(cFlops);
    op.bytes = get_d(cBytes);
    const std::int64_t kstart = get_i(cKStart), kend = get_i(cKEnd), kdur = get_i(cKDur), space = get_i(cSpace);
    if (kdur < 0 || kend < kstart)
      ETS_THROW(Errc::invalid_trace, "ets.csv.7", "{}:{}: negative kernel duration", path, line);
    op.start_us = static_cast<double>(kstart) / 1000.0;
    op.time_us = static_cast<double>(kdur) / 1000.0;
    op.gap_us = static_cast<double>(space) / 1000.0;
    op.sequence = get_i(cSeq);
    const std::int64_t kernels = get_i(cKernels);
    op.kernels = kernels > 0 ? static_cast<std::uint32_t>(std::min<std::int64_t>(kernels, 0xFFFFFFFF)) : 0;

    if (!t.ops.empty()) {
      const std::int64_t row_batch = get_i(cBatch), row_type = get_i(cInputType);
      if (row_batch != batch || row_type != input_type)
        ETS_THROW(Errc::invalid_trace, "ets.csv.10", "{}:{}: batch {} and input_type {} differ from the first row's {} "
                  "and {}: one file holds one run", path, line, row_batch, row_type, batch, input_type);
      for (const Col c : {cH, cW})
        if (col[c] >= 0 && trim(f[col[c]]) != size_of[c == cW])
          ETS_THROW(Errc::invalid_trace, "ets.csv.10", "{}:{}: {} '{}' differs from the first row's '{}': one file "
                    "holds one run", path, line, c == cH ? "h" : "w", trim(f[col[c]]), size_of[c == cW]);
    } else {
      first_start = kstart;
      batch = get_i(cBatch);
      input_type = get_i(cInputType);
      for (const Col c : {cH, cW})
        if (col[c] >= 0) size_of[c == cW] = std::string(trim(f[col[c]]));
      t.meta.batch_size = batch;
      if (t.meta.batch_size < 0) {  // as the Kineto reader takes one: unknown, and said
        log(LogLevel::warn, "[ets.csv.9] {}:{}: batch is {}; the batch size, a feature, is unknown", path, line,
            t.meta.batch_size);
        t.meta.batch_size = 0;
      }
      const std::int64_t it = input_type;
      t.meta.extra["input_type"] = it == 1 ? "fp32" : it == 2 ? "fp16" : it == 3 ? "fp64" : fmt::format("{}", it);
      for (const auto& [c, key] : {std::pair<Col, const char*>{cH, "h"}, {cW, "w"}})
        if (col[c] >= 0) {
          std::string value(trim(f[col[c]]));
          check_meta_field(key, value, path);
          t.meta.extra[key] = std::move(value);
        }
    }
    last_end = kend;
    // Nanosecond integers near the int64 limits would wrap: a file that far out is broken, not a long iteration.
    if (__builtin_add_overflow(sum_ns, kdur, &sum_ns) || __builtin_add_overflow(sum_ns, space, &sum_ns))
      ETS_THROW(Errc::invalid_trace, "ets.csv.7", "{}:{}: kduration + space overflow 64-bit nanoseconds", path, line);
    t.ops.push_back(std::move(op));
  }
  if (t.ops.empty()) ETS_THROW(Errc::invalid_trace, "ets.csv.6", "'{}' has a header but no rows", path);
  // The label is the GPU span of the iteration, kept in integer ns so it is exact; Σ(kduration + space) matches it
  // in the authors' data by construction (space is measured start to start).
  std::int64_t span_ns = 0;
  if (__builtin_sub_overflow(last_end, first_start, &span_ns) || span_ns < 0)
    ETS_THROW(Errc::invalid_trace, "ets.csv.7", "'{}': the last row ends ({} ns) before the first starts ({} ns)", path,
              last_end, first_start);
  if (sum_ns != span_ns)
    log(LogLevel::warn,
        "[ets.csv.8] {}: sum(kduration + space) = {} ns differs from kEndTime[last] - kStartTime[first] = {} ns", path,
        sum_ns, span_ns);
  t.start_us = static_cast<double>(first_start) / 1000.0;
  t.measured_us = static_cast<double>(span_ns) / 1000.0;
  std::vector<ExecutionTrace> out;
  out.push_back(std::move(t));
  return out;
}

}  // namespace ets::import
