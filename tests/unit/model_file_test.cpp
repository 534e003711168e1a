// .etsm model file: save/load round trip, the Python exporter's files, version and checksum handling, self-test,
// and clean errors for truncated, bit-flipped and internally inconsistent files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "alloc_hooks.hpp"  // counts load_model's allocations (operator new replaced; not under ASan / TSan)
#include "ets/bilstm_predictor.hpp"
#include "ets/error.hpp"
#include "ets/model_file.hpp"
#include "test_support.hpp"

namespace {

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

ets::ModelFile sample_model(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  };
  ets::ModelFile m;
  auto& c = m.weights.config;
  c = {6, 5, 3, 2, true};
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < 2; ++d) m.weights.cells.push_back({fill(20u * c.layer_input(l)), fill(20u * 5), fill(20), fill(20)});
  m.weights.head_w = fill(2 * 10);
  m.weights.head_b = fill(2);
  m.window_width = 12;
  m.window_stride = 4;
  m.encoder_state = {0, 1, 2, 255, 42, 0};
  m.labels = {"log1p", 1.5, 0.25, -2.0, 3.0};
  m.hardware_env = "h200/torch-2.3";
  m.provenance = {{"dataset", "train split"}, {"epochs", "17"}};
  m.self_test.windows = 2;
  m.self_test.width = 12;
  m.self_test.input = fill(2 * 12 * 6);
  m.self_test.expected.resize(2 * 12 * 2);
  ets::BiLstmPredictor(m.weights).predict(m.self_test.input.data(), 2, 12, m.self_test.expected.data());
  m.self_test.tolerance = 1e-5;
  return m;
}

// Recomputes the trailing CRC-32C so a test can reach the checks behind the checksum.
void fix_crc(std::vector<std::uint8_t>& b) {
  std::uint32_t crc = 0xFFFFFFFFu;
  const std::size_t n = b.size() - 8;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= b[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  crc ^= 0xFFFFFFFFu;
  for (int i = 0; i < 4; ++i) b[n + i] = static_cast<std::uint8_t>(crc >> (8 * i));
}

// The id and message of the error parse_model throws; both "" when it throws none.
std::pair<std::string, std::string> parse_failure(const std::vector<std::uint8_t>& b, ets::ModelLoadOptions opt = {}) {
  try {
    ets::parse_model(b.data(), b.size(), opt);
  } catch (const ets::Error& e) {
    return {e.id(), e.message()};
  }
  return {};
}

std::string error_id(const std::vector<std::uint8_t>& b, ets::ModelLoadOptions opt = {}) {
  return parse_failure(b, opt).first;
}

std::string error_message(const std::vector<std::uint8_t>& b, ets::ModelLoadOptions opt = {}) {
  return parse_failure(b, opt).second;
}

std::size_t find(const std::vector<std::uint8_t>& b, const std::string& s) {
  auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
  REQUIRE(it != b.end());
  return static_cast<std::size_t>(it - b.begin());
}

}  // namespace

TEST_CASE("model round trip keeps every field and re-encodes to the same bytes") {
  const ets::ModelFile m = sample_model(1);
  const auto bytes = ets::serialize_model(m);
  CHECK(bytes.size() % 16 == 0);
  const ets::ModelFile r = ets::parse_model(bytes.data(), bytes.size());
  CHECK(r.weights.config == m.weights.config);
  REQUIRE(r.weights.cells.size() == m.weights.cells.size());
  for (std::size_t i = 0; i < m.weights.cells.size(); ++i) {
    CHECK(r.weights.cells[i].w_ih == m.weights.cells[i].w_ih);
    CHECK(r.weights.cells[i].w_hh == m.weights.cells[i].w_hh);
    CHECK(r.weights.cells[i].b_ih == m.weights.cells[i].b_ih);
    CHECK(r.weights.cells[i].b_hh == m.weights.cells[i].b_hh);
  }
  CHECK(r.weights.head_w == m.weights.head_w);
  CHECK(r.weights.head_b == m.weights.head_b);
  CHECK(r.window_width == 12);
  CHECK(r.window_stride == 4);
  CHECK(r.encoder_state == m.encoder_state);
  CHECK(r.labels == m.labels);
  CHECK(r.hardware_env == m.hardware_env);
  CHECK(r.provenance == m.provenance);
  CHECK(r.self_test.input == m.self_test.input);
  CHECK(r.self_test.expected == m.self_test.expected);
  CHECK(r.self_test.tolerance == m.self_test.tolerance);
  CHECK(r.file_major == 1);
  CHECK(ets::serialize_model(r) == bytes);

  const ets_test::TempDir dir("ets_model_test");
  const std::string path = (dir.path / "m.etsm").string();
  ets::save_model(m, path);
  CHECK(read_bytes(path) == bytes);
  CHECK(ets::load_model(path).weights.head_w == m.weights.head_w);
}

