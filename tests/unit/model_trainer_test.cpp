// ets-test-labels: unit;concurrency
// The `ets train` / `ets eval` pipeline end to end on learnable synthetic traces: dataset directory → FeatureSpec →
// windows → trained BiLSTM → .etsm (self-test verified on load) → evaluation tables.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "ets/baseline.hpp"
#include "ets/dataset_split.hpp"
#include "ets/error.hpp"
#include "ets/evaluator.hpp"
#include "ets/feature_spec.hpp"
#include "ets/model_trainer.hpp"
#include "ets/predictor.hpp"
#include "ets/trace_file.hpp"
#include "ets/window_encoder.hpp"
#include "encoder_fixtures.hpp"
#include "test_support.hpp"
#include "train_fixtures.hpp"

namespace fs = std::filesystem;

namespace {
void write_dataset(const fs::path& dir) {
  auto put = [&](const std::string& split, const std::vector<ets::ExecutionTrace>& ts) {
    fs::create_directories(dir / "traces" / split);
    for (std::size_t i = 0; i < ts.size(); ++i)
      ets::write_trace_file((dir / "traces" / split / ("c" + std::to_string(1000 + i) + ".etst.gz")).string(), {ts[i]});
  };
  put("train", ets_test::learnable_set(1, 60, "famA"));
  put("val", ets_test::learnable_set(2, 12, "famB"));
  put("test", ets_test::learnable_set(3, 12, "famC"));
}
// A network of one layer of 8 trained for `epochs` epochs in batches of 16: enough to build a model file.
ets::ModelTrainer::Options tiny_options(int epochs) {
  ets::ModelTrainer::Options o;
  o.hidden = 8;
  o.layers = 1;
  o.train.epochs = epochs;
  o.train.batch = 16;
  return o;
}
}  // namespace

TEST_CASE("train → save → load → evaluate on a synthetic dataset", "[train][pipeline]") {
  const ets_test::TempDir scratch("ets_model_trainer_test");
  const fs::path& dir = scratch.path;
  write_dataset(dir);
  const auto train = ets::DatasetSplit::load(dir.string(), "train", 2);
  const auto val = ets::DatasetSplit::load(dir.string(), "val", 2);
  const auto test = ets::DatasetSplit::load(dir.string(), "test", 2);
  REQUIRE(train.traces.size() == 60);
  REQUIRE(test.files.size() == 12);
  CHECK(test.traces[0].meta.family == "famC");
  CHECK_THROWS_AS(ets::DatasetSplit::load(dir.string(), "nope"), ets::Error);

  ets::ModelTrainer::Options o;
  o.hidden = 16;
  o.layers = 2;
  o.train.epochs = 25;
  o.train.batch = 32;
  o.train.lr = 5e-3;
  o.train.warmup_steps = 20;
  o.train.threads = 2;
  o.train.patience = 0;
  o.provenance["dataset"] = dir.string();
  int evaluations = 0;
  o.train.progress = [&](const ets::Trainer::Progress& p) {
    if (p.evaluated) {
      ++evaluations;
      CHECK(p.val_metric >= 0);
    }
    return true;
  };
  auto res = ets::ModelTrainer::train(train.traces, val.traces, o);
  CHECK(evaluations == 25);
  CHECK(res.val_mre >= 0);
  CHECK(res.val_mre == Approx(res.training.best_val_metric).epsilon(1e-4));
  CHECK(res.model.provenance.at("dataset") == dir.string());
  CHECK(res.model.weights.config.hidden == 16);
  // the labels.* metadata is a bit-exact copy of the encoder's label moments (model-format.md)
  const auto stored = ets::FeatureSpec::deserialize(res.model.encoder_state);
  CHECK(res.model.labels.time_mean == stored.label_moments(0).mean);
  CHECK(res.model.labels.time_scale == stored.label_moments(0).stdev);
  CHECK(res.model.labels.gap_mean == stored.label_moments(1).mean);
  CHECK(res.model.labels.gap_scale == stored.label_moments(1).stdev);

  const std::string path = (dir / "m.etsm").string();
  ets::save_model(res.model, path);
  const auto loaded = ets::load_model(path);  // runs the embedded self-test
  CHECK(loaded.encoder_state == res.model.encoder_state);

  const auto preds = ets::Evaluator::predict(loaded, test.traces, 2);
  auto ets_m = ets::Evaluator::method("ets", test.traces, preds);
  const auto spec = ets::FeatureSpec::deserialize(loaded.encoder_state);
  auto opsum = ets::Baseline::fit(ets::Baseline::Kind::OpSum, spec, train.traces, val.traces);
  std::vector<double> op;
  for (const auto& t : test.traces) op.push_back(opsum.predict(t));
  auto opsum_m = ets::Evaluator::method("opsum", test.traces, op);
  INFO("ets MRE " << ets_m.all.mre << " opsum MRE " << opsum_m.all.mre << " val MRE " << res.val_mre);
  CHECK(ets_m.all.n == 12);
  CHECK(ets_m.all.mre < 0.10);
  CHECK(ets_m.all.mre < opsum_m.all.mre);
  CHECK(ets_m.has_phases);
  CHECK_FALSE(opsum_m.has_phases);
  CHECK(ets_m.by_family.count("famC") == 1);
  CHECK(ets_m.by_ops.size() >= 1);
  CHECK(ets::Evaluator::noise_floor(test.traces) == Approx(0.01));
}

