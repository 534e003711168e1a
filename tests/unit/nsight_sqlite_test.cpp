// Nsight Systems SQLite reader: a synthetic capture built with the SQLite API at test time (happy path, expected
// values worked out by hand from the rows below), the real kernel-less fixture, and corrupt / non-SQLite input.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trace.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

struct TempDir : ets_test::TempDir {
  TempDir() : ets_test::TempDir("ets_nsight_test") {}
};

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO(sql << " -> " << (err ? err : ""));
  sqlite3_free(err);
  REQUIRE(rc == SQLITE_OK);
}

// The subset of the nsys export schema (3.x) the reader uses, with the real column names.
const char* kSchema = R"(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT);
INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'Test GPU');
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'kernel_a'), (3, 'aten::relu, seq = 11');
)";

struct Builder {
  sqlite3* db;
  void range(std::int64_t s, std::int64_t e, std::int64_t tid, const std::string& text, bool via_string_id = false) {
    if (via_string_id) {
      exec(db, "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES (" + std::to_string(s) + "," +
                   std::to_string(e) + ",59," + std::to_string(tid) + ",3)");
    } else {
      exec(db, "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text) VALUES (" + std::to_string(s) + "," +
                   std::to_string(e) + ",59," + std::to_string(tid) + ",'" + text + "')");
    }
  }
  void launch(std::int64_t s, std::int64_t e, std::int64_t tid, std::int64_t corr) {
    exec(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(s) + "," + std::to_string(e) + ",0," +
                 std::to_string(tid) + "," + std::to_string(corr) + ",1,0,NULL)");
  }
  void kernel(std::int64_t s, std::int64_t e, std::int64_t corr, std::int64_t global_pid = 1, std::int64_t device = 0) {
    exec(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + std::to_string(s) + "," + std::to_string(e) + "," +
                 std::to_string(device) + ",1,7," + std::to_string(corr) + "," + std::to_string(global_pid) + ",2,2)");
  }
};

// A new database at path with the tables of an Nsight export (kSchema).
sqlite3* new_capture(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  exec(db, kSchema);
  return db;
}

// Two ProfilerSteps on thread 1, backward on thread 2. Times in ns.
std::string make_capture(const fs::path& dir, bool with_nvtx = true) {
  const std::string path = (dir / (with_nvtx ? "capture.sqlite" : "no_nvtx.sqlite")).string();
  sqlite3* db = new_capture(path);
  if (!with_nvtx) exec(db, "DROP TABLE NVTX_EVENTS");
  Builder b{db};
  if (with_nvtx) {
    b.range(1000, 50000, 1, "ProfilerStep#5");
    b.range(1100, 20000, 1, "## forward ##");  // a user range around operators: not an op itself
    b.range(1200, 5000, 1, "aten::conv2d, seq = 10, op_id = 1, sizes = [[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []]");
    b.range(1300, 4900, 1, "aten::convolution, seq = 10, op_id = 2");  // nested: its launches belong to conv2d
    b.range(6000, 7000, 1, "", true);                                   // "aten::relu, seq = 11" via StringIds
    b.range(7100, 7200, 1, "aten::empty");                              // no kernels: not an op
    b.range(21000, 30000, 2, "backward pass");
    b.range(21100, 25000, 2, "aten::convolution_backward, seq = 10");
    b.range(31000, 40000, 1, "Optimizer.step#SGD.step");
    b.range(31100, 32000, 1, "aten::add_");
    b.range(50000, 90000, 1, "ProfilerStep#6");
    b.range(51000, 52000, 1, "aten::relu, seq = 20");
  }
  b.launch(1400, 1500, 1, 1);
  b.kernel(10000, 12000, 1);
  b.launch(1600, 1700, 1, 2);
  b.kernel(12500, 13000, 2);
  b.launch(6100, 6200, 1, 3);
  b.kernel(13500, 14500, 3);
  b.launch(8000, 8100, 1, 4);  // inside "## forward ##" only: no op claims it
  b.kernel(15000, 15100, 4);
  b.launch(21200, 21300, 2, 5);
  b.kernel(16000, 19000, 5);
  b.launch(31200, 31300, 1, 6);
  b.kernel(20000, 20400, 6);
  b.kernel(19500, 19600, 999);  // no launch record
  b.launch(51100, 51200, 1, 7);
  b.kernel(60000, 61000, 7);
  sqlite3_close(db);
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using ets_test::error_id;

}  // namespace

