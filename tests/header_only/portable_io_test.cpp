// The file handling of the public headers through the standard library alone, so that the same cases run on Linux
// (here, in header_only_test) and on Windows, whose branches (_open with _O_EXCL | _O_NOINHERIT, _dup, _write, fopen
// "N", rename over an existing file) are otherwise never run: tools/check_windows.sh builds this executable with
// MinGW and runs it under Wine. POSIX-only behaviour (symlinks, pipes, fsync, modes) is file_replacement_test's.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ets/detail/cloexec_file.hpp"
#include "ets/detail/output_file.hpp"
#include "ets/detail/temporary_path.hpp"
#include "ets/error.hpp"

namespace fs = std::filesystem;

namespace {

// A folder of this test's own, removed with everything in it.
struct ScratchDir {
  fs::path path = fs::path(ets::detail::temporary_path((fs::temp_directory_path() / "ets-portable-io").string(), ""));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const char* name) const { return (path / name).string(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("portable: a replacement creates, then replaces, a file and leaves no temporary") {
  ScratchDir dir;
  const std::string out = dir.file("model.etsm");
  {
    ets::detail::FileReplacement r(out, "consumer.io.1", "model file");
    CHECK(r.write_path() != out);
    CHECK(fs::exists(r.write_path()));  // created by the constructor, before anything is written
    CHECK(r.fd() >= 0);
    r.write_all("first\n", 6);
  }
  CHECK(slurp(out) == "first\n");
  CHECK(dir.names() == std::vector<std::string>{"model.etsm"});

  // Over an existing file: the rename replaces it (on Windows a plain rename() would refuse)
  const std::string bytes("\0\r\n\x1a\xff second", 12);  // binary: no newline translation, ^Z is no end
  ets::detail::FileReplacement(out, "consumer.io.1", "model file").write_all(bytes.data(), bytes.size());
  CHECK(slurp(out) == bytes);
  CHECK(dir.names() == std::vector<std::string>{"model.etsm"});
}

TEST_CASE("portable: a replacement not committed removes its temporary and keeps the old file") {
  ScratchDir dir;
  const std::string out = dir.file("trace.etst");
  spit(out, "old");
  std::string temporary;
  {
    ets::detail::FileReplacement r(out, "consumer.io.1", "trace file");
    temporary = r.write_path();
    const int fd = r.open_for_write();  // a duplicate the writer closes; the replacement still holds its own
    REQUIRE(fd >= 0);
#if defined(_WIN32)
    CHECK(::_write(fd, "half", 4) == 4);
    ::_close(fd);
#else
    CHECK(::write(fd, "half", 4) == 4);
    ::close(fd);
#endif
    CHECK(slurp(temporary) == "half");
  }  // no commit(): an exception on the way, say
  CHECK(!fs::exists(temporary));
  CHECK(slurp(out) == "old");
  CHECK(dir.names() == std::vector<std::string>{"trace.etst"});
}

TEST_CASE("portable: two replacements of one file at once take two temporaries; the last commit wins") {
  ScratchDir dir;
  const std::string out = dir.file("labels.etst");
  ets::detail::FileReplacement a(out, "consumer.io.1", "trace file");
  ets::detail::FileReplacement b(out, "consumer.io.1", "trace file");
  CHECK(a.write_path() != b.write_path());
  b.write_all("b", 1);
  a.write_all("a", 1);
  CHECK(slurp(out) == "a");
  CHECK(dir.names() == std::vector<std::string>{"labels.etst"});
}

TEST_CASE("portable: a taken temporary name is skipped, never written through") {
  ScratchDir dir;
  const std::string out = dir.file("x.etst");
  // The counter in the name makes the next name predictable: plant a file under it
  const std::string probe = ets::detail::temporary_path(out, ".tmp");
  const auto dash = probe.rfind('-');
  const std::string next = probe.substr(0, dash + 1) + std::to_string(std::stoul(probe.substr(dash + 1)) + 1);
  spit(next, "planted");
  ets::detail::FileReplacement r(out, "consumer.io.1", "trace file");
  CHECK(r.write_path() != next);
  r.write_all("mine", 4);
  CHECK(slurp(out) == "mine");
  CHECK(slurp(next) == "planted");
}

TEST_CASE("portable: what cannot be written is an ets::Error with the writer's id") {
  ScratchDir dir;
  const std::string missing = dir.file("no-such-folder/out.etst");
  try {
    ets::detail::FileReplacement r(missing, "consumer.io.7", "trace file");
    FAIL("a file in a missing folder was opened");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "consumer.io.7");
    CHECK(std::string(e.what()).find("out.etst") != std::string::npos);
  }
  CHECK(ets::detail::unwritable_reason(dir.path.string(), true) == "it is a directory");
  CHECK(ets::detail::unwritable_reason("", true) == "no path given");
  CHECK(ets::detail::unwritable_reason(dir.file("fine.etst"), true).empty());
  CHECK(dir.names().empty());  // the check touches nothing
}

TEST_CASE("portable: fopen_cloexec and read_rest read and write binary files") {
  ScratchDir dir;
  const std::string path = dir.file("data.bin");
  {
    ets::detail::UniqueFile w(ets::detail::fopen_cloexec(path.c_str(), "wb"));
    REQUIRE(w);
    CHECK(std::fwrite("a\r\nb\x1a" "c", 1, 6, w.get()) == 6);
  }
  CHECK(slurp(path) == std::string("a\r\nb\x1a" "c"));
  {
    ets::detail::UniqueFile r(ets::detail::fopen_cloexec(path.c_str(), "rb"));
    REQUIRE(r);
    std::string all;
    CHECK(ets::detail::read_rest(r.get(), all));
    CHECK(all == std::string("a\r\nb\x1a" "c"));
  }
  {
    ets::detail::UniqueFile r(ets::detail::fopen_cloexec(path.c_str(), "rb"));
    REQUIRE(r);
    std::vector<unsigned char> some;
    CHECK(ets::detail::read_rest(r.get(), some, 2));  // a limit reads one byte past it, to tell "more"
    CHECK(some.size() == 3);
  }
  errno = 0;
  CHECK(ets::detail::fopen_cloexec(dir.file("absent.bin").c_str(), "rb") == nullptr);
  CHECK(errno == ENOENT);
}