TEST_CASE("ModelTrainer leaves out unlabelled traces and honours its time budget", "[train][pipeline]") {
  auto train = ets_test::learnable_set(4, 20, "famA");
  auto val = ets_test::learnable_set(5, 6, "famB");
  auto unlabelled = train.front();
  for (auto& op : unlabelled.ops) op.time_us = std::nan("");
  train.push_back(unlabelled);
  val.push_back(ets::ExecutionTrace{});  // no ops: nothing to validate on

  ets::ModelTrainer::Options o = tiny_options(2);
  o.train.threads = 2;
  auto res = ets::ModelTrainer::train(train, val, o);
  CHECK(res.train_traces == 20);
  CHECK(res.val_traces == 6);
  CHECK(res.training.epochs_run == 2);
  CHECK_FALSE(res.training.out_of_time);

  // a budget far shorter than one epoch still trains a step, validates it and builds a model
  o.train.epochs = 1000;
  o.max_seconds = 1e-6;
  res = ets::ModelTrainer::train(train, val, o);
  CHECK(res.training.out_of_time);
  CHECK(res.training.epochs_run == 1);
  CHECK(res.val_mre > 0);
  CHECK(res.model.weights.config.hidden == 8);

  const std::vector<ets::ExecutionTrace> none{unlabelled};
  CHECK_THROWS_WITH(ets::ModelTrainer::train(none, val, o), Catch::Contains("ets.train.18"));
}

TEST_CASE("the trainer's validation MRE is the evaluator's over several chunks of traces", "[train][pipeline]") {
  // 150 validation traces: chunks of 64, 64 and 22 (train::kChunkTraces), each encoded once and aggregated alone
  const auto train = ets_test::learnable_set(6, 20, "famA");
  const auto val = ets_test::learnable_set(7, 150, "famB");
  ets::ModelTrainer::Options o = tiny_options(2);
  o.train.threads = 2;
  const auto res = ets::ModelTrainer::train(train, val, o);
  REQUIRE(res.val_traces == 150);
  const ets::WindowEncoder encoder(ets::FeatureSpec::deserialize(res.model.encoder_state), res.model.window_width,
                                   res.model.window_stride);
  const double evaluated = ets::Evaluator::mre(res.model.weights, encoder, val, 2);
  CHECK(evaluated > 0);
  CHECK(res.val_mre == Approx(evaluated).epsilon(1e-4));
  // one threads count or another: the same chunks, the same figure
  CHECK(ets::Evaluator::mre(res.model.weights, encoder, val, 1) == Approx(evaluated).epsilon(1e-6));
}

TEST_CASE("ModelTrainer refuses, before training, an environment id that Predictor::add_model would refuse", "[train]") {
  auto train = ets_test::learnable_set(7, 6, "famA");
  ets::ModelTrainer::Options o = tiny_options(1);
  o.train.progress_every = 1;
  bool trained = false;
  o.train.progress = [&](const ets::Trainer::Progress&) { return trained = true; };
  // the traces' most common environment holds a tab: refused, and no step was trained
  for (std::size_t i = 0; i < train.size(); ++i) train[i].meta.environment = i < 4 ? "cpu\tx" : "cpu-y";
  CHECK_THROWS_WITH(ets::ModelTrainer::train(train, {}, o), Catch::Contains("ets.train.20") && Catch::Contains("cpu?x"));
  CHECK_FALSE(trained);
  // a printable id given in the options is used instead
  o.hardware_env = "cpu-x";
  const auto named = ets::ModelTrainer::train(train, {}, o);
  CHECK(trained);
  CHECK(named.model.hardware_env == "cpu-x");
  // one given with a newline is refused too
  o.hardware_env = "cpu\nx";
  CHECK_THROWS_WITH(ets::ModelTrainer::train(train, {}, o), Catch::Contains("ets.train.20"));
  // a control character in a minority of the traces does not matter: the model takes the most common id, and loads
  o.hardware_env.clear();
  for (std::size_t i = 0; i < train.size(); ++i) train[i].meta.environment = i < 2 ? "cpu\tx" : "cpu-y";
  const auto res = ets::ModelTrainer::train(train, {}, o);
  CHECK(res.model.hardware_env == "cpu-y");
  ets::Predictor p;
  CHECK(p.add_model("", res.model) == "cpu-y");
}

