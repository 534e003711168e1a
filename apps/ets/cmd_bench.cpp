// `ets bench`: the BiLSTM CPU predictor against PyTorch CPU and ONNX Runtime on the same weights and windows,
// timed interleaved in one run (peers via tools/bench_peers.py as a co-process), plus this machine's GEMM ceiling.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Eigen/Core>
#include <fmt/format.h>

#include "cli.hpp"
#include "ets/bilstm_predictor.hpp"
#include "ets/detail/cpu_lstm.hpp"  // ETS_DETAIL_CPU_ISA, the forward pass's workspace and FLOPs
#include "ets/error.hpp"
#include "ets/model_file.hpp"
#include "ets/trainer.hpp"
#include "ets/window_encoder.hpp"

namespace ets::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Positive whole numbers up to hi: a value past what a model holds is a usage error (exit 2), not a failed run.
std::vector<int> int_list(const std::string& s, int hi) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v <= 0 || v > hi)
      throw std::invalid_argument(fmt::format("bad list value '{}' in '{}' (whole numbers from 1 to {})", item, s, hi));
    out.push_back(v);
  }
  if (out.empty()) throw std::invalid_argument("empty list '" + s + "' (comma-separated positive whole numbers)");
  return out;
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  f.close();  // a short write may show only when the buffer is flushed
  ETS_CHECK(!f.fail(), Errc::io, "ets.cli.1", "cannot write the benchmark's input tensor {} (is TMPDIR's disk full?)",
            path);
}

// The Python peer process: commands on its stdin, one answer line each on its stdout. A peer that stays silent for
// timeout_s (hung, or waiting on something that never comes) is killed and counts as gone: its timings are missing,
// and the benchmark goes on without it instead of hanging.
class Peer {
 public:
  Peer(const std::string& python, const std::string& script, const std::string& dir, int width, double timeout_s)
      : timeout_ms_(timeout_s * 1e3) {
    int in[2], out[2];
    if (pipe(in) != 0) return;
    if (pipe(out) != 0) {
      close(in[0]);
      close(in[1]);
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      const std::string w = std::to_string(width);
      execl(python.c_str(), python.c_str(), script.c_str(), dir.c_str(), w.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid_ < 0) {
      close(in[1]);
      close(out[0]);
      return;
    }
    list_child(pid_);  // a second stop signal ends the process at once: the peer is stopped with it
    to_ = in[1];
    from_ = out[0];
    // Writes wait under the same timeout and stop signals as reads: a peer that stops reading its stdin while the
    // pipe is full must not block the benchmark forever.
    fcntl(to_, F_SETFL, fcntl(to_, F_GETFL) | O_NONBLOCK);
    const std::string first = read_line();
    if (first.rfind("ready ", 0) == 0) info_ = first.substr(6);
  }
  ~Peer() {
    if (to_ >= 0) {
      if (!silent_) write_all("quit\n");
      close(to_);
    }
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      unlist_child();  // reaped below: its pid must not be killed once it could name another process
      // A peer that did not answer, or one cut off by a stop signal mid-command, would not end on "quit" either;
      // any other gets a few seconds to end (interpreter shutdown), and is killed on a stop signal meanwhile.
      if (silent_ || StopSignals::received()) kill(pid_, SIGKILL);
      const double grace_ms = std::min(timeout_ms_, 10e3);
      const auto t0 = Clock::now();
      while (waitpid(pid_, nullptr, WNOHANG) == 0) {
        if (ms_since(t0) > grace_ms || StopSignals::received()) {
          kill(pid_, SIGKILL);
          waitpid(pid_, nullptr, 0);
          break;
        }
        usleep(10000);
      }
    }
  }
  bool ok() const { return !info_.empty() && !silent_; }
  const std::string& info() const { return info_; }
  /// Whether the peer was stopped for not answering within the timeout.
  bool silent() const { return silent_; }

