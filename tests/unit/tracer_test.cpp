// ets-test-labels: unit
// ets::Tracer: the live scope API (outermost scopes only, gaps, step boundaries) and format detection / loading.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <unistd.h>
#include <zlib.h>

#include "alloc_hooks.hpp"  // a caller that catches bad_alloc from Tracer::op() must find the Tracer as it was
#include "ets/error.hpp"
#include "ets/trace_file.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "test_support.hpp"

using namespace ets;

namespace {
void spin_us(double us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}
}  // namespace

TEST_CASE("live scopes: only the outermost scope is an op; an iteration ends where the next one starts") {
  Tracer tracer;
  for (int it = 0; it < 3; ++it) {
    {
      auto s = tracer.op("conv2d", Phase::Forward, {{{8, 3, 32, 32}, DType::Float32}});
      spin_us(200);
      auto inner = tracer.op("cudnn_convolution", Phase::Forward);  // nested: folded into conv2d
      spin_us(100);
    }
    spin_us(50);
    {
      auto s = tracer.op("relu", Phase::Backward);
      spin_us(100);
    }
    spin_us(30);
    tracer.step();
  }
  { auto s = tracer.op("pending", Phase::Update); }
  const auto its = tracer.take();
  REQUIRE(its.size() == 3);
  CHECK(tracer.pending_ops() == 1);
  for (std::size_t i = 0; i < its.size(); ++i) {
    const auto& t = its[i];
    REQUIRE(t.ops.size() == 2);
    CHECK(t.ops[0].name == "conv2d");
    CHECK(t.ops[0].inputs.size() == 1);
    CHECK(t.ops[1].phase == Phase::Backward);
    CHECK(t.ops[0].time_us >= 300);
    CHECK(t.ops[0].gap_us >= 50);
    CHECK(t.ops[1].gap_us >= 30);
    CHECK(t.meta.source_format == "live");
    // Σ(time+gap) = first op start -> the next iteration's first op start (the "pending" op for the last one,
    // which had opened before take()); measured = step() -> step() (from the first op for the first).
    const double next_start = i + 1 < its.size() ? its[i + 1].start_us : t.start_us + t.sum_us();
    CHECK(t.sum_us() == Approx(next_start - t.start_us).epsilon(1e-12));
  }
  CHECK(its[0].sum_us() >= its[0].measured_us);  // the first runs from its first op to step(), then on to the next op
  CHECK(tracer.take().empty());
}

TEST_CASE("live scopes: a scope still open at step() is cut at the boundary") {
  Tracer tracer;
  auto s = tracer.op("long", Phase::Forward);
  spin_us(50);
  tracer.step();
  s.end();
  const auto its = tracer.take();
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 1);
  CHECK(its[0].ops[0].gap_us == 0);
  CHECK(its[0].ops[0].time_us == Approx(its[0].measured_us));
}

