// ets-test-labels: unit
// docs/errors.md stays true: its id table lists exactly the ids thrown (ETS_THROW / ETS_CHECK) or warned ("[id]"
// log messages) under src/, include/, cuda/, apps/ and examples/, and its Bad-input table matches tests/bad_inputs/cases.tsv.
// Every id it lists is named by a test, but for the few listed below that no test can reach.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot(ETS_SOURCE_DIR);

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE(f.good());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Source text with // and /* */ comments blanked out (string and char literals kept), so ids in comments and
// documentation examples do not count as uses.
std::string strip_comments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '"' || c == '\'') {
      if (c == '"' && i > 0 && s[i - 1] == 'R') {  // raw string R"delim( ... )delim"
        const auto open = s.find('(', i);
        const std::string end = ")" + s.substr(i + 1, open - i - 1) + "\"";
        const auto close = s.find(end, open);
        const auto stop = close == std::string::npos ? s.size() : close + end.size();
        out.append(s, i, stop - i);
        i = stop;
        continue;
      }
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
      out.append(s, i, j - i);
      i = j;
    } else if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (s.compare(i, 2, "/*") == 0) {
      const auto e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 2;
      out += ' ';
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

struct CodeIds {
  std::map<std::string, std::string> thrown;  // id -> first file:use
  std::map<std::string, std::string> warned;
  // id -> {code -> file:line}: the Errc each use pairs with the id (ETS_THROW(Errc::x, "id") / ETS_CHECK(c, Errc::x,
  // "id"), or a helper's fail("id", Errc::x)).
  std::map<std::string, std::map<std::string, std::string>> codes;
};

CodeIds scan_code() {
  CodeIds ids;
  // Every "ets.<area>.<n>" literal outside comments: the id argument of ETS_THROW / ETS_CHECK, or of a helper
  // that forwards it to them (ets_trace.cpp's fail(id, ...)). Warnings are log messages starting "[<id>]".
  const std::regex id_lit(R"re("(ets\.[a-z_]+\.[0-9]+)")re");
  const std::regex warn_lit(R"re("\[(ets\.[a-z_]+\.[0-9]+)\])re");
  const std::regex code_then_id(R"re(Errc::([a-z_]+)\s*,\s*"(ets\.[a-z_]+\.[0-9]+)")re");
  const std::regex id_then_code(R"re("(ets\.[a-z_]+\.[0-9]+)"\s*,\s*Errc::([a-z_]+))re");
  for (const char* dir : {"src", "include", "cuda", "apps", "examples"}) {
    if (!fs::exists(kRoot / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
      const auto ext = e.path().extension().string();
      if (!e.is_regular_file() || !(ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".inc" || ext == ".cu"))
        continue;
      const std::string text = strip_comments(slurp(e.path()));
      const std::string where = fs::relative(e.path(), kRoot).string();
      for (std::sregex_iterator it(text.begin(), text.end(), id_lit), end; it != end; ++it)
        ids.thrown.emplace((*it)[1], where);
      for (std::sregex_iterator it(text.begin(), text.end(), warn_lit), end; it != end; ++it)
        ids.warned.emplace((*it)[1], where);
      const auto line_of = [&](std::ptrdiff_t pos) {
        return where + ":" + std::to_string(1 + std::count(text.begin(), text.begin() + pos, '\n'));
      };
      for (std::sregex_iterator it(text.begin(), text.end(), code_then_id), end; it != end; ++it)
        ids.codes[(*it)[2]].emplace((*it)[1], line_of(it->position()));
      for (std::sregex_iterator it(text.begin(), text.end(), id_then_code), end; it != end; ++it)
        ids.codes[(*it)[1]].emplace((*it)[2], line_of(it->position()));
    }
  }
  return ids;
}

// Rows "| ets.area.n | code | when |" of docs/errors.md: id -> code.
std::map<std::string, std::string> doc_ids() {
  std::map<std::string, std::string> ids;
  std::istringstream in(slurp(kRoot / "docs" / "errors.md"));
  const std::regex row(R"(^\|\s*(ets\.[a-z_]+\.[0-9]+)\s*\|\s*([a-z_]+)\s*\|)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      INFO("docs/errors.md lists " << m[1] << " twice");
      CHECK(ids.emplace(m[1], m[2]).second);
    }
  }
  return ids;
}

}  // namespace

TEST_CASE("docs/errors.md documents every error and warning id the code uses, and only those") {
  const CodeIds code = scan_code();
  const auto docs = doc_ids();
  REQUIRE(code.thrown.size() > 50);  // the scan found the code at all
  for (const auto& [id, where] : code.thrown) {
    INFO(id << " is thrown in " << where << " but has no row in docs/errors.md");
    CHECK(docs.count(id) == 1);
    if (docs.count(id)) {
      INFO(id << " is thrown, but docs/errors.md calls it a warning");
      CHECK(docs.at(id) != "warning");
    }
  }
  for (const auto& [id, where] : code.warned) {
    INFO(id << " is logged as a warning in " << where << " but docs/errors.md has no 'warning' row for it");
    CHECK((docs.count(id) == 1 && docs.at(id) == "warning"));
  }
  // One code per id, the one in its row: a caller switching on code() and logging id() must see them agree.
  REQUIRE(code.codes.size() > 50);
  for (const auto& [id, uses] : code.codes)
    for (const auto& [errc, where] : uses) {
      INFO(where << " throws " << id << " with Errc::" << errc << "; docs/errors.md says "
                 << (docs.count(id) ? docs.at(id) : std::string("nothing")));
      CHECK((docs.count(id) == 1 && docs.at(id) == errc));
    }
  for (const auto& [id, errc] : docs) {
    INFO("docs/errors.md documents " << id << " (" << errc << ") but no code under src/ include/ cuda/ apps/ examples/ uses it");
    CHECK((code.thrown.count(id) + code.warned.count(id)) > 0);
  }
}

