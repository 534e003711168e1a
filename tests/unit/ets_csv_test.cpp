// The ETS authors' reference CSV reader: the three shared sample files, their iteration label, decoded params.
// Expected values come from PROVENANCE.txt (row counts) and the published model architectures, not from the reader.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <cstring>
#include <string>
#include <vector>

#include "ets/error.hpp"
#include "ets/trace.hpp"
#include "import/importers.hpp"
#include "test_support.hpp"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Independent minimal CSV split (quotes only around params) for the label check.
std::vector<std::vector<std::string>> rows_of(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f(1);
    bool q = false;
    for (char c : line) {
      if (c == '"') q = !q;
      else if (c == ',' && !q) f.emplace_back();
      else f.back().push_back(c);
    }
    rows.push_back(f);
  }
  return rows;
}

std::vector<ets::ExecutionTrace> read_csv(const std::string& text, const std::string& name = "x.csv") {
  return ets::import::read_ets_csv(text, name, ets::import::Options{});
}

std::string error_id(const std::string& text) {
  try {
    read_csv(text);
  } catch (const ets::Error& e) {
    return e.id();
  }
  return "no error";
}

const char* kHeader =
    "op,dir,params,grid,block,flops,bytes,rStartTime,rEndTime,kStartTime,kEndTime,staticSharedMemory,space,space1,"
    "seq,kernels,rduration,kduration,batch,h,w,input_type\n";

}  // namespace

TEST_CASE("the three reference CSVs import and reproduce sum(kduration + space) exactly", "[shared]") {
  struct File {
    const char* name;
    std::size_t rows;  // from PROVENANCE.txt
    std::int64_t batch;
    ets::DType dtype;
  };
  const File files[] = {{"T4CPUALL__alexnet.1_7.csv", 91, 2, ets::DType::Float32},
                        {"2080TiCPUALL__vgg11.1_7.csv", 125, 2, ets::DType::Float32},
                        {"T4CPUALL__vgg11_bn.50_7.csv", 189, 8, ets::DType::Float16}};
  for (const auto& f : files) {
    const std::string rel = std::string("ets-reference/") + f.name;
    ETS_REQUIRE_SHARED(rel);
    INFO(f.name);
    const std::string path = ets_test::shared_data(rel);
    const std::string text = slurp(path);
    const auto traces = ets::import::read_ets_csv(text, path, ets::import::Options{});
    REQUIRE(traces.size() == 1);
    const auto& t = traces[0];
    REQUIRE(t.ops.size() == f.rows);
    CHECK(t.meta.source_format == "ets-csv");
    CHECK(t.meta.batch_size == f.batch);

    // The label: kEndTime[last] - kStartTime[first], in ns, from an independent parse of the file.
    const auto rows = rows_of(text);
    REQUIRE(rows.size() == f.rows + 1);
    const auto& head = rows[0];
    auto col = [&](const char* name) {
      for (std::size_t i = 0; i < head.size(); ++i)
        if (head[i] == name) return i;
      FAIL("no column " << name);
      return std::size_t{0};
    };
    const std::int64_t span = std::stoll(rows.back()[col("kEndTime")]) - std::stoll(rows[1][col("kStartTime")]);
    std::int64_t sum = 0;
    for (std::size_t r = 1; r < rows.size(); ++r)
      sum += std::stoll(rows[r][col("kduration")]) + std::stoll(rows[r][col("space")]);
    CHECK(sum == span);
    CHECK(t.measured_us == static_cast<double>(span) / 1000.0);
    CHECK(std::llround(t.measured_us * 1000.0) == span);
    // Σ(time + gap) of the imported ops, back in integer ns, is exactly the label.
    std::int64_t ops_ns = 0;
    for (const auto& op : t.ops) ops_ns += std::llround(op.time_us * 1000) + std::llround(op.gap_us * 1000);
    CHECK(ops_ns == span);
    CHECK(t.sum_us() == Approx(t.measured_us).epsilon(1e-12));

    // Phases appear in training order: forward, then backward, then the optimizer update.
    int phase_changes = 0;
    for (std::size_t i = 1; i < t.ops.size(); ++i) {
      CHECK(static_cast<int>(t.ops[i].phase) >= static_cast<int>(t.ops[i - 1].phase));
      phase_changes += t.ops[i].phase != t.ops[i - 1].phase;
    }
    CHECK(phase_changes == 2);
    CHECK(t.ops.front().phase == ets::Phase::Forward);
    CHECK(t.ops.back().phase == ets::Phase::Update);

    // First op of all three nets is a 3-input-channel conv2d on a batch-sized image.
    const auto& conv = t.ops.front();
    CHECK(conv.name == "conv2d");
    CHECK(conv.raw_name == "op203");
    REQUIRE(conv.inputs.size() == 2);
    CHECK(conv.inputs[0].dims[0] == f.batch);
    CHECK(conv.inputs[0].dims[1] == 3);
    CHECK(conv.inputs[0].dtype == f.dtype);
    CHECK(conv.hyper.get(ets::Hyper::InChannels) == 3);
    CHECK(conv.hyper.get(ets::Hyper::OutChannels) == 64);
    CHECK(conv.flops > 0);
  }
}