TEST_CASE("format detection by content") {
  using ets::import::detect_format;
  using ets::import::Format;
  CHECK(detect_format("{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [", "x") == Format::KinetoJson);
  CHECK(detect_format("{\"schema\": \"1.0.1\", \"pid\": 1, \"nodes\": [", "x") == Format::PytorchEt);
  CHECK(detect_format("{\"format\":\"ets-trace\",\"version\":[1,0]}\n", "x") == Format::EtsTrace);
  CHECK(detect_format("op,dir,params,kduration,space\n", "x") == Format::EtsCsv);
  CHECK(detect_format(std::string_view("SQLite format 3\0rest", 20), "x") == Format::NsightSqlite);
  CHECK(detect_format("hello", "x") == Format::Unknown);
  CHECK(detect_format("{\"a\": \"traceEvents\"}", "x") == Format::Unknown);  // a value, not a key
  // the key searcher goes on past a match that is a value, and past blanks before the ':'
  CHECK(detect_format("{\"a\": \"traceEvents\", \"traceEvents\" \n\t: [", "x") == Format::KinetoJson);
  CHECK(detect_format("{\"traceEvents\"\"traceEvents\":[", "x") == Format::KinetoJson);
  CHECK(detect_format("{\"traceEvents\"", "x") == Format::Unknown);  // the key at the very end, no ':'
  CHECK(detect_format("{\"traceEvents\" ", "x") == Format::Unknown);
  CHECK(detect_format("{\"traceEvent", "x") == Format::Unknown);  // shorter than the key
  // a JSON key is looked for in the whole text: after megabytes of strings, and an ET's "schema" after its "nodes"
  std::string padded = "{\"deviceProperties\": [";
  for (int i = 0; i < 200000; ++i) padded += "\"traceEvents_\", ";
  CHECK(detect_format(padded + "\"\"], \"traceEvents\": [", "x") == Format::KinetoJson);
  CHECK(detect_format(padded + "\"\"]}", "x") == Format::Unknown);
  CHECK(detect_format("{\"nodes\": [], \"pid\": 1, \"schema\": \"1.0.1\"}", "x") == Format::PytorchEt);
  CHECK(detect_format("{\"nodes\": [], \"pid\": 1}", "x") == Format::Unknown);
  // the ets-trace header is the first line, its "format" within the first 4 KiB (the writer's is ~40 bytes)
  CHECK(detect_format("{\"version\":[1,0], \"format\" : \"ets-trace\"}\n{}", "x") == Format::EtsTrace);
  const std::string far = "{\"x\":\"" + std::string(5000, 'a') + "\",\"format\":\"ets-trace\",\"version\":[1,0]}\n";
  CHECK(detect_format(far, "x") == Format::Unknown);
  CHECK(detect_format("{\"x\":1}\n{\"format\":\"ets-trace\",\"version\":[1,0]}\n", "x") == Format::Unknown);
}