TEST_CASE("synthetic Nsight capture: ops from NVTX ranges timed by their kernels") {
  TempDir dir;
  const std::string path = make_capture(dir.path);
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 2);

  const auto& a = traces[0];
  CHECK(a.iteration == 5);
  CHECK(a.meta.source_format == "nsight");
  CHECK(a.meta.device == "Test GPU");
  CHECK(a.start_us == 10.0);       // first kernel of the step
  CHECK(a.measured_us == 49.0);    // ProfilerStep#5 range
  REQUIRE(a.ops.size() == 4);      // conv2d, relu, convolution_backward, add_
  CHECK(a.ops[0].raw_name == "aten::conv2d");
  CHECK(a.ops[0].name == "conv2d");
  CHECK(a.ops[0].kernels == 2);
  CHECK(a.ops[0].time_us == Approx(2.5));  // 2000 + 500 ns
  CHECK(a.ops[0].gap_us == Approx(1.0));   // next op at 13500
  CHECK(a.ops[0].sequence == 10);
  REQUIRE(a.ops[0].inputs.size() == 3);
  CHECK(a.ops[0].inputs[1].dims == std::vector<std::int64_t>{4, 3, 3, 3});
  CHECK(a.ops[0].phase == ets::Phase::Forward);
  CHECK(a.ops[1].raw_name == "aten::relu");
  CHECK(a.ops[1].sequence == 11);
  CHECK(a.ops[1].time_us == Approx(1.0));
  CHECK(a.ops[1].gap_us == Approx(1.5));   // the stray kernel at 15000 belongs to no op: it is gap
  CHECK(a.ops[2].raw_name == "aten::convolution_backward");
  CHECK(a.ops[2].phase == ets::Phase::Backward);
  CHECK(a.ops[2].time_us == Approx(3.0));
  CHECK(a.ops[2].gap_us == Approx(1.0));
  CHECK(a.ops[3].raw_name == "aten::add_");
  CHECK(a.ops[3].phase == ets::Phase::Update);
  CHECK(a.ops[3].time_us == Approx(0.4));
  CHECK(a.ops[3].gap_us == Approx(39.6));  // until step 6's first kernel at 60000
  CHECK(a.sum_us() == Approx(50.0));       // = 60000 - 10000 ns

  const auto& b = traces[1];
  CHECK(b.iteration == 6);
  REQUIRE(b.ops.size() == 1);
  CHECK(b.ops[0].time_us == Approx(1.0));
  CHECK(b.ops[0].gap_us == Approx(29.0));  // the last iteration runs to its range's end (90000), after its kernel
  CHECK(b.measured_us == 40.0);

  // The in-memory reader gives the same traces (source_path aside, it is the same).
  const auto mem = ets::import::read_nsight_sqlite_bytes(slurp(path), path, ets::import::Options{});
  REQUIRE(mem.size() == traces.size());
  CHECK(mem[0] == traces[0]);
  CHECK(mem[1] == traces[1]);

  // LoadOptions::max_bytes bounds a database by its file size (SQLite reads it in place, not into one buffer)
  const auto size = std::filesystem::file_size(path);
  ets::Tracer::LoadOptions capped;
  capped.max_bytes = size;
  CHECK(ets::Tracer::load(path, capped).size() == traces.size());
  capped.max_bytes = size - 1;
  CHECK_THROWS_WITH(ets::Tracer::load(path, capped), Catch::Contains("ets.io.6"));
  CHECK(ets::Tracer::detect(path, capped) == "nsight");  // told by its first 16 bytes: never refused by size
}

