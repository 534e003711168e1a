// Command registry and argument parsing shared by the `ets` subcommands (one file per subcommand).
// The CLI only parses, calls the public library API and prints; it owns no prediction logic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ets/detail/output_file.hpp"  // detail::unwritable_reason, the commands' check before long work
#include "ets/error.hpp"
#include "ets/lstm_weights.hpp"
#include "ets/tracer.hpp"

namespace ets::cli {

/// Parsed arguments of one subcommand invocation.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  ///< "--model" -> "m.etsm"
  std::vector<std::string> flags;              ///< "--json"
  std::map<std::string, std::vector<std::string>> all;  ///< every value, in order (Spec::repeatable options)

  bool flag(const std::string& name) const;
  /// Value of an option (the last one of a repeatable option), or fallback if absent.
  std::string value(const std::string& name, const std::string& fallback = "") const;
  bool has(const std::string& name) const { return values.count(name) != 0; }
};

/// One line of a subcommand's --help: how an option is written and what it does.
struct OptionHelp {
  std::string spelling;  ///< every accepted name and the value placeholder, e.g. "-o, --output OUT.etst[.gz]"
  std::string meaning;   ///< one short line, with the default ("(default 40)") or "(required)"
};

/// What a subcommand accepts; used to parse and to print its help.
struct Spec {
  std::string usage;                          ///< e.g. "inspect TRACE... [--json]"
  std::vector<std::string> flags;             ///< options without a value
  std::vector<std::string> value_options;     ///< options that take one value
  std::size_t min_positional = 0;
  /// The "options:" block of --help, in this order. Every name in flags and value_options needs a line here
  /// (--help lists one without as "(undocumented)"; tests/cli/cli_help_test.py fails on that).
  std::vector<OptionHelp> options;
  /// Value options that may be given more than once (Args::all keeps every value); any other one given twice, or
  /// with an alias of the same line of `options` ("-o, --out"), is a usage error.
  std::vector<std::string> repeatable = {};
  /// At most this many positional arguments (0 for a command that takes none); one more is a usage error.
  std::size_t max_positional = static_cast<std::size_t>(-1);
};

using Handler = std::function<int(const Args&)>;

struct Command {
  std::string name;
  std::string summary;
  Spec spec;
  Handler run;
};

/// Registers a subcommand at static-initialisation time (the CLI is one executable, so none is dropped).
struct Register {
  explicit Register(Command command);
};

const std::map<std::string, Command>& commands();

/// Parses argv for a spec; throws std::invalid_argument with a one-line message on unknown input.
Args parse(const Spec& spec, const std::vector<std::string>& argv);

/// A numeric option's value, or fallback when absent. The whole value must be a finite decimal number
/// (number_option) or a whole number within [lo, hi] (integer_option: digits are read exactly over the 64-bit range,
/// "1e5" also up to 2^53; "1.5", "2x", "0x10", " 1" and "nan" are not numbers); otherwise std::invalid_argument
/// naming the option (a usage error, exit code 2).
double number_option(const Args& args, const std::string& name, double fallback);
long long integer_option(const Args& args, const std::string& name, long long fallback, long long lo, long long hi);

/// While alive, the stopping signals (SIGINT, SIGTERM, SIGHUP) set received() instead of ending the process, for a
/// command that stops cleanly: `train` writes its best weights, `bench` removes its files. Each handler is one-shot
/// (SA_RESETHAND), so a second signal ends the process at once; a signal the caller ignores (nohup) stays ignored;
/// the handlers before it are back once it is destroyed. One at a time.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The first stopping signal received, 0 while none.
  static int received() noexcept;
  /// Ends the process by that signal, stdout flushed, as a shell or batch system expects (`ets train ... && next`
  /// stops); returns when none was received. Call after the handlers are restored.
  static void end_by_received();

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

/// What a second stop signal, which ends the command at once and runs no destructor, also cleans up: one scratch
/// folder of files (removed, Linux only) and one child process (killed and reaped first). The command that owns
/// them lists them while they exist and unlists them before it removes or reaps them itself. A path of 4,096 bytes
/// or more, or a second folder while one is listed, is not listed.
void list_scratch_dir(const std::string& path) noexcept;
void unlist_scratch_dir() noexcept;
void list_child(int pid) noexcept;
void unlist_child() noexcept;

/// Bytes of memory this process may use: physical memory, its control group's limit (a container, a Slurm or
/// Kubernetes job) or what is left of its address-space limit (ulimit -v), the lowest; `source` says which. 0 when
/// none can be read. Sizes a user asks for (bench's --windows) are checked against it before they are allocated:
/// where the kernel overcommits, or a control group caps memory, an allocation past it succeeds and the process is
/// killed while it fills the memory, instead of getting std::bad_alloc.
std::uint64_t memory_limit_bytes(std::string* source = nullptr);

/// Bytes of one copy of a network's weights (every cell's matrices and biases, the head), as a double: the sizes a
/// user may ask for pass 2^64 bytes.
double weight_bytes(const LstmConfig& config);

/// Throws ets.cli.3 ("out of memory: <what> need X GiB ...") when `bytes` is more than memory_limit_bytes(), before
/// anything of that size is allocated.
void check_fits_in_memory(double bytes, const std::string& what);

