// Entry point of the `ets` tool: dispatches to registered subcommands, turns every error into one line + exit code.
// Exit codes: 0 ok, 1 runtime failure (ets::Error), 2 usage error.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <dirent.h>  // getdents64: a scratch folder emptied inside a signal handler
#include <fcntl.h>
#include <signal.h>  // sigaction
#include <sys/resource.h>  // getrlimit
#include <sys/stat.h>  // fstat: an output that is standard output
#include <sys/wait.h>  // waitpid
#include <unistd.h>  // sysconf

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/detail/ascii.hpp"
#include "ets/detail/output_file.hpp"
#include "ets/detail/utf8.hpp"
#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/version.hpp"

namespace ets::cli {

bool Args::flag(const std::string& name) const {
  for (const auto& f : flags)
    if (f == name) return true;
  return false;
}

std::string Args::value(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

static std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}

Register::Register(Command command) { registry()[command.name] = std::move(command); }

const std::map<std::string, Command>& commands() { return registry(); }

static bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

// The option names a help spelling mentions: "-o, --output OUT" -> {"-o", "--output"}.
static std::vector<std::string> spelled_names(const std::string& spelling) {
  std::vector<std::string> names;
  std::size_t i = 0;
  while (i < spelling.size()) {
    const std::size_t end = std::min(spelling.find_first_of(" ,", i), spelling.size());
    if (end > i + 1 && spelling[i] == '-') names.push_back(spelling.substr(i, end - i));
    i = end + 1;
  }
  return names;
}

// The names that spell one option: itself and its aliases in the help ("-o, --output OUT": -o and --output).
static std::vector<std::string> aliases(const Spec& spec, const std::string& name) {
  for (const auto& o : spec.options) {
    std::vector<std::string> names = spelled_names(o.spelling);
    if (contains(names, name)) return names;
  }
  return {name};
}

Args parse(const Spec& spec, const std::vector<std::string>& argv) {
  Args args;
  bool only_positional = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || a == "-") {
      args.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    std::string name = a, inline_value;
    bool has_inline = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
      has_inline = true;
    }
    if (contains(spec.flags, name) && !has_inline) {
      args.flags.push_back(name);
    } else if (contains(spec.value_options, name)) {
      if (!has_inline && i + 1 >= argv.size()) throw std::invalid_argument("option " + name + " needs a value");
      std::string value = has_inline ? inline_value : argv[++i];
      // A second value would silently win over the first (one --model of two dropped): refused, unless the option
      // collects its values.
      if (!contains(spec.repeatable, name)) {
        for (const auto& alias : aliases(spec, name))
          if (args.has(alias))
            throw std::invalid_argument("option " + name + (alias == name ? "" : " (" + alias + ")") +
                                        " is given twice; give it once");
      }
      args.all[name].push_back(value);
      args.values[name] = std::move(value);
    } else {
      throw std::invalid_argument("unknown option '" + a + "'");
    }
  }
  if (args.positional.size() < spec.min_positional)
    throw std::invalid_argument("missing argument; usage: ets " + spec.usage);
  if (args.positional.size() > spec.max_positional)
    throw std::invalid_argument("unexpected argument '" + args.positional[spec.max_positional] +
                                "'; usage: ets " + spec.usage);
  // "-" is standard input, as for most tools (a file named "-" is "./-"). Every positional argument is a trace.
  // Standard input can be read once: a second "-" would find it spent.
  std::size_t stdin_args = 0;
  for (auto& p : args.positional)
    if (p == "-") {
      if (++stdin_args > 1) throw std::invalid_argument("'-' (standard input) is given twice; it can be read once");
      p = "/dev/stdin";
    }
  return args;
}

// The whole string as a finite decimal number, or NaN: not a number, trailing characters, or what stod would also
// take but a user would not mean (leading blanks, hexadecimal "0x10", "infinity"). A number beyond double's range
// (1e400, or 1e-320 that only a denormal holds) sets *out_of_range, so the message can say that and not "not a number".
static double whole_number(const std::string& s, bool* out_of_range = nullptr) {
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return NAN;
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (const std::out_of_range&) {
    if (out_of_range) *out_of_range = true;
  } catch (const std::exception&) {
  }
  return NAN;
}