TEST_CASE("Nsight: only the imported process's iteration markers split its iterations (ets.nsight.8)") {
  // torchrun with emit_nvtx on rank 0 only, every rank marking its loop: rank 1's "ProfilerStep#1" (starting 100 ns
  // earlier) took rank 0's first op, splitting its iteration 1 in two, both numbered 1, one measured by rank 1's
  // marker, with no warning.
  const std::int64_t a = std::int64_t{100} << 24, b = std::int64_t{200} << 24;
  TempDir dir;
  const std::string path = (dir.path / "markers_of_another_process.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder w{db};
  w.range(1000, 2000, a | 7, "ProfilerStep#1");
  w.range(2000, 3000, a | 7, "ProfilerStep#2");
  w.range(900, 1300, b | 9, "ProfilerStep#1");  // rank 1: no operator ranges, markers only
  w.range(1300, 2100, b | 9, "ProfilerStep#2");
  w.range(1200, 1300, a | 7, "aten::relu");
  w.launch(1210, 1220, a | 7, 1);
  w.kernel(1250, 1350, 1, a);
  w.range(1400, 1500, a | 7, "aten::sigmoid");
  w.launch(1410, 1420, a | 7, 2);
  w.kernel(1450, 1550, 2, a);
  w.range(2200, 2300, a | 7, "aten::relu");
  w.launch(2210, 2220, a | 7, 3);
  w.kernel(2250, 2350, 3, a);
  sqlite3_close(db);
  ets_test::CapturedWarnings log;
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  const std::vector<std::string> warnings = log.lines;
  REQUIRE(traces.size() == 2);
  CHECK(traces[0].iteration == 1);
  CHECK(traces[0].ops.size() == 2);
  CHECK(traces[0].measured_us == Approx(1.0));  // rank 0's own ProfilerStep#1, 1,000 to 2,000 ns
  CHECK(traces[1].iteration == 2);
  CHECK(traces[1].ops.size() == 1);
  CHECK(traces[1].measured_us == Approx(1.0));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("[ets.nsight.8]") != std::string::npos);
  CHECK(warnings[0].find("2 of 4 iteration markers") != std::string::npos);
}

TEST_CASE("Nsight: the device is the GPU the kernels ran on, not the first one listed") {
  // A machine with two GPUs lists both; the job ran on the second: it used to be named after the first. (An export
  // without TARGET_INFO_CUDA_DEVICE: the kernels' deviceId is read as the GPU's id.)
  TempDir dir;
  const std::string path = (dir.path / "two_gpus.sqlite").string();
  sqlite3* db = new_capture(path);
  exec(db, "DELETE FROM TARGET_INFO_GPU; INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA A100'), (0, 1, 'NVIDIA V100')");
  Builder w{db};
  w.range(1000, 2000, 1, "aten::relu");
  w.launch(1100, 1200, 1, 1);
  w.kernel(3000, 4000, 1, 1, 1);
  w.range(2000, 2500, 1, "aten::sigmoid");
  w.launch(2100, 2200, 1, 2);
  w.kernel(4500, 5000, 2, 1, 1);
  sqlite3_close(db);
  CHECK(ets::import::read_nsight_sqlite(path, ets::import::Options{}).at(0).meta.device == "NVIDIA V100");
  // without the kernel's deviceId column, the first GPU listed, as before
  sqlite3* db2 = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db2) == SQLITE_OK);
  exec(db2, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN deviceId");
  sqlite3_close(db2);
  CHECK(ets::import::read_nsight_sqlite(path, ets::import::Options{}).at(0).meta.device == "NVIDIA A100");
}

TEST_CASE("Nsight: a kernel's deviceId is its process's CUDA index, mapped to the GPU by TARGET_INFO_CUDA_DEVICE") {
  // CUDA_VISIBLE_DEVICES=1 on a machine with an A100 (GPU 0) and a V100 (GPU 1): the process sees the V100 as CUDA
  // device 0, so its kernels carry deviceId 0; the export's TARGET_INFO_CUDA_DEVICE says which GPU that is.
  TempDir dir;
  const std::string path = (dir.path / "visible_devices.sqlite").string();
  sqlite3* db = new_capture(path);
  const std::int64_t proc = std::int64_t{4242} << 24;
  exec(db, "DELETE FROM TARGET_INFO_GPU; INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA A100'), (0, 1, 'NVIDIA V100')");
  exec(db, "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL)");
  exec(db, "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 0, 4242), (0, 0, 777)");  // another process ran on the A100
  Builder w{db};
  w.range(1000, 2000, proc | 1, "aten::relu");
  w.launch(1100, 1200, proc | 1, 1);
  w.kernel(3000, 4000, 1, proc, 0);
  sqlite3_close(db);
  const auto device = [&] { return ets::import::read_nsight_sqlite(path, ets::import::Options{}).at(0).meta.device; };
  CHECK(device() == "NVIDIA V100");
  const auto edit = [&](const std::string& sql) {
    sqlite3* d = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &d) == SQLITE_OK);
    exec(d, sql);
    sqlite3_close(d);
  };
  // no row for the process: used only where every process's row agrees
  edit("UPDATE TARGET_INFO_CUDA_DEVICE SET pid = 999 WHERE pid = 4242");
  CHECK(device() == "NVIDIA A100");  // rows disagree (1 and 0): the index is read as the GPU's id, as without the table
  edit("DELETE FROM TARGET_INFO_CUDA_DEVICE WHERE pid = 777");
  CHECK(device() == "NVIDIA V100");
  // without the kernels' process (no globalPid column), likewise
  edit("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 0, 4242); ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN globalPid");
  CHECK(device() == "NVIDIA V100");
  // an export without the table reads the index as the GPU's id
  edit("DROP TABLE TARGET_INFO_CUDA_DEVICE");
  CHECK(device() == "NVIDIA A100");
}