TEST_CASE("a model of wide windows saves: its self-test stays within what a reader accepts", "[train]") {
  // 4 windows × 2,000 positions would exceed the reader's 4,096; the trainer must store fewer, not fail to save
  const auto train = ets_test::learnable_set(6, 6);
  ets::ModelTrainer::Options o;
  o.hidden = 4;
  o.layers = 1;
  o.width = 2000;
  o.stride = 1;  // many windows per trace
  o.train.epochs = 1;
  o.train.batch = 64;
  o.train.threads = 1;
  o.train.max_windows_per_epoch = 64;
  const auto res = ets::ModelTrainer::train(train, {}, o);
  REQUIRE(res.train_windows >= 4);
  CHECK(res.model.self_test.windows == 2);
  CHECK(res.model.self_test.width == 2000);
  const auto bytes = ets::serialize_model(res.model);
  CHECK(ets::parse_model(bytes.data(), bytes.size()).self_test.windows == 2);  // and the reader runs it
}

TEST_CASE("a split directory lists its trace files and skips entries whose status cannot be read", "[train][eval]") {
  const ets_test::TempDir scratch("ets_split_list_test");
  const fs::path& dir = scratch.path;
  fs::create_directories(dir / "test" / "sub.etst");  // a directory named like a trace is not one
  ets::write_trace_file((dir / "test" / "a.etst.gz").string(), {ets_test::learnable_set(5, 1).front()});
  std::ofstream(dir / "test" / "notes.txt") << "x";
  fs::create_symlink("loop.etst", dir / "test" / "loop.etst");  // status: too many levels of symbolic links
  fs::create_symlink("missing", dir / "test" / "dangling.etst.gz");
  const auto files = ets::DatasetSplit::list(dir.string(), "test");
  REQUIRE(files.size() == 1);
  CHECK(fs::path(files[0]).filename() == "a.etst.gz");
  CHECK(ets::DatasetSplit::load(dir.string(), "test", 1).traces.size() == 1);
  // a decompressed copy beside its .gz is the configuration twice: refused, naming both, not counted twice
  ets::write_trace_file((dir / "test" / "a.etst").string(), {ets_test::learnable_set(5, 1).front()});
  CHECK_THROWS_WITH(ets::DatasetSplit::list(dir.string(), "test"),
                    Catch::Contains("ets.eval.5") && Catch::Contains("a.etst and a.etst.gz"));
  ets::write_trace_file((dir / "test" / "b.etst").string(), {ets_test::learnable_set(5, 1).front()});
  fs::remove(dir / "test" / "a.etst");
  CHECK(ets::DatasetSplit::list(dir.string(), "test").size() == 2);  // b.etst alone, a.etst.gz alone: both kept
  CHECK(ets::DatasetSplit::load(dir.string(), "test", 1).traces.size() == 2);  // neither names its configuration
  // ... but two files whose traces name one configuration are it twice, whatever the files are called
  auto named = ets_test::learnable_set(5, 1).front();
  named.meta.extra["config_id"] = "vgg-0007";
  ets::write_trace_file((dir / "test" / "a.etst.gz").string(), {named});
  ets::write_trace_file((dir / "test" / "b.etst").string(), {named});
  CHECK_THROWS_WITH(ets::DatasetSplit::load(dir.string(), "test", 1),
                    Catch::Contains("ets.eval.5") && Catch::Contains("vgg-0007"));
}

