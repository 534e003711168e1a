// Reader for PyTorch Execution Traces (ExecutionTraceObserver JSON, schema 1.0.x and chakra 1.1.x): the operator
// graph without timings; one ExecutionTrace per ProfilerStep# (or one in all), time 0, measured_us unknown.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trace.hpp"
#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"
#include "import/op_normalize.hpp"

namespace ets::import {
namespace {

namespace od = simdjson::ondemand;

// The nodes are parsed in runs of about this many bytes, each as a small document (as the Kineto reader's events):
// the parser's buffers then stay in cache, and its index is not 4 bytes per byte of the whole file.
constexpr std::size_t kEtRunBytes = std::size_t{512} << 10;

// Every node is held until the iterations are built, and a file's nodes repeat a few hundred distinct names,
// argument types and values (GPT-2's 27,000 nodes: 263). So a node is a fixed 72 bytes: its text is kept once per
// distinct string (StringPool) and its arguments in one arena for all nodes (ArgArena), not in strings and vectors
// of its own, which took ~600 bytes a node (17 MB for those 27,000 nodes, beside 24 MB of text).
class StringPool {
 public:
  // The id of `s` (0: the empty string), the same for equal text.
  std::size_t id(std::string_view s) {
    if (s.empty()) return 0;
    if (const auto it = ids_.find(s); it != ids_.end()) return it->second;
    const std::string_view kept = store_.emplace_back(s);
    views_.push_back(kept);
    ids_.emplace(kept, views_.size() - 1);
    return views_.size() - 1;
  }
  std::string_view operator[](std::size_t id) const { return views_[id]; }

 private:
  std::deque<std::string> store_;  // a deque: the views stay valid as it grows
  std::deque<std::string_view> views_{std::string_view()};
  std::unordered_map<std::string_view, std::size_t> ids_;
};

// One node's arguments as they are read, and as an op's record reads them back: per argument, as the ET spells
// them, its type ("Tensor(float)", "Int"), its value as text where it is an int or an int list ("" otherwise), its
// shape (empty unless a flat int list) and, for a list of tensors, the first one's shape. Missing entries (a
// file with fewer types than shapes) read as empty.
struct NodeArgs {
  std::vector<std::string_view> types, concrete;
  std::vector<std::vector<std::int64_t>> shapes, list_first;
};

// All nodes' arguments, one after another: per argument its type's and value's pool ids, then the shape's length
// and dims, then the first listed tensor's. A deque grows without copying what it holds.
class ArgArena {
 public:
  std::size_t size() const { return words_.size(); }
  void put(std::int64_t w) { words_.push_back(w); }
  void put(const std::vector<std::int64_t>& dims) {
    put(static_cast<std::int64_t>(dims.size()));
    words_.insert(words_.end(), dims.begin(), dims.end());
  }
  // The `count` arguments stored from `at` on.
  void read(std::size_t at, std::size_t count, const StringPool& pool, NodeArgs& out) const {
    out = NodeArgs{};
    const auto dims = [&](std::vector<std::int64_t>& d) {
      const auto n = static_cast<std::size_t>(words_[at++]);
      d.assign(words_.begin() + static_cast<std::ptrdiff_t>(at), words_.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
    };
    for (std::size_t i = 0; i < count; ++i) {
      out.types.push_back(pool[static_cast<std::size_t>(words_[at++])]);
      out.concrete.push_back(pool[static_cast<std::size_t>(words_[at++])]);
      dims(out.shapes.emplace_back());
      dims(out.list_first.emplace_back());
    }
  }

 private:
  std::deque<std::int64_t> words_;
};

struct Node {
  std::int64_t id = -1;
  std::int64_t parent = -1;
  std::int64_t seq = -1;
  std::int64_t scope = -1;  // RecordScope; 7 = USER_SCOPE, a record_function label (Kineto's user_annotation)
  std::string_view name;    // in the reader's StringPool
  std::size_t args = 0;     // where its arguments start in the reader's ArgArena
  std::size_t arg_count = 0;
  std::uint8_t devices = 0;  // kOnCpu / kOnGpu: where its tensor arguments live
};
using Nodes = std::deque<Node>;  // grows without copying the nodes it holds

// What the node reader keeps across nodes: the pool and arena the nodes point into, and one node's arguments while
// they are read (its keys may come in any order, and a repeated key replaces what the last one gave).
struct NodeStore {
  StringPool pool;
  ArgArena arena;
  struct Reading {
    std::vector<std::size_t> types, concrete;  // pool ids
    std::vector<std::vector<std::int64_t>> shapes, list_first;
    std::uint8_t devices = 0;
  } reading;