double number_option(const Args& args, const std::string& name, double fallback) {
  if (!args.has(name)) return fallback;
  bool out_of_range = false;
  const double v = whole_number(args.value(name), &out_of_range);
  if (out_of_range)
    throw std::invalid_argument("option " + name + " got '" + args.value(name) +
                                "', beyond the range of a double (magnitudes 2.2e-308 to 1.8e308, or 0)");
  if (std::isnan(v)) throw std::invalid_argument("option " + name + " needs a number, got '" + args.value(name) + "'");
  return v;
}

long long integer_option(const Args& args, const std::string& name, long long fallback, long long lo, long long hi) {
  if (!args.has(name)) return fallback;
  const std::string& s = args.value(name);
  const auto bad = [&] {
    return std::invalid_argument(fmt::format("option {} needs a whole number in [{}, {}], got '{}'", name, lo, hi, s));
  };
  long long v = 0;
  // Digits are read exactly, over the whole 64-bit range; "1e5" goes through a double, exact up to 2^53 only.
  const char* first = s.c_str() + (s.size() > 1 && s[0] == '+' && s[1] != '-' ? 1 : 0);
  const auto [end, ec] = std::from_chars(first, s.c_str() + s.size(), v);
  if (ec == std::errc::result_out_of_range) throw bad();
  if (ec != std::errc() || end != s.c_str() + s.size()) {
    const double d = whole_number(s);
    if (!(std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= 9007199254740992.0)) throw bad();
    v = static_cast<long long>(d);
  }
  if (v < lo || v > hi) throw bad();
  return v;
}

OptionHelp rank_help() {
  return {"--rank N", "multi-rank Kineto files: the rank the file must hold (default -1: whichever it holds)"};
}

OptionHelp keep_incomplete_help() {
  return {"--keep-incomplete", "keep a trailing iteration with no successor and no end marker (default: dropped)"};
}

OptionHelp batch_size_help() {
  return {"--batch-size N",
          "batch size of traces that record none (e.g. a PyTorch Execution Trace); a trace's own wins"};
}

OptionHelp max_bytes_help() {
  return {"--max-bytes SIZE",
          "refuse a trace larger decompressed: bytes or K/M/G/T (x1024); 0: no limit (default: 1/4 of memory)"};
}

std::uint64_t size_option(const Args& args, const std::string& name, std::uint64_t fallback) {
  if (!args.has(name)) return fallback;
  const std::string& s = args.value(name);
  std::string_view rest = s;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  int shift = 0;
  if (!rest.empty()) {
    const char unit = rest.front();
    shift = unit == 'K' || unit == 'k' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : unit == 'T' ? 40 : -1;
    rest.remove_prefix(1);
    if (rest == "iB" || rest == "B") rest = {};
  }
  if (ec != std::errc() || end == s.data() || shift < 0 || !rest.empty() || (v >> (63 - shift)) != 0)
    throw std::invalid_argument("option " + name + " needs a size in bytes (digits, optionally followed by K, M, G "
                                "or T, powers of 1024), got '" + s + "'");
  return v << shift;
}

std::uint64_t default_max_trace_bytes() {
  // Reading a file holds up to about twice its size while the buffer grows, and a JSON parser adds its own copy
  // and tape: a quarter of what the process may use is the most one trace can take without the kernel's OOM killer
  // ending the process instead of a clear ets.io.6. 0 (no limit) when the memory cannot be read.
  return memory_limit_bytes() / 4;
}

std::string error_hint(const ets::Error& e) {
  // The library names its option; on the command line the limit is --max-bytes (still one line, as every failure)
  if (e.id() == "ets.io.6")
    return "; here: --max-bytes SIZE (default: a quarter of the memory this process may use; 0: no limit)";
  return "";
}