TEST_CASE("a dataset's manifest keeps each configuration in its split", "[train][eval]") {
  const ets_test::TempDir scratch("ets_split_manifest_test");
  const fs::path& dir = scratch.path;
  fs::create_directories(dir / "traces" / "train");
  fs::create_directories(dir / "traces" / "mine");
  auto t = ets_test::learnable_set(5, 1).front();
  t.meta.extra["config_id"] = "vgg-0001";
  ets::write_trace_file((dir / "traces" / "train" / "vgg-0001.etst.gz").string(), {t});
  ets::write_trace_file((dir / "traces" / "mine" / "vgg-0001.etst.gz").string(), {t});
  const auto manifest = [&](const std::string& text) { std::ofstream(dir / "manifest.json") << text; };
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1).traces.size() == 1);  // no manifest: nothing to check
  manifest(R"({"configs": [{"id": "vgg-0001", "split": "test"}, {"id": "mlp-0002", "split": "train"}]})");
  // a held-out architecture in the training folder, under any spelling of the split
  for (const char* split : {"train", "train/", "traces/train", "./train/."})
    CHECK_THROWS_WITH(ets::DatasetSplit::load(dir.string(), split, 1),
                      Catch::Contains("ets.eval.7") && Catch::Contains("vgg-0001") && Catch::Contains("'test'"));
  CHECK(ets::DatasetSplit::load(dir.string(), "mine", 1).traces.size() == 1);  // a split the manifest does not name
  manifest(R"({"configs": [{"id": "vgg-0001", "split": "train"}]})");
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1).traces.size() == 1);
  // one configuration in two splits: the first entry decided, and a test configuration loaded into train
  manifest(R"({"configs": [{"id": "vgg-0001", "split": "train"}, {"id": "vgg-0001", "split": "test"}]})");
  CHECK_THROWS_WITH(ets::DatasetSplit::load(dir.string(), "train", 1),
                    Catch::Contains("ets.eval.6") && Catch::Contains("vgg-0001") && Catch::Contains("'test'"));
  manifest(R"({"configs": [{"id": "vgg-0001", "split": "train"}, {"id": "vgg-0001", "split": "train"}]})");
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1).traces.size() == 1);  // twice in one split: no conflict
  t.meta.extra.erase("config_id");  // a trace that names no configuration is not checked
  ets::write_trace_file((dir / "traces" / "train" / "vgg-0001.etst.gz").string(), {t});
  manifest(R"({"configs": [{"id": "vgg-0001", "split": "test"}]})");
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1).traces.size() == 1);
  for (const char* broken : {"{", R"({"other": 1})", R"({"configs": [{"id": 3, "split": "train"}]})"}) {
    manifest(broken);
    CHECK_THROWS_WITH(ets::DatasetSplit::load(dir.string(), "train", 1), Catch::Contains("ets.eval.6"));
  }
}

TEST_CASE("a split's files and manifest are read within max_bytes", "[train][eval]") {
  const ets_test::TempDir scratch("ets_split_max_bytes_test");
  const fs::path& dir = scratch.path;
  fs::create_directories(dir / "traces" / "train");
  auto t = ets_test::learnable_set(5, 1).front();
  t.meta.extra["config_id"] = "vgg-0001";
  const fs::path trace = dir / "traces" / "train" / "vgg-0001.etst";  // plain: its file size is what is read
  ets::write_trace_file(trace.string(), {t});
  const auto size = fs::file_size(trace);
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1, size).traces.size() == 1);  // exactly the limit: read
  CHECK_THROWS_WITH(ets::DatasetSplit::load(dir.string(), "train", 1, size - 1),
                    Catch::Contains("ets.io.6") && Catch::Contains("vgg-0001.etst"));
  const std::string text = R"({"configs": [{"id": "vgg-0001", "split": "train"}]})";
  std::ofstream(dir / "manifest.json") << text;
  const auto limit = std::max<std::uint64_t>(size, text.size());
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1, limit).traces.size() == 1);
  std::ofstream(dir / "manifest.json") << std::string(limit, ' ') << text;  // valid JSON, one byte per space more
  CHECK_THROWS_WITH(ets::DatasetSplit::load(dir.string(), "train", 1, limit),
                    Catch::Contains("ets.io.6") && Catch::Contains("manifest.json"));
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1).traces.size() == 1);  // the 3-argument load: no limit
  fs::remove(dir / "manifest.json");
  fs::create_directory(dir / "manifest.json");  // not a regular file: no manifest, as before
  CHECK(ets::DatasetSplit::load(dir.string(), "train", 1, limit).traces.size() == 1);
}