TEST_CASE("files written by tools/export_etsm.py load, and C++ re-encodes them byte for byte") {
  for (const char* name : {"lstm_f16_h16.etsm", "lstm_f5_h7_trained.etsm", "gru_f5_h7_trained.etsm"}) {
    const auto bytes = read_bytes(ets_test::fixture(name));
    const ets::ModelFile m = ets::parse_model(bytes.data(), bytes.size());
    CHECK(m.self_test.windows == 2);
    CHECK(m.hardware_env == "fixture");
    CHECK(m.provenance.at("exporter") == "tools/export_etsm.py");
    CHECK(ets::serialize_model(m) == bytes);
  }
}

TEST_CASE("unknown major version names both versions") {
  auto b = ets::serialize_model(sample_model(2));
  b[8] = 2;  // major 2
  try {
    ets::parse_model(b.data(), b.size());
    FAIL("a major-2 file must be rejected");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.3");
    CHECK(e.code() == ets::Errc::version);
    CHECK(e.message().find("2.0") != std::string::npos);
    CHECK(e.message().find("1.x") != std::string::npos);
  }
  b[8] = 1;
  b[10] = 9;  // minor 9 of major 1 is readable as far as the version goes; the checksum still guards the bytes
  CHECK(error_id(b) == "ets.model.5");
  fix_crc(b);
  CHECK(ets::parse_model(b.data(), b.size()).file_minor == 9);
}

TEST_CASE("self-test is verified on save and on load, where it can be disabled") {
  ets::ModelFile m = sample_model(3);
  const auto good = ets::serialize_model(m);
  // serialize_model refuses what load_model would: a stored output the weights do not compute
  ets::ModelFile off_by = m;
  off_by.self_test.expected[7] += 0.01f;
  CHECK_THROWS_WITH(ets::serialize_model(off_by), Catch::Contains("ets.model.10") && Catch::Contains("self-test"));
  off_by = m;
  off_by.self_test.tolerance = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(ets::serialize_model(off_by), Catch::Contains("ets.model.10") && Catch::Contains("tolerance"));
  // a file written otherwise (another writer, a flipped bit under a recomputed checksum) is caught on load: the
  // stored output 7 moved in the bytes, found as the run of the expected outputs
  std::vector<std::uint8_t> b = good;
  const auto* first = reinterpret_cast<const std::uint8_t*>(m.self_test.expected.data());
  const auto run = std::search(b.begin(), b.end(), first, first + m.self_test.expected.size() * sizeof(float));
  REQUIRE(run != b.end());
  float v = 0;
  std::memcpy(&v, &*run + 7 * sizeof(float), sizeof v);
  v += 0.01f;
  std::memcpy(&*run + 7 * sizeof(float), &v, sizeof v);
  fix_crc(b);
  CHECK(error_id(good).empty());
  CHECK(error_id(b) == "ets.model.8");
  ets::ModelLoadOptions off;
  off.verify_self_test = false;
  CHECK(error_id(b, off).empty());
}

TEST_CASE("truncation at every 4 KiB boundary and at random offsets gives a clean error") {
  const auto full = read_bytes(ets_test::fixture("lstm_f16_h16.etsm"));
  REQUIRE(full.size() > 4 * 4096);
  std::vector<std::size_t> cuts{0, 1, 7, 8, 11, 12, 63, 64, 79, 80, full.size() - 16, full.size() - 8, full.size() - 1};
  for (std::size_t at = 4096; at < full.size(); at += 4096) cuts.push_back(at);
  std::mt19937 rng(77);
  for (int i = 0; i < 300; ++i) cuts.push_back(rng() % full.size());
  for (std::size_t cut : cuts) {
    std::vector<std::uint8_t> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    INFO("truncated to " << cut << " bytes");
    CHECK(error_id(b) == "ets.model.4");
  }
  std::vector<std::uint8_t> longer = full;
  longer.push_back(0);
  CHECK(error_id(longer) == "ets.model.4");
}

