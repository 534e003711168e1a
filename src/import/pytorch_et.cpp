// Reader for PyTorch Execution Traces (ExecutionTraceObserver JSON, schema 1.0.x and chakra 1.1.x): the operator
// graph without timings; one ExecutionTrace per ProfilerStep# (or one in all), time 0, measured_us unknown.
#include <algorithm>
#include <cstdint>
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

struct Node {
  std::int64_t id = -1;
  std::int64_t parent = -1;
  std::int64_t seq = -1;
  std::string name;
  std::vector<std::vector<std::int64_t>> shapes;  // per argument; empty unless a flat int list
  std::vector<std::string> types;                 // per argument, as the ET spells them ("Tensor(float)", "Int")
  std::vector<std::string> concrete;              // per argument: ints / int lists as text, "" otherwise
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Argument lists nest two or three levels (a list of int lists); deeper ones are not arguments ETS reads, and a
// hostile file nesting 100,000 levels would overflow the stack of a recursive reader.
constexpr int kMaxArgumentDepth = 8;

// Integer scalars and (nested) int lists as text, so fill_from_args can read stride / padding / groups.
std::string concrete_text(od::value v, int depth = 0) {
  switch (v.type()) {
    case od::json_type::number: return std::string(trim(v.raw_json_token()));
    case od::json_type::boolean: return v.get_bool() ? "1" : "0";
    case od::json_type::array: {
      if (depth >= kMaxArgumentDepth) return "";
      std::string s = "[";
      bool first = true;
      for (auto e : v.get_array()) {
        const std::string inner = concrete_text(e.value(), depth + 1);
        if (inner.empty()) return "";
        if (!first) s += ", ";
        s += inner;
        first = false;
      }
      return s + "]";
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

void read_values(od::value v, Node& n) {
  n.concrete.clear();
  for (auto e : v.get_array()) n.concrete.push_back(concrete_text(e.value()));
}
void read_shapes(od::value v, Node& n) {
  n.shapes.clear();
  for (auto e : v.get_array()) n.shapes.push_back(flat_ints(e.value()));
}
void read_types(od::value v, Node& n) {
  n.types.clear();
  for (auto e : v.get_array()) {
    std::string_view s;
    n.types.emplace_back(e.value().get_string().get(s) ? std::string_view() : s);
  }
}

std::int64_t int_or_first(od::value v) {
  if (v.type() == od::json_type::array) {
    for (auto e : v.get_array()) return e.value().get_int64();
    return -1;
  }
  return v.get_int64();
}

Node read_node(od::object obj) {
  Node n;
  for (auto field : obj) {
    const std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "id") {
      n.id = v.get_int64();
    } else if (key == "name") {
      n.name = std::string(std::string_view(v.get_string()));
    } else if (key == "parent" || key == "ctrl_deps") {
      n.parent = int_or_first(v);
    } else if (key == "seq_id") {
      n.seq = v.get_int64();
    } else if (key == "inputs") {
      if (v.type() == od::json_type::object) {  // chakra: {"values", "shapes", "types"}
        for (auto f : v.get_object()) {
          const std::string_view k = f.unescaped_key();
          if (k == "values") read_values(f.value(), n);
          else if (k == "shapes") read_shapes(f.value(), n);
          else if (k == "types") read_types(f.value(), n);
        }
      } else {
        read_values(v, n);
      }
    } else if (key == "input_shapes") {
      read_shapes(v, n);
    } else if (key == "input_types") {
      read_types(v, n);
    } else if (key == "attrs" && v.type() == od::json_type::array) {
      for (auto a : v.get_array()) {
        std::string_view name;
        std::int64_t value = 0;
        bool is_seq = false, have = false;
        for (auto f : a.get_object()) {
          const std::string_view k = f.unescaped_key();
          if (k == "name") is_seq = !f.value().get_string().get(name) && name == "seq_id";
          else if (k == "value") have = !f.value().get_int64().get(value);
        }
        if (is_seq && have) n.seq = value;
      }
    }
  }
  return n;
}

// Operators are namespaced ("aten::conv2d", "c10d::allreduce_", "torch::autograd::AccumulateGrad", which the
// Kineto reader also keeps as one op, accumulate_grad, over its aten children). Not operators: profiler / autograd
// bookkeeping and record_function labels, whose "namespace" holds a dot, space or '#'
// ("torch.distributed.ddp.reducer::copy_bucket_to_grad").
bool is_operator(std::string_view name) {
  const auto p = name.find("::");
  if (p == std::string_view::npos || p == 0) return false;
  const std::string_view ns = name.substr(0, p);
  if (ns.find_first_of(" .#") != std::string_view::npos) return false;
  return ns != "profiler" && ns != "autograd";
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

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// A node and its ancestors, from the node outwards to the root (the first node without a known parent, or its
// own parent): whether one is an operator, the phase of the outermost autograd / optimizer scope among them, and
// the nearest ProfilerStep#N.
struct Chain {
  bool has_operator = false;
  Phase phase = Phase::Forward;
  bool phase_set = false;
  std::int64_t step = -1;       // N
  std::int64_t step_node = -1;  // that step node's id
};

std::vector<Chain> parent_chains(const std::vector<Node>& nodes,
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
      Chain c = it != by_id.end() && it->second != k && state[it->second] == done ? chain[it->second] : Chain{};
      c.has_operator = c.has_operator || is_operator(n.name);
      if (!c.phase_set) {  // the outermost scope wins: only a node with no scope above it sets the phase
        if (starts_with(n.name, "autograd::engine::evaluate_function")) c.phase = Phase::Backward, c.phase_set = true;
        if (starts_with(n.name, "Optimizer.")) c.phase = Phase::Update, c.phase_set = true;
      }
      std::int64_t index = -1;
      if (profiler_step(n.name, index)) c.step = index, c.step_node = n.id;  // the nearest step wins
      chain[k] = c;
      state[k] = done;
    }
  }
  return chain;
}

// ET argument types to the Kineto spellings fill_from_args understands (tensors by dtype, the rest by kind).
RawArgs raw_args(const Node& n) {
  RawArgs a;
  const std::size_t count = std::max({n.types.size(), n.shapes.size(), n.concrete.size()});
  for (std::size_t i = 0; i < count; ++i) {
    const std::string ty = i < n.types.size() ? n.types[i] : std::string();
    std::vector<std::int64_t> dims = i < n.shapes.size() ? n.shapes[i] : std::vector<std::int64_t>{};
    std::string conc = i < n.concrete.size() ? n.concrete[i] : std::string();
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

}  // namespace

std::vector<ExecutionTrace> read_pytorch_et(std::string_view bytes, const std::string& path, const Options&) {
  require_runnable_json_parser();
  std::string schema;
  std::vector<Node> nodes;
  bool have_nodes = false;
  try {
    const simdjson::padded_string json(bytes.data(), bytes.size());
    od::parser parser;
    od::document doc = parser.iterate(json);
    od::object root;
    if (doc.get_object().get(root))
      ETS_THROW(Errc::parse, "ets.et.2", "'{}' is not a PyTorch Execution Trace (not a JSON object)", path);
    for (auto field : root) {
      const std::string_view key = field.unescaped_key();
      if (key == "schema") {
        schema = std::string(std::string_view(field.value().get_string()));
      } else if (key == "nodes") {
        have_nodes = true;
        for (auto e : field.value().get_array()) nodes.push_back(read_node(e.get_object()));
      }
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

  // Outermost operators in id order (ids are handed out as ops start); the phase comes from the enclosing
  // autograd / optimizer scopes.
  struct OpRef {
    std::size_t node;
    Phase phase;
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
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!is_operator(nodes[i].name)) continue;
    const auto parent = by_id.find(nodes[i].parent);
    const Chain up = parent == by_id.end() ? Chain{} : chain[parent->second];
    if (up.has_operator) continue;  // nested: its time is its outermost operator's
    const Phase phase = up.phase;
    std::int64_t step = up.step, step_node = up.step_node;
    // Backward ops run on autograd threads outside the step's subtree; ids are handed out in start order
    // across threads, so they belong to the last step that started before them.
    if (step < 0 && !steps.empty()) {
      const auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(nodes[i].id, std::int64_t{-1}));
      if (it != steps.begin()) {
        step = std::prev(it)->second;
        step_node = std::prev(it)->first;
      }
    }
    ops.push_back({i, phase, step, step_node});
  }
  // With ProfilerStep# nodes, each step is an iteration and ops before the first step (setup) are left out.
  if (!steps.empty())
    ops.erase(std::remove_if(ops.begin(), ops.end(), [](const OpRef& o) { return o.step < 0; }), ops.end());
  if (ops.empty())
    ETS_THROW(Errc::invalid_trace, "ets.et.5", "'{}': the Execution Trace holds no operator nodes", path);
  // Steps in the order they started (node ids), ops in order within each.
  std::sort(ops.begin(), ops.end(), [&](const OpRef& a, const OpRef& b) {
    return a.step_node != b.step_node ? a.step_node < b.step_node : nodes[a.node].id < nodes[b.node].id;
  });
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
      t.meta.extra["schema"] = schema;
      t.meta.extra["timings"] = "absent";
      t.iteration = std::max<std::int64_t>(o.step, 0);
      t.measured_us = kUnknown;
      out.push_back(std::move(t));
    }
    const Node& n = nodes[o.node];
    OpRecord rec;
    rec.raw_name = n.name;
    bool backward = false;
    const RawArgs args = raw_args(n);
    const auto rank = [&](std::size_t i) { return args.dims.size() > i ? static_cast<int>(args.dims[i].size()) : -1; };
    rec.name = normalize_op_name_by_args(n.name, &backward, rank(1), rank(2));
    rec.phase = backward && o.phase == Phase::Forward ? Phase::Backward : o.phase;
    rec.sequence = n.seq;
    fill_from_args(rec, args);
    fill_analytic(rec);
    out.back().ops.push_back(std::move(rec));
  }
  return out;
}

}  // namespace ets::import