TEST_CASE("AlexNet's first conv and classifier decode to the published architecture", "[shared]") {
  ETS_REQUIRE_SHARED("ets-reference/T4CPUALL__alexnet.1_7.csv");
  const std::string path = ets_test::shared_data("ets-reference/T4CPUALL__alexnet.1_7.csv");
  const auto t = ets::import::read_ets_csv(slurp(path), path, ets::import::Options{}).at(0);
  // torchvision AlexNet: Conv2d(3, 64, kernel_size=11, stride=4, padding=2); input here is 64x64.
  const auto& c = t.ops.front();
  CHECK(c.inputs[0].dims == std::vector<std::int64_t>{2, 3, 64, 64});
  CHECK(c.inputs[1].dims == std::vector<std::int64_t>{64, 3, 11, 11});
  CHECK(c.hyper.get(ets::Hyper::KernelH) == 11);
  CHECK(c.hyper.get(ets::Hyper::StrideW) == 4);
  CHECK(c.hyper.get(ets::Hyper::PadH) == 2);
  CHECK(c.hyper.get(ets::Hyper::Groups) == 1);
  // classifier: Linear(256 * 6 * 6, 4096)
  bool found = false;
  for (const auto& op : t.ops) {
    if (op.name != "linear" || op.phase != ets::Phase::Forward) continue;
    CHECK(op.hyper.get(ets::Hyper::InChannels) == 9216);
    CHECK(op.hyper.get(ets::Hyper::OutChannels) == 4096);
    REQUIRE(op.inputs.size() == 3);
    CHECK(op.inputs[0].dims == std::vector<std::int64_t>{2, 9216});
    found = true;
    break;
  }
  CHECK(found);
  CHECK(t.meta.model == "alexnet");
  CHECK(t.meta.environment == "T4CPUALL");
  CHECK(t.iteration == 7);
  CHECK(t.meta.extra.at("input_type") == "fp32");
}

TEST_CASE("ETS CSV: the label is the kernel span, with warning ets.csv.8 only where sum(kduration + space) differs") {
  const std::string a =  // kernel 1000-3000 ns, kduration 2000, space 500: the next kernel starts at 3500
      "203,1,\"[2, 3, 8, 8, 4, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\",1,1,"
      "10.0,20.0,0,5,1000,3000,0,500,0,1,1,5,2000,2,8,8,1\n";
  std::string b = a;  // kernel 3500-5500 ns, the last: no space after it
  b.replace(b.find("1000,3000,0,500"), 15, "3500,5500,0,0");
  {
    ets_test::CapturedWarnings log;
    const auto t = read_csv(std::string(kHeader) + a + b);
    CHECK(t.at(0).measured_us == 4.5);
    CHECK(t.at(0).sum_us() == 4.5);
    CHECK(log.lines.empty());
  }
  {
    ets_test::CapturedWarnings log;
    const auto t = read_csv(std::string(kHeader) + a + a);  // the second kernel again at 1000-3000: span 2000 ns
    CHECK(t.at(0).measured_us == 2.0);
    CHECK(t.at(0).sum_us() == 5.0);
    REQUIRE(log.lines.size() == 1);
    CHECK_THAT(log.lines[0], Catch::StartsWith("[ets.csv.8]") && Catch::Contains("5000 ns") &&
                                 Catch::Contains("2000 ns"));
  }
}

