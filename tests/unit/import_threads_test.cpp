// ets-test-labels: unit;concurrency
// Tracer::load from many threads at once, every format (Kineto CPU and GPU, PyTorch ET, Nsight, ETS CSV, .etst; plain
// and gzip; read or refused): each load gives what a load alone gives, and warnings reach the sink from any thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/tracer.hpp"
#include "test_support.hpp"

namespace {
// The sink is process-wide: a test that installs one removes it when done, also when it fails.
struct SinkGuard {
  ~SinkGuard() { ets::set_log_sink({}); }
};

// What a load gives: its iterations, or its error's message.
struct Outcome {
  std::vector<ets::ExecutionTrace> iterations;
  std::string error;
  bool operator==(const Outcome& o) const { return iterations == o.iterations && error == o.error; }
};
Outcome load(const std::string& path) {
  try {
    return {ets::Tracer::load(path), ""};
  } catch (const ets::Error& e) {
    return {{}, e.what()};
  }
}

// A scheduler registers jobs from several threads (Predictor::load_job is documented thread-safe): the importers,
// simdjson's and SQLite's state, zlib and the log sink must not share anything unguarded. Under TSan (the CI's
// concurrency run) a data race fails the test even where the results come out right.
void load_on_threads(const std::vector<std::string>& files) {
  INFO(files.size() << " files");
  std::vector<Outcome> alone;
  for (const auto& f : files) {
    alone.push_back(load(f));
    INFO(f << ": " << alone.back().error);
    REQUIRE((alone.back().iterations.empty() != alone.back().error.empty()));
    REQUIRE(load(f) == alone.back());  // a load is deterministic: what the threads are held to
  }
  SinkGuard guard;
  std::atomic<long> warnings{0};
  ets::set_log_sink([&](ets::LogLevel level, std::string_view) {
    if (level == ets::LogLevel::warn) ++warnings;
  });
  for (const auto& f : files) load(f);
  const long warnings_alone = warnings;
  REQUIRE(warnings_alone > 0);  // some file warns: the threads' warnings are counted against the loads alone
  warnings = 0;

  constexpr int kThreads = 6, kRounds = 2;
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r)
        for (std::size_t k = 0; k < files.size(); ++k) {
          const std::size_t i = (k + static_cast<std::size_t>(t)) % files.size();  // each thread its own order
          try {
            if (!(load(files[i]) == alone[i])) ++mismatches;
          } catch (...) {  // not an ets::Error
            ++failures;
          }
        }
    });
  for (auto& th : pool) th.join();
  CHECK(failures == 0);
  CHECK(mismatches == 0);
  CHECK(warnings == warnings_alone * kThreads * kRounds);
}
}  // namespace

TEST_CASE("Tracer::load on 6 threads at once: Kineto, PyTorch ET, ETS CSV, .etst, a cut gzip, as loaded alone",
          "[tracer][threads]") {
  const ets_test::TempDir scratch("ets_import_threads");
  std::vector<std::string> files = {
      ets_test::fixture("cpu_small_mlp.json.gz"),                          // Kineto, CPU rule
      ets_test::fixture("et_pair_sgd.et.json.gz"),                         // PyTorch Execution Trace
      ets_test::fixture("gan_two_adams_module.kineto.json.gz"),            // Kineto without steps (ets.kineto.9)
      ets_test::fixture("../../examples/traces/squeezenet-0048.etst.gz"),  // ETS trace
      (scratch.path / "T4CPUALL__mlp.8_3.csv").string(),                   // ETS reference CSV, plain
      (scratch.path / "cut.json.gz").string(),                             // a gzip stream cut short: ets.io.5
  };
  {
    std::ifstream in(files[0], std::ios::binary);
    const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(files.back(), std::ios::binary) << gz.substr(0, gz.size() / 2);
  }
  {
    std::ofstream out(files[4]);
    out << "op,dir,params,flops,bytes,kStartTime,kEndTime,space,seq,kernels,kduration,batch,input_type\n";
    for (int i = 0; i < 40; ++i)
      out << (i % 2 ? 152 : 31) << ",1,\"[4, 8, 16, 30, 30]\",10,20," << 1000 + 200 * i << "," << 1100 + 200 * i
          << ",5,1,1,95,8,1\n";
  }
  load_on_threads(files);
}

TEST_CASE("Tracer::load on 6 threads at once: GPU captures and an Nsight export", "[tracer][threads][shared]") {
  const std::vector<std::string> rels = {
      "kineto-gpu/kineto-resnet50-v100/resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",  // GPU rule
      "kineto-gpu/hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",  // a step without ops: ets.import.11
      "nsight/weatherbench2_report1.sqlite",  // SQLite, a connection per load (no kernels in it: ets.nsight.3)
  };
  std::vector<std::string> files;
  for (const auto& rel : rels) {
    ETS_REQUIRE_SHARED(rel);
    files.push_back(ets_test::shared_data(rel));
  }
  load_on_threads(files);
}