TEST_CASE("flipped bytes anywhere are detected") {
  const auto full = read_bytes(ets_test::fixture("lstm_f5_h7_trained.etsm"));
  std::mt19937 rng(5);
  for (int i = 0; i < 400; ++i) {
    auto b = full;
    const std::size_t at = rng() % b.size();
    b[at] ^= static_cast<std::uint8_t>(1u + rng() % 255u);
    INFO("byte " << at);
    CHECK_FALSE(error_id(b).empty());
  }
}

TEST_CASE("files with a valid checksum but damaged structure fail cleanly (fuzz with CRC repaired)") {
  const auto full = read_bytes(ets_test::fixture("lstm_f5_h7_trained.etsm"));
  std::mt19937 rng(9);
  int accepted = 0;
  for (int i = 0; i < 1500; ++i) {
    auto b = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    // Bias towards the header, metadata and tensor directory, where structure lives.
    for (int k = 0; k < flips; ++k) b[rng() % std::min<std::size_t>(b.size() - 16, 1200)] = static_cast<std::uint8_t>(rng());
    fix_crc(b);
    try {
      ets::parse_model(b.data(), b.size());
      ++accepted;  // e.g. a flip inside a weight value or a provenance string
    } catch (const ets::Error& e) {
      CHECK(e.id().rfind("ets.", 0) == 0);
    }
  }
  CHECK(accepted < 1500);
}

TEST_CASE("a GRU model is architecture 'bigru' and round-trips; an unknown architecture is refused by name") {
  const auto bytes = read_bytes(ets_test::fixture("gru_f5_h7_trained.etsm"));
  const ets::ModelFile m = ets::parse_model(bytes.data(), bytes.size());
  CHECK(m.weights.config.cell == ets::RnnCell::gru);
  CHECK(m.weights.cells.at(0).w_hh.size() == 3u * 7 * 7);
  const auto again = ets::serialize_model(m);
  CHECK(again == bytes);
  CHECK(ets::parse_model(again.data(), again.size()).weights.config == m.weights.config);
  // This is how a reader that predates the GRU sees "bigru": an architecture it does not know, not an LSTM.
  auto b = bytes;
  std::memcpy(b.data() + find(b, "bigru"), "bixyz", 5);
  fix_crc(b);
  CHECK(error_id(b) == "ets.model.11");
}

TEST_CASE("a tensor whose shape disagrees with the metadata is a shape error") {
  auto b = ets::serialize_model(sample_model(4));
  // Metadata entry: u16 key length, key, u8 type, i64 value.
  const std::size_t key = find(b, "lstm.input_size");
  b[key + 15 + 1] = 7;  // input_size 6 -> 7
  fix_crc(b);
  try {
    ets::parse_model(b.data(), b.size());
    FAIL("shape mismatch must be rejected");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.7");
    CHECK(e.code() == ets::Errc::shape);
    CHECK(e.message().find("weight_ih_l0") != std::string::npos);
  }
}

TEST_CASE("cell tensors of a layer the metadata does not have are refused, not skipped") {
  // lstm.layers edited from 3 to 2: every tensor the 2 layers need is there with its shape, and layer 2's would be
  // skipped as unknown, so without the self-test the model loaded and predicted with two thirds of its network
  auto b = ets::serialize_model(sample_model(5));
  const std::size_t key = find(b, "lstm.layers");
  REQUIRE(b[key + 11] == 1);  // type 1: int64
  REQUIRE(b[key + 12] == 3);
  b[key + 12] = 2;
  fix_crc(b);
  ets::ModelLoadOptions unverified;
  unverified.verify_self_test = false;
  CHECK(error_id(b, unverified) == "ets.model.7");
  const std::string why = error_message(b, unverified);
  CHECK(why.find("_l2") != std::string::npos);
  CHECK(why.find("lstm.layers 2") != std::string::npos);
}