TEST_CASE("Tracer::load: missing file, unknown format, gzip round trip") {
  namespace fs = std::filesystem;
  CHECK_THROWS_WITH(Tracer::load("/nonexistent/trace.json"), Catch::Contains("ets.io.1"));
#if defined(__linux__)
  // A read that fails (here at once: the kernel answers a read of address 0 with EIO) is ets.io.2, not a short file.
  if (std::filesystem::exists("/proc/self/mem"))
    CHECK(ets_test::error_text([] { Tracer::load("/proc/self/mem"); }) == "[ets.io.2] read error on '/proc/self/mem'");
#endif
  const ets_test::TempDir scratch("ets_tracer_test");
  const fs::path& dir = scratch.path;
  const auto junk = (dir / "junk.txt").string();
  std::ofstream(junk) << "not a trace";
  CHECK_THROWS_WITH(Tracer::load(junk), Catch::Contains("ets.import.1"));
  CHECK_THROWS_WITH(Tracer::load(junk), !Catch::Contains("model"));
  // a model passed where a trace goes is named (a small one, read whole, and a large one, refused by its first bytes)
  for (const char* model : {"gru_f5_h7_trained.etsm", "../../models/default.etsm"}) {
    const std::string m = ets_test::fixture(model);
    REQUIRE(fs::exists(m));
    INFO(m << ", " << fs::file_size(m) << " bytes");
    CHECK_THROWS_WITH(Tracer::load(m), Catch::Contains("[ets.import.1]") && Catch::Contains("is an ETS model file"));
  }
  // A truncated gzip stream is an error, not a crash.
  const std::string gz = ets_test::fixture("cpu_small_mlp.json.gz");
  std::ifstream in(gz, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const auto cut = (dir / "cut.json.gz").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK_THROWS_WITH(ets::import::read_file_bytes(cut), Catch::Contains("ets.io.5"));
  CHECK(Tracer::detect(gz) == "kineto");
  // a "regular" file that reports 0 bytes (procfs) is still read to its end
  if (fs::is_regular_file("/proc/self/status"))
    CHECK(ets::import::read_file_bytes("/proc/self/status").find("Name:") != std::string::npos);
  Tracer::LoadOptions bad_rank;
  bad_rank.rank = -2;  // not "any rank": refused before the file is read
  CHECK_THROWS_WITH(Tracer::load(gz, bad_rank), Catch::Contains("ets.import.4"));
}

TEST_CASE("LoadOptions::max_bytes bounds what a trace may hold once decompressed (a gzip bomb costs the limit)") {
  namespace fs = std::filesystem;
  const ets_test::TempDir scratch("ets_max_bytes");
  const fs::path& dir = scratch.path;
  // 64 MiB of spaces gzip to ~64 KiB: a 1,000:1 expansion
  const auto bomb = (dir / "bomb.json.gz").string();
  {
    gzFile g = gzopen(bomb.c_str(), "wb9");
    REQUIRE(g);
    const std::string block(1 << 20, ' ');
    for (int i = 0; i < 64; ++i) REQUIRE(gzwrite(g, block.data(), static_cast<unsigned>(block.size())) > 0);
    REQUIRE(gzclose(g) == Z_OK);
  }
  REQUIRE(fs::file_size(bomb) < (1u << 20));
  constexpr std::uint64_t kLimit = 1u << 20;
  Tracer::LoadOptions capped;
  capped.max_bytes = kLimit;
#if ETS_TEST_ALLOC_HOOKS
  ets_test::alloc::largest = 0;
  ets_test::alloc::counting = true;
#endif
  CHECK_THROWS_WITH(Tracer::load(bomb, capped), Catch::Contains("ets.io.6") && Catch::Contains("max_bytes"));
  // detect() reads the whole file too: with the same options it stops at the same limit
  CHECK_THROWS_WITH(Tracer::detect(bomb, capped), Catch::Contains("ets.io.6"));
#if ETS_TEST_ALLOC_HOOKS
  ets_test::alloc::counting = false;
  CHECK(ets_test::alloc::largest <= kLimit + 128);  // the content was never held past the limit
#endif
  CHECK(Tracer::detect(bomb) == "unknown");  // no limit: read whole (64 MiB of spaces are no trace)
  // without a limit the same file reads whole (and is then no trace); so it does with a limit no memory can reach
  // (a C caller's (size_t)-1 for "unlimited" used to wrap the limit's arithmetic: every gzip read failed)
  CHECK(ets::import::read_file_bytes(bomb).size() == (std::size_t{64} << 20));
  for (const std::uint64_t huge : {~std::uint64_t{0}, ~std::uint64_t{0} - 63, std::uint64_t{1} << 62,
                                   std::uint64_t{18162948011037033433u}})
    CHECK(ets::import::read_file_bytes(bomb, huge).size() == (std::size_t{64} << 20));

  // exactly the limit is allowed, one byte more is not: a plain file, a gzip file and a file that reports 0 bytes
  const std::string gz = ets_test::fixture("cpu_small_mlp.json.gz");
  const std::string text = ets::import::read_file_bytes(gz);
  const auto plain = (dir / "plain.json").string();
  std::ofstream(plain, std::ios::binary) << text;
  for (const std::string& path : {plain, gz}) {
    INFO(path);
    CHECK(ets::import::read_file_bytes(path, text.size()) == text);
    CHECK_THROWS_WITH(ets::import::read_file_bytes(path, text.size() - 1), Catch::Contains("ets.io.6"));
    capped.max_bytes = text.size();
    CHECK(Tracer::load(path, capped).size() == Tracer::load(path).size());
    CHECK(Tracer::detect(path, capped) == "kineto");
    capped.max_bytes = text.size() - 1;
    CHECK_THROWS_WITH(Tracer::load(path, capped), Catch::Contains("ets.io.6"));
    CHECK_THROWS_WITH(Tracer::detect(path, capped), Catch::Contains("ets.io.6"));
  }
  if (fs::is_regular_file("/proc/self/status"))
    CHECK_THROWS_WITH(ets::import::read_file_bytes("/proc/self/status", 8), Catch::Contains("ets.io.6"));
  // a pipe (no size to check first): the bomb's bytes and the plain text, one byte over the limit and at it; and a
  // gzip stream whose header comment (300 KB) is far longer than its content: its compressed size is not the limit
  std::signal(SIGPIPE, SIG_IGN);
  std::ifstream bomb_in(bomb, std::ios::binary);
  const std::string bomb_bytes((std::istreambuf_iterator<char>(bomb_in)), {});
  const auto commented = (dir / "commented.gz").string();
  {
    // gzopen writes no comment: the member is built by hand (RFC 1952: FLG.FCOMMENT = 16, raw deflate, CRC, ISIZE)
    std::string member = {'\x1f', '\x8b', 8, 16, 0, 0, 0, 0, 0, 3};
    member += std::string(300000, 'c') + '\0';
    z_stream z{};
    REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    char body[64];
    const char content[] = "ok";
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(content));
    z.avail_in = 2;
    z.next_out = reinterpret_cast<Bytef*>(body);
    z.avail_out = sizeof body;
    REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
    member.append(body, sizeof body - z.avail_out);
    deflateEnd(&z);
    const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(content), 2);
    for (int i = 0; i < 4; ++i) member += static_cast<char>((crc >> (8 * i)) & 0xff);
    member += std::string{2, 0, 0, 0};
    std::ofstream(commented, std::ios::binary) << member;
  }
  CHECK(ets::import::read_file_bytes(commented, 2) == "ok");
  std::ifstream commented_in(commented, std::ios::binary);
  const std::string commented_bytes((std::istreambuf_iterator<char>(commented_in)), {});
  struct Piped {
    std::string payload;
    std::uint64_t limit;
    const char* want;  // the result, or the error id
  };
  for (const Piped& c : {Piped{bomb_bytes, kLimit, "ets.io.6"}, Piped{text, text.size() - 1, "ets.io.6"},
                         Piped{text, text.size(), nullptr}, Piped{commented_bytes, 2, "ok"}}) {
    const std::string& payload = c.payload;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::thread writer([&, fd = fds[1]] {
      for (std::size_t off = 0; off < payload.size();) {
        const ssize_t n = ::write(fd, payload.data() + off, payload.size() - off);
        if (n <= 0) break;  // the reader closed its end
        off += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
    std::string got;
    try {
      got = ets::import::read_file_bytes("/proc/self/fd/" + std::to_string(fds[0]), c.limit);
    } catch (const std::exception& e) {
      got = e.what();
    }
    ::close(fds[0]);
    writer.join();
    INFO("limit " << c.limit << ", " << payload.size() << " bytes in");
    if (!c.want)
      CHECK(got == text);
    else if (std::string(c.want) == "ets.io.6")
      CHECK_THAT(got, Catch::Contains("ets.io.6"));
    else
      CHECK(got == c.want);
  }
}

TEST_CASE("a count past a double's range is unknown (NaN), never infinite: the op still writes to .etst") {
  namespace fs = std::filesystem;
  const ets_test::TempDir scratch("ets_vast_counts");
  const fs::path& dir = scratch.path;
  // relu over 20 dims of 2^63 - 1 (derived FLOPs / bytes overflow), and conv ops whose recorded flops sum past
  // DBL_MAX over their nested events; the last op is a plain relu whose counts stay derived
  std::string dims = "[";
  for (int i = 0; i < 20; ++i) dims += std::string(i ? "," : "") + "9223372036854775807";
  dims += "]";
  const std::string json =
      R"({"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":100,"dur":100},)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":110,"dur":10,"args":{"Input Dims":[)" +
      dims + R"(],"Input type":["float"]}},)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":130,"dur":20,"args":{"flops":1.5e308}},)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::add_","pid":1,"tid":1,"ts":135,"dur":5,"args":{"flops":1.5e308}},)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":160,"dur":10,"args":{"Input Dims":[[4,4]],"Input type":["float"]}}]})";
  const auto path = (dir / "vast.json").string();
  std::ofstream(path) << json;
  const auto traces = Tracer::load(path);
  REQUIRE(traces.size() == 1);
  REQUIRE(traces[0].ops.size() == 3);
  for (int i : {0, 1}) {
    INFO("op " << i);
    CHECK(std::isnan(traces[0].ops[i].flops));
    CHECK(!std::isinf(traces[0].ops[i].bytes));
  }
  CHECK(std::isnan(traces[0].ops[0].bytes));
  CHECK(traces[0].ops[2].flops == 16.0);  // the finite neighbour keeps its derived count
  const auto out = (dir / "vast.etst").string();
  write_trace_file(out, traces);  // threw ets.etst.7 ("flops/bytes are infinite") before
  const auto back = Tracer::load(out);
  REQUIRE(back.size() == 1);
  CHECK(std::isnan(back[0].ops[0].flops));
  CHECK(back[0].ops[2].flops == 16.0);
}

