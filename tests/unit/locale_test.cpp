// ets-test-labels: unit
// The library reads numbers and names the same way whatever locale its host process set: a scheduler that calls
// setlocale(LC_ALL, "") on a comma-decimal or a Turkish system (where tolower('I') is not 'i'), or installs a global
// C++ locale with digit grouping, must get the same imports, evaluation buckets and checkpoint state as the `ets`
// CLI (which runs in the C locale).
#include <catch2/catch.hpp>

#include <clocale>
#include <cstdlib>
#include <locale>
#include <string>
#include <utility>
#include <vector>

#include "parse_number.hpp"
#include "ets/evaluator.hpp"
#include "ets/labeler.hpp"
#include "ets/trace.hpp"
#include "import/importers.hpp"
#include "import/op_normalize.hpp"
#include "train/rng.hpp"

namespace {

// A CPU step whose relu carries its duration and FLOPs as strings (a form the importer accepts).
const char* kStringNumbers = R"({"schemaVersion": 1, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 1000, "dur": 100},
 {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 7, "tid": 7, "ts": 1010,
  "dur": "12.5", "args": {"Input Dims": [[8, 16]], "Input type": ["float"], "flops": "1024.75"}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7, "ts": 1030, "dur": 4,
  "args": {"Input Dims": [[8, 16], [8, 16]], "Input type": ["float", "float"]}}
]})";

// Comma for the decimal point and '.' between groups of three digits, as de_DE: a C++ locale any host can build.
struct CommaDecimal : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

// Installs a locale for the scope and puts back the previous one.
class GlobalCppLocale {
 public:
  explicit GlobalCppLocale(const std::locale& l) : old_(std::locale::global(l)) {}
  ~GlobalCppLocale() { std::locale::global(old_); }

 private:
  std::locale old_;
};

class CLocale {
 public:
  explicit CLocale(std::vector<const char*> names) : old_(std::setlocale(LC_ALL, nullptr)) {
    // From the system, or from the build tree's LOCPATH (tests/CMakeLists.txt generates de_DE and tr_TR there).
    for (const char* name : names)
      if (std::setlocale(LC_ALL, name)) {
        active_ = name;
        break;
      }
  }
  ~CLocale() { std::setlocale(LC_ALL, old_.c_str()); }
  const char* active() const { return active_; }

 private:
  std::string old_;
  const char* active_ = nullptr;
};

// What the test compares across locales.
struct Readings {
  double relu_time_us = 0, relu_flops = 0, sum_us = 0;
  std::string bucket;
  std::string rng_state;
  double disagreement = 0;
  std::string stored_disagreement;
  std::vector<std::string> names;
  std::vector<int> dtypes;
};

ets::ExecutionTrace one_op_iteration(double us) {
  ets::ExecutionTrace t;
  t.iteration = 0;
  ets::OpRecord op;
  op.name = "mm";
  op.raw_name = "aten::mm";
  op.phase = ets::Phase::Forward;
  op.time_us = us;
  t.ops.push_back(op);
  t.measured_us = us;
  return t;
}

Readings read_all() {
  Readings r;
  const auto its = ets::import::read_kineto_json(kStringNumbers, "strings.json", {});
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 2);
  r.relu_time_us = its[0].ops[0].time_us;
  r.relu_flops = its[0].ops[0].flops;
  r.sum_us = its[0].sum_us();

  std::vector<ets::ExecutionTrace> traces(1);
  traces[0].measured_us = 100;
  traces[0].ops.emplace_back();
  traces[0].ops.back().time_us = 100;
  traces[0].meta.extra["label.disagreement"] = "0.30000";
  const auto m = ets::Evaluator::method("x", traces, std::vector<double>{110});
  r.bucket = m.by_disagreement.empty() ? "" : m.by_disagreement[0].first;

  ets::train::Rng rng(12345);
  rng.uniform01();
  r.rng_state = rng.save();

  // Two passes of one-op iterations: medians 1000 and 1234.5 µs.
  std::vector<std::vector<ets::ExecutionTrace>> passes(2);
  passes[0] = {one_op_iteration(1000), one_op_iteration(1000), one_op_iteration(1000)};
  passes[1] = {one_op_iteration(1234.5), one_op_iteration(1234.5), one_op_iteration(1234.5)};
  ets::Labeler::Options o;
  o.sum_tolerance = 0.5;
  const auto lab = ets::Labeler(o).label(passes);
  r.disagreement = lab.disagreement;
  r.stored_disagreement = lab.trace.meta.extra.at("label.disagreement");

  for (const char* raw : {"IndexSelectBackward0", "MaxPool2DWithIndicesBackward0", "aten::IM2COL", "Iteration"})
    r.names.push_back(ets::import::normalize_op_name(raw));
  for (const char* t : {"INT", "Int64", "FLOAT", "BFloat16"})
    r.dtypes.push_back(static_cast<int>(ets::parse_dtype(t)));
  return r;
}