TEST_CASE("a header size that overlaps the sections after it is named as such") {
  auto b = ets::serialize_model(sample_model(7));
  b[12] = 72;  // header size 64 -> 72, while the metadata still starts at 64
  fix_crc(b);
  CHECK(error_id(b) == "ets.model.6");
  CHECK(error_message(b).find("header says it is 72 bytes, but its metadata starts at 64") != std::string::npos);
}

TEST_CASE("bad magic, missing file and inconsistent content have their own ids") {
  auto b = ets::serialize_model(sample_model(5));
  b[0] = 'X';
  CHECK(error_id(b) == "ets.model.2");
  CHECK(error_message(b).find("like a trace") == std::string::npos);
  // a trace passed where the model goes says so: from the file (a gzipped Kineto trace) and from memory
  try {
    ets::load_model(ets_test::fixture("cpu_small_mlp.json.gz"));
    FAIL("a trace loaded as a model");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.2");
    CHECK_THAT(e.what(), Catch::Contains("starts as gzip data, like a trace") && Catch::Contains("cpu_small_mlp"));
  }
  const auto bytes_of = [](std::string s) {
    s.resize(std::max<std::size_t>(s.size(), 200), ' ');
    return std::vector<std::uint8_t>(s.begin(), s.end());
  };
  CHECK(error_message(bytes_of("\n  {\"traceEvents\": []}")).find("starts as JSON, like a trace") != std::string::npos);
  CHECK(error_message(bytes_of(std::string("SQLite format 3\0", 16))).find("an SQLite database, like a trace") !=
        std::string::npos);
  CHECK(error_message(bytes_of("op,dir,params\n")).find("like a trace") == std::string::npos);  // nothing to say
  CHECK(error_message(bytes_of("op,dir,params\n")).find("torch.save") == std::string::npos);
  // a PyTorch checkpoint: a zip archive (torch.save since 1.6), or a pickle before
  CHECK(error_message(bytes_of("PK\x03\x04" "archive/data.pkl")).find("as torch.save writes") != std::string::npos);
  CHECK(error_message(bytes_of("\x80\x02\x8a\x0a" "l")).find("export_etsm.py") != std::string::npos);
  try {
    ets::load_model("/nonexistent/dir/m.etsm");
    FAIL();
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.1");
  }
  CHECK_THROWS_AS(ets::load_model(std::filesystem::temp_directory_path().string()), ets::Error);
  ets::ModelFile m = sample_model(6);
  m.window_stride = 13;
  CHECK_THROWS_AS(ets::serialize_model(m), ets::Error);
  m = sample_model(6);
  m.self_test.expected.pop_back();
  CHECK_THROWS_AS(ets::serialize_model(m), ets::Error);
  m = sample_model(6);
  m.weights.cells[0].b_hh.pop_back();
  CHECK_THROWS_AS(ets::serialize_model(m), ets::Error);
  CHECK_THROWS_AS(ets::save_model(sample_model(6), "/nonexistent/dir/m.etsm"), ets::Error);
}

TEST_CASE("load_model reads the prefix before the rest, and a model into one buffer of the file's size") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ets-model-prefix-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<std::uint8_t> model = ets::serialize_model(sample_model(9));
  const auto write = [&](const std::string& name, const std::vector<std::uint8_t>& bytes, std::uintmax_t size) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
    fs::resize_file(path, size);  // sparse past the bytes written: no disk, and nothing to read if the prefix fails
    return path;
  };
  // Files of 1 GiB that the first 24 bytes refuse: no magic, and a model's bytes followed by zeros.
  const std::uintmax_t gib = std::uintmax_t{1} << 30;
  const std::string zeros = write("zeros.etsm", {}, gib), padded = write("padded.etsm", model, gib);
  const std::string exact = write("exact.etsm", model, model.size());
  const auto load = [](const std::string& path, std::size_t& largest) {
    ets_test::alloc::largest = 0;
    ets_test::alloc::counting = true;
    std::string id;
    try {
      (void)ets::load_model(path);
    } catch (const ets::Error& e) {
      id = e.id();
    }
    ets_test::alloc::counting = false;
    largest = ets_test::alloc::largest;
    return id;
  };
  std::size_t largest = 0;
  CHECK(load(zeros, largest) == "ets.model.2");
  if (ETS_TEST_ALLOC_HOOKS) CHECK(largest < (std::size_t{1} << 20));
  CHECK(load(padded, largest) == "ets.model.4");
  if (ETS_TEST_ALLOC_HOOKS) CHECK(largest < (std::size_t{1} << 20));
  CHECK(load(exact, largest).empty());
  // the file's bytes in one buffer of its size: reading to the end used to grow it past the size, doubling it
  if (ETS_TEST_ALLOC_HOOKS) CHECK(largest == model.size());
  fs::remove_all(dir);
}