TEST_CASE("Tracer::load reads a pipe to its end: no size, no seeking, gzip or plain") {
  const std::string gz = ets_test::fixture("cpu_small_mlp.json.gz");
  std::ifstream in(gz, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const auto from_file = Tracer::load(gz);
  std::signal(SIGPIPE, SIG_IGN);  // a reader that stops early must fail the test, not kill it
  for (int round = 0; round < 2; ++round) {  // 0: the gzip bytes, 1: the same bytes inflated
    const std::string payload = round == 0 ? bytes : ets::import::read_file_bytes(gz);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::thread writer([&] {
      for (std::size_t off = 0; off < payload.size();) {
        const ssize_t n = ::write(fds[1], payload.data() + off, payload.size() - off);
        if (n <= 0) break;  // the reader closed its end
        off += static_cast<std::size_t>(n);
      }
      ::close(fds[1]);
    });
    std::vector<ExecutionTrace> got;
    std::string error;
    try {
      got = Tracer::load("/proc/self/fd/" + std::to_string(fds[0]));  // what /dev/stdin is when stdin is a pipe
    } catch (const std::exception& e) {
      error = e.what();
    }
    ::close(fds[0]);  // unblocks a writer the reader left behind
    writer.join();
    INFO("round " << round << ": " << error);
    REQUIRE(got.size() == from_file.size());
    CHECK(got.front().ops.size() == from_file.front().ops.size());
    CHECK(got.front().measured_us == from_file.front().measured_us);
  }
}

TEST_CASE("content whose first bytes are no trace is refused there, not read to its end") {
  namespace fs = std::filesystem;
  using ets::import::could_be_trace;
  using ets::import::detect_format;
  using ets::import::Format;
  using ets::import::kPrefixBytes;
  const std::string zeros(kPrefixBytes, '\0');
  std::string zip = "PK\x03\x04";
  zip.resize(kPrefixBytes, '\x7f');  // a checkpoint (torch.save writes a zip archive)
  const std::string csv_header = "op,dir,params,kduration,space\n";
  std::string csv = csv_header;
  csv.resize(kPrefixBytes, '1');
  const std::string blanks(kPrefixBytes, ' ');
  const std::string json = "{" + std::string(kPrefixBytes, ' ');
  std::string sqlite("SQLite format 3\0", 16);
  sqlite.resize(kPrefixBytes, '\x01');
  CHECK_FALSE(could_be_trace(zeros));
  CHECK_FALSE(could_be_trace(zip));
  CHECK_FALSE(could_be_trace(std::string(4096, 'x')));
  CHECK(could_be_trace(std::string(4095, 'x')));       // the CSV header is looked for in 4 KiB: not all in yet
  CHECK(could_be_trace("\n\n" + std::string(4095, 'x')));  // leading blanks do not count
  CHECK(could_be_trace(csv));
  CHECK(could_be_trace(blanks));
  CHECK(could_be_trace(json));
  CHECK(could_be_trace(sqlite));
  CHECK(could_be_trace(""));                           // nothing yet: the rest decides
  CHECK(could_be_trace(std::string_view("SQLite f")));  // the start of the magic
  // what it refuses, detect_format refuses whatever follows
  for (const std::string& refused : {zeros, zip, std::string(4096, 'x')})
    for (const std::string tail : {"", "{\"traceEvents\": [", "\nop,dir,params\n", "\n{\"format\":\"ets-trace\"}\n"})
      CHECK(detect_format(refused + tail, "x") == Format::Unknown);

  const ets_test::TempDir scratch("ets_prefix");
  // a plain file: its first kPrefixBytes are read, not its 3 MiB; a trace is read whole
  const std::string bin = (scratch.path / "model.pt").string();
  {
    std::ofstream out(bin, std::ios::binary);
    for (int i = 0; i < 48; ++i) out << zip;
  }
  REQUIRE(fs::file_size(bin) == 48 * kPrefixBytes);
  CHECK(ets::import::read_file_bytes(bin, 0, could_be_trace).size() == kPrefixBytes);
  CHECK(ets::import::read_file_bytes(bin).size() == 48 * kPrefixBytes);
  CHECK_THROWS_WITH(Tracer::load(bin), Catch::Contains("ets.import.1"));
  CHECK(Tracer::detect(bin) == "unknown");
  const std::string gz = ets_test::fixture("cpu_small_mlp.json.gz");
  const std::string whole = ets::import::read_file_bytes(gz);
  REQUIRE(whole.size() > 2 * kPrefixBytes);
  CHECK(ets::import::read_file_bytes(gz, 0, could_be_trace) == whole);

  // gzip: 16 MiB of zeros, refused after the first kPrefixBytes inflated; it was ets.io.6 at a 1 MiB limit (read up
  // to the limit first)
  const std::string zgz = (scratch.path / "zeros.gz").string();
  {
    gzFile g = gzopen(zgz.c_str(), "wb9");
    REQUIRE(g);
    for (int i = 0; i < 256; ++i) REQUIRE(gzwrite(g, zeros.data(), static_cast<unsigned>(zeros.size())) > 0);
    REQUIRE(gzclose(g) == Z_OK);
  }
  const std::string got = ets::import::read_file_bytes(zgz, 0, could_be_trace);
  CHECK(got.size() >= kPrefixBytes);
  CHECK(got.size() < kPrefixBytes + (std::size_t{1} << 20));
  Tracer::LoadOptions capped;
  capped.max_bytes = std::size_t{1} << 20;
  CHECK_THROWS_WITH(Tracer::load(zgz, capped), Catch::Contains("ets.import.1"));

  // a pipe that never ends (a device such as /dev/zero, or a program still writing): refused while the writer is
  // still there. It was read until its end, which never came.
  std::signal(SIGPIPE, SIG_IGN);
  const auto refused_while_writing = [](const std::string& payload) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::promise<void> loaded;
    std::future<void> done = loaded.get_future();
    bool writer_gave_up = false;
    std::thread writer([&] {
      for (std::size_t at = 0; at < payload.size();) {
        const ssize_t n = ::write(fds[1], payload.data() + at, payload.size() - at);
        if (n <= 0) break;  // the reader closed its end
        at += static_cast<std::size_t>(n);
      }
      writer_gave_up = done.wait_for(std::chrono::seconds(30)) != std::future_status::ready;
      ::close(fds[1]);
    });
    std::string error;
    try {
      Tracer::load("/proc/self/fd/" + std::to_string(fds[0]));
    } catch (const ets::Error& e) {
      error = e.id();
    }
    loaded.set_value();
    ::close(fds[0]);
    writer.join();
    CHECK(error == "ets.import.1");
    CHECK_FALSE(writer_gave_up);  // the load returned before the writer closed its end
  };
  refused_while_writing(zeros + zeros + zeros + zeros);
  // gzip: 16 MiB of zeros in ~16 KiB. The stream was read in 256 KiB of compressed input at a time, so the reader
  // waited for bytes that a writer pausing there would never send.
  std::ifstream zin(zgz, std::ios::binary);
  const std::string compressed((std::istreambuf_iterator<char>(zin)), std::istreambuf_iterator<char>());
  REQUIRE(compressed.size() < (std::size_t{1} << 15));
  refused_while_writing(compressed);
}