TEST_CASE("Nsight: negative timestamps end an iteration at its last kernel, not at time 0") {
  // Without markers the capture is one iteration from its first kernel's start to its last kernel's end; the
  // latest end started at 0, so kernels all before t = 0 stretched it to 0 (measured 0.5 us, not 0.3).
  TempDir dir;
  const std::string path = (dir.path / "negative.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder w{db};
  w.range(-900, -800, 1, "aten::relu");
  w.launch(-890, -880, 1, 1);
  w.kernel(-500, -400, 1);
  w.range(-700, -600, 1, "aten::sigmoid");
  w.launch(-690, -680, 1, 2);
  w.kernel(-300, -200, 2);
  sqlite3_close(db);
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 1);
  REQUIRE(traces[0].ops.size() == 2);
  CHECK(traces[0].measured_us == Approx(0.3));
  CHECK(traces[0].ops[1].gap_us == Approx(0.0).margin(1e-9));
  CHECK(traces[0].sum_us() == Approx(0.3));
}

TEST_CASE("Nsight: an iteration range without an op is not returned, and a warning names it (ets.import.11)") {
  TempDir dir;
  const std::string path = (dir.path / "empty_step.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder w{db};
  w.range(0, 1000, 1, "ProfilerStep#1");
  w.range(100, 200, 1, "aten::relu");
  w.launch(110, 120, 1, 1);
  w.kernel(300, 400, 1);
  w.range(1000, 2000, 1, "ProfilerStep#2");
  w.range(1100, 1200, 1, "aten::empty");  // launched nothing: no op
  w.range(2000, 3000, 1, "ProfilerStep#3");
  w.range(2100, 2200, 1, "aten::relu");
  w.launch(2110, 2120, 1, 2);
  w.kernel(2300, 2400, 2);
  w.range(3000, 3010, 1, "ProfilerStep#4");  // the profiler stopped in it
  sqlite3_close(db);
  ets_test::CapturedWarnings log;
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 2);
  CHECK(traces[0].iteration == 1);
  CHECK(traces[1].iteration == 3);
  // Step 1 ends at its range's end, as a last iteration does: not at step 3's first kernel (2.3 us), which counted
  // all of step 2 in its last gap
  CHECK(traces[0].sum_us() == Approx(0.7));
  CHECK(traces[0].measured_us == Approx(1.0));
  CHECK(traces[1].sum_us() == Approx(0.7));
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].rfind("[ets.import.11]", 0) == 0);
  CHECK(log.lines[0].find("2 steps hold no operator with device work and are not returned") != std::string::npos);
  CHECK(log.lines[0].find("steps 2, 4") != std::string::npos);
}

TEST_CASE("Nsight: emit_nvtx step markers; a generic convolution is named by its weight's rank, as in Kineto") {
  TempDir dir;
  const std::string path = (dir.path / "conv.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder b{db};
  b.range(1000, 90000, 1, "ProfilerStep#1, op_id = 9");  // as emit_nvtx spells a record_function range
  b.range(2000, 3000, 1, "aten::convolution, seq = 1, sizes = [[2, 4, 100], [8, 4, 5], [8]]");          // 1-D
  b.range(4000, 5000, 1, "aten::convolution, seq = 2, sizes = [[2, 4, 9, 9, 9], [6, 4, 3, 3, 3], [6]]");  // 3-D
  b.range(6000, 7000, 1, "aten::convolution_backward, seq = 2, sizes = [[2, 6, 7, 7, 7], [2, 4, 9, 9, 9], [6, 4, 3, 3, 3]]");
  b.launch(2100, 2200, 1, 1);
  b.kernel(10000, 11000, 1);
  b.launch(4100, 4200, 1, 2);
  b.kernel(12000, 13000, 2);
  b.launch(6100, 6200, 1, 3);
  b.kernel(14000, 15000, 3);
  sqlite3_close(db);
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 1);
  CHECK(traces[0].iteration == 1);     // the marker was read through its ", op_id = 9"
  CHECK(traces[0].measured_us == 89);  // its range, 1,000 to 90,000 ns
  REQUIRE(traces[0].ops.size() == 3);
  CHECK(traces[0].ops[0].name == "conv1d");
  CHECK(traces[0].ops[1].name == "conv3d");
  CHECK(traces[0].ops[2].name == "conv3d");  // backward: the weight is its third tensor
  CHECK(traces[0].ops[2].phase == ets::Phase::Backward);
}