TEST_CASE("a missing arch, a non-finite weight and absurd entry counts are structure errors") {
  const auto good = ets::serialize_model(sample_model(6));
  {  // "arch" is required: without it the reader used to report architecture '' unsupported (ets.model.11)
    auto b = good;
    std::memcpy(b.data() + find(b, "arch"), "arcz", 4);
    fix_crc(b);
    CHECK(error_id(b) == "ets.model.6");
  }
  {  // a NaN weight is refused on load even when the self-test (which would catch it) is skipped
    // directory entry: u16 name length, name, u8 dtype, u8 ndim, ndim × u64 dims, u64 offset, u64 bytes
    auto b = good;
    const std::size_t name = find(b, "weight_ih_l0");
    const std::size_t ndim = b[name + 12 + 1];
    std::uint64_t offset = 0;
    std::memcpy(&offset, b.data() + name + 12 + 2 + 8 * ndim, 8);
    const std::uint32_t nan_bits = 0x7fc00000u;
    std::memcpy(b.data() + offset, &nan_bits, 4);
    fix_crc(b);
    ets::ModelLoadOptions no_self_test;
    no_self_test.verify_self_test = false;
    CHECK(error_id(b, no_self_test) == "ets.model.6");
  }
  {  // the metadata count (u32 at offset 56): millions of tiny entries would cost many times the file in memory
    auto b = good;
    const std::uint32_t many = 70000;
    std::memcpy(b.data() + 56, &many, 4);
    fix_crc(b);
    CHECK(error_id(b) == "ets.model.6");
  }
}

TEST_CASE("tensors that share bytes in the file are refused, so a small file cannot decode into many times its size") {
  auto b = ets::serialize_model(sample_model(8));
  // Directory entry: u16 name length, name, u8 dtype, u8 rank, rank × u64 dims, u64 offset, u64 size.
  auto entry = [&](const std::string& name) {
    std::string key = std::string(1, static_cast<char>(name.size())) + std::string(1, '\0') + name;
    return find(b, key) + key.size();
  };
  const std::size_t ih = entry("bias_ih_l0"), hh = entry("bias_hh_l0");  // both rank 1, 20 floats
  std::copy_n(b.begin() + static_cast<std::ptrdiff_t>(ih + 10), 8, b.begin() + static_cast<std::ptrdiff_t>(hh + 10));
  fix_crc(b);
  try {
    ets::parse_model(b.data(), b.size());
    FAIL("aliased tensors must be rejected");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.6");
    CHECK(e.message().find("overlap") != std::string::npos);
  }
}

TEST_CASE("the self-test is bounded and the label metadata sane, on write and on read") {
  ets::ModelFile m = sample_model(9);
  auto& st = m.self_test;
  const auto redo = [&](int windows, int width) {
    st.windows = windows;
    st.width = width;
    st.input.assign(static_cast<std::size_t>(windows) * width * 6, 0.1f);
    st.expected.resize(static_cast<std::size_t>(windows) * width * 2);
    ets::BiLstmPredictor(m.weights).predict(st.input.data(), windows, width, st.expected.data());
  };
  redo(1, 4096);  // the limit itself is fine
  const auto ok = ets::serialize_model(m);
  CHECK(ets::parse_model(ok.data(), ok.size()).self_test.width == 4096);
  redo(2, 2049);
  try {
    ets::serialize_model(m);
    FAIL("a self-test above 4,096 positions must not be written");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.10");
  }
  m = sample_model(9);
  m.labels.time_scale = 0;
  CHECK_THROWS_AS(ets::serialize_model(m), ets::Error);
  // the same on read: a file whose labels.transform was changed after writing
  auto b = ets::serialize_model(sample_model(9));
  const std::size_t at = find(b, "log1p");
  b[at] = 'X';  // "Xog1p": same length, so only the value changes
  fix_crc(b);
  CHECK(error_id(b) == "ets.model.6");
}

