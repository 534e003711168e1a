// Every file ETS opens is close-on-exec: a host daemon that fork+execs a job step from another thread while ETS reads
// a trace, a model or a checkpoint, or writes one, must not pass the descriptor to the child (it would keep the file,
// or a pipe's end, open there). close() and fclose() are interposed below (this executable's definitions win over
// libc's, for the library's calls and for libstdc++'s, zlib's and SQLite's alike): each descriptor closed while a
// check runs is looked at just before it goes.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ets/detail/output_file.hpp"
#include "ets/error.hpp"
#include "ets/model_file.hpp"
#include "ets/trace_file.hpp"
#include "ets/tracer.hpp"
#include "ets/trainer.hpp"
#include "train/parallel.hpp"
#include "test_support.hpp"

namespace {
namespace fs = std::filesystem;

struct Census {
  bool on = false;
  int files = 0;  ///< regular files and pipes closed while on
  std::vector<std::string> inherited;  ///< those of them without FD_CLOEXEC
};
Census census;

void look(int fd) {
  if (!census.on || fd <= 2) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) return;
  ++census.files;
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0 && (flags & FD_CLOEXEC) == 0) {
    char name[512] = {};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), name, sizeof name - 1);
    census.inherited.push_back(n > 0 ? std::string(name, static_cast<std::size_t>(n)) : link);
  }
}

/// Runs `f` (which may throw ets::Error: only what it opened matters) and returns what it closed without FD_CLOEXEC.
template <typename F>
std::vector<std::string> inherited_by_children(F&& f) {
  census = {};
  census.on = true;
  try {
    f();
  } catch (const ets::Error&) {
  }
  census.on = false;
  CHECK(census.files > 0);  // the check saw the files it is about
  return census.inherited;
}

void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

using ets_test::TempDir;

}  // namespace

extern "C" int close(int fd) {
  look(fd);
  using Fn = int (*)(int);
  static const Fn real = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "close"));
  return real(fd);
}

extern "C" int fclose(FILE* f) {
  if (f) look(::fileno(f));
  using Fn = int (*)(FILE*);
  static const Fn real = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "fclose"));
  return real(f);
}

TEST_CASE("the importers read trace files close-on-exec") {
  TempDir dir("ets_cloexec_import");
  const fs::path json = dir.path / "trace.json";
  put(json, R"({"traceEvents": []})");
  CHECK(inherited_by_children([&] { ets::Tracer::detect(json.string()); }).empty());
  CHECK(inherited_by_children([&] { ets::Tracer::load(json.string()); }).empty());
  // a SQLite database is sniffed, its header read, then opened by SQLite (which opens with O_CLOEXEC itself)
  const fs::path db = dir.path / "capture.sqlite";
  put(db, std::string("SQLite format 3\0", 16) + std::string(200, '\0'));
  CHECK(inherited_by_children([&] { ets::Tracer::load(db.string()); }).empty());
}

TEST_CASE("models and trace files are read and written close-on-exec") {
  TempDir dir("ets_cloexec_model");
  const fs::path model = dir.path / "m.etsm";
  put(model, "not a model, but read whole all the same");
  CHECK(inherited_by_children([&] { ets::load_model(model.string()); }).empty());
  CHECK(inherited_by_children([&] { ets::write_trace_file((dir.path / "t.etst").string(), {}); }).empty());
  CHECK(inherited_by_children([&] { ets::write_trace_file((dir.path / "t.etst.gz").string(), {}); }).empty());
  CHECK(inherited_by_children([&] { ets::Tracer::load((dir.path / "t.etst.gz").string()); }).empty());
  const std::string text = "content";
  CHECK(inherited_by_children([&] {
          ets::detail::FileReplacement((dir.path / "out.txt").string(), "ets.test.1", "test file")
              .write_all(text.data(), text.size());
        }).empty());
}

TEST_CASE("a trainer reads its checkpoint close-on-exec") {
  TempDir dir("ets_cloexec_train");
  ets::WindowBatch b;
  b.windows = 4;
  b.width = 6;
  b.features = 3;
  b.x.assign(b.positions() * 3, 0.5f);
  b.y.assign(b.positions() * 2, 1.0f);
  b.mask.assign(b.positions(), 1);
  ets::LstmConfig c;
  c.input_size = 3;
  c.hidden = 4;
  c.layers = 1;
  ets::Trainer::Options o;
  o.epochs = 1;
  o.batch = 4;
  o.threads = 1;
  o.checkpoint_path = (dir.path / "run.ckpt").string();
  o.resume = true;
  put(o.checkpoint_path, "not a checkpoint at all");
  CHECK(inherited_by_children([&] { ets::Trainer(ets::Trainer::init(c, 4), o).fit(b); }).empty());
}

#if defined(__linux__)
TEST_CASE("the cgroup limits are read close-on-exec") {
  if (!fs::exists("/sys/fs/cgroup")) return;
  census = {};
  census.on = true;
  (void)ets::train::resolve_threads(0);
  census.on = false;
  CHECK(census.inherited.empty());
}
#endif