TEST_CASE("the test-retest figures compare re-collected labels with the traces' labels by config id", "[train][eval]") {
  auto traces = ets_test::learnable_set(4, 3, "famR");
  traces[0].meta.extra["config_id"] = "famR-0000";
  traces[1].meta.extra["config_id"] = "famR-0001";  // traces[2] has no config id: never matched
  const double t0 = ets::Evaluator::truth_us(traces[0]), t1 = ets::Evaluator::truth_us(traces[1]);
  REQUIRE(t0 > 0);
  REQUIRE(t1 > 0);
  const ets_test::TempDir scratch("ets_retest_test");
  const fs::path& dir = scratch.path;
  const std::string path = (dir / "retest.json").string();
  {
    std::ofstream f(path);
    f << "{\"collected\":\"2026-11-29\",\"labels\":{\"famR-0000\":{\"measured_us\":" << 1.1 * t0
      << ",\"pass_median_us\":[]},\"famR-0001\":{\"measured_us\":" << 0.8 * t1
      << "},\"other-0009\":{\"measured_us\":5},\"famR-0002\":{\"measured_us\":null},\"famR-0003\":{},"
      << "\"famR-0004\":null}}";
  }
  // entries without a usable label (card.py writes null for a re-collection that failed) are skipped
  const ets::Evaluator::Retest r = ets::Evaluator::retest(path, traces);
  CHECK(r.mre == Approx((0.1 + 0.2) / 2));
  CHECK(r.predictor_bound == Approx(0.5 * (0.1 / 1.1 + 0.2 / 1.0) / 2));  // |L − R| / max(L, R), halved
  CHECK(r.n == 2);
  const ets::Evaluator::Retest absent = ets::Evaluator::retest((dir / "absent.json").string(), traces);
  CHECK(absent.mre == -1.0);
  CHECK(absent.predictor_bound == -1.0);
  CHECK(absent.n == 0);
  // a retest collected with other tail steps than the labels it meets would count the time between steps as
  // noise: refused, naming both; one with the same (absent = 0 on both sides, or the same number) is scored
  const auto write_text = [&](const std::string& text) {
    std::ofstream f(path);
    f << text;
  };
  const std::string two = "\"famR-0000\":{\"measured_us\":" + std::to_string(1.1 * t0) +
                          "},\"famR-0001\":{\"measured_us\":" + std::to_string(0.8 * t1) + "}";
  write_text("{\"tail_steps\":1,\"labels\":{" + two + "}}");
  CHECK_THROWS_WITH(ets::Evaluator::retest(path, traces),
                    Catch::Contains("ets.eval.8") && Catch::Contains("--tail-steps 1") && Catch::Contains("with 0"));
  traces[0].meta.extra["tail_steps"] = "1";
  traces[1].meta.extra["tail_steps"] = "1";
  CHECK(ets::Evaluator::retest(path, traces).n == 2);
  write_text("{\"labels\":{" + two + "}}");
  CHECK_THROWS_WITH(ets::Evaluator::retest(path, traces), Catch::Contains("ets.eval.8"));
  traces[0].meta.extra.erase("tail_steps");
  traces[1].meta.extra.erase("tail_steps");
  CHECK(ets::Evaluator::retest(path, traces).n == 2);
  // within max_bytes as a split's files are (ets eval --max-bytes): exactly the file's size is read, a byte less not
  const auto bytes = fs::file_size(path);
  CHECK(ets::Evaluator::retest(path, traces, bytes).n == 2);
  CHECK_THROWS_WITH(ets::Evaluator::retest(path, traces, bytes - 1),
                    Catch::Contains("ets.io.6") && Catch::Contains("retest.json"));
  CHECK(ets::Evaluator::retest((dir / "absent.json").string(), traces, 1).n == 0);  // absent: no figure, as before
  for (const char* bad_tail : {"-1", "1.5", "\"1\""}) {
    write_text(std::string("{\"tail_steps\":") + bad_tail + ",\"labels\":{" + two + "}}");
    CHECK_THROWS_WITH(ets::Evaluator::retest(path, traces), Catch::Contains("ets.eval.3"));
  }
  // a damaged file, or a label of the wrong type, is an error: the figure must not quietly vanish or come from half
  // a file (the on-demand parser skipped what it did not read)
  const auto good_entry = "\"famR-0000\":{\"measured_us\":" + std::to_string(1.1 * t0) + "}";
  for (const std::string& text : {std::string("{\"labels\": [1, 2"), std::string("{\"labels\": [1, 2]}"),
                                  "{\"labels\":{" + good_entry + ",\"x\":{\"measured_us\":xyz}}}",
                                  "{\"labels\":{" + good_entry + ",\"x\":{\"measured_us\":\"20000\"}}}",
                                  "{\"labels\":{" + good_entry + ",\"x\":{\"measured_us\":1,\"y\":[1,,2]}}}",
                                  "{\"labels\":{" + good_entry + "},\"collected\": }",
                                  "{\"labels\":{" + good_entry + ",\"x\":7}}", std::string("{}")}) {
    INFO(text);
    {
      std::ofstream f(path);
      f << text;
    }
    try {
      ets::Evaluator::retest(path, traces);
      FAIL("a damaged retest.json must throw");
    } catch (const ets::Error& e) {
      CHECK(std::string(e.what()).find("[ets.eval.3]") != std::string::npos);
    }
  }
}

