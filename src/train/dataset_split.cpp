// Loading one split of a collected dataset: directory listing, sorted for determinism, parallel Tracer::load.
// Traces get meta.source_path set so evaluation tables can name them.
#include "ets/dataset_split.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <simdjson.h>

#include "ets/error.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"
#include "train/parallel.hpp"

namespace ets {

namespace fs = std::filesystem;

namespace {

// DIR/manifest.json (tools/collect/collect.py --manifest) assigns every configuration its split. A label lying in
// another split's folder would train on a held-out architecture, or score a trained one as unseen: refused. Splits
// the manifest does not name (a user's own folders) and traces without a config id are not checked. file_of: each
// config id of the split and the file holding it.
void check_manifest(const std::string& dir, const std::string& split, const std::vector<std::string>& files,
                    const std::map<std::string, std::size_t>& file_of, std::uint64_t max_bytes) {
  const fs::path manifest = fs::path(dir) / "manifest.json";
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return;
  const auto bad = [&](const std::string& why) {
    ETS_THROW(Errc::parse, "ets.eval.6", "'{}' is not a readable dataset manifest ({})", manifest.string(), why);
  };
  import::require_runnable_json_parser();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string why;  // a file that cannot be read is not a manifest; one past max_bytes is ets.io.6, as a trace
  const std::string bytes = import::read_dataset_file(manifest.string(), max_bytes, why);
  if (!why.empty()) bad(why);
  if (const auto err = parser.parse(bytes).get(doc)) bad(simdjson::error_message(err));
  simdjson::dom::array configs;
  if (doc["configs"].get_array().get(configs)) bad("no \"configs\" array");
  std::unordered_map<std::string, std::string> split_of;
  std::unordered_set<std::string> splits;
  for (const auto c : configs) {
    std::string_view id, s;
    if (c["id"].get_string().get(id) || c["split"].get_string().get(s))
      bad("a configuration without a string \"id\" and \"split\"");
    const auto [at, added] = split_of.emplace(std::string(id), std::string(s));
    // one id in two splits would let whichever entry came first decide, and a test configuration load into train
    if (!added && at->second != s)
      bad(fmt::format("configuration {} is listed in split '{}' and in split '{}'", at->first, at->second, s));
    splits.emplace(s);
  }
  // "traces/test", "test/", "./test/." and "test" name the same folder
  std::string name = fs::path(split).lexically_normal().string();
  while (!name.empty() && name.back() == '/') name.pop_back();
  name = fs::path(name).filename().string();
  if (splits.count(name) == 0) return;
  for (const auto& [id, file] : file_of) {
    const auto want = split_of.find(id);
    ETS_CHECK(want == split_of.end() || want->second == name, Errc::invalid_argument, "ets.eval.7",
              "{} (configuration {}) lies in split '{}', but {} assigns it to '{}': move it back, or the split no "
              "longer holds what it claims (unseen architectures in test)",
              files[file], id, name, manifest.string(), want->second);
  }
}

}  // namespace

std::vector<std::string> DatasetSplit::list(const std::string& dir, const std::string& split) {
  fs::path d = fs::path(dir) / "traces" / split;
  std::error_code ec;
  if (!fs::is_directory(d, ec)) d = fs::path(dir) / split;
  ETS_CHECK(fs::is_directory(d, ec), Errc::io, "ets.eval.1",
            "dataset split '{}' not found: neither {}/traces/{} nor {}/{} is a directory", split, dir, split, dir, split);
  std::vector<std::string> files;
  // error_code overloads: an unreadable directory is ets.eval.1; an entry whose status cannot be read (a symlink
  // loop, a dangling link) is not a trace file and is skipped.
  fs::directory_iterator it(d, ec);
  for (;;) {
    ETS_CHECK(!ec, Errc::io, "ets.eval.1", "cannot list dataset split directory {}: {}", d.string(), ec.message());
    if (it == fs::directory_iterator()) break;
    const fs::directory_entry e = *it;
    it.increment(ec);
    std::error_code sec;
    if (!e.is_regular_file(sec) || sec) continue;
    const std::string n = e.path().filename().string();
    auto ends = [&](const std::string& s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
    if (ends(".etst") || ends(".etst.gz")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  // x.etst beside x.etst.gz is one configuration twice (a decompressed copy left behind): it would count twice in
  // training and in every figure, and which of the two is current cannot be told.
  for (const std::string& f : files) {
    if (f.size() < 3 || f.compare(f.size() - 3, 3, ".gz") != 0) continue;
    const std::string plain = f.substr(0, f.size() - 3);
    ETS_CHECK(!std::binary_search(files.begin(), files.end(), plain), Errc::invalid_argument, "ets.eval.5",
              "dataset split directory {} holds both {} and {}: one configuration twice; keep one of them", d.string(),
              fs::path(plain).filename().string(), fs::path(f).filename().string());
  }
  return files;
}

DatasetSplit DatasetSplit::load(const std::string& dir, const std::string& split, int threads) {
  return load(dir, split, threads, 0);
}

DatasetSplit DatasetSplit::load(const std::string& dir, const std::string& split, int threads,
                                std::uint64_t max_bytes) {
  Tracer::LoadOptions options;
  options.max_bytes = max_bytes;
  DatasetSplit out;
  out.name = split;
  out.files = list(dir, split);
  const int t = std::max(1, std::min<int>(train::resolve_threads(threads), static_cast<int>(out.files.size())));
  std::vector<std::vector<ExecutionTrace>> per_file(out.files.size());
  std::vector<std::exception_ptr> errors(out.files.size());
  std::atomic<std::size_t> next{0};
  train::run_on_threads(t, [&](int) {
    for (std::size_t i; (i = next.fetch_add(1)) < out.files.size();) {
      try {
        per_file[i] = Tracer::load(out.files[i], options);
        for (auto& tr : per_file[i])
          if (tr.meta.source_path.empty()) tr.meta.source_path = out.files[i];
      } catch (...) {
        errors[i] = std::current_exception();  // per file, so the first failing file in list order is reported
      }
    }
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  // One configuration in two files (a copy under another name) would count twice in training and in every figure.
  std::map<std::string, std::size_t> file_of;  // config id -> first file holding it (by id: a stable report order)
  for (std::size_t i = 0; i < per_file.size(); ++i)
    for (const ExecutionTrace& t : per_file[i]) {
      const auto id = t.meta.extra.find("config_id");
      if (id == t.meta.extra.end()) continue;
      const auto [at, fresh] = file_of.emplace(id->second, i);
      ETS_CHECK(fresh || at->second == i, Errc::invalid_argument, "ets.eval.5",
                "dataset split {} holds configuration {} twice, in {} and {}; keep one of them", split, id->second,
                out.files[at->second], out.files[i]);
    }
  check_manifest(dir, split, out.files, file_of, max_bytes);
  for (auto& v : per_file)
    for (auto& tr : v) out.traces.push_back(std::move(tr));
  return out;
}

}  // namespace ets
