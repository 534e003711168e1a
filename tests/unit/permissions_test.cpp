// Files another user owns, tested as that user: run as root, each case forks a child that drops to uid/gid 65534
// (nobody) and reports through its exit code. Skipped (77) when not root, where the cases cannot be set up.
//  - a folder with the sticky bit (/tmp, a shared scratch folder) takes new files from anyone but lets only a file's
//    owner replace it: unwritable_reason says so before the work (the rename at the end failed after it);
//  - a checkpoint the user cannot open is an io error with its reason, not "not an ETS checkpoint";
//  - a trace the user cannot open names the reason;
//  - a checkpoint that can no longer be written mid-run is skipped with a warning, and training still returns.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ets/detail/output_file.hpp"
#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trainer.hpp"
#include "ets/tracer.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

constexpr uid_t kNobody = 65534;

// Runs f as nobody in a child process; true when f returned true there.
bool as_nobody(const std::function<bool()>& f) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 3;
    if (::setgid(kNobody) == 0 && ::setuid(kNobody) == 0) {
      try {
        rc = f() ? 0 : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "as nobody: unexpected exception: %s\n", e.what());
        rc = 2;
      }
    }
    std::fflush(nullptr);
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A folder nobody can reach and write into: mode 1777 (sticky) or 0777, under a scratch folder of mode 0755.
fs::path shared_folder(const fs::path& scratch, const char* name, bool sticky) {
  fs::permissions(scratch, fs::perms(0755));
  const fs::path d = scratch / name;
  fs::create_directory(d);
  REQUIRE(::chmod(d.c_str(), sticky ? 01777 : 0777) == 0);
  return d;
}

using ets_test::error_text;

// A one-layer network of 4 units on 3 features, one thread, checkpointed at `checkpoint`.
struct TinyRun {
  ets::LstmConfig config{3, 4, 1, 2, true};
  ets::Trainer::Options options;
  explicit TinyRun(const fs::path& checkpoint, int epochs) {
    options.epochs = epochs;
    options.batch = 8;
    options.threads = 1;
    options.checkpoint_path = checkpoint.string();
  }
};

ets::WindowBatch small_batch() {
  ets::WindowBatch b;
  b.windows = 16;
  b.width = 4;
  b.features = 3;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  b.x.resize(b.positions() * 3);
  for (auto& v : b.x) v = nd(gen);
  b.y.resize(b.positions() * 2);
  for (auto& v : b.y) v = nd(gen);
  b.mask.assign(b.positions(), 1);
  return b;
}

}  // namespace

TEST_CASE("files of another user: refused before the work, or reported with their reason") {
  if (::geteuid() != 0) {
    WARN("not root: the cases need a second user; skipped");
    std::exit(77);  // CTest SKIP_RETURN_CODE
  }
  const ets_test::TempDir scratch("ets_permissions_test");

  SECTION("a root-owned file in a sticky folder cannot be replaced by another user") {
    const fs::path d = shared_folder(scratch.path, "sticky", true);
    std::ofstream(d / "m.etsm") << "root's";
    CHECK(as_nobody([&] {
      const std::string why = ets::detail::unwritable_reason((d / "m.etsm").string(), false);
      return why.find("sticky bit") != std::string::npos;
    }));
    // a new file there is fine, and so is a file in a folder without the sticky bit
    const fs::path plain = shared_folder(scratch.path, "plain", false);
    std::ofstream(plain / "m.etsm") << "root's";
    CHECK(as_nobody([&] {
      return ets::detail::unwritable_reason((d / "new.etsm").string(), false).empty() &&
             ets::detail::unwritable_reason((plain / "m.etsm").string(), false).empty();
    }));
  }

  SECTION("a checkpoint or trace that cannot be opened is an io error naming the reason") {
    const fs::path d = shared_folder(scratch.path, "ck", false);
    std::ofstream(d / "run.ckpt") << "ETSCKPT5 whatever";
    std::ofstream(d / "t.etst") << "not readable";
    REQUIRE(::chmod((d / "run.ckpt").c_str(), 0600) == 0);
    REQUIRE(::chmod((d / "t.etst").c_str(), 0600) == 0);
    CHECK(as_nobody([&] {
      TinyRun run(d / "run.ckpt", 1);
      run.options.resume = true;
      const auto batch = small_batch();
      const std::string ck =
          error_text([&] { ets::Trainer(ets::Trainer::init(run.config, 1), run.options).fit(batch); });
      const std::string tr = error_text([&] { ets::Tracer::load((d / "t.etst").string()); });
      return ck.find("[ets.train.11]") != std::string::npos && ck.find("Permission denied") != std::string::npos &&
             tr.find("[ets.io.1]") != std::string::npos && tr.find("Permission denied") != std::string::npos;
    }));
  }

  SECTION("a checkpoint that can no longer be written mid-run is skipped with a warning; the run still returns") {
    const fs::path d = shared_folder(scratch.path, "ckdir", false);
    REQUIRE(::chown(d.c_str(), kNobody, kNobody) == 0);
    REQUIRE(::chmod(d.c_str(), 0755) == 0);
    CHECK(as_nobody([&] {
      std::vector<std::string> warned;
      ets::set_log_sink([&](ets::LogLevel, std::string_view m) { warned.emplace_back(m); }, ets::LogLevel::warn);
      TinyRun run(d / "run.ckpt", 3);
      // after the first epoch's checkpoint the folder turns read-only (a full disk, a quota reached)
      run.options.progress = [&](const ets::Trainer::Progress& p) {
        if (p.evaluated && p.epoch == 0) ::chmod(d.c_str(), 0555);
        return true;
      };
      const auto batch = small_batch();
      const auto r = ets::Trainer(ets::Trainer::init(run.config, 1), run.options).fit(batch);
      ets::set_log_sink(nullptr);
      std::size_t skipped = 0;
      for (const auto& m : warned) skipped += m.find("[ets.train.11]") != std::string::npos;
      return r.epochs_run == 3 && skipped == 2 && fs::exists(d / "run.ckpt");
    }));
  }
}