TEST_CASE("Tracer::load with a format out-parameter names the format read, also of a file with no iterations") {
  namespace fs = std::filesystem;
  const ets_test::TempDir scratch("ets_load_format");
  const std::string gz = ets_test::fixture("cpu_small_mlp.json.gz");
  std::string format = "before";
  const auto its = Tracer::load(gz, {}, format);
  CHECK(format == "kineto");
  CHECK(its.size() == Tracer::load(gz).size());
  // A trace file with no iterations: detect() would say the same, but on a pipe it has nothing left to read.
  const auto empty = (scratch.path / "empty.etst").string();
  std::ofstream(empty) << "{\"format\":\"ets-trace\",\"version\":[1,0]}\n{\"end\":{\"traces\":0}}\n";
  format.clear();
  CHECK(Tracer::load(empty, {}, format).empty());
  CHECK(format == "ets-trace");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string payload = ets::import::read_file_bytes(empty);
  REQUIRE(::write(fds[1], payload.data(), payload.size()) == static_cast<ssize_t>(payload.size()));  // fits a pipe
  ::close(fds[1]);
  format.clear();
  const std::string pipe_path = "/proc/self/fd/" + std::to_string(fds[0]);
  CHECK(Tracer::load(pipe_path, {}, format).empty());
  ::close(fds[0]);
  CHECK(format == "ets-trace");
  // Recognised, then refused by its reader: the format is known all the same. Unrecognised: left as it was.
  const auto bad = (scratch.path / "bad.etst").string();
  std::ofstream(bad) << "{\"format\":\"ets-trace\",\"version\":[1,0]}\n{\"n\":\n";
  format.clear();
  CHECK_THROWS(Tracer::load(bad, {}, format));
  CHECK(format == "ets-trace");
  const auto junk = (scratch.path / "junk.txt").string();
  std::ofstream(junk) << "not a trace";
  format = "kept";
  CHECK_THROWS_WITH(Tracer::load(junk, {}, format), Catch::Contains("ets.import.1"));
  CHECK(format == "kept");
}