TEST_CASE("Nsight: hyper-parameters and FLOPs from the recorded shapes, the optimizer, and hand-placed phase ranges") {
  // emit_nvtx's sizes give what the Kineto reader derives from the same shapes (mm: 2·64·128·256 FLOPs, a
  // convolution's kernel and channels); the optimizer is the Optimizer.step# range's class. In a capture without
  // operator ranges the hand-placed "backward" and "optimizer.step" ranges are the ops, and say their own phase.
  TempDir dir;
  const std::string path = (dir.path / "shapes.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder b{db};
  b.range(1000, 90000, 1, "ProfilerStep#1, op_id = 9");
  b.range(2000, 3000, 1, "aten::mm, seq = 3, sizes = [[64, 128], [128, 256]]");
  b.range(4000, 5000, 1, "aten::conv2d, seq = 4, sizes = [[2, 3, 8, 8], [4, 3, 3, 3], [4]]");
  b.range(6000, 9000, 1, "Optimizer.step#SGD.step, op_id = 12");
  b.range(6500, 7000, 1, "aten::add_, seq = 5, sizes = [[4], [4]]");
  const std::int64_t launch_at[] = {2100, 4100, 6600};  // inside mm, conv2d and add_
  for (int i = 1; i <= 3; ++i) {
    b.launch(launch_at[i - 1], launch_at[i - 1] + 100, 1, i);
    b.kernel(10000 + 1000 * i, 10500 + 1000 * i, i);
  }
  sqlite3_close(db);
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 1);
  CHECK(traces[0].meta.optimizer == "sgd");
  REQUIRE(traces[0].ops.size() == 3);
  const ets::OpRecord& mm = traces[0].ops[0];
  CHECK(mm.flops == 2.0 * 64 * 128 * 256);
  CHECK(mm.hyper.get(ets::Hyper::InChannels, -1) == 128);
  CHECK(mm.hyper.get(ets::Hyper::OutChannels, -1) == 256);
  CHECK(std::isnan(mm.bytes));  // no dtype recorded
  const ets::OpRecord& conv = traces[0].ops[1];
  CHECK(conv.hyper.get(ets::Hyper::KernelH, -1) == 3);
  CHECK(conv.hyper.get(ets::Hyper::OutChannels, -1) == 4);
  CHECK(conv.flops > 0);
  CHECK(conv.inputs.size() == 3);  // as recorded
  CHECK(traces[0].ops[2].phase == ets::Phase::Update);

  const std::string plain = (dir.path / "plain.sqlite").string();
  db = new_capture(plain);
  Builder p{db};
  const char* names[] = {"forward", "backward", "optimizer.step"};
  for (int i = 0; i < 3; ++i) {
    p.range(1000 + 10000 * i, 9000 + 10000 * i, 1, names[i]);
    p.launch(1100 + 10000 * i, 1200 + 10000 * i, 1, i + 1);
    p.kernel(50000 + 1000 * i, 50500 + 1000 * i, i + 1);
  }
  sqlite3_close(db);
  const auto hand = ets::import::read_nsight_sqlite(plain, ets::import::Options{});
  REQUIRE(hand.size() == 1);
  REQUIRE(hand[0].ops.size() == 3);
  CHECK(hand[0].ops[0].phase == ets::Phase::Forward);
  CHECK(hand[0].ops[1].phase == ets::Phase::Backward);
  CHECK(hand[0].ops[2].phase == ets::Phase::Update);
}