  NodeArgs args_of(const Node& n) const {
    NodeArgs a;
    arena.read(n.args, n.arg_count, pool, a);
    return a;
  }
};

// A tensor argument's value ends with its device ("cpu", "cuda:0"; ROCm builds say "cuda" too). kOnGpu stands for
// any accelerator, as the Kineto reader's "gpu" does.
constexpr std::uint8_t kOnCpu = 1, kOnGpu = 2;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// kOnCpu / kOnGpu for a torch device string ("cpu", "cuda:1", "xpu"), 0 for anything else ("meta", a word).
std::uint8_t device_kind(std::string_view d) {
  const std::string_view type = d.substr(0, d.find(':'));
  if (type.size() < d.size() &&
      (d.size() == type.size() + 1 || d.find_first_not_of("0123456789", type.size() + 1) != std::string_view::npos))
    return 0;  // "cuda:" or "cuda:x": not a device
  if (type == "cpu") return kOnCpu;
  static constexpr std::string_view kAccelerators[] = {"cuda", "hip", "xpu", "mps", "hpu", "mtia", "xla",
                                                       "privateuseone"};
  return std::find(std::begin(kAccelerators), std::end(kAccelerators), type) != std::end(kAccelerators) ? kOnGpu : 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Argument lists nest two or three levels (a list of int lists); deeper ones are not arguments ETS reads, and a
// hostile file nesting 100,000 levels would overflow the stack of a recursive reader.
constexpr int kMaxArgumentDepth = 8;

// Integer scalars and (nested) int lists as text, so fill_from_args can read stride / padding / groups. A string
// inside a list is a tensor's device, noted in `devices` (a string argument itself, e.g. a reduction, is not).
std::string concrete_text(od::value v, std::uint8_t& devices, int depth = 0) {
  switch (v.type()) {
    case od::json_type::number: return std::string(trim(v.raw_json_token()));
    case od::json_type::boolean: return v.get_bool() ? "1" : "0";
    case od::json_type::array: {
      if (depth >= kMaxArgumentDepth) return "";
      std::string s = "[";
      bool first = true, ints = true;
      for (auto e : v.get_array()) {
        const std::string inner = concrete_text(e.value(), devices, depth + 1);
        ints = ints && !inner.empty();  // not an int list; read on all the same: a later tensor may name a device
        if (!ints) continue;
        if (!first) s += ", ";
        s += inner;
        first = false;
      }
      return ints ? s + "]" : "";
    }
    case od::json_type::string: {
      std::string_view d;
      if (depth > 0 && !v.get_string().get(d)) devices |= device_kind(d);
      return "";
    }
    default: return "";
  }
}

std::vector<std::int64_t> flat_ints(od::value v) {
  std::vector<std::int64_t> out;
  if (v.type() != od::json_type::array) return out;
  for (auto e : v.get_array()) {
    od::value x = e.value();
    if (x.type() != od::json_type::number) return {};  // nested list: a list argument, not one tensor
    std::int64_t i = 0;
    if (x.get_int64().get(i)) return {};
    out.push_back(i);
  }
  return out;
}

using Reading = NodeStore::Reading;

void read_values(od::value v, NodeStore& st) {
  Reading& r = st.reading;
  r.concrete.clear();
  for (auto e : v.get_array()) r.concrete.push_back(st.pool.id(concrete_text(e.value(), r.devices)));
}
void read_devices(od::value v, Reading& r) {
  if (v.type() != od::json_type::array) return;
  for (auto e : v.get_array()) concrete_text(e.value(), r.devices);
}
// One argument's shape: a flat int list (a tensor's), or a list of them (a list of tensors': its first is kept).
void read_shape(od::value v, std::vector<std::int64_t>& flat, std::vector<std::int64_t>& first) {
  if (v.type() != od::json_type::array) return;
  bool nested = false, at_first = true;
  for (auto e : v.get_array()) {
    od::value x = e.value();
    if (x.type() == od::json_type::array) {
      if (at_first) first = flat_ints(x);
      nested = true;
    } else if (std::int64_t i = 0; !nested && x.type() == od::json_type::number && !x.get_int64().get(i)) {
      flat.push_back(i);
    } else {
      nested = true;
    }
    at_first = false;
  }
  if (nested) flat.clear();
}
void read_shapes(od::value v, Reading& r) {
  r.shapes.clear();
  r.list_first.clear();
  for (auto e : v.get_array()) {
    r.shapes.emplace_back();
    r.list_first.emplace_back();
    read_shape(e.value(), r.shapes.back(), r.list_first.back());
  }
}
void read_types(od::value v, NodeStore& st) {
  Reading& r = st.reading;
  r.types.clear();
  for (auto e : v.get_array()) {
    std::string_view s;
    r.types.push_back(e.value().get_string().get(s) ? 0 : st.pool.id(s));
  }
}

std::int64_t int_or_first(od::value v) {
  if (v.type() == od::json_type::array) {
    for (auto e : v.get_array()) return e.value().get_int64();
    return -1;
  }
  return v.get_int64();
}

// One node; its arguments go to the store's arena (see Node).
Node read_node(od::object obj, NodeStore& st) {
  Node n;
  Reading& r = st.reading;
  r.types.clear();
  r.concrete.clear();
  r.shapes.clear();
  r.list_first.clear();
  r.devices = 0;
  for (auto field : obj) {
    const std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "id") {
      n.id = v.get_int64();
    } else if (key == "name") {
      n.name = st.pool[st.pool.id(std::string_view(v.get_string()))];
    } else if (key == "parent" || key == "ctrl_deps") {
      n.parent = int_or_first(v);
    } else if (key == "seq_id") {
      n.seq = v.get_int64();
    } else if (key == "scope") {
      n.scope = v.get_int64();
    } else if (key == "inputs") {
      if (v.type() == od::json_type::object) {  // chakra: {"values", "shapes", "types"}
        for (auto f : v.get_object()) {
          const std::string_view k = f.unescaped_key();
          if (k == "values") read_values(f.value(), st);
          else if (k == "shapes") read_shapes(f.value(), r);
          else if (k == "types") read_types(f.value(), st);
        }
      } else {
        read_values(v, st);
      }
    } else if (key == "outputs") {  // only where its tensors live (a CPU op's results are CPU tensors)
      if (v.type() == od::json_type::object) {
        for (auto f : v.get_object())
          if (std::string_view(f.unescaped_key()) == "values") read_devices(f.value(), r);
      } else {
        read_devices(v, r);
      }
    } else if (key == "input_shapes") {
      read_shapes(v, r);
    } else if (key == "input_types") {
      read_types(v, st);
    } else if (key == "attrs" && v.type() == od::json_type::array) {
      for (auto a : v.get_array()) {
        std::string_view name;
        std::int64_t value = 0;
        bool have = false;
        for (auto f : a.get_object()) {
          const std::string_view k = f.unescaped_key();
          if (k == "name" && f.value().get_string().get(name)) name = {};
          else if (k == "value") have = !f.value().get_int64().get(value);
        }
        if (have && name == "seq_id") n.seq = value;
        if (have && name == "scope") n.scope = value;
      }
    }
  }
  n.devices = r.devices;
  n.args = st.arena.size();
  n.arg_count = std::max({r.types.size(), r.shapes.size(), r.concrete.size()});
  const std::vector<std::int64_t> none;
  for (std::size_t i = 0; i < n.arg_count; ++i) {
    st.arena.put(static_cast<std::int64_t>(i < r.types.size() ? r.types[i] : 0));
    st.arena.put(static_cast<std::int64_t>(i < r.concrete.size() ? r.concrete[i] : 0));
    st.arena.put(i < r.shapes.size() ? r.shapes[i] : none);
    st.arena.put(i < r.list_first.size() ? r.list_first[i] : none);
  }
  return n;
}

// Op candidates are operators, namespaced as in a Kineto trace's cpu_op events ("aten::conv2d", "c10d::allreduce_",
// "autograd::engine::evaluate_function: AddmmBackward0", "torch::autograd::AccumulateGrad"); the outermost one on
// a chain of parents is the op, as the Kineto reader takes it. Not candidates: profiler bookkeeping and
// record_function labels (Kineto's user_annotation): USER_SCOPE nodes, and names whose "namespace" holds a dot,
// space or '#' ("torch.distributed.ddp.reducer::copy_bucket_to_grad").
constexpr std::int64_t kUserScope = 7;

bool is_candidate(const Node& n) {
  if (n.scope == kUserScope) return false;
  const std::string_view name = n.name;
  const auto p = name.find("::");
  if (p == std::string_view::npos || p == 0) return false;
  const std::string_view ns = name.substr(0, p);
  if (ns.find_first_of(" .#") != std::string_view::npos) return false;
  return ns != "profiler";
}

// aten ops that launch no device work on a GPU: views and metadata, allocation without initialisation, and the
// ops that do work only through children ("to" through _to_copy, "reshape" / "contiguous" through clone, dropout
// through native_dropout or bernoulli_), whose children then say so. A dropout in eval mode or with p = 0 returns
// its input and has none.
bool no_device_work(std::string_view aten_op) {
  static constexpr std::string_view kOps[] = {
      "_conj", "_reshape_alias", "_unsafe_view", "adjoint", "alias", "alpha_dropout", "alpha_dropout_", "as_strided",
      "as_strided_", "broadcast_tensors", "broadcast_to", "chunk", "contiguous", "detach", "detach_", "diagonal",
      "dim", "dropout", "dropout_", "empty", "empty_like", "empty_strided", "expand", "expand_as",
      "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "flatten", "hsplit",
      "is_contiguous", "lift_fresh", "mH", "mT", "moveaxis", "movedim", "narrow", "new_empty", "new_empty_strided",
      "numel", "numpy_T", "permute", "positive", "ravel", "record_stream", "reshape", "reshape_as", "resize_",
      "resolve_conj", "resolve_neg", "select", "set_", "size", "slice", "split", "split_with_sizes", "squeeze",
      "squeeze_", "stride", "swapaxes", "swapdims", "t", "tensor_split", "to", "transpose", "transpose_", "type_as",
      "unbind", "unflatten", "unfold", "unsafe_chunk", "unsafe_split", "unsqueeze", "unsqueeze_", "view", "view_as",
      "view_as_complex", "view_as_real", "vsplit"};
  return std::find(std::begin(kOps), std::end(kOps), aten_op) != std::end(kOps);
}

// Namespaces whose nodes are no device work of their own: autograd's nodes, and collectives (c10d::), whose NCCL
// kernels a Kineto GPU trace never counts as op time (its communication rule).
bool neutral_namespace(std::string_view name) {
  return starts_with(name, "autograd::") || starts_with(name, "torch::autograd::") || starts_with(name, "c10d::");
}

// Whether an op of a GPU run did no device work, which a Kineto GPU trace would show as an op without kernels and
// leave out: one whose tensors (its own and its descendants', arguments and results) all live on the CPU (data
// preparation, a scalar's item()); or an aten op of that kind, an autograd node (its evaluate_function,
// AccumulateGrad) or a collective, whose aten descendants are all of that kind and which holds no op of another
// namespace (fbgemm::, a custom op's). Names without a namespace are labels ("AddBackward0", "record_param_comms").
bool no_device_work(const Node& top, const Nodes& nodes, const std::vector<std::size_t>& descendants) {
  std::uint8_t devices = top.devices;
  for (std::size_t d : descendants) devices |= nodes[d].devices;
  if (devices == kOnCpu) return true;
  const std::string_view name = top.name;
  const bool container = neutral_namespace(name);
  if (!container && !(starts_with(name, "aten::") && no_device_work(name.substr(6)))) return false;
  if (container && descendants.empty() && !starts_with(name, "c10d::"))
    return false;  // an autograd node recorded without its work: nothing to tell by
  for (std::size_t d : descendants) {
    const std::string_view n = nodes[d].name;
    if (starts_with(n, "aten::")) {
      if (!no_device_work(n.substr(6))) return false;
    } else if (n.find("::") != std::string_view::npos && !neutral_namespace(n)) {
      return false;
    }
  }
  return true;
}

// "ProfilerStep#7" -> 7.
bool profiler_step(std::string_view name, std::int64_t& index) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size() || name.size() > prefix.size() + 18)
    return false;
  std::int64_t v = 0;
  for (char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  index = v;
  return true;
}

// A node and its ancestors, from the node outwards to the root (the first node without a known parent, or its
// own parent, or a parent that closes a cycle): the outermost candidate among them, the phase flags of them all,
// the innermost Optimizer.step# and the nearest ProfilerStep#N.
struct Chain {
  std::int64_t parent = -1;    // index of the parent node actually followed (-1: none)
  std::int64_t top = -1;       // index of the outermost candidate (-1: none)
  std::uint8_t flags = 0;
  std::int64_t opt_step = -1;  // index of the innermost Optimizer.step# node (-1: none)
  std::int64_t step = -1;      // N
  std::int64_t step_node = -1; // that step node's id
  std::int64_t thread = -1;    // index of the thread node above it ([pytorch|profiler|execution_*|thread]; -1: none)
};

// A thread's root node: "[pytorch|profiler|execution_graph|thread]" (torch 1.13), "..._trace|thread]" (Chakra).
bool is_thread_node(std::string_view name) {
  constexpr std::string_view tail = "|thread]";
  return starts_with(name, "[pytorch|profiler|execution_") && name.size() > tail.size() &&
         name.substr(name.size() - tail.size()) == tail;
}

std::vector<Chain> parent_chains(const Nodes& nodes,
                                 const std::unordered_map<std::int64_t, std::size_t>& by_id) {
  enum : unsigned char { unseen, on_path, done };
  std::vector<unsigned char> state(nodes.size(), unseen);
  std::vector<Chain> chain(nodes.size());
  std::vector<std::size_t> path;
  for (std::size_t start = 0; start < nodes.size(); ++start) {
    // Up the parents until a node already computed (or the root, or a cycle: a parent on this very path counts
    // as none), then back down, each node from its parent's chain. Iterative: chains may be 100,000s deep.
    for (std::size_t k = start; state[k] == unseen;) {
      state[k] = on_path;
      path.push_back(k);
      const auto it = by_id.find(nodes[k].parent);
      if (it == by_id.end() || it->second == k) break;
      k = it->second;
    }
    while (!path.empty()) {
      const std::size_t k = path.back();
      path.pop_back();
      const Node& n = nodes[k];
      const auto it = by_id.find(n.parent);
      const bool has_parent = it != by_id.end() && it->second != k && state[it->second] == done;
      Chain c = has_parent ? chain[it->second] : Chain{};
      c.parent = has_parent ? static_cast<std::int64_t>(it->second) : -1;
      if (c.top < 0 && is_candidate(n)) c.top = static_cast<std::int64_t>(k);
      if (is_thread_node(n.name)) c.thread = static_cast<std::int64_t>(k);
      const std::uint8_t own = scope_phase_flags(n.name);
      c.flags = static_cast<std::uint8_t>(c.flags | own);
      if (own == kScopeUpdate) c.opt_step = static_cast<std::int64_t>(k);
      std::int64_t index = -1;
      if (profiler_step(n.name, index)) c.step = index, c.step_node = n.id;  // the nearest step wins
      chain[k] = c;
      state[k] = done;
    }
  }
  return chain;
}

// ET argument types to the Kineto spellings fill_from_args understands (tensors by dtype, the rest by kind).
RawArgs raw_args(const NodeArgs& n) {
  RawArgs a;
  const std::size_t count = std::max({n.types.size(), n.shapes.size(), n.concrete.size()});
  for (std::size_t i = 0; i < count; ++i) {
    const std::string ty(i < n.types.size() ? n.types[i] : std::string_view());
    std::vector<std::int64_t> dims = i < n.shapes.size() ? n.shapes[i] : std::vector<std::int64_t>{};
    std::string conc(i < n.concrete.size() ? n.concrete[i] : std::string_view());
    if (starts_with(ty, "Tensor(") && ty.size() > 8) {
      a.types.push_back(dtype_name(parse_dtype(std::string_view(ty).substr(7, ty.size() - 8))));
      conc.clear();
    } else {
      a.types.push_back(starts_with(ty, "GenericList") ? "GenericList" : ty == "None" ? "None" : "Scalar");
      dims.clear();
    }
    a.dims.push_back(std::move(dims));
    a.concrete.push_back(std::move(conc));
  }
  return a;
}

// A node's own record: normalised name, inputs and hyper-parameters from its arguments, its sequence number;
// `backward`: whether the name is a backward op's.
OpRecord record_of(const Node& n, const NodeStore& st, bool* backward = nullptr) {
  OpRecord rec;
  rec.raw_name = std::string(n.name);
  const NodeArgs own = st.args_of(n);
  RawArgs args = raw_args(own);
  const auto rank = [&](std::size_t i) { return args.dims.size() > i ? static_cast<int>(args.dims[i].size()) : -1; };
  bool bwd = false;
  rec.name = normalize_op_name_by_args(n.name, &bwd, rank(1), rank(2));
  if (backward) *backward = bwd;
  rec.sequence = n.seq;
  // An LSTM's hx is a list ([h0, c0]) standing before the weights' list: its first tensor is an input, as ETS's
  // exporter records it in a Kineto trace and a Kineto build does; other lists stay as torch 1.13's profiler
  // records them (no shape), so that an ET and a Kineto trace of one run give the same inputs.
  if (rec.name == "lstm" && !bwd) {
    const std::size_t params = recurrent_weights_argument(args.types);
    const std::size_t hx = params - 1;  // params >= 1 where there is a weights list
    if (params < args.types.size() && args.types[hx] == "GenericList" && hx < own.list_first.size() &&
        !own.list_first[hx].empty()) {
      args.types[hx] = "TensorList";
      args.dims[hx] = own.list_first[hx];
    }
  }
  fill_from_args(rec, args);
  return rec;
}

}  // namespace

namespace detail {
std::vector<ExecutionTrace> read_pytorch_et_runs(std::string_view bytes, const std::string& path, std::size_t readable,
                                                 std::size_t run_bytes) {
  require_runnable_json_parser();
  std::string schema;
  NodeStore store;
  Nodes nodes;
  bool have_nodes = false;
  try {
    od::parser parser;
    // The root object's fields; "nodes" may come more than once, and its nodes are read in file order.
    const auto read_fields = [&](od::object root, Nodes& into) {
      for (auto field : root) {
        const std::string_view key = field.unescaped_key();
        if (key == "schema") {
          schema = std::string(std::string_view(field.value().get_string()));
        } else if (key == "nodes") {
          have_nodes = true;
          for (auto e : field.value().get_array()) into.push_back(read_node(e.get_object(), store));
        }
      }
    };
    const auto not_an_object = [&] {
      ETS_THROW(Errc::parse, "ets.et.2", "'{}' is not a PyTorch Execution Trace (not a JSON object)", path);
    };
    // Text that is not JSON is refused before it is read: the lazy parse passes damage in a value it skips, and
    // where a run is cut changes what it skips (a stray ']' read as the end of the nodes), so a damaged file would
    // read otherwise by its size.
    simdjson::dom::parser strict;
    const auto require_json = [&](const char* data, std::size_t size) {
      if (const auto err = check_json(strict, data, size)) throw simdjson::simdjson_error(err);
    };
    ArrayRuns runs;
    if (run_bytes != kWholeDocument && find_array_runs(bytes, "nodes", run_bytes, true, runs)) {
      // The nodes are read run by run, each run a small document of its own, so that the parser's index (4 bytes
      // per byte of text) is sized to a run, not to the file; the rest of the file, with "nodes":[] in the array's
      // place, is read first. Text that is not JSON is ets.et.1 either way; what valid JSON gives is the same.
      Nodes later;  // the nodes of "nodes" keys after the array the runs hold
      {
        const std::string rest = text_without_array(bytes, runs);
        require_json(rest.data(), rest.size());
        od::document doc = parser.iterate(rest.data(), rest.size(), rest.capacity());
        od::object root;
        if (doc.get_object().get(root)) not_an_object();  // cannot be, once checked: the scan found a '{' root
        read_fields(root, later);
      }
      runs.cuts.push_back(runs.close);
      std::string run;
      for (std::size_t begin = runs.open + 1, r = 0; r < runs.cuts.size(); begin = runs.cuts[r++] + 1) {
        array_run_text(bytes, begin, runs.cuts[r], run);
        require_json(run.data(), run.size());
        od::document doc = parser.iterate(run.data(), run.size(), run.capacity());
        for (auto e : doc.get_array()) nodes.push_back(read_node(e.get_object(), store));
      }
      nodes.insert(nodes.end(), std::make_move_iterator(later.begin()), std::make_move_iterator(later.end()));
    } else {
      // Whole: a padded copy of the text is made only where the caller's buffer has no room for the padding
      // (Tracer::load's has: read_file_bytes reserves it).
      const bool in_place = readable >= bytes.size() + simdjson::SIMDJSON_PADDING;
      const simdjson::padded_string copy =
          in_place ? simdjson::padded_string() : simdjson::padded_string(bytes.data(), bytes.size());
      const char* text = in_place ? bytes.data() : copy.data();
      require_json(text, bytes.size());
      strict = simdjson::dom::parser();  // its buffers (~14 bytes per byte of text) go before the lazy parse's
      od::document doc = in_place ? parser.iterate(bytes.data(), bytes.size(), readable) : parser.iterate(copy);
      od::object root;
      if (doc.get_object().get(root)) not_an_object();
      read_fields(root, nodes);
    }
  } catch (const simdjson::simdjson_error& e) {
    ETS_THROW(Errc::parse, "ets.et.1", "'{}': malformed or unexpected JSON in a PyTorch Execution Trace ({})", path,
              e.what());
  }
  if (!have_nodes || schema.empty())
    ETS_THROW(Errc::parse, "ets.et.2", "'{}' is not a PyTorch Execution Trace (needs \"schema\" and \"nodes\")", path);
  check_meta_field("schema", schema, path);  // every iteration keeps a copy of the schema
  // the schemas this reader was written against: PyTorch's 1.0.x and Chakra's 1.1.x-chakra.*
  const bool known = starts_with(schema, "1.0.") || (starts_with(schema, "1.1.") && schema.find("-chakra") != std::string::npos);
  if (!known)
    ETS_THROW(Errc::unsupported, "ets.et.3", "'{}': Execution Trace schema '{}' is not supported (1.0.x, 1.1.x-chakra)",
              path, schema);

  std::unordered_map<std::int64_t, std::size_t> by_id;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id < 0 || nodes[i].name.empty())
      ETS_THROW(Errc::parse, "ets.et.4", "'{}': node {} lacks an \"id\" or \"name\"", path, i);
    by_id.emplace(nodes[i].id, i);
  }