TEST_CASE("serialize_model refuses what parse_model would refuse: a non-finite weight, too many entries") {
  const auto write_error = [](const ets::ModelFile& m) -> std::string {
    try {
      ets::serialize_model(m);
    } catch (const ets::Error& e) {
      return e.id();
    }
    return "";
  };
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    ets::ModelFile m = sample_model(7);
    m.weights.head_b.back() = bad;  // a diverged training
    CHECK(write_error(m) == "ets.model.10");
    m = sample_model(7);
    m.weights.cells.front().w_hh[3] = bad;
    CHECK(write_error(m) == "ets.model.10");
  }
  ets::ModelFile m = sample_model(7);
  for (int i = 0; i < 65536; ++i) m.provenance["k" + std::to_string(i)] = "v";
  CHECK(write_error(m) == "ets.model.10");
  // any provenance name a metadata key holds (u16 length, "provenance." included) round-trips, an empty one too:
  // the writer refused names of over 200 bytes, or empty, that the reader loads (so a loaded model could not be
  // saved again); one byte more than the key holds is refused
  m = sample_model(7);
  m.provenance[""] = "empty name";
  m.provenance[std::string(240, 'k')] = "long name";
  m.provenance[std::string(65535 - 11, 'n')] = "longest name";
  const auto round = ets::serialize_model(m);
  const ets::ModelFile back = ets::parse_model(round.data(), round.size());
  CHECK(back.provenance == m.provenance);
  CHECK(ets::serialize_model(back) == round);
  m.provenance[std::string(65535 - 10, 'n')] = "too long";
  CHECK(write_error(m) == "ets.model.10");
  // below the reader's limit, it loads
  m = sample_model(7);
  for (int i = 0; i < 1000; ++i) m.provenance["k" + std::to_string(i)] = "v";
  const auto ok = ets::serialize_model(m);
  CHECK(ets::parse_model(ok.data(), ok.size()).provenance.size() == m.provenance.size());
}

TEST_CASE("save_model replaces a symlink's target, keeps a file's mode and writes a pipe or device in place") {
  namespace fs = std::filesystem;
  const ets_test::TempDir scratch("ets_model_save");
  const fs::path& dir = scratch.path;
  fs::create_directories(dir / "real");
  const ets::ModelFile m = sample_model(5);
  const auto bytes = ets::serialize_model(m);
  // a relative symlink, dangling until the first save: the link stays, its target gets the model
  fs::create_symlink(fs::path("real") / "m.etsm", dir / "link.etsm");
  for (int round = 0; round < 2; ++round) {
    ets::save_model(m, (dir / "link.etsm").string());
    CHECK(fs::is_symlink(dir / "link.etsm"));
    CHECK(read_bytes((dir / "real" / "m.etsm").string()) == bytes);
  }
  // a private file stays private when rewritten
  fs::permissions(dir / "real" / "m.etsm", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  ets::save_model(m, (dir / "link.etsm").string());
  CHECK(fs::status(dir / "real" / "m.etsm").permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  // /dev/null is a device: written in place, and no temporary is left beside the link that names it
  fs::create_symlink("/dev/null", dir / "null.etsm");
  ets::save_model(m, (dir / "null.etsm").string());
  CHECK(fs::is_character_file(dir / "null.etsm"));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 3);  // real/, link, null
  // a loop of links is an I/O error naming the path
  fs::create_symlink("b.etsm", dir / "a.etsm");
  fs::create_symlink("a.etsm", dir / "b.etsm");
  try {
    ets::save_model(m, (dir / "a.etsm").string());
    FAIL("a loop of symlinks must not be written");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.model.9");
    CHECK(e.message().find("loop") != std::string::npos);
  }
}