TEST_CASE("the real Nsight fixture has no kernel table: a stable error id naming it", "[shared]") {
  ETS_REQUIRE_SHARED("nsight/weatherbench2_report1.sqlite");
  const std::string path = ets_test::shared_data("nsight/weatherbench2_report1.sqlite");
  try {
    ets::import::read_nsight_sqlite(path, ets::import::Options{});
    FAIL("expected an error");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.nsight.3");
    CHECK(e.code() == ets::Errc::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("CUPTI_ACTIVITY_KIND_KERNEL"));
  }
  CHECK(error_id([&] { ets::import::read_nsight_sqlite_bytes(slurp(path), path, {}); }) == "ets.nsight.3");
}

TEST_CASE("Nsight reader: missing tables, non-SQLite and corrupt input") {
  TempDir dir;
  const std::string no_nvtx = make_capture(dir.path, false);
  try {
    ets::import::read_nsight_sqlite(no_nvtx, {});
    FAIL("expected an error");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.nsight.4");
    CHECK_THAT(e.what(), Catch::Contains("NVTX_EVENTS"));
  }
  CHECK(error_id([&] { ets::import::read_nsight_sqlite((dir.path / "absent.sqlite").string(), {}); }) == "ets.nsight.1");
  const std::string text = (dir.path / "text.sqlite").string();
  std::ofstream(text) << "{\"traceEvents\": []}";
  CHECK(error_id([&] { ets::import::read_nsight_sqlite(text, {}); }) == "ets.nsight.2");
  CHECK(error_id([&] { ets::import::read_nsight_sqlite_bytes("", "empty", {}); }) == "ets.nsight.2");
  CHECK(error_id([&] { ets::import::read_nsight_sqlite_bytes("SQLite format 3", "short", {}); }) == "ets.nsight.2");

  // Truncations and byte flips of a valid capture: ets::Error or a result, never a crash.
  const std::string good = slurp(make_capture(dir.path));
  REQUIRE(good.size() > 4096);
  int errors = 0;
  for (std::size_t cut = 0; cut < good.size(); cut += 509) {
    try {
      ets::import::read_nsight_sqlite_bytes(std::string_view(good).substr(0, cut), "cut", {});
    } catch (const ets::Error&) {
      ++errors;
    }
  }
  CHECK(errors > 0);
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string bad = good;
    for (int k = 0; k < 8; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    try {
      ets::import::read_nsight_sqlite_bytes(bad, "flipped", {});
    } catch (const ets::Error&) {
    }
  }
}