TEST_CASE("ETS CSV: every row must repeat the first row's batch, input type and image size (ets.csv.10)") {
  // ..., kduration 2000, batch 2, h 8, w 8, input_type 1
  const std::string row =
      "203,1,\"[2, 3, 8, 8, 4, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\",1,1,"
      "10.0,20.0,0,5,1000,3000,0,500,0,1,1,5,2000,2,8,8,1\n";
  REQUIRE(read_csv(std::string(kHeader) + row + row).at(0).ops.size() == 2);
  const std::pair<const char*, const char*> changes[] = {
      {",2000,2,8,8,1\n", ",2000,4,8,8,1\n"},  // another batch
      {",2000,2,8,8,1\n", ",2000,2,8,8,2\n"},  // another input type (fp16)
      {",2000,2,8,8,1\n", ",2000,2,16,8,1\n"},
      {",2000,2,8,8,1\n", ",2000,2,8,abc,1\n"}};
  for (const auto& [from, to] : changes) {
    INFO(to);
    std::string second = row;
    second.replace(second.find(from), std::strlen(from), to);
    CHECK(error_id(std::string(kHeader) + row + second) == "ets.csv.10");
  }
  std::string garbage = row;  // no number where one is read: as on the first row
  garbage.replace(garbage.find(",2000,2,"), 8, ",2000,x,");
  CHECK(error_id(std::string(kHeader) + row + garbage) == "ets.csv.3");
  CHECK(error_id(std::string(kHeader) + garbage) == "ets.csv.3");
}

TEST_CASE("malformed ETS CSV input raises documented ids") {
  const std::string row =
      "203,1,\"[2, 3, 8, 8, 4, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\",1,1,"
      "10.0,20.0,0,5,1000,3000,0,500,0,1,1,5,2000,2,8,8,1\n";
  const auto ok = read_csv(std::string(kHeader) + row + row);
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].ops.size() == 2);
  CHECK(ok[0].ops[0].time_us == 2.0);
  CHECK(ok[0].ops[0].gap_us == 0.5);
  CHECK(ok[0].ops[0].start_us == 1.0);
  // a header after blank lines is found (detection skips them too), and row numbers in errors count them
  CHECK(read_csv("\n\n" + std::string(kHeader) + row)[0].ops.size() == 1);
  try {
    read_csv("\n\n" + std::string(kHeader) + "203,1,2\n");
    FAIL("a short row must be refused");
  } catch (const ets::Error& e) {
    CHECK(std::string(e.what()).find("x.csv:4:") != std::string::npos);
  }
  // gzip is transparent: "x.csv.gz" names the trace as "x.csv" does (the iteration used to be lost)
  for (const char* name : {"T4CPUALL__alexnet.1_7.csv", "T4CPUALL__alexnet.1_7.csv.gz"}) {
    INFO(name);
    const auto named = read_csv(std::string(kHeader) + row, name);
    CHECK(named[0].iteration == 7);
    CHECK(named[0].meta.model == "alexnet");
    CHECK(named[0].meta.extra.count("config") == 1);
    CHECK(named[0].meta.extra.at("config") == "1");
  }

  CHECK(error_id("") == "ets.csv.1");
  CHECK(error_id("a,b,c\n1,2,3\n") == "ets.csv.1");
  CHECK(error_id(kHeader) == "ets.csv.6");
  CHECK(error_id(std::string(kHeader) + "203,1,2\n") == "ets.csv.2");
  CHECK(error_id(std::string(kHeader) + "203,1,\"[1, 2\n") == "ets.csv.2");
  std::string bad = row;
  CHECK(error_id(std::string(kHeader) + bad.replace(bad.find("10.0"), 4, "ten!")) == "ets.csv.3");
  // one leading '+' is a sign, as the other number readers take it, in real and integer columns; two signs are not
  bad = row;
  const auto plus = read_csv(std::string(kHeader) + bad.replace(bad.find(",2000,"), 6, ",+2000,").replace(bad.find("10.0"), 4, "+10.0"));
  CHECK(plus[0].ops[0].time_us == ok[0].ops[0].time_us);
  CHECK(plus[0].ops[0].flops == ok[0].ops[0].flops);
  for (const char* sign : {"+-2000", "++2000", "+", "-+2000"}) {
    bad = row;
    INFO(sign);
    CHECK(error_id(std::string(kHeader) + bad.replace(bad.find(",2000,"), 6, std::string(",") + sign + ",")) == "ets.csv.3");
  }
  bad = row;
  CHECK(error_id(std::string(kHeader) + bad.replace(bad.find("[2,"), 3, "[x,")) == "ets.csv.4");
  bad = row;
  CHECK(error_id(std::string(kHeader) + bad.replace(0, 5, "203,4")) == "ets.csv.5");
  bad = row;
  CHECK(error_id(std::string(kHeader) + bad.replace(bad.find(",2000,"), 6, ",-5,")) == "ets.csv.7");
  // every truncation of a valid file either reads or raises ets::Error
  const std::string full = std::string(kHeader) + row + row;
  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    try {
      read_csv(full.substr(0, cut));
    } catch (const ets::Error&) {
    }
  }
}

