// Internal interface between the importer front door (Tracer::load, format detection) and each format's reader.
// Every reader returns whole iterations in order, or throws ets::Error with a documented id (docs/errors.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ets/trace.hpp"
#include "file_magic.hpp"

namespace ets::import {

using ets::detail::kSqliteMagic;  // src/file_magic.hpp, shared with the model reader

/// Source formats ETS reads; detect_format() sniffs the first bytes (after gunzip).
enum class Format { Unknown, KinetoJson, PytorchEt, NsightSqlite, EtsCsv, EtsTrace };
const char* format_name(Format f) noexcept;

/// Options shared by all readers.
struct Options {
  int rank = -1;                ///< multi-rank files: which rank (-1: the first found)
  bool keep_incomplete = false; ///< keep a trailing iteration with no successor and no end marker
};

/// Reads a whole file, transparently gunzipping .gz content; throws ets.io.* on failure, ets.io.6 when the content
/// (decompressed) exceeds max_bytes (0 or from 2^62 on: no limit) — checked as it is read, which stops one byte
/// past the limit, so a gzip bomb costs about the limit, not what it expands to. With `go_on`, it is asked once, when
/// the first kPrefixBytes (decompressed) are in and more may follow, whether content starting so can be of use;
/// where it says no, reading stops there and those bytes are returned (kPrefixBytes; of gzip content, fewer than
/// kPrefixBytes + 1 MiB), whole-file checks (a truncated gzip) left out.
std::string read_file_bytes(const std::string& path, std::uint64_t max_bytes = 0,
                            bool (*go_on)(std::string_view prefix) = nullptr);
/// How much read_file_bytes has read before it asks `go_on`.
constexpr std::size_t kPrefixBytes = std::size_t{1} << 16;

/// As read_file_bytes for a dataset's own small files (manifest.json, retest.json), whose readers report an unreadable
/// file as their own error: a failure to read sets `why` (the ets.io error's message) and returns "", but ets.io.6
/// (past max_bytes) is thrown as it is, the same limit the traces are held to.
std::string read_dataset_file(const std::string& path, std::uint64_t max_bytes, std::string& why);

/// Warning ets.import.11: the iteration markers `steps` (their numbers, in order) hold no operator (`op_kind`: "on
/// the training thread", "with device work", "as a descendant") and are not returned, where other steps have ops.
/// Silent when `steps` is empty.
void warn_unreturned_steps(const std::vector<std::int64_t>& steps, const std::string& source, const char* op_kind);

/// Longest metadata string (model, family, optimizer, device, ..., each extra key and value) an imported file may
/// carry: every iteration keeps its own copy of the metadata, so a 1 MB name in a file of 4,000 steps took 4 GB.
constexpr std::size_t kMaxMetaField = 4096;
/// Throws ets.import.6 when `value` (metadata field `field`) is longer than kMaxMetaField.
void check_meta_field(const std::string& field, const std::string& value, const std::string& path);
/// check_meta_field for every string of `meta`; called before the copies are made.
void check_meta_size(const TraceMeta& meta, const std::string& path);

/// The format of `bytes` (the whole uncompressed file): the SQLite magic, an ets-trace header line or an ETS CSV
/// header at the start (within 4 KiB), else a JSON key that names Kineto ("traceEvents") or an ET ("nodes" and
/// "schema") anywhere in the text.
Format detect_format(std::string_view bytes, const std::string& path);
/// The text after a UTF-8 BOM (s itself without one): a BOM is not JSON, nor part of a CSV header.
std::string_view skip_bom(std::string_view s);
/// The first record of `bytes` (a UTF-8 BOM skipped) is a CSV header with the columns op, dir and params, in any
/// order: an ETS CSV, whose reader then names any other required column that is missing.
bool is_ets_csv_header(std::string_view bytes);
/// False when no content that starts with `prefix` can be a trace (detect_format gives Unknown for every one): not
/// the SQLite magic, not JSON ('{' after blanks), and its first 4 KiB after blanks, all present, hold no ETS CSV
/// header. A binary file (a checkpoint, an archive, /dev/zero) is told by its first bytes, not read to its end.
bool could_be_trace(std::string_view prefix);

// One reader per format. `bytes` is the (uncompressed) content; `path` is used for messages and metadata.
std::vector<ExecutionTrace> read_kineto_json(std::string_view bytes, const std::string& path, const Options& opt);
std::vector<ExecutionTrace> read_ets_csv(std::string_view bytes, const std::string& path, const Options& opt);
std::vector<ExecutionTrace> read_ets_trace(std::string_view bytes, const std::string& path, const Options& opt);
/// SQLite needs a file on disk; `path` is that file.
std::vector<ExecutionTrace> read_nsight_sqlite(const std::string& path, const Options& opt);
/// The same from the database's bytes (e.g. a gunzipped .sqlite.gz); deserialized in memory, nothing written.
std::vector<ExecutionTrace> read_nsight_sqlite_bytes(std::string_view bytes, const std::string& path, const Options& opt);
/// PyTorch Execution Trace JSON (schema 1.0.x / chakra 1.1.x): one iteration per ProfilerStep# node (else one),
/// ops without timings (time 0, measured_us unknown, meta.extra["timings"] = "absent"). The "nodes" array is parsed
/// in runs of about 512 KiB (detail::find_array_runs); a file the scan cannot cut is parsed whole. `readable`: how
/// many bytes from bytes.data() may be read (the buffer's capacity); where they hold simdjson's padding past the
/// text, as zeros, a whole parse reads the text in place instead of a copy (0: bytes.size(): copied).
std::vector<ExecutionTrace> read_pytorch_et(std::string_view bytes, const std::string& path, const Options& opt,
                                            std::size_t readable = 0);

namespace detail {
/// Where the array under top-level key `key` of a JSON object lies: its '[' and ']' and the commas that cut it into
/// runs of whole elements of at least `chunk` bytes, which the Kineto ("traceEvents") and Execution Trace ("nodes")
/// readers parse one run at a time, each as a small document of its own.
struct ArrayRuns {
  std::size_t open = std::string_view::npos, close = std::string_view::npos;
  std::vector<std::size_t> cuts;
};
/// false: a layout the readers do not cut (an escaped key before the array, root not an object, an unterminated
/// string, no such array, a cut beside a missing element): they then parse the file whole. `fast` = the block scan
/// the readers use; otherwise the byte-by-byte reference it must agree with (kineto_scan_test).
bool find_array_runs(std::string_view bytes, std::string_view key, std::size_t chunk, bool fast, ArrayRuns& out);
/// The array's elements in bytes[begin, end) (from after '[' or a cut to the next cut or ']') as a JSON array of their
/// own in `out` (reused from run to run), simdjson's padding in its capacity.
void array_run_text(std::string_view bytes, std::size_t begin, std::size_t end, std::string& out);
/// The text with the array's elements left out ("key":[]), simdjson's padding in its capacity.
std::string text_without_array(std::string_view bytes, const ArrayRuns& runs);
/// The run size that parses a document whole, unscanned (read_*_runs below).
inline constexpr std::size_t kWholeDocument = static_cast<std::size_t>(-1);
/// read_kineto_json with its "traceEvents" cut into runs of at least `run_bytes` (read_kineto_json's: 512 KiB), or
/// parsed whole (and checked whole first) with kWholeDocument: the fuzzer checks that both read valid JSON alike.
std::vector<ExecutionTrace> read_kineto_json_runs(std::string_view bytes, const std::string& path, const Options& opt,
                                                  std::size_t run_bytes);
/// read_pytorch_et with its "nodes" cut into runs of at least `run_bytes` (read_pytorch_et's: 512 KiB), or parsed
/// whole with kWholeDocument: the tests and the fuzzer check that both read every input alike.
std::vector<ExecutionTrace> read_pytorch_et_runs(std::string_view bytes, const std::string& path, std::size_t readable,
                                                 std::size_t run_bytes);
}  // namespace detail

}  // namespace ets::import