  // Ops in id order (ids are handed out as ops start): the outermost candidates, chosen and phased by the Kineto
  // reader's rules, so that an ET and a Kineto trace of one run give the model the same sequence.
  struct OpRef {
    std::size_t node;
    std::int64_t step;       // ProfilerStep#N enclosing it, -1 if none
    std::int64_t step_node;  // that ProfilerStep# node's id: two steps of one N (a restarted counter) stay apart
  };
  std::vector<OpRef> ops;
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // (node id, N) of ProfilerStep#N nodes
  for (const Node& n : nodes) {
    std::int64_t step = -1;
    if (profiler_step(n.name, step)) steps.emplace_back(n.id, step);
  }
  std::sort(steps.begin(), steps.end());
  // What a node's chain of parents says about its children, computed once per node: a walk from every operator
  // to the root was quadratic in the depth (a 3 MB chain of nested nodes took 1.5 minutes).
  const std::vector<Chain> chain = parent_chains(nodes, by_id);
  // Nodes in id order, and each node's last descendant id: the id span during which it ran (children start after
  // their parent; a hostile file that breaks this only gets a narrower span).
  std::vector<std::size_t> by_start(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) by_start[i] = i;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](std::size_t a, std::size_t b) { return nodes[a].id < nodes[b].id; });  // file order for equal ids
  std::vector<std::int64_t> last_id(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) last_id[i] = nodes[i].id;
  for (auto it = by_start.rbegin(); it != by_start.rend(); ++it) {
    const std::int64_t p = chain[*it].parent;
    if (p >= 0) last_id[static_cast<std::size_t>(p)] = std::max(last_id[static_cast<std::size_t>(p)], last_id[*it]);
  }
  // An Optimizer.step# during which a backward pass began (on any thread) ran a closure: its ops with an autograd
  // sequence number are the closure's forward ops (trace-format.md, Phases).
  std::vector<std::int64_t> backward_starts;
  for (const Node& n : nodes)
    if (scope_phase_flags(n.name) == kScopeBackward) backward_starts.push_back(n.id);
  std::sort(backward_starts.begin(), backward_starts.end());
  const auto step_has_backward = [&](std::size_t s) {
    const auto it = std::upper_bound(backward_starts.begin(), backward_starts.end(), nodes[s].id);
    return it != backward_starts.end() && *it <= last_id[s];
  };
  // The trace's optimizer, as the Kineto reader names it: the first span torch writes as Optimizer.step#<class>.step.
  std::string optimizer;
  for (std::size_t i : by_start)
    if (!(optimizer = torch_optimizer_class(nodes[i].name)).empty()) break;
  check_meta_field("optimizer", optimizer, path);  // every iteration keeps a copy of the name
  // Where the run's tensors lived, as the Kineto reader says it without a device name: "gpu" where any did on a GPU.
  std::uint8_t devices = 0;
  for (const Node& n : nodes) devices |= n.devices;
  const char* device = (devices & kOnGpu) ? "gpu" : (devices & kOnCpu) ? "cpu" : "";
  // Each op's descendants in id order, for the inputs and sequence number an op lacks (below).
  std::vector<std::vector<std::size_t>> members(nodes.size());
  for (std::size_t i : by_start) {
    const std::int64_t top = chain[i].top;
    if (top < 0) continue;
    if (top == static_cast<std::int64_t>(i)) {
      // at thread top level or directly under a scope: dropped, as the Kineto reader drops it
      if (is_record_function_bookkeeping(nodes[i].name)) continue;
      std::int64_t step = chain[i].step, step_node = chain[i].step_node;
      // Backward ops run on autograd threads outside the step's subtree; ids are handed out in start order
      // across threads, so they belong to the last step that started before them.
      if (step < 0 && !steps.empty()) {
        const auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(nodes[i].id, std::int64_t{-1}));
        if (it != steps.begin()) {
          step = std::prev(it)->second;
          step_node = std::prev(it)->first;
        }
      }
      ops.push_back({i, step, step_node});
    } else {
      members[static_cast<std::size_t>(top)].push_back(i);
    }
  }
  // With ProfilerStep# nodes, each step is an iteration and ops before the first step (setup) are left out.
  if (!steps.empty())
    ops.erase(std::remove_if(ops.begin(), ops.end(), [](const OpRef& o) { return o.step < 0; }), ops.end());
  // A GPU run's ops without device work are not ops, as in a Kineto GPU trace, which shows them without kernels.
  const bool gpu_run = (devices & kOnGpu) != 0;
  if (gpu_run)
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const OpRef& o) { return no_device_work(nodes[o.node], nodes, members[o.node]); }),
              ops.end());
  // A CPU run's ops are the training thread's, as in a Kineto CPU trace: on a CPU the backward pass runs there
  // too, and another thread's torch ops (a prefetching or monitoring thread) are no part of the iteration. The
  // training thread is the one whose subtree holds the ProfilerStep# nodes, else the one that ran a backward pass
  // or an optimizer's step, else the one with the most ops. (A GPU run's backward ops run on autograd threads,
  // and a run whose tensors' devices are unknown may be one: both keep every thread, by the node-id rule above.)
  if (!gpu_run && (devices & kOnCpu) != 0 && !ops.empty()) {
    std::int64_t training = -1;
    for (const auto& step : steps) {
      const auto it = by_id.find(step.first);
      if (it != by_id.end() && (training = chain[it->second].thread) >= 0) break;
    }
    for (std::size_t i = 0; training < 0 && i < nodes.size(); ++i)
      if (scope_phase_flags(nodes[i].name) != 0) training = chain[i].thread;
    if (training < 0) {
      std::unordered_map<std::int64_t, std::size_t> per_thread;
      std::size_t most = 0;
      for (const OpRef& o : ops) {
        const std::int64_t t = chain[o.node].thread;
        if (t >= 0 && ++per_thread[t] > most) most = per_thread[t], training = t;
      }
    }
    if (training >= 0)
      ops.erase(std::remove_if(ops.begin(), ops.end(),
                               [&](const OpRef& o) {
                                 const std::int64_t t = chain[o.node].thread;
                                 return t >= 0 && t != training;
                               }),
                ops.end());
  }
  if (ops.empty())
    ETS_THROW(Errc::invalid_trace, "ets.et.5", "'{}': the Execution Trace holds no operator nodes{}", path,
              gpu_run ? " that did device work (a GPU run's views and metadata ops are not ops)" : "");
  // Steps in the order they started (node ids), ops in order within each.
  std::stable_sort(ops.begin(), ops.end(), [&](const OpRef& a, const OpRef& b) {
    return a.step_node != b.step_node ? a.step_node < b.step_node : nodes[a.node].id < nodes[b.node].id;
  });
  {  // a step node with no op beneath it gives no iteration: said, where other steps have ops
    std::vector<std::int64_t> with_ops, unreturned;
    for (const OpRef& o : ops) with_ops.push_back(o.step_node);  // sorted: ops are in step-node order
    for (const auto& s : steps)
      if (!std::binary_search(with_ops.begin(), with_ops.end(), s.first)) unreturned.push_back(s.second);
    warn_unreturned_steps(unreturned, path, "as a descendant");
  }
  {
    std::vector<std::int64_t> numbers;
    for (const auto& s : steps) numbers.push_back(s.second);
    std::sort(numbers.begin(), numbers.end());
    const auto dup = std::adjacent_find(numbers.begin(), numbers.end());
    if (dup != numbers.end())
      log(LogLevel::warn, "[ets.et.6] '{}': step #{} appears more than once; each is kept as an iteration", path,
          *dup);
  }

  std::vector<ExecutionTrace> out;
  std::int64_t current_step_node = 0;
  for (const OpRef& o : ops) {
    if (out.empty() || current_step_node != o.step_node) {
      current_step_node = o.step_node;
      ExecutionTrace t;
      t.meta.source_format = "pytorch-et";
      t.meta.source_path = path;
      t.meta.framework = "pytorch";
      t.meta.optimizer = optimizer;
      t.meta.device = device;
      t.meta.extra["schema"] = schema;
      t.meta.extra["timings"] = "absent";
      t.iteration = std::max<std::int64_t>(o.step, 0);
      t.measured_us = kUnknown;
      out.push_back(std::move(t));
    }
    const Node& n = nodes[o.node];
    bool backward_name = false;
    OpRecord rec = record_of(n, store, &backward_name);
    // An op without tensor inputs or a sequence number of its own (an evaluate_function node) takes them from its
    // first descendants that have them (`members`, in id order), as the Kineto reader does.
    bool have_inputs = !rec.inputs.empty();
    for (std::size_t d : members[o.node]) {
      if (have_inputs && rec.sequence >= 0) break;
      if (rec.sequence < 0 && nodes[d].seq >= 0) rec.sequence = nodes[d].seq;
      if (have_inputs) continue;
      OpRecord r = record_of(nodes[d], store);
      if (r.inputs.empty()) continue;
      have_inputs = true;
      rec.inputs = std::move(r.inputs);
      if (rec.hyper.present == 0) rec.hyper = r.hyper;
      // the weight's rank names a generic convolution: grad_out comes first in a backward op's inputs
      const auto& in = rec.inputs;
      rec.name = normalize_op_name_by_args(n.name, nullptr, in.size() > 1 ? static_cast<int>(in[1].dims.size()) : -1,
                                           in.size() > 2 ? static_cast<int>(in[2].dims.size()) : -1);
    }
    const std::int64_t opt_step = chain[o.node].opt_step;
    const bool closure_step = opt_step >= 0 && step_has_backward(static_cast<std::size_t>(opt_step));
    rec.phase = op_phase(chain[o.node].flags, backward_name, closure_step, rec.sequence);
    fill_analytic(rec);
    out.back().ops.push_back(std::move(rec));
  }
  return out;
}
}  // namespace detail

std::vector<ExecutionTrace> read_pytorch_et(std::string_view bytes, const std::string& path, const Options&,
                                            std::size_t readable) {
  return detail::read_pytorch_et_runs(bytes, path, readable, kEtRunBytes);
}

}  // namespace ets::import
