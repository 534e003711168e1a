// detail::FileReplacement: how every writer of ETS replaces a file (models, trace files, checkpoints, the tool's
// outputs). The file must be flushed to the disk before it is renamed over the old one and the folder after, or a
// crash soon after a save can leave an empty file where the old one was. fsync is interposed below (this executable's
// definition wins over libc's) to see those flushes and to make them fail.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ets/detail/output_file.hpp"
#include "ets/detail/temporary_path.hpp"
#include "ets/error.hpp"
#include "ets/trace_file.hpp"
#include "test_support.hpp"

namespace {
namespace fs = std::filesystem;

struct SyncLog {
  int files = 0, folders = 0;
  int fail_with = 0;  ///< errno every fsync of a regular file fails with; 0: none fails
};
SyncLog sync_log;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// Each case's own folder, with the log of flushes started afresh.
struct TempDir : ets_test::TempDir {
  explicit TempDir(const char* name) : ets_test::TempDir(name) { sync_log = {}; }
};

}  // namespace

extern "C" int fsync(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ++sync_log.folders;
    } else if (S_ISREG(st.st_mode)) {
      ++sync_log.files;
      if (sync_log.fail_with) {
        errno = sync_log.fail_with;
        return -1;
      }
    }
  }
  using Fn = int (*)(int);
  static const Fn real = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "fsync"));
  return real ? real(fd) : 0;
}