Tracer::LoadOptions load_options(const Args& args) {
  Tracer::LoadOptions opt;
  opt.rank = static_cast<int>(integer_option(args, "--rank", opt.rank, -1, std::numeric_limits<int>::max()));
  opt.keep_incomplete = args.flag("--keep-incomplete");
  opt.max_bytes = size_option(args, "--max-bytes", default_max_trace_bytes());
  // only the commands that list it take --batch-size (predict, convert); absent, traces keep what they record
  opt.batch_size = integer_option(args, "--batch-size", 0, 1, std::numeric_limits<std::int64_t>::max());
  return opt;
}


std::string json_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const std::size_t n = detail::utf8_sequence(s, i);
    if (n == 0) {  // a byte that is not UTF-8 (a Latin-1 file name): JSON text must be Unicode
      // U+FFFD itself, not its escape: a name that holds a real U+FFFD then writes alike, so the checks that
      // compare written keys (gavel's environments and jobs) see the two names a JSON reader would merge
      o += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (n > 1) {
      o.append(s, i, n);
      i += n;
      continue;
    }
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", static_cast<int>(c));
    else o += c;
    ++i;
  }
  return o;
}

std::string fixed(double v, int prec) {
  if (std::fabs(v) < 1e15) return fmt::format("{:.{}f}", v, prec);
  std::string s = fmt::format("{:.{}e}", v, prec);
  // Rounding can carry past the largest double (1.7976931348623157e308 -> 1.798e+308), a number strict JSON
  // readers refuse and others read as infinity; the shortest exact form always reads back as v.
  if (std::isfinite(v) && !std::isfinite(std::strtod(s.c_str(), nullptr))) s = fmt::format("{}", v);
  return s;
}

std::string fixed_or_exact(double v, int prec) {
  // 0.5e-prec rounds to zero at prec decimals (half-to-even at exactly that); below it, the shortest exact form
  if (v != 0 && std::fabs(v) <= 0.5 * std::pow(10.0, -prec)) return fmt::format("{}", v);
  return fixed(v, prec);
}

std::string json_number(double v, int prec) { return std::isfinite(v) ? fixed_or_exact(v, prec) : "null"; }

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;  // halves first: two values near DBL_MAX sum to inf
}

bool measured_on_model_hardware(const ExecutionTrace& t, const std::string& hardware_env, const std::string& env_id) {
  // The registered id may rename the model's environment: a trace that names it so was measured there too.
  const std::string& where = t.meta.environment;
  return t.measured_on(hardware_env) || (!where.empty() && !env_id.empty() && where == env_id);
}

std::string measured_hardware(const ExecutionTrace& t) {
  if (!t.meta.environment.empty()) return "'" + t.meta.environment + "'";
  return t.ran_gpu_kernels() ? "a GPU" : "a CPU";
}

namespace {
// A control-group memory limit file holds a byte count, or "max" (v2) / a value near 2^63 (v1) for none.
std::uint64_t read_cgroup_limit(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) return 0;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v >= (std::uint64_t{1} << 62)) return 0;
  return v;
}

// The lowest limit on the way from the process's group (root + its path) up to the hierarchy's root: a parent's
// limit bounds its children. Inside a container the group's path is the host's and may not exist there; its root
// is the container's own group, so the walk still finds that one.
std::uint64_t cgroup_limit_along(const std::filesystem::path& root, const std::string& group, const char* file) {
  std::uint64_t lowest = 0;
  for (std::filesystem::path dir = std::filesystem::path(root) += group;; dir = dir.parent_path()) {
    const std::uint64_t v = read_cgroup_limit(dir / file);
    if (v != 0 && (lowest == 0 || v < lowest)) lowest = v;
    if (dir.native().size() <= root.native().size()) break;  // the root read (each parent is shorter)
  }
  return lowest;
}
}  // namespace