TEST_CASE("the pass-disagreement buckets hold the traces that carry a readable label.disagreement", "[train][eval]") {
  // truth 100 each; predictions 110, 90, 130, 100, 150, 70: the buckets' bias and MRE follow from them
  const std::vector<std::string> dis = {"0.05", "0.08", "0.3", "", "abc", "0.7"};
  std::vector<ets::ExecutionTrace> traces(dis.size());
  for (std::size_t i = 0; i < dis.size(); ++i) {
    traces[i].measured_us = 100;
    traces[i].ops.emplace_back();  // scorable: an op and a truth
    traces[i].ops.back().time_us = 100;
    if (!dis[i].empty()) traces[i].meta.extra["label.disagreement"] = dis[i];
  }
  const auto m = ets::Evaluator::method("x", traces, std::vector<double>{110, 90, 130, 100, 150, 70});
  REQUIRE(m.by_disagreement.size() == 3);  // no trace in 10-25%; "" and "abc" are left out
  CHECK(m.by_disagreement[0].first == "<=10%");
  CHECK(m.by_disagreement[0].second.n == 2);
  CHECK(m.by_disagreement[0].second.mre == Approx(0.1));
  CHECK(m.by_disagreement[0].second.bias == Approx(0.0).margin(1e-12));
  CHECK(m.by_disagreement[1].first == "25-50%");
  CHECK(m.by_disagreement[1].second.bias == Approx(0.3));
  CHECK(m.by_disagreement[2].first == "50%+");
  CHECK(m.by_disagreement[2].second.bias == Approx(-0.3));
  CHECK(m.all.n == 6);
  CHECK(m.all.bias == Approx((0.1 - 0.1 + 0.3 + 0.0 + 0.5 - 0.3) / 6));
  CHECK(m.by_family.size() == 1);
  // a trace without a truth is in no group: a family of only such traces is not listed as n = 0
  auto more = traces;
  more.push_back(ets::ExecutionTrace{});
  more.back().meta.family = "unlabelled";
  more.back().meta.extra["label.disagreement"] = "0.05";
  const auto m2 = ets::Evaluator::method("x", more, std::vector<double>{110, 90, 130, 100, 150, 70, 80});
  CHECK(m2.by_family.count("unlabelled") == 0);
  CHECK(m2.by_disagreement[0].second.n == 2);
  CHECK(m2.by_ops.size() == 1);
  CHECK(m2.by_ops[0].second.n == 6);
  CHECK(m2.all.n == 6);
  CHECK(std::isnan(m2.by_phase[0].mre));  // no breakdown: n = 0, so NaN, not a perfect 0
  // a labelled iteration without ops is not scorable (as in validation and --val-scaled): its prediction, 0, would
  // add a 100% error to every table
  auto with_empty = traces;
  with_empty.emplace_back();
  with_empty.back().measured_us = 1000;
  with_empty.back().meta.family = "empty";
  const auto m3 = ets::Evaluator::method("x", with_empty, std::vector<double>{110, 90, 130, 100, 150, 70, 0});
  CHECK(m3.all.n == 6);
  CHECK(m3.all.mre == Approx(m.all.mre));
  CHECK(m3.by_family.count("empty") == 0);
}

TEST_CASE("the op-type breakdown sums labels and predictions per family, type and phase", "[train][eval]") {
  using ets_test::make_op;
  auto pred = [](const ets::ExecutionTrace& tr, double factor) {  // each op predicted as factor × its labels
    ets::Prediction p;
    for (const auto& o : tr.ops) {
      ets::Prediction::Op po;
      po.time_us = factor * o.time_us;
      po.gap_us = factor * o.gap_us;
      po.phase = o.phase;
      p.ops.push_back(po);
      p.iteration_us += po.time_us + po.gap_us;
    }
    return p;
  };
  std::vector<ets::ExecutionTrace> traces(4);
  traces[0].meta.family = "b";
  traces[0].ops = {make_op("conv2d", ets::Phase::Forward, 10, 1), make_op("relu", ets::Phase::Forward, 2, 1),
                   make_op("conv2d", ets::Phase::Backward, 20, 2), make_op("conv2d", ets::Phase::Forward, 30, 3)};
  traces[0].measured_us = traces[0].sum_us();
  traces[1].meta.family = "b";
  traces[1].ops = {make_op("conv2d", ets::Phase::Forward, 5, 0)};
  traces[1].measured_us = 6;  // the family's truth is the measurement, not Σ(time + gap)
  traces[2].ops = {make_op("linear", ets::Phase::Update, 4, 4)};  // no family: "unknown"
  traces[2].measured_us = traces[2].sum_us();
  traces[3].meta.family = "c";  // no truth: not scorable, in no row
  traces[3].ops = {make_op("linear", ets::Phase::Forward, 0, 0)};
  const std::vector<ets::Prediction> preds = {pred(traces[0], 2.0), pred(traces[1], 0.5), pred(traces[2], 1.0),
                                              pred(traces[3], 1.0)};
  const auto rows = ets::Evaluator::by_op_type(traces, preds);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].family == "b");
  CHECK(rows[0].type == "conv2d");
  CHECK(rows[0].phase == ets::Phase::Forward);
  CHECK(rows[0].ops == 3);
  CHECK(rows[0].measured_time_us == Approx(10 + 30 + 5));
  CHECK(rows[0].measured_gap_us == Approx(1 + 3));
  CHECK(rows[0].predicted_time_us == Approx(2 * 40 + 0.5 * 5));
  CHECK(rows[0].predicted_gap_us == Approx(2 * 4));
  CHECK(rows[0].family_truth_us == Approx(traces[0].sum_us() + 6));
  CHECK(rows[1].type == "conv2d");
  CHECK(rows[1].phase == ets::Phase::Backward);
  CHECK(rows[1].predicted_time_us == Approx(40));
  CHECK(rows[2].type == "relu");
  CHECK(rows[2].ops == 1);
  CHECK(rows[3].family == "unknown");
  CHECK(rows[3].phase == ets::Phase::Update);
  CHECK(rows[3].measured_gap_us == Approx(4));
  CHECK(rows[3].family_truth_us == Approx(8));
  auto short_preds = preds;
  short_preds[0].ops.pop_back();  // a prediction that lost an op
  CHECK_THROWS_WITH(ets::Evaluator::by_op_type(traces, short_preds), Catch::Contains("[ets.eval.2]"));
  auto fewer = preds;  // one prediction short
  fewer.pop_back();
  CHECK_THROWS_WITH(ets::Evaluator::by_op_type(traces, fewer), Catch::Contains("[ets.eval.2]"));
}