TEST_CASE("docs/errors.md Bad-input table matches tests/bad_inputs/cases.tsv one to one") {
  // cases.tsv: name \t input \t expected \t what
  std::map<std::string, std::string> tsv;
  {
    std::istringstream in(slurp(kRoot / "tests" / "bad_inputs" / "cases.tsv"));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> c;
      std::stringstream ss(line);
      for (std::string f; std::getline(ss, f, '\t');) c.push_back(f);
      REQUIRE(c.size() == 4);
      tsv[c[0]] = c[1] + " | " + c[2];
    }
  }
  // docs: the table after the "## Bad-input table" heading, rows "| `name` | `input` | `expected` | what |".
  std::map<std::string, std::string> doc;
  {
    const std::string text = slurp(kRoot / "docs" / "errors.md");
    const auto start = text.find("\n## Bad-input table");
    REQUIRE(start != std::string::npos);
    std::istringstream in(text.substr(start + 1));
    std::string line;
    std::getline(in, line);  // the heading
    const std::regex row(R"(^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|)");
    while (std::getline(in, line)) {
      if (line.rfind("## ", 0) == 0) break;
      std::smatch m;
      if (std::regex_search(line, m, row)) {
        INFO("docs/errors.md Bad-input table lists " << m[1] << " twice");
        CHECK(doc.emplace(m[1], std::string(m[2]) + " | " + std::string(m[3])).second);
      }
    }
  }
  REQUIRE(tsv.size() >= 20);
  for (const auto& [name, v] : tsv) {
    INFO("cases.tsv row " << name << " (" << v << ") is not in the docs table, or differs");
    CHECK((doc.count(name) && doc.at(name) == v));
  }
  for (const auto& [name, v] : doc) {
    INFO("docs table row " << name << " (" << v << ") is not in cases.tsv");
    CHECK(tsv.count(name) == 1);
  }
  // Every expected id is itself documented: an error row for errors, a warning row for warn:<id>.
  const auto ids = doc_ids();
  for (const auto& [name, v] : tsv) {
    const std::string expect = v.substr(v.find(" | ") + 3);
    if (expect == "ok") continue;
    const bool warn = expect.rfind("warn:", 0) == 0;
    const std::string id = warn ? expect.substr(5) : expect;
    INFO("case " << name << " expects " << expect << ", which docs/errors.md does not list as such");
    CHECK((ids.count(id) == 1 && (ids.at(id) == "warning") == warn));
  }
}

namespace {

// Ids no test here can make the code throw, each with the reason. Everything else in docs/errors.md must be named by
// a test: a documented error path that no test takes may throw another id, or crash, unnoticed.
const std::map<std::string, std::string> kUntestable = {
    {"ets.io.3", "zlib fails to initialise an inflate stream only when out of memory"},
    {"ets.nsight.7", "SQLite fails to open an in-memory database only when out of memory"},
    {"ets.cuda.7", "needs a cuDNN whose weight layout differs from PyTorch's (another cuDNN version) and a device"},
    {"ets.cuda.9", "needs a cuBLAS call to fail on a device"},
    {"ets.cuda.11", "needs a CUPTI capture on a device"},
    {"ets.cuda.12", "needs a CUPTI capture on a device that fills its buffers"},
    {"ets.cuda.14", "needs a CUDA toolkit without cuBLAS beside the runtime (checked by hand, docs/CHANGELOG.md)"}};

}  // namespace

TEST_CASE("every id in docs/errors.md is checked by a test, but for the few no test can reach") {
  // A use is the id outside comments in the C and C++ test sources, or anywhere in the Python / CMake / table files.
  std::string uses;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "tests")) {
    if (!e.is_regular_file() || e.path().filename() == "errors_doc_test.cpp") continue;
    const auto ext = e.path().extension().string();
    if (ext == ".cpp" || ext == ".hpp" || ext == ".c" || ext == ".h")
      uses += strip_comments(slurp(e.path()));
    else if (ext == ".py" || ext == ".tsv" || ext == ".cmake" || ext == ".txt" || ext == ".sh")
      uses += slurp(e.path());
    uses += '\n';
  }
  const auto docs = doc_ids();
  REQUIRE(docs.size() > 100);
  const auto used = [&](const std::string& id) {
    for (auto at = uses.find(id); at != std::string::npos; at = uses.find(id, at + 1)) {
      const std::size_t after = at + id.size();
      if (after >= uses.size() || !std::isdigit(static_cast<unsigned char>(uses[after]))) return true;  // not .1 of .12
    }
    return false;
  };
  for (const auto& [id, errc] : docs) {
    if (kUntestable.count(id)) {
      INFO(id << " is listed as untestable (" << kUntestable.at(id) << "), but a test names it: take it off the list");
      CHECK_FALSE(used(id));
    } else {
      INFO("no test under tests/ names " << id << " (" << errc << "): add one that makes the code throw or warn it");
      CHECK(used(id));
    }
  }
  for (const auto& [id, why] : kUntestable) {
    INFO(id << " is listed as untestable but docs/errors.md has no row for it");
    CHECK(docs.count(id) == 1);
  }
}