std::uint64_t memory_limit_bytes(std::string* source) {
  std::uint64_t limit = 0;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    limit = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
    if (source) *source = "physical memory";
  }
  // /proc/self/cgroup: "0::/path" for the unified (v2) hierarchy, "N:a,memory,b:/path" for a v1 memory controller
  std::ifstream groups("/proc/self/cgroup");
  std::string line;
  while (std::getline(groups, line)) {
    const auto c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string path = line.substr(c2 + 1);
    if (path.empty() || path[0] != '/') continue;
    std::uint64_t v = 0;
    if (controllers.empty())
      v = cgroup_limit_along("/sys/fs/cgroup", path, "memory.max");
    else if (("," + controllers + ",").find(",memory,") != std::string::npos)
      v = cgroup_limit_along("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
    if (v != 0 && (limit == 0 || v < limit)) {
      limit = v;
      if (source) *source = "its control group's limit";
    }
  }
  // An address-space limit (ulimit -v, set by some batch systems) bounds what is left of it: the mappings the
  // process has already (the binary, its libraries, thread stacks) count against it.
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::uint64_t used = 0;
    std::ifstream statm("/proc/self/statm");  // first field: the address space in pages
    if (statm >> used && page > 0) used *= static_cast<std::uint64_t>(page);
    const std::uint64_t v = as.rlim_cur > used ? static_cast<std::uint64_t>(as.rlim_cur) - used : 1;
    if (limit == 0 || v < limit) {
      limit = v;
      if (source) *source = "what is left of its address-space limit, ulimit -v";
    }
  }
  return limit;
}

double weight_bytes(const LstmConfig& c) {
  double count = static_cast<double>(c.outputs) * c.hidden * c.directions() + c.outputs;  // the head
  for (int l = 0; l < c.layers; ++l)  // per direction: w_ih, w_hh and the two biases
    count += static_cast<double>(c.directions()) * static_cast<double>(c.gate_rows()) *
             (static_cast<double>(c.layer_input(l)) + c.hidden + 2);
  return count * sizeof(float);
}

void check_fits_in_memory(double bytes, const std::string& what) {
  std::string source;
  const std::uint64_t limit = memory_limit_bytes(&source);
  ETS_CHECK(limit == 0 || bytes <= static_cast<double>(limit), Errc::unsupported, "ets.cli.3",
            "out of memory: {} need {:.1f} GiB, more than the {:.1f} GiB this process may use ({})", what,
            bytes / 1073741824.0, static_cast<double>(limit) / 1073741824.0, source);
}

std::string output_location(const std::string& path) {
  std::string resolved = path, why;
  if (!detail::follow_output_links(resolved, why)) return "";
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(resolved, ec);
  return ec ? "" : p.string();
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  if (a == b) return true;
  std::error_code ec;
  if (fs::equivalent(a, b, ec) && !ec) return true;  // both exist: hard links, symlinks, "./x"
  // An output not written yet: the same place once its links, "." and ".." are resolved.
  const std::string ca = output_location(a);
  return !ca.empty() && ca == output_location(b);
}

void refuse_dash_output(const std::string& option, const std::string& path) {
  if (path == "-")
    throw std::invalid_argument(option + " -: standard output carries the command's report; give a file name (./- "
                                "for a file named '-')");
  // The same under another name (/dev/stdout, /proc/self/fd/1, a link to either): the report would be written into
  // the output (a model with a summary line after its end, a CSV with the report in it)
  struct stat out {}, target {};
  if (::fstat(STDOUT_FILENO, &out) == 0 && ::stat(path.c_str(), &target) == 0 && out.st_dev == target.st_dev &&
      out.st_ino == target.st_ino)
    throw std::invalid_argument(option + " '" + path + "' is this command's standard output, which carries its " +
                                "report; give a file name");
}

void require_etst_output(const std::string& option, const std::string& path) {
  const auto ends_with = [&](const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (!ends_with(".etst") && !ends_with(".etst.gz"))
    throw std::invalid_argument(option + " '" + path + "' must end in .etst or .etst.gz (the name datasets and the " +
                                "tools look for; .gz compresses)");
}

void require_printable_environment(const std::string& option, const std::string& value) {
  if (std::any_of(value.begin(), value.end(), detail::ascii_control))
    throw std::invalid_argument(option + " holds a control character (newline, tab, ...): name it with printable "
                                "characters");
}

namespace {
std::string split_directory(const std::string& dir, const std::string& split) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path t = fs::path(dir) / "traces" / split;
  return fs::is_directory(t, ec) ? t.string() : (fs::path(dir) / split).string();
}
}  // namespace