TEST_CASE("ETS CSV: a header column twice, a negative batch or dim, an oversized h / w are not taken silently") {
  const std::string row =
      "203,1,\"[2, 3, 8, 8, 4, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\",1,1,"
      "10.0,20.0,0,5,1000,3000,0,500,0,1,1,5,2000,2,8,8,1\n";
  const auto ok = read_csv(std::string(kHeader) + row);
  REQUIRE(ok[0].ops.at(0).inputs.size() == 2);
  CHECK(ok[0].meta.batch_size == 2);

  // a second "op" column (holding relu's id) made the last one win: the conv row read as relu, silently
  const std::string dup_header = std::string(kHeader).insert(std::string(kHeader).size() - 1, ",op");
  CHECK(error_id(dup_header + row.substr(0, row.size() - 1) + ",152\n") == "ets.csv.1");
  CHECK(error_id(std::string(kHeader).insert(std::string(kHeader).size() - 1, ",kduration") + row.substr(0, row.size() - 1) +
                 ",1\n") == "ets.csv.1");

  // a negative batch is an unknown batch size, said (as the Kineto reader does), not a feature of -3
  std::string bad = row;
  bad.replace(bad.find(",2000,2,"), 8, ",2000,-3,");
  ets_test::CapturedWarnings log;
  const auto negative_batch = read_csv(std::string(kHeader) + bad);
  CHECK(negative_batch[0].meta.batch_size == 0);
  CHECK(std::count_if(log.lines.begin(), log.lines.end(),
                      [](const std::string& l) { return l.find("[ets.csv.9]") != std::string::npos; }) == 1);

  // negative sizes are no shape: the op's shapes are unknown (a conv's H, a generic op's dims)
  bad = row;
  bad.replace(bad.find("[2, 3, 8, 8,"), 12, "[2, 3, -8, 8,");
  CHECK(read_csv(std::string(kHeader) + bad)[0].ops.at(0).inputs.empty());
  const std::string relu =
      "152,1,\"[4, -2, 64, 15, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\",1,1,"
      "10.0,20.0,0,5,1000,3000,0,500,0,1,1,5,2000,2,8,8,1\n";
  CHECK(read_csv(std::string(kHeader) + relu)[0].ops.at(0).inputs.empty());
  std::string relu_ok = relu;
  relu_ok.replace(relu_ok.find("-2,"), 3, "2, ");
  REQUIRE(read_csv(std::string(kHeader) + relu_ok)[0].ops.at(0).inputs.size() == 1);

  // a quote inside a cell is a character, not the start of a quoted section: 1"0" is no number (it read as 10)
  bad = row;
  CHECK(error_id(std::string(kHeader) + bad.replace(bad.find(",2000,"), 6, ",2\"000\",")) == "ets.csv.3");
  bad = row;  // a quoted cell after blanks is still quoted
  CHECK(read_csv(std::string(kHeader) + bad.replace(bad.find(",2000,"), 6, ", \"2000\","))[0].ops.at(0).time_us == 2.0);
  // params ending in a comma is no list of integers
  bad = row;
  CHECK(error_id(std::string(kHeader) + bad.replace(bad.find(", 0]"), 4, ", 0,]")) == "ets.csv.4");

  // h / w are metadata every iteration keeps: longer than a metadata field may hold is refused (ets.import.6)
  bad = row;
  bad.replace(bad.find(",2,8,8,1"), 8, ",2," + std::string(5000, '8') + ",8,1");
  CHECK(error_id(std::string(kHeader) + bad) == "ets.import.6");
}