TEST_CASE("loss weights follow each op's labelled time to the given power, mean 1, padding 0", "[train]") {
  auto traces = ets_test::learnable_set(9, 3, "famW");
  const ets::FeatureSpec spec = ets::FeatureSpec::fit(traces);
  const ets::WindowEncoder enc(spec, 12, 4);
  const ets::WindowBatch b = enc.encode(traces);
  auto us = [&](std::size_t p) {
    const auto& op = traces[static_cast<std::size_t>(b.trace_index[p / 12])].ops[static_cast<std::size_t>(b.op_index[p])];
    return std::max(op.time_us, 0.0) + std::max(op.gap_us, 0.0);
  };
  for (const double power : {1.0, 0.5}) {
    const std::vector<float> w = ets::ModelTrainer::loss_weights(b, traces, power);
    REQUIRE(w.size() == b.positions());
    double sum = 0;
    std::size_t real = 0, compared = 0;
    std::size_t first = b.positions();
    for (std::size_t p = 0; p < b.positions(); ++p) {
      if (!b.mask[p]) {
        CHECK(w[p] == 0.f);
        continue;
      }
      CHECK(w[p] > 0.f);
      sum += w[p];
      ++real;
      if (first == b.positions()) {
        first = p;
        continue;
      }
      // unclipped pairs keep the ratio of their times to the power (the clip bounds each at 10× its mean)
      const double want = std::pow(us(p) / us(first), power);
      if (want > 0.2 && want < 5) {
        CHECK(w[p] / w[first] == Approx(want).epsilon(1e-4));
        ++compared;
      }
    }
    CHECK(sum / static_cast<double>(real) == Approx(1.0).epsilon(1e-5));
    CHECK(compared > 10);
  }
  CHECK_THROWS_WITH(ets::ModelTrainer::loss_weights(b, traces, -0.5), Catch::Contains("[ets.train.8]"));
  // a batch not encoded from these traces: an ets::Error, not std::out_of_range from deep inside
  const std::vector<ets::ExecutionTrace> fewer(traces.begin(), traces.begin() + 1);
  CHECK_THROWS_WITH(ets::ModelTrainer::loss_weights(b, fewer, 1.0), Catch::Contains("[ets.train.5]"));
  std::vector<ets::ExecutionTrace> shorter = traces;
  for (auto& t : shorter) t.ops.resize(t.ops.size() / 2);
  CHECK_THROWS_WITH(ets::ModelTrainer::loss_weights(b, shorter, 1.0), Catch::Contains("[ets.train.5]"));
  ets::ModelTrainer::Options o;
  o.loss_time_power = 2.5;
  CHECK_THROWS_WITH(ets::ModelTrainer::train(traces, {}, o), Catch::Contains("[ets.train.8]"));
  o.loss_time_power = std::nan("");
  CHECK_THROWS_WITH(ets::ModelTrainer::train(traces, {}, o), Catch::Contains("[ets.train.8]"));
  o.loss_time_power = 0;
  o.hidden = -1;  // was taken as 0 (the feature count) without a word
  CHECK_THROWS_WITH(ets::ModelTrainer::train(traces, {}, o), Catch::Contains("[ets.train.8]"));
  o.hidden = 0;
  o.train.epochs = 0;  // a model of the untrained starting weights
  CHECK_THROWS_WITH(ets::ModelTrainer::train(traces, {}, o), Catch::Contains("[ets.train.8]"));
}