bool same_split(const std::string& dir, const std::string& a, const std::string& b) {
  return a == b || same_file(split_directory(dir, a), split_directory(dir, b));
}

bool inside_dataset(const std::string& out, const std::string& data, const std::vector<std::string>& splits) {
  namespace fs = std::filesystem;
  for (const char* f : {"manifest.json", "retest.json", "card.json"})
    if (same_file(out, (fs::path(data) / f).string())) return true;
  const std::string o = output_location(out);
  if (o.empty()) return false;
  const fs::path op(o);
  std::vector<std::string> folders{(fs::path(data) / "traces").string()};
  for (const auto& s : splits)
    if (!s.empty()) folders.push_back(split_directory(data, s));
  for (const auto& folder : folders) {
    const std::string f = output_location(folder);
    if (f.empty()) continue;
    const fs::path fp(f);
    if (std::mismatch(fp.begin(), fp.end(), op.begin(), op.end()).first == fp.end()) return true;
  }
  return false;
}

void write_output(const std::string& path, const std::string& text) {
  detail::FileReplacement(path, "ets.cli.1", "output file").write_all(text.data(), text.size());
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;  // RFC 4180: CR too
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

// To stdout when asked for (--help), to stderr when it answers a usage error (no command).
static void print_help(std::FILE* to = stdout) {
  std::fprintf(to, "ets %s — predict the iteration time of DL training jobs from execution traces\n\n",
               ets::version_string());
  std::fprintf(to, "usage: ets <command> [options]\n       ets --version | --help\n\ncommands:\n");
  for (const auto& [name, cmd] : commands()) std::fprintf(to, "  %-10s %s\n", name.c_str(), cmd.summary.c_str());
  std::fprintf(to, "\n'ets <command> --help' (or 'ets help <command>') shows a command's options.\n");
}

// `ets <command> --help`: the usage line, the summary and one aligned line per option.
static void print_command_help(const Command& cmd) {
  std::printf("usage: ets %s\n%s\n", cmd.spec.usage.c_str(), cmd.summary.c_str());
  std::vector<OptionHelp> lines = cmd.spec.options;
  // An accepted option without a description still shows, so that the help never hides an option.
  std::vector<std::string> described;
  for (const auto& o : lines)
    for (auto& n : spelled_names(o.spelling)) described.push_back(std::move(n));
  for (const auto* names : {&cmd.spec.flags, &cmd.spec.value_options})
    for (const auto& n : *names)
      if (!contains(described, n)) lines.push_back({n, "(undocumented)"});
  if (lines.empty()) return;
  std::size_t width = 0;
  for (const auto& o : lines) width = std::max(width, o.spelling.size());
  std::printf("\noptions:\n");
  for (const auto& o : lines)
    std::printf("  %-*s  %s\n", static_cast<int>(width), o.spelling.c_str(), o.meaning.c_str());
}

// rc, unless what was printed to stdout was lost: a full disk or a closed pipe must not pass for success.
static int stdout_written(const std::string& command, int rc) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
  const ets::Error e(ets::Errc::io, "ets.cli.2", "cannot write to standard output");
  std::fprintf(stderr, "ets%s%s: %s\n", command.empty() ? "" : " ", command.c_str(), e.what());
  return 1;
}