TEST_CASE("a committed replacement is flushed, takes the old file's mode and leaves no temporary") {
  TempDir dir("ets_replace_commit");
  const fs::path out = dir.path / "out.txt";
  put(out, "old");
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  {
    ets::detail::FileReplacement r(out.string(), "ets.test.1", "test file");
    CHECK_FALSE(r.in_place());
    CHECK(r.target() == out.string());
    CHECK(r.write_path() != out.string());
    CHECK(fs::path(r.write_path()).parent_path() == dir.path);  // beside it: the rename stays on one file system
    put(r.write_path(), "new");
    CHECK(slurp(out) == "old");  // nothing shows before commit
    r.commit();
  }
  CHECK(slurp(out) == "new");
  CHECK(fs::status(out).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(entries(dir.path) == 1);
  CHECK(sync_log.files == 1);    // the temporary, before the rename
  CHECK(sync_log.folders == 1);  // the folder, after it
}

TEST_CASE("a replacement never committed removes its temporary and leaves the old file") {
  TempDir dir("ets_replace_abandon");
  const fs::path out = dir.path / "out.txt";
  put(out, "old");
  try {
    ets::detail::FileReplacement r(out.string(), "ets.test.1", "test file");
    put(r.write_path(), "half");
    throw std::runtime_error("the writer failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(slurp(out) == "old");
  CHECK(entries(dir.path) == 1);
  CHECK(sync_log.files == 0);
}

TEST_CASE("live temporaries are listed for a signal handler, and unlisted once committed or abandoned") {
  namespace d = ets::detail;
  const auto listed = [] {
    int n = 0;
    for (const auto& st : d::live_temporaries.state) n += st.load() == 2;
    return n;
  };
  TempDir dir("ets_replace_live");
  const fs::path out = dir.path / "out.txt";
  put(out, "old");
  const int before = listed();
  {
    d::FileReplacement a(out.string(), "ets.test.1", "test file");
    d::FileReplacement b(out.string(), "ets.test.1", "test file");
    put(a.write_path(), "a");
    put(b.write_path(), "b");
    CHECK(listed() == before + 2);
    d::remove_live_temporaries();  // what the ets tool's SIGINT / SIGTERM handler does before the process ends
    CHECK_FALSE(fs::exists(a.write_path()));
    CHECK_FALSE(fs::exists(b.write_path()));
    CHECK(slurp(out) == "old");
    put(b.write_path(), "b again");
    b.commit();
    CHECK(listed() == before + 1);  // a committed temporary is gone: nothing to remove
  }
  CHECK(listed() == before);
  CHECK(slurp(out) == "b again");
  CHECK(entries(dir.path) == 1);
  // a pipe or device written in place is never listed: the handler must not unlink the user's file
  d::FileReplacement null("/dev/null", "ets.test.1", "test file");
  CHECK(null.in_place());
  CHECK(listed() == before);
  // beyond the table's slots a replacement still works; it is only not listed
  std::vector<std::unique_ptr<d::FileReplacement>> many;
  for (int i = 0; i < d::LiveTemporaries::kSlots + 2; ++i)
    many.push_back(std::make_unique<d::FileReplacement>(out.string(), "ets.test.1", "test file"));
  CHECK(listed() == d::LiveTemporaries::kSlots);
  put(many.back()->write_path(), "last");
  many.back()->commit();
  many.clear();
  CHECK(listed() == before);
  CHECK(slurp(out) == "last");
}

TEST_CASE("two replacements of one file at once write two temporaries; the last commit wins") {
  TempDir dir("ets_replace_two");
  const fs::path out = dir.path / "out.txt";
  ets::detail::FileReplacement a(out.string(), "ets.test.1", "test file");
  ets::detail::FileReplacement b(out.string(), "ets.test.1", "test file");
  CHECK(a.write_path() != b.write_path());
  put(a.write_path(), "a");
  put(b.write_path(), "b");
  a.commit();
  CHECK(slurp(out) == "a");
  b.commit();
  CHECK(slurp(out) == "b");
  CHECK(entries(dir.path) == 1);
}

TEST_CASE("a failed flush is an error with the writer's id, and the old file stays") {
  TempDir dir("ets_replace_eio");
  const fs::path out = dir.path / "out.txt";
  put(out, "old");
  sync_log.fail_with = EIO;
  try {
    ets::detail::FileReplacement r(out.string(), "ets.test.1", "test file");
    put(r.write_path(), "new");
    r.commit();
    FAIL("a failed fsync must not be renamed into place");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.test.1");
    CHECK(e.code() == ets::Errc::io);
    CHECK(e.message().find(out.string()) != std::string::npos);
    CHECK(e.message().find("test file") != std::string::npos);
  }
  CHECK(slurp(out) == "old");
  CHECK(entries(dir.path) == 1);
  // a file system that cannot sync at all (EINVAL) loses nothing by it: the file is moved into place
  sync_log.fail_with = EINVAL;
  ets::detail::FileReplacement r(out.string(), "ets.test.1", "test file");
  put(r.write_path(), "new");
  r.commit();
  CHECK(slurp(out) == "new");
}

TEST_CASE("a rename that fails is an error naming the path, and no temporary is left") {
  TempDir dir("ets_replace_rename");
  fs::create_directories(dir.path / "sub");
  const fs::path out = dir.path / "sub" / "out.txt";
  ets::detail::FileReplacement r(out.string(), "ets.test.1", "test file");
  put(r.write_path(), "new");
  // the destination became a non-empty folder meanwhile: rename() cannot replace it
  fs::create_directories(out / "inner");
  try {
    r.commit();
    FAIL("renaming over a non-empty folder must fail");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.test.1");
    CHECK(e.message().find("into place") != std::string::npos);
  }
}

TEST_CASE("symlinks are followed, pipes and devices written in place or refused, folders refused") {
  TempDir dir("ets_replace_kinds");
  fs::create_directories(dir.path / "real");
  fs::create_symlink(fs::path("real") / "t.txt", dir.path / "hop2");
  fs::create_symlink("hop2", dir.path / "hop1");
  {
    ets::detail::FileReplacement r((dir.path / "hop1").string(), "ets.test.1", "test file");
    CHECK(r.target() == (dir.path / "real" / "t.txt").string());
    put(r.write_path(), "through two links");
    r.commit();
  }
  CHECK(fs::is_symlink(dir.path / "hop1"));
  CHECK(fs::is_symlink(dir.path / "hop2"));
  CHECK(slurp(dir.path / "real" / "t.txt") == "through two links");

  const fs::path fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  {
    ets::detail::FileReplacement r(fifo.string(), "ets.test.1", "test file");
    CHECK(r.in_place());
    CHECK(r.write_path() == fifo.string());
    r.commit();  // nothing to move
  }
  CHECK(fs::is_fifo(fifo));
  CHECK(sync_log.files == 1);  // the regular file only

  try {
    ets::detail::FileReplacement r("/dev/null", "ets.test.2", "checkpoint", ".tmp", false);
    FAIL("a device must be refused where streams are not written");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.test.2");
    CHECK(e.message().find("not a regular file") != std::string::npos);
  }
  try {
    ets::detail::FileReplacement r(dir.path.string(), "ets.test.3", "test file");
    FAIL("a folder must be refused");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.test.3");
    CHECK(e.message().find("directory") != std::string::npos);
  }
  CHECK(entries(dir.path) == 4);  // real/, hop1, hop2, fifo: no temporary anywhere
  CHECK(entries(dir.path / "real") == 1);
}

TEST_CASE("the library's writers flush what they save") {
  TempDir dir("ets_replace_writers");
  const fs::path out = dir.path / "t.etst";
  ets::write_trace_file(out.string(), {});
  CHECK(sync_log.files == 1);
  CHECK(sync_log.folders == 1);
  CHECK(slurp(out).find("ets-trace") != std::string::npos);

  sync_log.fail_with = EIO;  // a file that may not be on the disk is not reported written
  CHECK_THROWS_AS(ets::write_trace_file((dir.path / "u.etst.gz").string(), {}), ets::Error);
  CHECK(entries(dir.path) == 1);
}

TEST_CASE("write_all replaces the whole file, or reports a failed write and keeps the old one") {
  TempDir dir("ets_replace_write_all");
  const fs::path out = dir.path / "model.bin";
  put(out, "old content, longer than the new");
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  const std::string text = "new";
  ets::detail::FileReplacement(out.string(), "ets.test.1", "test file").write_all(text.data(), text.size());
  CHECK(slurp(out) == "new");  // truncated, not overwritten in place
  CHECK((fs::status(out).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(sync_log.files == 1);
  CHECK(entries(dir.path) == 1);

  ets::detail::FileReplacement empty(out.string(), "ets.test.1", "test file");
  empty.write_all(nullptr, 0);  // an empty content is a file, not an error
  CHECK(fs::file_size(out) == 0);

  // A device that takes no byte (Linux's /dev/full: every write fails with ENOSPC) stands for a full disk: the
  // failure is the writer's error, with its id and the system's reason.
  if (fs::exists("/dev/full")) {
    try {
      ets::detail::FileReplacement("/dev/full", "ets.test.4", "test file").write_all(text.data(), text.size());
      FAIL("a write that fails must throw");
    } catch (const ets::Error& e) {
      CHECK(e.id() == "ets.test.4");
      CHECK(e.message().find("/dev/full") != std::string::npos);
      CHECK(e.message().find(std::strerror(ENOSPC)) != std::string::npos);
    }
  }
}

TEST_CASE("unwritable_reason tells what a replacement would refuse, and touches nothing") {
  TempDir dir("ets_replace_unwritable");
  const fs::path out = dir.path / "out.txt";
  CHECK(ets::detail::unwritable_reason(out.string(), true).empty());  // a new file
  put(out, "keep");
  CHECK(ets::detail::unwritable_reason(out.string(), false).empty());  // an existing one
  CHECK(slurp(out) == "keep");
  CHECK(entries(dir.path) == 1);  // the folder's probe is gone

  CHECK(ets::detail::unwritable_reason("", true) == "no path given");
  CHECK(ets::detail::unwritable_reason(dir.path.string(), true) == "it is a directory");
  CHECK(ets::detail::unwritable_reason((dir.path / "missing" / "x").string(), true) == std::strerror(ENOENT));
  CHECK(ets::detail::unwritable_reason("/dev/null", true).empty());  // written in place
  CHECK(ets::detail::unwritable_reason("/dev/null", false).find("not a regular file") != std::string::npos);

  fs::create_symlink("loop_b", dir.path / "loop_a");
  fs::create_symlink("loop_a", dir.path / "loop_b");
  CHECK(ets::detail::unwritable_reason((dir.path / "loop_a").string(), true).find("loop of symlinks") !=
        std::string::npos);
  fs::create_directory(dir.path / "sub");
  fs::create_symlink("sub/dangling.txt", dir.path / "link");  // a dangling link: its target is created
  CHECK(ets::detail::unwritable_reason((dir.path / "link").string(), true).empty());
  CHECK(entries(dir.path / "sub") == 0);

  // The constructor refuses the same paths with the same reasons (one resolution for both).
  for (const std::string& bad : {std::string(), dir.path.string(), (dir.path / "loop_a").string()}) {
    try {
      ets::detail::FileReplacement r(bad, "ets.test.5", "test file");
      FAIL("'" << bad << "' must be refused");
    } catch (const ets::Error& e) {
      CHECK(e.id() == "ets.test.5");
      CHECK(e.message().find(ets::detail::unwritable_reason(bad, true)) != std::string::npos);
    }
  }
  CHECK(sync_log.files == 0);
}

TEST_CASE("unwritable_reason's probe takes the next name when one is taken") {
  // A probe left by a process killed between creating and removing it, or one of another process with this pid
  // (another container), made every later check of that pid "File exists" for good.
  namespace d = ets::detail;
  TempDir dir("ets_replace_probe_taken");
  const fs::path out = dir.path / "o.etst";
  // the names the next probes will take: this process's counter, read by asking for one name
  const std::string asked = d::temporary_path(out.string(), ".probe");
  const std::size_t dash = asked.rfind('-');
  const unsigned next = static_cast<unsigned>(std::stoul(asked.substr(dash + 1))) + 1;
  for (unsigned k = next; k < next + 5; ++k) put(fs::path(asked.substr(0, dash + 1) + std::to_string(k)), "");
  CHECK(d::unwritable_reason(out.string(), true).empty());
  CHECK(entries(dir.path) == 5);  // the planted names stay; the probe that succeeded is gone
  CHECK_FALSE(fs::exists(out));
}

// The temporary's name is predictable ("<path>.tmp-<pid>-<n>"): whoever may write into the destination's folder can
// put a symlink there first. It must never be written through: the victim keeps its content, the next free name is
// used, and when every name tried is taken the replacement fails with the writer's error.
TEST_CASE("a symlink planted at the temporary's name is not followed") {
  namespace d = ets::detail;
  TempDir dir("ets_replace_planted");
  const fs::path out = dir.path / "model.etsm";
  const fs::path victim = dir.path / "victim.txt";
  put(victim, "precious");
  put(out, "old");
  // the counter's next value, as an attacker who knows the pid and how many files were written can guess it
  const std::string probe = d::temporary_path(out.string(), ".tmp");
  const std::string stem = probe.substr(0, probe.rfind('-') + 1);
  const unsigned next = static_cast<unsigned>(std::stoul(probe.substr(probe.rfind('-') + 1))) + 1;
  for (unsigned n = next; n < next + 3; ++n) fs::create_symlink(victim, stem + std::to_string(n));
  const std::string text = "new";
  {
    d::FileReplacement r(out.string(), "ets.test.1", "test file");
    CHECK(r.write_path() == stem + std::to_string(next + 3));  // the planted names were skipped
    CHECK_FALSE(fs::is_symlink(r.write_path()));
    r.write_all(text.data(), text.size());
  }
  CHECK(slurp(victim) == "precious");
  CHECK(slurp(out) == "new");
  CHECK_FALSE(fs::is_symlink(out));
  for (unsigned n = next; n < next + 3; ++n) CHECK(fs::is_symlink(stem + std::to_string(n)));  // left as they were

  // every name tried taken: the writer's error, nothing written anywhere
  const std::string probe2 = d::temporary_path(out.string(), ".tmp");
  const unsigned first = static_cast<unsigned>(std::stoul(probe2.substr(probe2.rfind('-') + 1))) + 1;
  for (unsigned n = first; n < first + d::FileReplacement::kNameAttempts; ++n)
    fs::create_symlink(victim, stem + std::to_string(n));
  try {
    d::FileReplacement r(out.string(), "ets.test.6", "test file");
    FAIL("a replacement with no free name must fail");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.test.6");
    CHECK(e.code() == ets::Errc::io);
    CHECK(e.message().find(out.string()) != std::string::npos);
  }
  CHECK(slurp(victim) == "precious");
  CHECK(slurp(out) == "new");

  // the library's writers go through the same replacement: a planted link at a model's temporary is not followed
  const fs::path traces = dir.path / "t.etst.gz";
  const std::string probe3 = d::temporary_path(traces.string(), ".part");
  const std::string stem3 = probe3.substr(0, probe3.rfind('-') + 1);
  const unsigned next3 = static_cast<unsigned>(std::stoul(probe3.substr(probe3.rfind('-') + 1))) + 1;
  fs::create_symlink(victim, stem3 + std::to_string(next3));
  ets::write_trace_file(traces.string(), {});
  CHECK(slurp(victim) == "precious");
  CHECK(fs::is_regular_file(traces));
  CHECK(fs::file_size(traces) > 0);
}

TEST_CASE("the temporary is created by the replacement, new and close-on-exec, and written through its descriptor") {
  TempDir dir("ets_replace_fd");
  const fs::path out = dir.path / "out.txt";
  ets::detail::FileReplacement r(out.string(), "ets.test.1", "test file");
  REQUIRE(r.fd() >= 0);
  CHECK((::fcntl(r.fd(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(fs::is_regular_file(r.write_path()));  // exists from the start: its name is taken
  CHECK(fs::file_size(r.write_path()) == 0);
  // a new file's mode follows the umask, as any file the process creates
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::fstat(r.fd(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));

  const int w = r.open_for_write();
  REQUIRE(w >= 0);
  CHECK((::fcntl(w, F_GETFD) & FD_CLOEXEC) != 0);
  // the name swapped for a symlink after creation: writes still land in the replacement's own file
  const fs::path victim = dir.path / "victim.txt";
  put(victim, "precious");
  const fs::path moved = dir.path / "moved";
  fs::rename(r.write_path(), moved);
  fs::create_symlink(victim, r.write_path());
  REQUIRE(::write(w, "new", 3) == 3);
  ::close(w);
  CHECK(slurp(victim) == "precious");
  CHECK(slurp(moved) == "new");
  // a pipe or device written in place is opened close-on-exec too
  ets::detail::FileReplacement null("/dev/null", "ets.test.1", "test file");
  CHECK(null.fd() == -1);
  const int n = null.open_for_write();
  REQUIRE(n >= 0);
  CHECK((::fcntl(n, F_GETFD) & FD_CLOEXEC) != 0);
  ::close(n);
}

TEST_CASE("a destination name of up to 255 bytes is written: the temporary's name is cut to fit, never longer") {
  TempDir dir("ets_replace_long_name");
  // 250 bytes: legal, but "<name>.tmp-<pid>-<n>" is not (ENAMETOOLONG before the temporary's name was cut)
  for (const std::string& name : {std::string(250, 'a') + ".etst", std::string(255, 'b'),
                                   std::string(1, 'c') + [] {  // 2-byte characters: the cut keeps them whole
                                     std::string s;
                                     for (int i = 0; i < 127; ++i) s += "\xc3\xa9";
                                     return s;
                                   }()}) {
    REQUIRE(name.size() <= 255);
    const std::string out = (dir.path / name).string();
    const std::string a = ets::detail::temporary_path(out, ".tmp"), b = ets::detail::temporary_path(out, ".tmp");
    CHECK(a != b);
    for (const std::string& t : {a, b}) {
      const fs::path p(t);
      CHECK(p.parent_path() == dir.path);
      CHECK(p.filename().string().size() <= ets::detail::kMaxFileName);
      const std::string stem = p.filename().string().substr(0, p.filename().string().find('~'));
      CHECK(name.compare(0, stem.size(), stem) == 0);  // a prefix of the destination's name
      if (name[0] == 'c') CHECK((stem.size() - 1) % 2 == 0);  // 'c', then only whole 2-byte characters
    }
    ets::write_trace_file(out, {});
    CHECK(slurp(out).find("ets-trace") != std::string::npos);
    CHECK(entries(dir.path) == 1);  // no temporary left
    fs::remove(out);
  }
  // a short name keeps the plain form
  const std::string plain = ets::detail::temporary_path((dir.path / "m.etsm").string(), ".part");
  CHECK(fs::path(plain).filename().string().rfind("m.etsm.part-", 0) == 0);
}

TEST_CASE("a path naming an open descriptor of a regular file is refused, never replaced") {
  TempDir dir("ets_replace_descriptor");
  const fs::path log = dir.path / "log.txt";
  { std::ofstream(log) << "previous line\n"; }
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const std::string direct = "/proc/self/fd/" + std::to_string(fd);
  const fs::path link = dir.path / "out.etst";  // as /dev/stdout is a link to /proc/self/fd/1
  fs::create_symlink(direct, link);
  for (const std::string& path : {direct, link.string(), "/dev/fd/" + std::to_string(fd)}) {
    CHECK_THAT(ets::detail::unwritable_reason(path, true), Catch::Contains("open descriptor"));
    CHECK_THROWS_WITH(ets::write_trace_file(path, {}), Catch::Contains("ets.etst.1") && Catch::Contains("descriptor"));
  }
  ::close(fd);
  CHECK(slurp(log) == "previous line\n");  // untouched: not replaced, not truncated
  CHECK(fs::is_symlink(link));
  CHECK(ets::detail::names_descriptor("/proc/1234/fd/7"));
  CHECK(ets::detail::names_descriptor("/dev/fd/0"));
  CHECK_FALSE(ets::detail::names_descriptor("/proc/self/fdinfo/1"));
  CHECK_FALSE(ets::detail::names_descriptor("/proc/self/fd/"));
  CHECK_FALSE(ets::detail::names_descriptor("/home/fd/1"));
}

TEST_CASE("unwritable_reason refuses a file name longer than a folder holds, before any work") {
  TempDir dir("ets_replace_name_max");
  CHECK(ets::detail::unwritable_reason((dir.path / std::string(255, 'n')).string(), true).empty());
  CHECK(ets::detail::unwritable_reason((dir.path / std::string(256, 'n')).string(), true) ==
        std::strerror(ENAMETOOLONG));
  CHECK(entries(dir.path) == 0);
}