  /// Sends a command, returns the two numbers of the answer: none for "null" (that peer is not installed) or when
  /// the peer is gone; NaN for "nan" or anything else that is not a number, so that a peer's broken answer is never
  /// mistaken for a missing peer (nor, as atof made it, for 0).
  std::pair<std::optional<double>, std::optional<double>> ask(const std::string& cmd) {
    if (silent_ || !write_all(cmd + "\n")) return {};
    std::istringstream ss(read_line());
    std::string a, b;
    ss >> a >> b;
    auto num = [](const std::string& s) -> std::optional<double> {
      if (s.empty() || s == "null") return std::nullopt;
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      return end == s.c_str() + s.size() ? v : NAN;
    };
    return {num(a), num(b)};
  }

 private:
  // false when the peer is gone (EPIPE: SIGPIPE is ignored while benchmarking), when a stop signal arrives, or when
  // the pipe stays full past the timeout (the peer is then killed as a silent one)
  bool write_all(const std::string& s) {
    const auto t0 = Clock::now();
    for (std::size_t done = 0; done < s.size();) {
      const ssize_t n = write(to_, s.data() + done, s.size() - done);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (StopSignals::received()) return false;
      const double left = timeout_ms_ - ms_since(t0);
      if (left <= 0) {
        silent_ = true;
        kill(pid_, SIGKILL);
        return false;
      }
      pollfd p{to_, POLLOUT, 0};
      poll(&p, 1, static_cast<int>(std::min(left, 200.0)) + 1);  // wakes to see a stop signal
    }
    return true;
  }
  // One line, or "" when the peer ends, stays silent past the timeout (it is then killed) or a stop signal arrives.
  std::string read_line() {
    const auto t0 = Clock::now();
    for (;;) {
      const std::size_t nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        while (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
      }
      if (from_ < 0 || silent_ || StopSignals::received()) return "";
      const double left = timeout_ms_ - ms_since(t0);
      if (left <= 0) {
        silent_ = true;
        kill(pid_, SIGKILL);
        return "";
      }
      pollfd p{from_, POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(std::min(left, 200.0)) + 1);  // wakes to see a stop signal
      if (r < 0 && errno != EINTR) return "";
      if (r <= 0) continue;
      char buf[4096];
      const ssize_t n = read(from_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the peer ended: what it printed without a newline is its last line
        close(from_);
        from_ = -1;
        std::string line;
        line.swap(pending_);
        while (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
      }
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }
  double timeout_ms_;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string pending_;
  bool silent_ = false;
  std::string info_;
};

// Single-thread Eigen SGEMM of the size of the largest input projection: the ceiling the predictor is judged by.
double gemm_gflops(int m, int k, int n, double budget_ms) {
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k), b = Eigen::MatrixXf::Random(k, n), c(m, n);
  c.noalias() = a * b;
  int reps = 0;
  const auto t0 = Clock::now();
  do {
    c.noalias() = a * b;
    ++reps;
  } while (ms_since(t0) < budget_ms && StopSignals::received() == 0);  // a stop signal ends the sample early
  const double ms = ms_since(t0) / reps;
  if (c(0, 0) == 12345.f) std::puts("");  // keep the product alive
  return 2.0 * m * k * n / (ms * 1e6);
}

// The instruction set of ETS's CPU forward pass: that of this build's flags (detail/cpu_lstm.hpp names an inline
// namespace per set: isa_avx512, isa_avx2_fma, ..., isa_sse2). libets and the CLI are compiled with the same flags
// (ets_apply_project_options), so this translation unit's set is the library's. Results flip with it: a portable
// build runs SSE2 on x86-64, a native one (ETS_NATIVE=ON) the widest set of the build machine.
#define ETS_BENCH_STR2(x) #x
#define ETS_BENCH_STR(x) ETS_BENCH_STR2(x)
std::string forward_isa() {
  const std::string name = ETS_BENCH_STR(ETS_DETAIL_CPU_ISA);
  return name.rfind("isa_", 0) == 0 ? name.substr(4) : name;
}
#undef ETS_BENCH_STR
#undef ETS_BENCH_STR2
#ifdef ETS_CLI_NATIVE
constexpr const char* kBuild = "native";
#else
constexpr const char* kBuild = "portable";
#endif

std::string json_num(double v, int prec = 4) { return std::isnan(v) ? "null" : fmt::format("{:.{}f}", v, prec); }

// A peer's outputs must agree with ETS's within this much of the output scale (max |y| of ETS's outputs, at least
// 1) for its timing to be reported: float32 runs of the same network agree within ~1e-7 (docs/benchmarks.md), so
// 1e-4 flags only a peer computing something else (other weights, layout or cell) or a NaN.
constexpr double kOutputTolerance = 1e-4;

struct Case {
  int hidden, windows;
  std::vector<float> x, y;
  int k = 1;  // calls per timed sample
  std::vector<double> ets, torch, ort;
  std::optional<double> diff_torch, diff_ort;  // none: the peer is missing; NaN: its outputs were not numbers
  double tolerance = kOutputTolerance;         // in output units: kOutputTolerance × the output scale
};

// Whether a peer's timing may be reported: its outputs were checked and agree with ETS's.
bool agrees(const std::optional<double>& diff, double tolerance) { return diff && *diff <= tolerance; }

std::string json_diff(const std::optional<double>& d) {
  if (!d) return "null";
  return std::isnan(*d) ? "\"nan\"" : fmt::format("{:.3g}", *d);
}

int run_bench_body(const Args& args);

// SIGINT / SIGTERM / SIGHUP during a run: the timing loops stop, the temporary folder is removed, and the command
// then ends by that signal. Without this the default action killed the process before ~RemoveDir ran, leaving
// $TMPDIR/ets-bench-<pid> (models and input tensors) behind.
int run_bench(const Args& args) {
  const int rc = [&] {
    const StopSignals stopping;
    return run_bench_body(args);  // its temporary folder is gone when it returns or throws
  }();
  StopSignals::end_by_received();
  return rc;
}

int run_bench_body(const Args& args) {
  const bool json = args.flag("--json");
  // A peer that died must not kill the benchmark; the caller's disposition is back before the report is printed, so
  // that a closed pipe ends `ets bench | …` by SIGPIPE, as every other command
  struct IgnoreSigpipe {
    void (*before)(int) = std::signal(SIGPIPE, SIG_IGN);
    void restore() {
      if (before != SIG_ERR) std::signal(SIGPIPE, before);
      before = SIG_ERR;
    }
    ~IgnoreSigpipe() { restore(); }
  } sigpipe;

  constexpr long long kMax = std::numeric_limits<int>::max();
  const int layers = static_cast<int>(integer_option(args, "--layers", 4, 1, 64));  // what a model file holds
  const int width = static_cast<int>(integer_option(args, "--width", 12, 1, WindowEncoder::kMaxWidth));
  const int rounds = static_cast<int>(integer_option(args, "--rounds", 9, 1, kMax));
  const double sample_ms = number_option(args, "--sample-ms", 40);
  const double peer_timeout_s = number_option(args, "--peer-timeout", 300);
  if (!(peer_timeout_s > 0 && peer_timeout_s <= 86400))
    throw std::invalid_argument("--peer-timeout takes seconds in (0, 86400], not '" + args.value("--peer-timeout") + "'");
  const std::vector<int> hiddens = int_list(args.value("--hidden", "64,128"), 65536);
  const std::vector<int> windows = int_list(args.value("--windows", "1,64,256"), std::numeric_limits<int>::max());
  if (layers <= 0 || width <= 0 || rounds <= 0 || !(sample_ms > 0)) throw std::invalid_argument("bad --layers/--width/--rounds/--sample-ms");
  // A sample is timed to its end: a minute is far more than any useful one, and bounds how late a stop signal acts
  if (sample_ms > 60000)
    throw std::invalid_argument("--sample-ms takes milliseconds in (0, 60000], not '" + args.value("--sample-ms") + "'");
  // One forward call takes at most 2^31 - 1 positions (the predictor refuses more); say so before any work.
  for (int n : windows)
    if (static_cast<long long>(n) * width > std::numeric_limits<int>::max())
      throw std::invalid_argument(fmt::format("--windows {} of --width {} is {} positions, more than one forward call "
                                              "takes ({})", n, width, static_cast<long long>(n) * width,
                                              std::numeric_limits<int>::max()));
  // Every case's input and output are built before the timing starts, and each H's model is kept (its weights
  // made twice more while it is built). Checked before allocating: where the kernel overcommits or a control group
  // caps memory, an allocation past it succeeds and the process is killed while it fills it (its temporary folder
  // left behind).
  double need = 0, largest_model = 0, workspace = 0, peer_inputs = 0, peer_forward = 0;
  for (int h : hiddens) {
    const LstmConfig c{h, h, layers, 2, true};
    const double w = weight_bytes(c);
    need += w;
    largest_model = std::max(largest_model, w);
    for (int n : windows) {
      const double positions = static_cast<double>(n) * width;
      need += positions * (h + 2) * sizeof(float);
      // The forward pass's workspace, kept at the largest case's size: at F = H = 64 about 12.7x a case's input
      // and output, and left out of this check before.
      workspace = std::max(workspace, static_cast<double>(detail::forward_workspace_floats(c, n, width)) * sizeof(float));
      // The peer process (same machine, same memory limit): it keeps every case's input (N·W·F), reads ETS's output
      // of a case to compare, and holds a forward pass's activations, torch's (a layer's input and output and its
      // two directions' outputs before they are joined: about 3 × N·W·2H) and ONNX Runtime's arena, which keeps
      // its largest (as many again). An estimate, not a bound.
      peer_inputs += positions * h * sizeof(float);
      peer_forward = std::max(peer_forward, positions * (2 + 2 * 3 * 2.0 * h) * sizeof(float));
    }
  }
  // and the GEMM ceiling's three matrices (below: 256·W × 2H times 2H × 8H for the first H), made each round
  const double rows = 256.0 * width, inner = 2.0 * hiddens.front(), cols = 8.0 * hiddens.front();
  need += (rows * inner + inner * cols + rows * cols) * sizeof(float) + workspace;
  // Whether the peers will run is known later (their Python and script must exist); --no-peers leaves them out.
  const bool with_peers = !args.flag("--no-peers");
  if (with_peers) need += peer_inputs + peer_forward;
  check_fits_in_memory(need + 2 * largest_model,
                       with_peers ? "--hidden, --layers, --width and --windows (inputs, outputs, models, the forward "
                                    "pass's workspace, the peers' copies and the GEMM ceiling; --no-peers leaves the "
                                    "peers out)"
                                  : "--hidden, --layers, --width and --windows (inputs, outputs, models, the forward "
                                    "pass's workspace and the GEMM ceiling)");

  std::filesystem::path dir;
  try {  // TMPDIR unset to a folder that is not there, or not writable: an error with an id, not "unexpected"
    // A new folder of its own (mkdtemp: mode 0700, never one that exists). "ets-bench-<pid>" reused a folder that
    // was there, wrote through a symlink of that name, and removed the folder with what it held at the end; pids
    // repeat across containers sharing a TMPDIR.
    std::string name = (std::filesystem::temp_directory_path() / "ets-bench-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      ETS_THROW(Errc::io, "ets.cli.1", "cannot create the benchmark's temporary folder in TMPDIR ('{}'): {}", name,
                std::strerror(errno));
    dir = name;
  } catch (const std::filesystem::filesystem_error& e) {
    ETS_THROW(Errc::io, "ets.cli.1", "cannot create the benchmark's temporary folder (TMPDIR): {}", e.what());
  }
  // removed on every way out, an exception included (the peers' files and the models can be large), and by a
  // second stop signal, which ends the process at once (list_scratch_dir)
  struct RemoveDir {
    std::filesystem::path p;
    explicit RemoveDir(std::filesystem::path path) : p(std::move(path)) { list_scratch_dir(p.string()); }
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
      unlist_scratch_dir();  // after: a second signal during the removal finishes it
    }
  } remove_dir{dir};
  std::vector<BiLstmPredictor> models;
  std::vector<Case> cases;
  for (std::size_t hi = 0; hi < hiddens.size(); ++hi) {
    if (StopSignals::received()) return 1;
    const int h = hiddens[hi];
    LstmConfig c{h, h, layers, 2, true};  // F = H, as in the paper's default
    ModelFile mf;
    mf.weights = Trainer::init(c, 1000u + static_cast<unsigned>(h));  // PyTorch's default init ranges
    mf.window_width = width;
    mf.window_stride = std::max(1, width / 3);
    mf.provenance["init"] = "ets bench random weights";
    save_model(mf, (dir / fmt::format("model_{}.etsm", h)).string());
    models.emplace_back(mf.weights, Backend::Cpu);
    for (int n : windows) {
      if (StopSignals::received()) return 1;  // a large case takes seconds to fill and write
      Case cs{h, n, {}, {}, 1, {}, {}, {}, {}, {}, kOutputTolerance};
      std::mt19937 rng(static_cast<unsigned>(h * 7919 + n));
      std::normal_distribution<float> g(0.f, 1.f);
      cs.x.resize(static_cast<std::size_t>(n) * width * h);
      for (auto& v : cs.x) v = g(rng);
      cs.y.resize(static_cast<std::size_t>(n) * width * 2);
      write_floats((dir / fmt::format("in_{}_{}.bin", h, n)).string(), cs.x);
      cases.push_back(std::move(cs));
    }
  }
  auto model_of = [&](const Case& cs) -> const BiLstmPredictor& {
    return models[static_cast<std::size_t>(std::find(hiddens.begin(), hiddens.end(), cs.hidden) - hiddens.begin())];
  };