namespace {
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_stop_signal{0};  // the first stopping signal received while a StopSignals lives; 0: none
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler sets it");

// A command's scratch folder and child process, for a second stop signal to remove and stop: it runs no destructor.
// Fixed storage, so that the handler only loads atomics and makes system calls.
struct ForcedEndCleanup {
  std::atomic<int> dir_state{0};  // 0 none, 1 being filled in, 2 listed
  char dir[4096] = {};
  std::atomic<int> child{0};  // a pid, 0: none
};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads them");
ForcedEndCleanup g_cleanup;

// Async-signal-safe: open, getdents64, unlinkat, close and rmdir only. The folder is flat (files of one command);
// a sub-folder is left, and so is the folder then. Passes repeat until one removes nothing, since entries removed
// while the directory is read may shift the read position past others.
void remove_scratch_dir() noexcept {
#if defined(__linux__)
  if (g_cleanup.dir_state.load() != 2) return;
  for (int pass = 0; pass < 8; ++pass) {
    const int fd = ::open(g_cleanup.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    bool removed = false;
    alignas(8) char buf[8192];
    for (;;) {
      const ssize_t n = ::getdents64(fd, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
        off += d->d_reclen;
        const char* name = d->d_name;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        if (::unlinkat(fd, name, 0) == 0) removed = true;
      }
    }
    ::close(fd);
    if (::rmdir(g_cleanup.dir) == 0 || !removed) return;
  }
#endif
}
}  // namespace

void list_scratch_dir(const std::string& path) noexcept {
  if (path.size() >= sizeof g_cleanup.dir) return;
  int none = 0;
  if (!g_cleanup.dir_state.compare_exchange_strong(none, 1)) return;  // one folder at a time: the first stays
  std::memcpy(g_cleanup.dir, path.c_str(), path.size() + 1);
  g_cleanup.dir_state.store(2);
}

void unlist_scratch_dir() noexcept { g_cleanup.dir_state.store(0); }

void list_child(int pid) noexcept { g_cleanup.child.store(pid > 0 ? pid : 0); }

void unlist_child() noexcept { g_cleanup.child.store(0); }

namespace {
// The first signal asks the command to stop at its next check; a second one ends it at once, removing the
// temporary of any file being written first (a checkpoint or model under way), as on_ending_signal does, and the
// command's scratch folder, after stopping its child process (which may still be writing there).
extern "C" void on_stop_signal(int sig) {
  int none = 0;
  if (g_stop_signal.compare_exchange_strong(none, sig)) return;
  ets::detail::remove_live_temporaries();
  if (const int child = g_cleanup.child.load(); child > 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);  // gone before its folder is emptied: it cannot write there afterwards
  }
  remove_scratch_dir();
  std::signal(sig, SIG_DFL);  // the signal is blocked in its handler: it ends the process once this returns
  std::raise(sig);
}
}  // namespace

struct StopSignals::Saved {
  struct sigaction previous[std::size(kStopSignals)];
  bool caught[std::size(kStopSignals)];
};

StopSignals::StopSignals() : saved_(std::make_unique<Saved>()) {
  g_stop_signal.store(0);
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], nullptr, &saved_->previous[i]);
    saved_->caught[i] = saved_->previous[i].sa_handler != SIG_IGN;
    if (!saved_->caught[i]) continue;
    struct sigaction act {};
    act.sa_handler = on_stop_signal;
    sigemptyset(&act.sa_mask);
    for (const int other : kStopSignals) sigaddset(&act.sa_mask, other);  // one handler runs at a time
    act.sa_flags = 0;  // it stays for the second signal (SA_RESETHAND let that one end the process as it was)
    sigaction(kStopSignals[i], &act, nullptr);
  }
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
    if (saved_->caught[i]) sigaction(kStopSignals[i], &saved_->previous[i], nullptr);
}

int StopSignals::received() noexcept { return g_stop_signal.load(); }