TEST_CASE("live scopes: a scope that outlives the op it opened in becomes the next op") {
  Tracer tracer;
  {
    // `s = tracer.op(...)` opens the new op before the assignment ends the old one
    auto s = tracer.op("forward", Phase::Forward);
    spin_us(100);
    s = tracer.op("backward", Phase::Backward);
    spin_us(100);
    s = tracer.op("optimizer", Phase::Update);
    spin_us(100);
  }
  tracer.step();
  // an outer scope ended before its inner one: the inner one carries on as an op, later ones nest in it
  {
    auto a = tracer.op("a", Phase::Forward);
    auto b = tracer.op("b", Phase::Forward);
    spin_us(50);
    a.end();
    spin_us(50);
    auto c = tracer.op("c", Phase::Forward);  // inside b
    c.end();
    b.end();
    auto d = tracer.op("d", Phase::Forward);
  }
  tracer.step();
  // a scope left open across step() is cut there and no longer swallows the next iteration's ops
  auto z = tracer.op("z", Phase::Forward);
  tracer.step();
  { auto x = tracer.op("x", Phase::Forward); }
  { auto y = tracer.op("y", Phase::Forward); }
  z.end();
  tracer.step();

  const auto its = tracer.take();
  REQUIRE(its.size() == 4);
  const auto names = [](const ExecutionTrace& t) {
    std::string s;
    for (const auto& op : t.ops) s += op.name + " ";
    return s;
  };
  CHECK(names(its[0]) == "forward backward optimizer ");
  for (const auto& op : its[0].ops) CHECK(op.time_us >= 90);
  CHECK(its[0].ops[1].phase == Phase::Backward);
  CHECK(names(its[1]) == "a b d ");
  CHECK(its[1].ops[0].time_us >= 45);  // a ran until its end(), not until b opened inside it
  CHECK(its[1].ops[1].time_us >= 45);  // b from a's end to its own
  CHECK(names(its[2]) == "z ");
  CHECK(names(its[3]) == "x y ");
  for (std::size_t i = 0; i + 1 < its.size(); ++i)  // no time between iterations is lost
    CHECK(its[i].sum_us() == Approx(its[i + 1].start_us - its[i].start_us).epsilon(1e-12));
}

