// ets-test-labels: unit
// The JSON readers' block scan (where a top-level array such as Kineto's "traceEvents" lies and where to cut it into
// runs) against its byte-by-byte reference, on generated documents full of the things that trip such scans:
// brackets, commas and quotes inside strings, escapes at block edges, long strings, nesting, and damaged copies.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "import/importers.hpp"

namespace {

using ets::import::detail::ArrayRuns;

bool kineto_find_events(const std::string& doc, std::size_t chunk, bool fast, ArrayRuns& out) {
  return ets::import::detail::find_array_runs(doc, "traceEvents", chunk, fast, out);
}

std::string random_string(std::mt19937& rng) {
  static const std::string alphabet = "ab{}[],:\" \\x09_#.";
  const int len = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                      ? std::uniform_int_distribution<int>(60, 200)(rng)  // crosses 64-byte blocks
                      : std::uniform_int_distribution<int>(0, 12)(rng);
  std::string s = "\"";
  for (int i = 0; i < len; ++i) {
    const char c = alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
    if (c == '"' || c == '\\') s += '\\';  // keep it valid JSON: escape quotes and backslashes
    s += c;
  }
  if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) s += "\\\\\\\\";  // an even run right before the quote
  return s + "\"";
}

std::string random_value(std::mt19937& rng, int depth) {
  switch (std::uniform_int_distribution<int>(0, depth > 3 ? 1 : 3)(rng)) {
    case 0: return random_string(rng);
    case 1: return std::to_string(std::uniform_int_distribution<int>(-5, 100000)(rng)) + ".25";
    case 2: {
      std::string a = "[";
      const int n = std::uniform_int_distribution<int>(0, 4)(rng);
      for (int i = 0; i < n; ++i) a += (i ? ", " : "") + random_value(rng, depth + 1);
      return a + "]";
    }
    default: {
      std::string o = "{";
      const int n = std::uniform_int_distribution<int>(0, 4)(rng);
      for (int i = 0; i < n; ++i) o += (i ? "," : "") + random_string(rng) + ":" + random_value(rng, depth + 1);
      return o + "}";
    }
  }
}

std::string random_document(std::mt19937& rng) {
  std::string d = "{\"schemaVersion\": 1, \"note\": " + random_string(rng) + ", \"x\": " + random_value(rng, 0) +
                  ",\n  \"traceEvents\": [";
  const int events = std::uniform_int_distribution<int>(0, 120)(rng);
  for (int e = 0; e < events; ++e) {
    d += e ? ",\n  " : "\n  ";
    d += "{\"ph\": \"X\", \"name\": " + random_string(rng) + ", \"ts\": 12.5, \"args\": " + random_value(rng, 1) + "}";
  }
  d += "\n], \"traceName\": " + random_string(rng) + ", \"deviceProperties\": " + random_value(rng, 1) + "}";
  return d;
}

void check_same(const std::string& doc, std::size_t chunk) {
  ArrayRuns fast, ref;
  const bool ok_fast = kineto_find_events(doc, chunk, true, fast);
  const bool ok_ref = kineto_find_events(doc, chunk, false, ref);
  REQUIRE(ok_fast == ok_ref);
  if (!ok_ref) return;  // the reader then parses the file whole; a partial layout is never used
  CHECK(fast.open == ref.open);
  CHECK(fast.close == ref.close);
  CHECK(fast.cuts == ref.cuts);
}

}  // namespace

TEST_CASE("Kineto block scan agrees with the byte-by-byte scan on valid documents") {
  std::mt19937 rng(20261129);
  int cut_docs = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string doc = random_document(rng);
    for (std::size_t chunk : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{500},
                              std::size_t{4096}, std::size_t{1} << 20}) {
      check_same(doc, chunk);
    }
    ArrayRuns l;
    REQUIRE(kineto_find_events(doc, 500, true, l));  // every generated document is valid and has the array
    REQUIRE(doc[l.open] == '[');
    REQUIRE(doc[l.close] == ']');
    for (std::size_t c : l.cuts) REQUIRE(doc[c] == ',');
    cut_docs += !l.cuts.empty();
  }
  CHECK(cut_docs > 100);  // the generator really exercises cutting
}

TEST_CASE("Kineto block scan agrees with the byte-by-byte scan on damaged documents") {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::string doc = random_document(rng);
    const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int e = 0; e < edits && !doc.empty(); ++e) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, doc.size() - 1)(rng);
      switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
        case 0: doc[at] = "\"\\[]{},"[std::uniform_int_distribution<int>(0, 6)(rng)]; break;
        case 1: doc.erase(at, 1); break;
        default: doc.resize(at); break;
      }
    }
    for (std::size_t chunk : {std::size_t{0}, std::size_t{64}, std::size_t{1000}}) check_same(doc, chunk);
  }
}

TEST_CASE("Kineto block scan: documents without a usable events array are refused") {
  ArrayRuns l;
  CHECK_FALSE(kineto_find_events("[1, 2]", 0, true, l));
  CHECK_FALSE(kineto_find_events("{\"traceEvents\": [{\"a\": \"unterminated}]}", 0, true, l));
  CHECK_FALSE(kineto_find_events("{\"other\": [1, 2]}", 0, true, l));
  CHECK_FALSE(kineto_find_events("{\"traceEvents\": [1, 2", 0, true, l));
  REQUIRE(kineto_find_events("{\"traceEvents\": [{\"n\": \"]\\\"]\"}, {}]}", 0, true, l));
  CHECK(l.open == 16);
  CHECK(l.cuts == std::vector<std::size_t>{30});
}

TEST_CASE("Array scan: the key is the caller's, and an escaped top-level key before the array means a whole parse") {
  using ets::import::detail::find_array_runs;
  ArrayRuns l;
  const std::string et = "{\"schema\": \"1.0.1\", \"nodes\": [{\"id\": 1}, {\"id\": 2}], \"pid\": 7}";
  for (bool fast : {true, false}) {
    REQUIRE(find_array_runs(et, "nodes", 0, fast, l));
    CHECK(l.open == et.find('['));
    CHECK(l.close == et.rfind(']'));
    CHECK(l.cuts == std::vector<std::size_t>{et.find("}, {") + 1});
    CHECK_FALSE(find_array_runs(et, "traceEvents", 0, fast, l));
    // "no\u0064es" reads as "nodes": its array, first in the file, must not be read after the plain key's
    CHECK_FALSE(find_array_runs("{\"no\\u0064es\": [], \"nodes\": [1]}", "nodes", 0, fast, l));
    // after the array, an escaped key is read after it anyway, in file order
    CHECK(find_array_runs("{\"nodes\": [1], \"no\\u0064es\": []}", "nodes", 0, fast, l));
    // a cut beside a missing element would leave a blank run, an empty array to the parser: parsed whole instead
    CHECK_FALSE(find_array_runs("{\"nodes\": [{}, {},\n ]}", "nodes", 0, fast, l));
    CHECK_FALSE(find_array_runs("{\"nodes\": [ , {}]}", "nodes", 0, fast, l));
    CHECK_FALSE(find_array_runs("{\"nodes\": [{}, , {}]}", "nodes", 0, fast, l));
    CHECK(find_array_runs("{\"nodes\": [{}, , {}]}", "nodes", 1000, fast, l));  // no cut there: the parser sees it
    CHECK(find_array_runs("{\"nodes\": [ ]}", "nodes", 0, fast, l));  // an empty array is no missing element
    CHECK(l.cuts.empty());
  }
}