void StopSignals::end_by_received() {
  const int sig = g_stop_signal.load();
  if (sig == 0) return;
  std::fflush(stdout);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// SIGINT / SIGTERM / SIGHUP: remove the temporary of any file being written, then end by the signal as before.
// Without it an interrupted `convert`, `label` or `eval --predictions` left "<out>.part-<pid>-<n>" beside its output.
// `train` and `bench` set handlers of their own while they run and put this one back after.
extern "C" void on_ending_signal(int sig) {
  ets::detail::remove_live_temporaries();
  std::signal(sig, SIG_DFL);  // installed with SA_RESETHAND too; the signal is blocked here and ends the process
  std::raise(sig);            // once the handler returns
}

void remove_temporaries_on_signals() {
  for (const int sig : kStopSignals) {
    struct sigaction previous {};
    sigaction(sig, nullptr, &previous);
    if (previous.sa_handler == SIG_IGN) continue;  // a signal the caller ignores (nohup) stays ignored
    struct sigaction act {};
    act.sa_handler = on_ending_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESETHAND;
    sigaction(sig, &act, nullptr);
  }
  // A file-size limit (ulimit -f) ends the process by SIGXFSZ at the write that passes it, leaving the temporary
  // and losing what was computed. Ignored, that write fails with EFBIG, which every writer reports as an error
  // (the temporary removed, the old file kept).
  std::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace ets::cli

int main(int argc, char** argv) {
  using namespace ets::cli;
  remove_temporaries_on_signals();
  std::vector<std::string> rest(argv + 1, argv + argc);
  if (rest.empty()) {
    print_help(stderr);
    return 2;
  }
  const std::string first = rest.front();
  // Nothing may follow these (`ets help predict`'s one command aside): an extra argument is a usage error, as in
  // every command, not silently dropped (`ets help predict extra` printed the general help)
  const bool help_request = first == "--help" || first == "-h" || first == "help";
  const std::size_t allowed = first == "help" ? 2 : 1;  // the request, and help's command name
  if ((first == "--version" || first == "-V" || help_request) && rest.size() > allowed) {
    std::fprintf(stderr, "ets: '%s' takes %s, not '%s' (try 'ets --help')\n", first.c_str(),
                 first == "help" ? "at most one command name" : "no argument", rest[allowed].c_str());
    return 2;
  }
  if (first == "--version" || first == "-V") {
    std::printf("ets %s%s\n", ets::version_string(), ets::built_with_cuda() ? " (cuda)" : "");
    return stdout_written("", 0);
  }
  if (help_request) {
    if (first == "help" && rest.size() == 2) {  // `ets help predict`, as git and cargo take it
      const auto named = commands().find(rest[1]);
      if (named == commands().end()) {
        std::fprintf(stderr, "ets: unknown command '%s' (try 'ets --help')\n", rest[1].c_str());
        return 2;
      }
      print_command_help(named->second);
      return stdout_written("help", 0);
    }
    print_help();
    return stdout_written("", 0);
  }
  auto it = commands().find(first);
  if (it == commands().end()) {
    std::fprintf(stderr, "ets: unknown command '%s' (try 'ets --help')\n", first.c_str());
    return 2;
  }
  const Command& cmd = it->second;
  rest.erase(rest.begin());
  // --help / -h where an option is expected, not as the value of one ("--id -h" labels with id "-h"): a value taken
  // for a help request printed the help and exited 0 without doing the work.
  bool help = false;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (a == "--") break;
    if (contains(cmd.spec.value_options, a)) {
      ++i;  // its value, whatever it looks like
      continue;
    }
    help |= a == "--help" || a == "-h";
  }
  if (help) {
    print_command_help(cmd);
    return stdout_written(first, 0);
  }
  // The library is silent by default; the CLI shows warnings on stderr.
  ets::set_log_sink([](ets::LogLevel level, std::string_view msg) {
    std::cerr << (level >= ets::LogLevel::warn ? "ets: warning: " : "ets: ") << msg << '\n';
  }, ets::LogLevel::warn);
  try {
    Args args = parse(cmd.spec, rest);
    return stdout_written(first, cmd.run(args));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ets %s: %s\n", first.c_str(), e.what());
    return 2;
  } catch (const ets::Error& e) {
    std::fprintf(stderr, "ets %s: %s%s\n", first.c_str(), e.what(), error_hint(e).c_str());
    return 1;
  } catch (const std::bad_alloc&) {  // an input far larger than memory, or sizes asked for that cannot fit
    // printed without building an ets::Error: that would allocate again
    std::fprintf(stderr, "ets %s: [%s] out of memory\n", first.c_str(), "ets.cli.3");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ets %s: unexpected error: %s\n", first.c_str(), e.what());
    return 1;
  }
}