  // Warm up, size each sample to ~sample_ms, and save ETS's output for the peers' agreement check.
  for (Case& cs : cases) {
    if (StopSignals::received()) return 1;
    const auto& m = model_of(cs);
    m.predict(cs.x.data(), cs.windows, width, cs.y.data());
    const auto t0 = Clock::now();
    m.predict(cs.x.data(), cs.windows, width, cs.y.data());
    cs.k = std::clamp(static_cast<int>(sample_ms / std::max(ms_since(t0), 1e-3)), 1, 2000);
    write_floats((dir / fmt::format("ets_{}_{}.bin", cs.hidden, cs.windows)).string(), cs.y);
    double scale = 1;
    for (float v : cs.y) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    cs.tolerance = kOutputTolerance * scale;
  }

  std::string python = args.value("--python", "");
  if (python.empty()) {
    const char* env = std::getenv("ETS_BENCH_PYTHON");
    python = env ? env : (std::filesystem::exists("/opt/ets-venv/bin/python") ? "/opt/ets-venv/bin/python" : "/usr/bin/python3");
  }
  const std::string script = args.value("--peer-script", std::string(ETS_SOURCE_DIR) + "/tools/bench_peers.py");
  std::unique_ptr<Peer> peer;
  if (!args.flag("--no-peers") && std::filesystem::exists(script) && std::filesystem::exists(python)) {
    // Pin the peers to one thread; pick an OpenBLAS kernel the CPU really has (SkylakeX needs AVX-512).
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("MKL_NUM_THREADS", "1", 1);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (!std::getenv("OPENBLAS_CORETYPE")) setenv("OPENBLAS_CORETYPE", __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell", 1);
#endif
    peer = std::make_unique<Peer>(python, script, dir.string(), width, peer_timeout_s);
    if (peer->silent())
      std::fprintf(stderr, "ets bench: warning: the peer '%s' did not start within %g s: timing ETS alone\n",
                   script.c_str(), peer_timeout_s);
    if (!peer->ok()) peer.reset();
  }
  if (peer)
    for (Case& cs : cases) std::tie(cs.diff_torch, cs.diff_ort) = peer->ask(fmt::format("check {} {}", cs.hidden, cs.windows));

  // Interleaved rounds: in each, every case is timed for ETS, torch and ORT back to back, and the GEMM ceiling
  // once, so machine load (other builds on a shared box) hits all of them alike; medians over rounds.
  const int gm = 256 * width, gk = 2 * hiddens.front(), gn = 8 * hiddens.front();
  std::vector<double> ceiling;
  for (int r = 0; r < rounds; ++r) {
    if (StopSignals::received()) return 1;
    ceiling.push_back(gemm_gflops(gm, gk, gn, sample_ms));
    for (Case& cs : cases) {
      const auto& m = model_of(cs);
      const auto t0 = Clock::now();
      for (int i = 0; i < cs.k; ++i) m.predict(cs.x.data(), cs.windows, width, cs.y.data());
      cs.ets.push_back(ms_since(t0) / cs.k);
      if (peer) {
        const auto [t, o] = peer->ask(fmt::format("run {} {} {}", cs.hidden, cs.windows, cs.k));
        if (t && !std::isnan(*t)) cs.torch.push_back(*t);
        if (o && !std::isnan(*o)) cs.ort.push_back(*o);
      }
    }
  }
  if (peer && peer->silent())
    std::fprintf(stderr, "ets bench: warning: the peer '%s' stopped answering for %g s and was stopped: the peers' "
                 "timings after that are missing\n", script.c_str(), peer_timeout_s);
  const std::string peer_info = peer ? peer->info() : "null";
  peer.reset();

  // A peer whose outputs differ from ETS's (or are not numbers, or were never checked) computed something else: its
  // time is no speedup. Said per case, the speedup left out, and the command fails (exit 1) after its report.
  bool disagreement = false;
  for (const Case& cs : cases) {
    struct PeerResult {
      const char* name;
      const std::optional<double>& diff;
      const std::vector<double>& times;
    };
    for (const PeerResult& p : {PeerResult{"PyTorch", cs.diff_torch, cs.torch},
                                PeerResult{"ONNX Runtime", cs.diff_ort, cs.ort}}) {
      if (agrees(p.diff, cs.tolerance) || (!p.diff && p.times.empty())) continue;  // agrees, or the peer is missing
      disagreement = true;
      const std::string by = !p.diff ? std::string("were not checked")
                             : std::isnan(*p.diff) ? std::string("are not numbers (NaN)")
                                                   : fmt::format("differ from ETS's by {:.3g}", *p.diff);
      std::fprintf(stderr, "ets bench: warning: %s's outputs %s at H = %d, N = %d (tolerance %.3g: %g x the output "
                   "scale, at least 1): its speedup is not reported\n", p.name, by.c_str(), cs.hidden, cs.windows, cs.tolerance,
                   kOutputTolerance);
    }
  }
  const auto speedup = [](double peer_ms, double ets_ms, const std::optional<double>& diff, double tolerance) {
    return agrees(diff, tolerance) ? peer_ms / ets_ms : NAN;
  };
  const int rc = disagreement ? 1 : 0;

  const double ceil_gflops = median(ceiling);
  sigpipe.restore();  // the peer has quit above, while a dead peer's pipe could not end this process
  if (json) {
    std::string out = fmt::format(
        "{{\"gemm_ceiling_gflops\":{},\"gemm_ceiling_shape\":[{},{},{}],\"threads\":1,\"rounds\":{},\"width\":{},"
        "\"ets_backend\":\"{}\",\"ets_isa\":\"{}\",\"ets_build\":\"{}\",\"peers\":{},\"cases\":[",
        json_num(ceil_gflops, 2), gm, gk, gn, rounds, width, models.front().backend_name(), forward_isa(), kBuild,
        peer_info);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& cs = cases[i];
      const double e = median(cs.ets), t = median(cs.torch), o = median(cs.ort);
      const double gf = detail::lstm_forward_flops(model_of(cs).config(), cs.windows, width) / (e * 1e6);
      out += fmt::format(
          "{}{{\"layers\":{},\"hidden\":{},\"windows\":{},\"ets_ms\":{},\"torch_ms\":{},\"ort_ms\":{},"
          "\"ets_gflops\":{},\"ets_fraction_of_gemm_ceiling\":{},\"speedup_vs_torch\":{},\"speedup_vs_ort\":{},"
          "\"max_abs_diff_torch\":{},\"max_abs_diff_ort\":{},\"output_tolerance\":{:.3g},\"calls_per_sample\":{}}}",
          i ? "," : "", layers, cs.hidden, cs.windows, json_num(e), json_num(t), json_num(o), json_num(gf, 2),
          json_num(gf / ceil_gflops, 3), json_num(speedup(t, e, cs.diff_torch, cs.tolerance), 3),
          json_num(speedup(o, e, cs.diff_ort, cs.tolerance), 3), json_diff(cs.diff_torch), json_diff(cs.diff_ort),
          cs.tolerance, cs.k);
    }
    out += "]}";
    std::puts(out.c_str());
    return rc;
  }
  std::printf("ets bench: %d-layer BiLSTM, width %d, F = H, one thread, median of %d interleaved rounds\n", layers,
              width, rounds);
  std::printf("ETS forward compiled for %s (%s build%s)\n", forward_isa().c_str(), kBuild,
              std::string(kBuild) == "native" ? ": ETS_NATIVE=ON" : ", no ETS_NATIVE");
  std::printf("GEMM ceiling (Eigen sgemm %dx%dx%d, same run): %.1f GFLOP/s\n", gm, gk, gn, ceil_gflops);
  std::printf("peers: %s\n\n", peer_info.c_str());
  std::printf("%5s %6s %10s %9s %7s %10s %8s %10s %10s %8s %10s\n", "H", "N", "ETS ms", "GFLOP/s", "%ceil",
              "torch ms", "x torch", "diff torch", "ORT ms", "x ORT", "diff ORT");
  // a missing peer's difference is "-"; a speedup left out for a disagreeing peer is "nan", as a missing timing
  const auto diff_text = [](const std::optional<double>& d) {
    return !d ? std::string("-") : std::isnan(*d) ? std::string("nan") : fmt::format("{:.1e}", *d);
  };
  for (const Case& cs : cases) {
    const double e = median(cs.ets), t = median(cs.torch), o = median(cs.ort);
    const double gf = detail::lstm_forward_flops(model_of(cs).config(), cs.windows, width) / (e * 1e6);
    std::printf("%5d %6d %10.3f %9.1f %6.0f%% %10.3f %8.2f %10s %10.3f %8.2f %10s\n", cs.hidden, cs.windows, e, gf,
                100.0 * gf / ceil_gflops, t, speedup(t, e, cs.diff_torch, cs.tolerance), diff_text(cs.diff_torch).c_str(),
                o, speedup(o, e, cs.diff_ort, cs.tolerance), diff_text(cs.diff_ort).c_str());
  }
  return rc;
}