void check_same(const Readings& got, const Readings& want) {
  CHECK(got.relu_time_us == want.relu_time_us);
  CHECK(got.relu_flops == want.relu_flops);
  CHECK(got.sum_us == want.sum_us);
  CHECK(got.bucket == want.bucket);
  CHECK(got.rng_state == want.rng_state);
  CHECK(got.disagreement == want.disagreement);
  CHECK(got.stored_disagreement == want.stored_disagreement);
  CHECK(got.names == want.names);
  CHECK(got.dtypes == want.dtypes);
}

}  // namespace

TEST_CASE("numbers in the C locale: what the other locales must reproduce") {
  const Readings c = read_all();
  CHECK(c.relu_time_us == Approx(12.5));
  CHECK(c.relu_flops == Approx(1024.75));
  CHECK(c.bucket == "25-50%");
  CHECK(c.stored_disagreement == "0.23450");
  CHECK(c.names[0] == "index_select");
  CHECK(c.dtypes[0] == static_cast<int>(ets::DType::Int32));
  ets::train::Rng back(1);
  REQUIRE(back.load(c.rng_state));
  CHECK(back.save() == c.rng_state);
}

TEST_CASE("a global C++ locale with a decimal comma and digit grouping changes nothing") {
  const Readings c = read_all();
  GlobalCppLocale scope(std::locale(std::locale::classic(), new CommaDecimal));
  const Readings g = read_all();
  check_same(g, c);
  CHECK(g.rng_state.find('.') == std::string::npos);  // no digit grouping in a saved state
}

// Reads everything under the first of `names` that setlocale() knows, and compares with the C locale's readings.
void check_under_c_locale(std::vector<const char*> names, const char* kind) {
  const Readings c = read_all();
  CLocale scope(std::move(names));
  if (!scope.active()) {
    WARN("skipped: no " << kind << " C locale is installed and LOCPATH has none");
    return;
  }
  INFO("locale " << scope.active());
  check_same(read_all(), c);
}

TEST_CASE("a comma-decimal C locale (setlocale) changes nothing") {
  check_under_c_locale({"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}, "comma-decimal (de_DE / fr_FR)");
}

TEST_CASE("a Turkish C locale (setlocale), where tolower('I') is not 'i', changes nothing") {
  check_under_c_locale({"tr_TR.UTF-8", "tr_TR.utf8"}, "Turkish");
}

TEST_CASE("parse_double reads the whole text as a C-locale number") {
  double v = -1;
  CHECK(ets::detail::parse_double(" 0.25 ", v));
  CHECK(v == 0.25);
  CHECK(ets::detail::parse_double("+1e3", v));
  CHECK(v == 1000);
  CHECK(ets::detail::parse_double("-2.5", v));
  CHECK(v == -2.5);
  v = 7;
  for (const char* bad : {"", " ", "abc", "0.3abc", "0,3", "--1", "+-1", "1e999", "+"}) {
    INFO(bad);
    CHECK_FALSE(ets::detail::parse_double(bad, v));
    CHECK(v == 7);  // unchanged on failure
  }
}