TEST_CASE("evaluation metrics follow their definitions", "[train][eval]") {
  // MRE divides by the truth: predicting 150 for 100 and 50 for 100 both count 50%
  const auto m = ets::Evaluator::metrics({150, 50, 200}, {100, 100, 200});
  CHECK(m.n == 3);
  CHECK(m.mre == Approx((0.5 + 0.5 + 0.0) / 3));
  CHECK(m.rmse_ms == Approx(std::sqrt((2500.0 + 2500.0) / 3) / 1000));
  CHECK(m.bias == Approx(0.0).margin(1e-12));  // +50% and −50% cancel
  CHECK(ets::Evaluator::metrics({120, 90}, {100, 100}).bias == Approx((0.2 - 0.1) / 2));
  // Upper bounds inclusive, as the labeler's flag (> threshold): a label at exactly 10% is not flagged at 10%.
  CHECK(ets::Evaluator::disagreement_bucket(0.0) == "<=10%");
  CHECK(ets::Evaluator::disagreement_bucket(0.0999) == "<=10%");
  CHECK(ets::Evaluator::disagreement_bucket(0.1) == "<=10%");
  CHECK(ets::Evaluator::disagreement_bucket(0.10001) == "10-25%");
  CHECK(ets::Evaluator::disagreement_bucket(0.25) == "10-25%");
  CHECK(ets::Evaluator::disagreement_bucket(0.3) == "25-50%");
  CHECK(ets::Evaluator::disagreement_bucket(0.5) == "25-50%");
  CHECK(ets::Evaluator::disagreement_bucket(0.50001) == "50%+");
  CHECK(ets::Evaluator::disagreement_bucket(2.0) == "50%+");
  CHECK(ets::Evaluator::disagreement_bucket(-0.1).empty());
  CHECK(ets::Evaluator::disagreement_bucket(std::nan("")).empty());
  CHECK(ets::Evaluator::ops_bucket(0) == "0-200");
  CHECK(ets::Evaluator::ops_bucket(399) == "200-400");
  CHECK(ets::Evaluator::ops_bucket(1199) == "1000-1200");
  CHECK(ets::Evaluator::ops_bucket(5000) == "1200+");
  CHECK_THROWS_AS(ets::Evaluator::metrics({1}, {1, 2}), ets::Error);
  // a truth past a double's range is none: the other traces are scored (it made the whole MRE NaN)
  const double inf = std::numeric_limits<double>::infinity();
  const auto with_inf = ets::Evaluator::metrics({150, 5, 7}, {100, inf, std::nan("")});
  CHECK(with_inf.n == 1);
  CHECK(with_inf.mre == Approx(0.5));
  ets::ExecutionTrace huge;  // labels of 1e308 µs, finite each, whose sum overflows
  for (int i = 0; i < 2; ++i) {
    ets::OpRecord op;
    op.name = "relu";
    op.time_us = 1e308;
    huge.ops.push_back(op);
  }
  CHECK(std::isnan(ets::Evaluator::truth_us(huge)));
  CHECK_FALSE(ets::Evaluator::scorable(huge));
  huge.ops.pop_back();
  CHECK(ets::Evaluator::truth_us(huge) == 1e308);
  CHECK(ets::Evaluator::scorable(huge));
}

TEST_CASE("the phase tables leave out the traces no other table scores", "[train][eval]") {
  std::vector<ets::ExecutionTrace> traces(2);
  for (auto& t : traces) {
    t.ops.resize(2);
    t.ops[0].phase = ets::Phase::Forward;
    t.ops[0].time_us = 100;
    t.ops[1].phase = ets::Phase::Update;
    t.ops[1].time_us = 50;
  }
  traces[0].measured_us = 150;  // scorable
  traces[1].ops[1].time_us = std::numeric_limits<double>::infinity();  // no measurement, labels that sum to no truth
  std::vector<ets::Prediction> p(2);
  for (auto& x : p) {
    x.iteration_us = 165;
    x.forward_us = 110;
    x.update_us = 55;
  }
  const auto m = ets::Evaluator::method("x", traces, p);
  CHECK(m.all.n == 1);
  CHECK(m.by_phase[0].n == 1);  // was 2: the unscorable trace's forward ops counted there alone
  CHECK(m.by_phase[0].mre == Approx(0.1));
  CHECK(m.by_phase[2].n == 1);
}