TEST_CASE("live scopes carry the hyper-parameters, FLOPs and bytes they are given") {
  Tracer tracer;
  HyperParams h;
  h.set(Hyper::OutChannels, 16);
  { auto s = tracer.op("linear", Phase::Forward, {{{4, 8}, DType::Float32}}, h, 1024, 4096); }
  { auto s = tracer.op("relu", Phase::Forward); }
  tracer.step();
  const auto its = tracer.take();
  REQUIRE(its.size() == 1);
  CHECK(its[0].ops[0].flops == 1024);
  CHECK(its[0].ops[0].bytes == 4096);
  CHECK(its[0].ops[0].hyper.get(Hyper::OutChannels) == 16);
  CHECK(std::isnan(its[0].ops[1].bytes));  // not given: unknown, never guessed
}

TEST_CASE("live scopes: time outside any scope after step() is the previous iteration's last gap") {
  // The importers' rule: an iteration ends where the next one starts, so unscoped work between step() and the next
  // first op (data loading) is overhead of the iteration before, and Σ(time + gap) chains without holes.
  Tracer tracer;
  for (int it = 0; it < 3; ++it) {
    spin_us(300);  // "data loading", in no scope
    { auto s = tracer.op("mm", Phase::Forward); spin_us(100); }
    tracer.step();
  }
  const auto its = tracer.take();  // the last one was taken before any next op started: it ends at its step()
  REQUIRE(its.size() == 3);
  for (std::size_t i = 0; i + 1 < its.size(); ++i) {
    CHECK(its[i].sum_us() == Approx(its[i + 1].start_us - its[i].start_us).epsilon(1e-12));
    CHECK(its[i].ops.back().gap_us >= 300);  // the next iteration's data loading
  }
  // the last one, taken before any next op: it ends at its step(), so its ops span exactly from its start to there
  // (the first iteration is measured from its first op, the others step() to step(): their sum reaches step 3)
  CHECK(its[2].start_us + its[2].sum_us() ==
        Approx(its[0].start_us + its[0].measured_us + its[1].measured_us + its[2].measured_us).margin(1e-6));
  CHECK(its[1].measured_us >= 390);  // step() to step(): data loading and the op
  // an empty step() in between breaks the chain: the gap does not run across an iteration with no ops
  { auto s = tracer.op("a", Phase::Forward); }
  tracer.step();
  tracer.step();
  spin_us(200);
  { auto s = tracer.op("b", Phase::Forward); }
  tracer.step();
  const auto more = tracer.take();
  REQUIRE(more.size() == 2);
  // a's iteration ends at its own step(), at least the 200 µs of spinning before b began
  CHECK(more[0].start_us + more[0].sum_us() <= more[1].start_us - 200);
}

#if ETS_TEST_ALLOC_HOOKS
TEST_CASE("an op() that runs out of memory leaves the Tracer as it was") {
  Tracer tracer;
  { auto s = tracer.op("a", Phase::Forward); }
  tracer.step();
  spin_us(500);
  // A short name (no heap string) and no inputs: the allocation that fails is op()'s own.
  ets_test::alloc::fail = ets_test::alloc::Fail::next;
  CHECK_THROWS_AS(tracer.op("b", Phase::Forward), std::bad_alloc);
  ets_test::alloc::fail = ets_test::alloc::Fail::none;
  spin_us(2000);
  { auto s = tracer.op("c", Phase::Forward); }
  tracer.step();
  const auto its = tracer.take();
  REQUIRE(its.size() == 2);
  // The failed op was never recorded, so iteration 0 still ends where iteration 1 starts.
  CHECK(its[0].start_us + its[0].sum_us() == Approx(its[1].start_us).margin(1e-6));
  CHECK(its[1].ops.size() == 1);
}
#endif