TEST_CASE("Nsight reader: a page whose cell pointer lies past the page's end is refused on every run") {
  // SQLite read such a cell from whatever memory lay beyond the page: a fuzzed export gave rows on some runs and
  // "malformed" on others, as the process's address layout fell. Here the kernel table's second cell points past
  // its page (SQLite 3.40 alone returns a row of NULLs for it).
  TempDir dir;
  const std::string path = make_capture(dir.path);
  std::int64_t root = 0;
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'", -1,
                               &s, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    root = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  std::string bytes = slurp(path);
  const std::size_t page_size = (static_cast<unsigned char>(bytes[16]) << 8) | static_cast<unsigned char>(bytes[17]);
  const std::size_t page = static_cast<std::size_t>(root - 1) * page_size;
  REQUIRE(root > 1);
  REQUIRE(page + page_size <= bytes.size());
  REQUIRE(static_cast<unsigned char>(bytes[page]) == 0x0D);  // a leaf page of a table: all its rows
  REQUIRE(((static_cast<unsigned char>(bytes[page + 3]) << 8) | static_cast<unsigned char>(bytes[page + 4])) > 1);
  bytes[page + 10] = static_cast<char>(0xF0);  // the second cell pointer: 0xF000, past a 4 KiB page
  bytes[page + 11] = 0;
  {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  for (const bool in_memory : {false, true}) {
    INFO(in_memory);
    CHECK(error_id([&] {
            if (in_memory)
              ets::import::read_nsight_sqlite_bytes(bytes, path, {});
            else
              ets::import::read_nsight_sqlite(path, {});
          }) == "ets.nsight.2");
  }
}

TEST_CASE("Nsight reader: timestamps whose differences would wrap 64 bits are ets.nsight.6") {
  TempDir dir;
  const std::string path = (dir.path / "far.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder b{db};
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  b.range(lo, hi, 1, "aten::relu, seq = 1");
  b.launch(lo + 10, lo + 20, 1, 1);
  b.kernel(lo, hi, 1);  // one kernel spanning the whole int64 range
  sqlite3_close(db);
  CHECK(error_id([&] { ets::import::read_nsight_sqlite(path, {}); }) == "ets.nsight.6");
}

TEST_CASE("Nsight reader: a table without a column the reader needs is ets.nsight.5, naming the query") {
  const std::pair<const char*, const char*> renames[] = {{"CUPTI_ACTIVITY_KIND_KERNEL", "correlationId"},
                                                         {"CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"},
                                                         {"NVTX_EVENTS", "globalTid"}};
  for (const auto& [table, column] : renames) {
    INFO(table << "." << column);
    TempDir dir;
    const std::string path = make_capture(dir.path);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    exec(db, std::string("ALTER TABLE ") + table + " RENAME COLUMN " + column + " TO renamed");
    sqlite3_close(db);
    const std::string text = ets_test::error_text([&] { ets::import::read_nsight_sqlite(path, {}); });
    CHECK_THAT(text, Catch::StartsWith("[ets.nsight.5]") && Catch::Contains(table) && Catch::Contains(column));
    CHECK(error_id([&] { ets::import::read_nsight_sqlite_bytes(slurp(path), path, {}); }) == "ets.nsight.5");
  }
}

TEST_CASE("Nsight reader: a WAL-mode export is read without creating files beside it") {
  TempDir dir;
  const std::string path = make_capture(dir.path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  exec(db, "PRAGMA journal_mode=WAL");
  sqlite3_close(db);  // the last connection checkpoints and removes -wal / -shm
  REQUIRE_FALSE(fs::exists(path + "-wal"));
  fs::create_directories(dir.path / "plain");
  const auto before = ets::import::read_nsight_sqlite(make_capture(dir.path / "plain"), {});
  const auto traces = ets::import::read_nsight_sqlite(path, {});
  CHECK(traces.size() == before.size());
  CHECK(traces.front().ops.size() == before.front().ops.size());
  CHECK_FALSE(fs::exists(path + "-wal"));
  CHECK_FALSE(fs::exists(path + "-shm"));
  // the same bytes read from memory (how a .sqlite.gz export is read) give the same iterations
  const std::string image = slurp(path);
  REQUIRE(image[18] == 2);
  const auto mem = ets::import::read_nsight_sqlite_bytes(image, path, {});
  REQUIRE(mem.size() == before.size());
  CHECK(mem.front().ops.size() == before.front().ops.size());
  CHECK(mem.front().measured_us == before.front().measured_us);
}

TEST_CASE("Nsight: a capture of two processes imports one, its kernels joined within it (ets.nsight.8)") {
  // torchrun-style: two processes (global ids: pid in the upper bits, thread in the low 24) reuse correlation ids.
  // Joined by id alone, each launch took the other process's kernel as well (time 20 instead of 10, 2 kernels).
  const std::int64_t a = std::int64_t{100} << 24, b = std::int64_t{200} << 24;
  TempDir dir;
  const std::string path = (dir.path / "two_processes.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder w{db};
  w.range(1000, 90000, a | 7, "ProfilerStep#3");  // only process a marks iterations
  w.range(2000, 3000, a | 7, "aten::relu");
  w.launch(2100, 2200, a | 7, 5);
  w.kernel(10000, 20000, 5, a);
  w.range(2000, 3000, b | 9, "aten::relu");
  w.launch(2100, 2200, b | 9, 5);
  w.kernel(30000, 40000, 5, b);
  w.range(4000, 5000, b | 9, "aten::sigmoid");  // process b has more ops, but no markers
  w.launch(4100, 4200, b | 9, 6);
  w.kernel(41000, 42000, 6, b);
  sqlite3_close(db);
  ets_test::CapturedWarnings log;
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  const std::vector<std::string> warnings = log.lines;
  REQUIRE(traces.size() == 1);
  CHECK(traces[0].iteration == 3);
  REQUIRE(traces[0].ops.size() == 1);
  CHECK(traces[0].ops[0].kernels == 1);
  CHECK(traces[0].ops[0].time_us == Approx(10.0));
  CHECK(traces[0].start_us == Approx(10.0));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("[ets.nsight.8]") != std::string::npos);
  CHECK(warnings[0].find("process 100") != std::string::npos);
}

TEST_CASE("Nsight: a GPU name longer than a metadata field may hold is refused (each iteration copies it)") {
  TempDir dir;
  const std::string path = make_capture(dir.path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  exec(db, "UPDATE TARGET_INFO_GPU SET name = '" + std::string(5000, 'g') + "'");
  sqlite3_close(db);
  CHECK(error_id([&] { ets::import::read_nsight_sqlite(path, ets::import::Options{}); }) == "ets.import.6");
}

TEST_CASE("Nsight: views are not read, and repeated string ids do not multiply ranges") {
  TempDir dir;
  const std::string path = make_capture(dir.path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  // StringIds rows repeating id 3 (the relu range's text): joined in SQL, each NVTX range of that id became as
  // many ranges as rows; the first row of an id counts
  exec(db, "CREATE TABLE S2 AS SELECT * FROM StringIds; DROP TABLE StringIds;"
           "CREATE TABLE StringIds (id INTEGER NOT NULL, value TEXT NOT NULL); INSERT INTO StringIds SELECT * FROM S2;"
           "INSERT INTO StringIds VALUES (3, 'aten::sigmoid, seq = 12'), (3, 'aten::tanh, seq = 13');");
  sqlite3_close(db);
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 2);
  REQUIRE(traces[0].ops.size() == 4);
  CHECK(traces[0].ops[1].raw_name == "aten::relu");
  CHECK(traces[0].ops[1].kernels == 1);
  // a kernel table that is a view (rows computed, without bound: a file's size would not bound the work)
  const std::string view = (dir.path / "view.sqlite").string();
  db = new_capture(view);
  exec(db, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS "
           "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 100000000) "
           "SELECT 10 * x AS start, 10 * x + 5 AS end, x AS correlationId, 0 AS globalPid FROM r");
  sqlite3_close(db);
  CHECK(error_id([&] { ets::import::read_nsight_sqlite(view, ets::import::Options{}); }) == "ets.nsight.3");
}

TEST_CASE("Nsight: overlapping iteration markers and phase marks, ops asked in any order") {
  // Each op joins the first iteration, in start order, that holds its range's start; a phase mark other than the op
  // itself must contain it on its thread.
  TempDir dir;
  const std::string path = (dir.path / "overlap.sqlite").string();
  sqlite3* db = new_capture(path);
  Builder w{db};
  w.range(0, 100000, 1, "ProfilerStep#1");
  w.range(50000, 200000, 1, "ProfilerStep#2");   // begins before step 1 ends
  w.range(55000, 58000, 1, "aten::optimizer_like_op");  // an op whose own name says optimizer: not inside a mark
  w.range(60000, 99000, 1, "Optimizer.step#SGD.step");
  w.range(61000, 62000, 1, "aten::add_");          // in step 1 (first by start) and inside the optimizer mark
  w.range(120000, 121000, 1, "aten::mul");         // step 1 has ended: step 2
  w.range(40000, 41000, 1, "aten::relu");          // only step 1 holds it
  w.range(40000, 41000, 2, "backward");            // a backward mark, but on another thread
  w.range(130000, 140000, 2, "backward");
  w.range(131000, 132000, 2, "aten::mm");          // on thread 2 inside the mark; at 131,000 only step 2 holds it
  const std::int64_t launches[][2] = {{55100, 1}, {61100, 2}, {120100, 3}, {40100, 4}, {131100, 5}};
  for (const auto& l : launches) {
    w.launch(l[0], l[0] + 10, l[1] == 5 ? 2 : 1, l[1]);
    w.kernel(300000 + 1000 * l[1], 300000 + 1000 * l[1] + 100, l[1]);
  }
  sqlite3_close(db);
  const auto traces = ets::import::read_nsight_sqlite(path, ets::import::Options{});
  REQUIRE(traces.size() == 2);
  REQUIRE(traces[0].ops.size() == 3);  // relu, optimizer_like_op, add_ (step 1), by their kernels' order
  CHECK(traces[0].iteration == 1);
  CHECK(traces[0].ops[0].raw_name == "aten::optimizer_like_op");
  CHECK(traces[0].ops[0].phase == ets::Phase::Forward);
  CHECK(traces[0].ops[1].raw_name == "aten::add_");
  CHECK(traces[0].ops[1].phase == ets::Phase::Update);
  CHECK(traces[0].ops[2].raw_name == "aten::relu");
  CHECK(traces[0].ops[2].phase == ets::Phase::Forward);
  REQUIRE(traces[1].ops.size() == 2);
  CHECK(traces[1].iteration == 2);
  CHECK(traces[1].ops[0].raw_name == "aten::mul");
  CHECK(traces[1].ops[1].raw_name == "aten::mm");
  CHECK(traces[1].ops[1].phase == ets::Phase::Backward);
}