const Register bench_cmd{Command{
    "bench", "benchmark the predictor against PyTorch CPU and ONNX Runtime",
    Spec{"bench [--json] [--hidden 64,128] [--windows 1,64,256] [--layers 4] [--width 12] [--rounds 9] "
         "[--sample-ms 40] [--python PY] [--peer-script SCRIPT] [--peer-timeout 300] [--no-peers]",
         {"--json", "--no-peers"},
         {"--hidden", "--windows", "--layers", "--width", "--rounds", "--sample-ms", "--python", "--peer-script",
          "--peer-timeout"},
         0,
         {{"--json", "print one JSON object instead of the table"},
          {"--hidden LIST", "hidden units H per direction to time, 1 to 65536, comma-separated; features F = H (default 64,128)"},
          {"--windows LIST", "windows per predictor call to time, comma-separated (default 1,64,256)"},
          {"--layers N", "BiLSTM layers, 1 to 64 (default 4)"},
          {"--width W", "ops per window, 1 to 4096 (default 12)"},
          {"--rounds N", "interleaved timing rounds; the medians over them are reported (default 9)"},
          {"--sample-ms MS", "target length of one timed sample, in milliseconds (default 40)"},
          {"--python PY",
           "Python running the peers (default $ETS_BENCH_PYTHON, /opt/ets-venv/bin/python or /usr/bin/python3)"},
          {"--peer-script SCRIPT",
           "peer timing PyTorch and ONNX Runtime (default tools/bench_peers.py of the source tree)"},
          {"--peer-timeout S", "seconds a peer may stay silent before it is stopped and ETS timed alone (default 300)"},
          {"--no-peers", "time only ETS and the GEMM ceiling (also what happens when PY or SCRIPT is missing)"}},
         {},
         0},  // no positional argument: a stray word is a usage error, not dropped
    run_bench}};

}  // namespace
}  // namespace ets::cli
