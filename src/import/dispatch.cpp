// Tracer::load / Tracer::detect: the importer front door. Sniffs the content and hands it to the format's reader.
// SQLite is recognised before reading the whole file, since its reader opens the file itself.
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ets/detail/cloexec_file.hpp"
#include "ets/detail/utf8.hpp"
#include "ets/error.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"

namespace ets {
namespace {

// Only a regular file is sniffed here: reading a pipe's first bytes would take them from the importer.
bool is_sqlite(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::FILE* f = detail::fopen_cloexec(path.c_str(), "rb");
  if (!f) ETS_THROW(Errc::io, "ets.io.1", "cannot open '{}': {}", path, std::strerror(errno));
  char head[16] = {};
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return std::string_view(head, n) == import::kSqliteMagic;
}

// The traces of one file as the readers return them, with TraceMeta::source_path made valid UTF-8: a file name in
// another encoding (Latin-1) becomes U+FFFD there, as the ets tool prints it, instead of a trace the writer refuses
// (ets.etst.8). One place for every format.
std::vector<ExecutionTrace> with_utf8_source_paths(std::vector<ExecutionTrace> traces) {
  for (auto& t : traces) t.meta.source_path = detail::utf8_or_replaced(t.meta.source_path);
  return traces;
}

// LoadOptions::batch_size for the iterations that record none; a trace's own wins.
std::vector<ExecutionTrace> with_batch_size(std::vector<ExecutionTrace> traces, std::int64_t batch_size) {
  if (batch_size > 0)
    for (auto& t : traces)
      if (t.meta.batch_size <= 0) t.meta.batch_size = batch_size;
  return traces;
}

std::vector<ExecutionTrace> read_any(const std::string& path, const Tracer::LoadOptions& options, std::string* format) {
  ETS_CHECK(options.rank >= -1, Errc::invalid_argument, "ets.import.4",
            "LoadOptions::rank is {}; use a rank >= 0, or -1 for whichever rank the file holds", options.rank);
  ETS_CHECK(options.batch_size >= 0, Errc::invalid_argument, "ets.import.4",
            "LoadOptions::batch_size is {}; use a batch size >= 1, or 0 to leave an unrecorded one unknown",
            options.batch_size);
  import::Options opt;
  opt.rank = options.rank;
  opt.keep_incomplete = options.keep_incomplete;
  if (is_sqlite(path)) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    ETS_CHECK(!options.max_bytes || ec || size <= options.max_bytes, Errc::unsupported, "ets.io.6",
              "'{}' holds more than {} bytes (decompressed), the limit set by LoadOptions::max_bytes", path,
              options.max_bytes);
    if (format) *format = import::format_name(import::Format::NsightSqlite);
    return import::read_nsight_sqlite(path, opt);
  }
  std::string bytes = import::read_file_bytes(path, options.max_bytes, import::could_be_trace);
  // A UTF-8 BOM is not JSON: the readers start after it. (Only the BOM: leading blank lines stay, so the .etst and
  // CSV readers' line numbers in errors still match the file; JSON parsers skip whitespace themselves.)
  const std::string_view text = import::skip_bom(bytes);
  const import::Format detected = import::detect_format(bytes, path);
  if (format && detected != import::Format::Unknown) *format = import::format_name(detected);
  switch (detected) {
    case import::Format::KinetoJson: return import::read_kineto_json(text, path, opt);
    case import::Format::EtsCsv: return import::read_ets_csv(text, path, opt);
    case import::Format::EtsTrace: return import::read_ets_trace(text, path, opt);
    case import::Format::PytorchEt: {  // parsed in place, not copied, with the padding in the buffer's slack
      const std::size_t offset = static_cast<std::size_t>(text.data() - bytes.data());
      import::pad_with_zeros(bytes);
      return import::read_pytorch_et(std::string_view(bytes).substr(offset), path, opt, bytes.capacity() - offset);
    }
    case import::Format::NsightSqlite: return import::read_nsight_sqlite_bytes(bytes, path, opt);  // a gzipped database
    case import::Format::Unknown: break;
  }
  // The one file every user of ETS also holds: a model passed where a trace goes (e.g. `ets predict model.etsm`).
  ETS_CHECK(std::string_view(bytes).substr(0, ets::detail::kEtsModelMagic.size()) != ets::detail::kEtsModelMagic,
            Errc::unsupported, "ets.import.1",
            "'{}' is an ETS model file (.etsm), not a trace: models are loaded by Predictor::add_model or load_model "
            "(`ets predict --model`)",
            path);
  ETS_THROW(Errc::unsupported, "ets.import.1",
            "'{}': unrecognised trace format (expected Kineto JSON, PyTorch ET, Nsight SQLite, ETS CSV or ETS trace)",
            path);
}
}  // namespace

void import::check_meta_field(const std::string& field, const std::string& value, const std::string& path) {
  ETS_CHECK(value.size() <= kMaxMetaField, Errc::invalid_trace, "ets.import.6",
            "'{}': its metadata field '{}' holds {} bytes, more than the {} one may hold (each iteration keeps a copy)",
            path, field.substr(0, 64), value.size(), kMaxMetaField);
}

void import::check_meta_size(const TraceMeta& meta, const std::string& path) {
  const auto check = [&](const std::string& field, const std::string& value) { check_meta_field(field, value, path); };
  check("framework", meta.framework);
  check("framework_version", meta.framework_version);
  check("device", meta.device);
  check("environment", meta.environment);
  check("model", meta.model);
  check("family", meta.family);
  check("optimizer", meta.optimizer);
  for (const auto& [k, v] : meta.extra) {
    check("extra key", k);
    check(k, v);
  }
}

std::string Tracer::detect(const std::string& path) { return detect(path, LoadOptions{}); }

std::string Tracer::detect(const std::string& path, const LoadOptions& options) {
  // A database is told by its first 16 bytes, so its size is no concern here (load() checks it).
  if (is_sqlite(path)) return import::format_name(import::Format::NsightSqlite);
  const std::string bytes = import::read_file_bytes(path, options.max_bytes, import::could_be_trace);
  return import::format_name(import::detect_format(bytes, path));
}

std::vector<ExecutionTrace> Tracer::load(const std::string& path) { return load(path, LoadOptions{}); }

std::vector<ExecutionTrace> Tracer::load(const std::string& path, const LoadOptions& options) {
  return with_batch_size(with_utf8_source_paths(read_any(path, options, nullptr)), options.batch_size);
}

std::vector<ExecutionTrace> Tracer::load(const std::string& path, const LoadOptions& options, std::string& format) {
  return with_batch_size(with_utf8_source_paths(read_any(path, options, &format)), options.batch_size);
}

}  // namespace ets