/// Upper bound of --threads: more than any host ETS runs on; a typo (100000) is a usage error, not 100,000 threads.
constexpr long long kMaxThreads = 1024;

/// A size option's value in bytes ("4096", "512M", "2GiB": K/M/G/T are powers of 1024), or fallback when absent;
/// std::invalid_argument naming the option on anything else or past 2^63.
std::uint64_t size_option(const Args& args, const std::string& name, std::uint64_t fallback);

/// The CLI's default for --max-bytes: a quarter of memory_limit_bytes() (0, no limit, when that is unknown). A
/// trace past it (an endless pipe, a gzip bomb) is refused with ets.io.6 before it takes the host's memory.
std::uint64_t default_max_trace_bytes();

/// What the tool adds to a failure's message where the library names an option the command line spells otherwise
/// (ets.io.6: --max-bytes), "" elsewhere. A failure prints as "ets <command>: " + e.what() + error_hint(e).
std::string error_hint(const ets::Error& e);

/// Trace-loading options shared by the subcommands that read traces: --rank N, --keep-incomplete, --max-bytes SIZE,
/// and --batch-size N where a command lists it
/// (each read only where the command's Spec accepts it; max_bytes is default_max_trace_bytes() when not given).
Tracer::LoadOptions load_options(const Args& args);
/// Their --help lines (functions, not globals: the commands' Spec objects are built during static initialisation).
OptionHelp rank_help();
OptionHelp keep_incomplete_help();
OptionHelp max_bytes_help();
OptionHelp batch_size_help();

/// Where an output path will be written once its links (a dangling one too), "." and ".." are resolved; "" when that
/// cannot be told.
std::string output_location(const std::string& path);

/// Whether two paths name one file: the same string, the same existing file (through links, "./", hard links), or,
/// for a file not there yet, the same place once links, "." and ".." are resolved.
bool same_file(const std::string& a, const std::string& b);

/// Refuses "-" as the file of an output option: the command prints its report on standard output, so "-" would
/// mix the two (and used to create a file named "-"). "./-" names such a file. So is any name of the command's own
/// standard output (/dev/stdout, /proc/self/fd/1, a link to it: the same file as descriptor 1); a command with
/// nothing to report (convert --quiet) may stream its output there.
void refuse_dash_output(const std::string& option, const std::string& path);

/// Refuses an environment id (--environment) holding a control character: ets predict refuses such an id
/// (ets.predict.9), so a label or model named by it could never be used.
void require_printable_environment(const std::string& option, const std::string& value);

/// Refuses a trace output not named *.etst or *.etst.gz: the dataset and the tools find trace files by that name,
/// and ".gz" is what selects compression.
void require_etst_output(const std::string& option, const std::string& path);

/// Whether two split names of the dataset directory `dir` name one directory, as DatasetSplit::list resolves them
/// (DIR/traces/S, else DIR/S): "test/", "./test", "traces/test" or "../traces/test" are the split "test".
bool same_split(const std::string& dir, const std::string& a, const std::string& b);

/// Whether the output `out` would land in the dataset folder `data`: anything under DIR/traces or under the
/// directory of one of `splits` (as DatasetSplit::list resolves them: DIR/traces/S, else DIR/S), or DIR's
/// manifest.json, retest.json or card.json (resolved as same_file resolves an output: another spelling is caught).
bool inside_dataset(const std::string& out, const std::string& data, const std::vector<std::string>& splits);

/// Writes `text` to `path`: streamed into a pipe or device; else to a temporary of its own beside the end of its
/// symlinks, synced and renamed into place (detail::FileReplacement), so a reader never sees half a file. Throws
/// ets.cli.1.
void write_output(const std::string& path, const std::string& text);

/// Whether a measurement in `t` bears on a model for hardware `hardware_env` (registered as `env_id`, which may rename
/// it): ExecutionTrace::measured_on(hardware_env), or the trace names `env_id`.
bool measured_on_model_hardware(const ExecutionTrace& t, const std::string& hardware_env,
                                const std::string& env_id = "");
/// Where a measurement was taken, for messages: the trace's environment id in quotes, else "a GPU" (it ran GPU
/// kernels) or "a CPU".
std::string measured_hardware(const ExecutionTrace& t);

/// JSON string body: escapes quotes, backslashes and control characters (the CLI's JSON is hand-formatted).
std::string json_escape(const std::string& s);
/// fixed_or_exact(v, prec), or null when not finite (JSON has no NaN or infinity: unknown measurements print as
/// null).
std::string json_number(double v, int prec = 3);
/// v with prec decimals; from 1e15 on in exponent form, so an absurd value (a trace claiming 1e308 µs) prints as
/// "1.000e+308" and not as 300 digits.
std::string fixed(double v, int prec);
/// fixed(v, prec), except that a value other than zero which would print as zero (0.000) prints in its shortest
/// exact form ("5e-324"): where 0 means "not measured", a tiny measurement must not read as none.
std::string fixed_or_exact(double v, int prec);
/// One CSV field: quoted (with doubled quotes) when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);
/// Median (the mean of the middle two for an even count); NaN when v is empty.
double median(std::vector<double> v);

}  // namespace ets::cli
