// .etsm reader and writer (layout: docs/model-format.md). Every read is bounds-checked against the section it
// belongs to, so truncated, corrupted or hostile files end in ets::Error (ets.model.*), never a crash.
#include "ets/model_file.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "ets/detail/cloexec_file.hpp"
#include "ets/detail/cpu_lstm.hpp"
#include "ets/detail/crc32c.hpp"
#include "ets/detail/output_file.hpp"
#include "ets/error.hpp"
#include "file_magic.hpp"

namespace ets {
namespace {

constexpr std::string_view kMagic = detail::kEtsModelMagic;
constexpr char kEndMagic[8] = {'E', 'T', 'S', 'M', '_', 'E', 'N', 'D'};
constexpr std::size_t kHeaderBytes = 64;
constexpr std::uint64_t kMaxFileBytes = ModelFile::kMaxBytes;
constexpr std::size_t kTrailerBytes = 16;
constexpr std::size_t kAlign = 64;
constexpr int kMaxDims = 4;
// The load-time self-test costs positions × parameters; this bound keeps it a small multiple of reading the weights.
constexpr std::size_t kMaxSelfTestPositions = ModelFile::SelfTest::kMaxPositions;
constexpr std::uint64_t kMaxEntries = 65536;  // metadata entries, and tensors, a reader accepts

// The one label normalisation ETS writes and reads: log1p, finite means, positive scales.
bool valid_labels(const ModelFile::LabelNorm& l) {
  return l.transform == "log1p" && std::isfinite(l.time_mean) && std::isfinite(l.gap_mean) &&
         std::isfinite(l.time_scale) && l.time_scale > 0 && std::isfinite(l.gap_scale) && l.gap_scale > 0;
}

enum MetaType : std::uint8_t { kInt = 1, kFloat = 2, kString = 3, kBytes = 4 };
enum DType : std::uint8_t { kF32 = 1 };

using detail::crc32c;

// ---- writing ----

struct Writer {
  std::vector<std::uint8_t> out;
  void u8(std::uint8_t v) { out.push_back(v); }
  void u16(std::uint16_t v) { for (int i = 0; i < 2; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
  void u32(std::uint32_t v) { for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
  void u64(std::uint64_t v) { for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  void f32s(const std::vector<float>& v) {
    for (float f : v) {
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      u32(bits);
    }
  }
  void patch_u64(std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
  void pad_to(std::size_t align) { out.resize((out.size() + align - 1) / align * align, 0); }
};

struct Meta {
  std::string key;
  MetaType type;
  std::int64_t i = 0;
  double f = 0;
  std::vector<std::uint8_t> bytes;  // string or blob
};

Meta meta_int(std::string k, std::int64_t v) { Meta m{std::move(k), kInt, v, 0, {}}; return m; }
Meta meta_float(std::string k, double v) { Meta m{std::move(k), kFloat, 0, v, {}}; return m; }
Meta meta_string(std::string k, const std::string& v) { return Meta{std::move(k), kString, 0, 0, {v.begin(), v.end()}}; }
Meta meta_bytes(std::string k, const std::vector<std::uint8_t>& v) { return Meta{std::move(k), kBytes, 0, 0, v}; }

struct TensorOut {
  std::string name;
  std::vector<std::uint64_t> dims;
  const std::vector<float>* data;
};

std::string tensor_name(const char* kind, int layer, int dir) {
  return fmt::format("{}_l{}{}", kind, layer, dir ? "_reverse" : "");
}

// The layer of a cell tensor's name ("weight_ih_l3" → 3) and whether it is a reverse direction's; none for any other
// name. Layers past an int are reported as INT_MAX, which no model has.
std::optional<std::pair<int, bool>> cell_tensor_layer(std::string_view name) {
  bool known = false;
  for (const char* kind : {"weight_ih_l", "weight_hh_l", "bias_ih_l", "bias_hh_l"})
    if (name.substr(0, std::strlen(kind)) == kind) {
      name.remove_prefix(std::strlen(kind));
      known = true;
      break;
    }
  if (!known) return std::nullopt;
  const bool reverse = name.size() > 8 && name.substr(name.size() - 8) == "_reverse";
  if (reverse) name.remove_suffix(8);
  if (name.empty() || name.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  long long layer = 0;
  for (char ch : name) layer = std::min<long long>(layer * 10 + (ch - '0'), std::numeric_limits<int>::max());
  return std::make_pair(static_cast<int>(layer), reverse);
}

// ---- reading ----

// A cursor over one section; running past its end means the section is malformed.
struct Reader {
  const std::uint8_t* base;
  std::size_t begin, end, pos;
  const char* what;

  void need(std::size_t n) const {
    ETS_CHECK(n <= end - pos, Errc::parse, "ets.model.6", "{} is malformed: a field at byte {} runs past its end (byte {})",
              what, pos, end);
  }
  std::uint64_t uint(int bytes) {
    need(static_cast<std::size_t>(bytes));
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(base[pos + i]) << (8 * i);
    pos += static_cast<std::size_t>(bytes);
    return v;
  }
  std::vector<std::uint8_t> take(std::uint64_t n) {
    ETS_CHECK(n <= end - pos, Errc::parse, "ets.model.6", "{} is malformed: a {}-byte value at byte {} runs past its end",
              what, n, pos);
    std::vector<std::uint8_t> v(base + pos, base + pos + n);
    pos += static_cast<std::size_t>(n);
    return v;
  }
};

std::uint64_t le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

bool within(std::uint64_t off, std::uint64_t len, std::uint64_t limit) { return off <= limit && len <= limit - off; }

struct TensorIn {
  std::vector<std::uint64_t> dims;
  std::uint64_t offset = 0, nbytes = 0;
};

std::string dims_str(const std::vector<std::uint64_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// The embedded self-test run on the CPU backend: the largest deviation from the stored outputs (infinity for a NaN)
// and where it is. parse_model refuses a file past the tolerance, so serialize_model does too.
double self_test_deviation(const LstmWeights& weights, const ModelFile::SelfTest& st, std::size_t& at) {
  const detail::CpuLstmBackend cpu(weights);
  std::vector<float> y(st.expected.size());
  cpu.forward(st.input.data(), st.windows, st.width, y.data());
  double worst = 0;
  at = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = std::abs(static_cast<double>(y[i]) - st.expected[i]);
    if (!(e <= worst)) {  // also catches NaN
      worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
      at = i;
    }
  }
  return worst;
}

}  // namespace

std::vector<std::uint8_t> serialize_model(const ModelFile& m) {
  detail::validate_weights(m.weights);
  const LstmConfig& c = m.weights.config;
  ETS_CHECK(m.window_width >= 1 && m.window_width <= 4096 && m.window_stride >= 1 && m.window_stride <= m.window_width,
            Errc::invalid_argument, "ets.model.10", "window width {} / stride {} out of range (1 ≤ stride ≤ width ≤ 4096)",
            m.window_width, m.window_stride);
  const auto& st = m.self_test;
  if (!st.empty()) {
    const std::size_t positions =
        static_cast<std::size_t>(std::max(st.windows, 0)) * static_cast<std::size_t>(std::max(st.width, 0));
    ETS_CHECK(positions <= kMaxSelfTestPositions, Errc::invalid_argument, "ets.model.10",
              "self-test of {} windows × {} positions is larger than a reader accepts (≤ {} positions)", st.windows,
              st.width, kMaxSelfTestPositions);
    ETS_CHECK(st.windows > 0 && st.width > 0 && st.input.size() == positions * static_cast<std::size_t>(c.input_size) &&
                  st.expected.size() == positions * static_cast<std::size_t>(c.outputs),
              Errc::invalid_argument, "ets.model.10",
              "self-test of {} windows × {} holds {} inputs and {} outputs; the model needs {} and {}", st.windows,
              st.width, st.input.size(), st.expected.size(), positions * static_cast<std::size_t>(c.input_size),
              positions * static_cast<std::size_t>(c.outputs));
    ETS_CHECK(std::isfinite(st.tolerance) && st.tolerance >= 0, Errc::invalid_argument, "ets.model.10",
              "self-test tolerance {} is not a finite number >= 0", st.tolerance);
  }
  const ModelFile::LabelNorm& ln = m.labels;
  ETS_CHECK(valid_labels(ln), Errc::invalid_argument, "ets.model.10",
            "labels must be a log1p transform with finite means and positive scales (transform '{}', time {} / {}, "
            "gap {} / {})",
            ln.transform, ln.time_mean, ln.time_scale, ln.gap_mean, ln.gap_scale);
  // A metadata key holds up to 65,535 bytes (u16 length), "provenance." included: any name that fits is one the
  // reader gives back (an ETS-only cap of 200 bytes refused to save models that parse_model had loaded).
  constexpr std::size_t kMaxProvenanceName = 65535 - sizeof("provenance.") + 1;
  for (const auto& [k, v] : m.provenance)
    ETS_CHECK(k.size() <= kMaxProvenanceName, Errc::invalid_argument, "ets.model.10",
              "provenance key '{}…' has {} bytes, more than a metadata key holds ({})", k.substr(0, 40), k.size(),
              kMaxProvenanceName);

  std::vector<Meta> meta;
  // The cell is the architecture: a reader that predates the GRU rejects "bigru" by name (ets.model.11).
  meta.push_back(meta_string("arch", c.cell == RnnCell::gru ? "bigru" : "bilstm"));
  meta.push_back(meta_int("lstm.input_size", c.input_size));
  meta.push_back(meta_int("lstm.hidden", c.hidden));
  meta.push_back(meta_int("lstm.layers", c.layers));
  meta.push_back(meta_int("lstm.outputs", c.outputs));
  meta.push_back(meta_int("lstm.bidirectional", c.bidirectional ? 1 : 0));
  meta.push_back(meta_int("window.width", m.window_width));
  meta.push_back(meta_int("window.stride", m.window_stride));
  meta.push_back(meta_bytes("encoder.state", m.encoder_state));
  meta.push_back(meta_string("labels.transform", m.labels.transform));
  meta.push_back(meta_float("labels.time_mean", m.labels.time_mean));
  meta.push_back(meta_float("labels.time_scale", m.labels.time_scale));
  meta.push_back(meta_float("labels.gap_mean", m.labels.gap_mean));
  meta.push_back(meta_float("labels.gap_scale", m.labels.gap_scale));
  meta.push_back(meta_string("hardware.env", m.hardware_env));
  for (const auto& [k, v] : m.provenance) meta.push_back(meta_string("provenance." + k, v));
  if (!st.empty()) meta.push_back(meta_float("selftest.tolerance", st.tolerance));

  std::vector<TensorOut> tensors;
  const int dirs = c.directions();
  const auto gate_rows = static_cast<std::uint64_t>(c.gate_rows());
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < dirs; ++d) {
      const LstmCellWeights& cell = m.weights.cell(l, d);
      tensors.push_back(
          {tensor_name("weight_ih", l, d), {gate_rows, static_cast<std::uint64_t>(c.layer_input(l))}, &cell.w_ih});
      tensors.push_back({tensor_name("weight_hh", l, d), {gate_rows, static_cast<std::uint64_t>(c.hidden)}, &cell.w_hh});
      tensors.push_back({tensor_name("bias_ih", l, d), {gate_rows}, &cell.b_ih});
      tensors.push_back({tensor_name("bias_hh", l, d), {gate_rows}, &cell.b_hh});
    }
  tensors.push_back({"head.weight", {static_cast<std::uint64_t>(c.outputs), static_cast<std::uint64_t>(c.hidden * dirs)},
                     &m.weights.head_w});
  tensors.push_back({"head.bias", {static_cast<std::uint64_t>(c.outputs)}, &m.weights.head_b});
  if (!st.empty()) {
    const auto n = static_cast<std::uint64_t>(st.windows), w = static_cast<std::uint64_t>(st.width);
    tensors.push_back({"selftest.input", {n, w, static_cast<std::uint64_t>(c.input_size)}, &st.input});
    tensors.push_back({"selftest.output", {n, w, static_cast<std::uint64_t>(c.outputs)}, &st.expected});
  }
  // What parse_model refuses is refused here, so that a save never reports success for a file that cannot load.
  ETS_CHECK(meta.size() <= kMaxEntries && tensors.size() <= kMaxEntries, Errc::invalid_argument, "ets.model.10",
            "model has {} metadata entries and {} tensors; a reader accepts at most {} each (too many provenance keys)",
            meta.size(), tensors.size(), kMaxEntries);
  std::uint64_t payload = 0;  // a lower bound of the file's size, known before it is built
  for (const Meta& e : meta) payload += e.key.size() + e.bytes.size();
  for (const TensorOut& t : tensors) payload += std::uint64_t{4} * t.data->size();
  ETS_CHECK(payload <= kMaxFileBytes, Errc::invalid_argument, "ets.model.10",
            "model of {} bytes of weights and metadata; a model file holds at most 2 GiB ({} bytes)", payload,
            kMaxFileBytes);
  for (const TensorOut& t : tensors) {
    const auto bad = std::find_if(t.data->begin(), t.data->end(), [](float v) { return !std::isfinite(v); });
    ETS_CHECK(bad == t.data->end(), Errc::invalid_argument, "ets.model.10",
              "tensor '{}' holds a non-finite value ({}) at index {}: a diverged training?", t.name, *bad,
              bad - t.data->begin());
  }
  if (!st.empty()) {  // load_model runs it by default (ets.model.8): one forward of at most a few thousand positions
    std::size_t at = 0;
    const double worst = self_test_deviation(m.weights, st, at);
    ETS_CHECK(worst <= st.tolerance, Errc::invalid_argument, "ets.model.10",
              "self-test's stored output {} differs by {:.3g} from what the weights compute (tolerance {:.3g}): the "
              "file would fail its self-test on load",
              at, worst, st.tolerance);
  }

  Writer wr;
  wr.raw(kMagic.data(), kMagic.size());
  wr.u16(ModelFile::kMajor);
  wr.u16(ModelFile::kMinor);
  wr.u32(kHeaderBytes);
  wr.u64(0);  // file bytes, patched below
  wr.u64(0);  // metadata offset
  wr.u64(0);  // metadata bytes
  wr.u64(0);  // tensor directory offset
  wr.u64(0);  // tensor directory bytes
  wr.u32(static_cast<std::uint32_t>(meta.size()));
  wr.u32(static_cast<std::uint32_t>(tensors.size()));

  const std::size_t meta_off = wr.out.size();
  for (const Meta& e : meta) {
    wr.u16(static_cast<std::uint16_t>(e.key.size()));
    wr.raw(e.key.data(), e.key.size());
    wr.u8(e.type);
    switch (e.type) {
      case kInt: wr.u64(static_cast<std::uint64_t>(e.i)); break;
      case kFloat: {
        std::uint64_t bits;
        std::memcpy(&bits, &e.f, 8);
        wr.u64(bits);
        break;
      }
      case kString: wr.u32(static_cast<std::uint32_t>(e.bytes.size())); wr.raw(e.bytes.data(), e.bytes.size()); break;
      case kBytes: wr.u64(e.bytes.size()); wr.raw(e.bytes.data(), e.bytes.size()); break;
    }
  }
  const std::size_t dir_off = wr.out.size();
  std::vector<std::size_t> offset_slots;
  for (const TensorOut& t : tensors) {
    wr.u16(static_cast<std::uint16_t>(t.name.size()));
    wr.raw(t.name.data(), t.name.size());
    wr.u8(kF32);
    wr.u8(static_cast<std::uint8_t>(t.dims.size()));
    for (auto d : t.dims) wr.u64(d);
    offset_slots.push_back(wr.out.size());
    wr.u64(0);
    wr.u64(t.data->size() * 4);
  }
  const std::size_t dir_end = wr.out.size();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    wr.pad_to(kAlign);
    wr.patch_u64(offset_slots[i], wr.out.size());
    wr.f32s(*tensors[i].data);
  }
  wr.pad_to(kAlign);
  const std::size_t file_bytes = wr.out.size() + kTrailerBytes;
  ETS_CHECK(file_bytes <= kMaxFileBytes, Errc::invalid_argument, "ets.model.10",
            "model file of {} bytes; a model file holds at most 2 GiB ({} bytes)", file_bytes, kMaxFileBytes);
  wr.patch_u64(16, file_bytes);
  wr.patch_u64(24, meta_off);
  wr.patch_u64(32, dir_off - meta_off);
  wr.patch_u64(40, dir_off);
  wr.patch_u64(48, dir_end - dir_off);
  wr.raw(kEndMagic, 8);
  wr.u32(crc32c(wr.out.data(), wr.out.size()));  // covers everything up to and including the end magic
  wr.u32(0);
  return std::move(wr.out);
}

void save_model(const ModelFile& model, const std::string& path) {
  const std::vector<std::uint8_t> bytes = serialize_model(model);
  // A symlink keeps pointing at the model (its target is replaced); a pipe or device is written in place; a file is
  // replaced whole and durably, never left half-written.
  detail::FileReplacement(path, "ets.model.9", "model file").write_all(bytes.data(), bytes.size());
}

namespace {

// The bytes check_prefix reads: magic, version, header size and file size.
constexpr std::size_t kPrefixBytes = 24;

// What a file that is no model starts like, where it is one of the other files a user holds: a trace passed where
// the model goes (`ets predict --model trace.json ...`), or a PyTorch checkpoint. From the first min(size,
// kPrefixBytes) bytes, all check_prefix has; "" when none fits.
std::string trace_hint(const std::uint8_t* data, std::uint64_t file_size) {
  const std::string_view head(reinterpret_cast<const char*>(data),
                              static_cast<std::size_t>(std::min<std::uint64_t>(file_size, kPrefixBytes)));
  const char* kind = nullptr;
  if (detail::is_gzip(head)) kind = "gzip data";
  else if (head.substr(0, detail::kSqliteMagic.size()) == detail::kSqliteMagic) kind = "an SQLite database";
  else if (detail::skip_blanks(head).substr(0, 1) == "{") kind = "JSON";
  if (kind)
    return fmt::format(": it starts as {}, like a trace; traces are read by Tracer::load (`ets predict TRACE`)", kind);
  // a PyTorch checkpoint: torch.save writes a zip archive (a pickle before torch 1.6)
  const bool zip = head.substr(0, 4) == std::string_view("PK\x03\x04", 4);
  const bool pickle = head.size() >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5;  // PROTO, protocol 2-5
  if (zip || pickle)
    return ": it starts as a zip archive or a pickle, as torch.save writes; a PyTorch BiLSTM's state_dict becomes an "
           ".etsm through tools/export_etsm.py";
  return "";
}

// The checks that need only the first min(size, kPrefixBytes) bytes of a file of `size` bytes (magic, version, the
// size the header gives), so that load_model can refuse a file that is no model, or not this size, before it reads
// the rest (up to 2 GiB).
void check_prefix(const std::uint8_t* data, std::uint64_t size) {
  ETS_CHECK(size >= 8, Errc::parse, "ets.model.4", "model file is truncated: {} bytes, not even the magic fits", size);
  ETS_CHECK(std::memcmp(data, kMagic.data(), kMagic.size()) == 0, Errc::parse, "ets.model.2",
            "not an ETS model file (bad magic){}", trace_hint(data, size));
  ETS_CHECK(size >= 12, Errc::parse, "ets.model.4", "model file is truncated: {} bytes, the version does not fit", size);
  const auto major = static_cast<std::uint16_t>(le(data + 8, 2));
  const auto minor = static_cast<std::uint16_t>(le(data + 10, 2));
  ETS_CHECK(major == ModelFile::kMajor, Errc::version, "ets.model.3",
            "model file has format version {}.{}; this build of ETS reads version {}.x (up to {}.{})", major, minor,
            ModelFile::kMajor, ModelFile::kMajor, ModelFile::kMinor);
  static_assert(kHeaderBytes + kTrailerBytes >= kPrefixBytes, "the prefix lies within every file that passes here");
  ETS_CHECK(size >= kHeaderBytes + kTrailerBytes, Errc::parse, "ets.model.4",
            "model file is truncated: {} bytes, shorter than header and trailer", size);
  const std::uint64_t file_bytes = le(data + 16, 8);
  ETS_CHECK(file_bytes <= size, Errc::parse, "ets.model.4", "model file is truncated: the header says {} bytes, got {}",
            file_bytes, size);
  ETS_CHECK(file_bytes == size, Errc::parse, "ets.model.4",
            "model file has {} bytes after its end (the header says {} bytes, got {})", size - file_bytes, file_bytes, size);
}

}  // namespace

ModelFile parse_model(const std::uint8_t* data, std::size_t size, const ModelLoadOptions& options) {
  ETS_CHECK(data != nullptr || size == 0, Errc::invalid_argument, "ets.model.10", "null model buffer of {} bytes", size);
  check_prefix(data, size);
  const auto major = static_cast<std::uint16_t>(le(data + 8, 2));
  const auto minor = static_cast<std::uint16_t>(le(data + 10, 2));
  const std::uint64_t header_bytes = le(data + 12, 4);
  const std::size_t body = size - kTrailerBytes;
  ETS_CHECK(std::memcmp(data + body, kEndMagic, 8) == 0 && le(data + body + 12, 4) == 0, Errc::parse, "ets.model.4",
            "model file trailer is missing or damaged (truncated or corrupted file)");
  const std::uint32_t stored = static_cast<std::uint32_t>(le(data + body + 8, 4));
  const std::uint32_t actual = crc32c(data, body + 8);
  ETS_CHECK(stored == actual, Errc::checksum, "ets.model.5",
            "model file checksum mismatch (stored CRC-32C {:08x}, computed {:08x}): the file is corrupted", stored, actual);
  ETS_CHECK(header_bytes >= kHeaderBytes && header_bytes <= body, Errc::parse, "ets.model.6",
            "model header size {} is invalid", header_bytes);

  const std::uint64_t meta_off = le(data + 24, 8), meta_len = le(data + 32, 8);
  const std::uint64_t dir_off = le(data + 40, 8), dir_len = le(data + 48, 8);
  const std::uint64_t meta_count = le(data + 56, 4), tensor_count = le(data + 60, 4);
  ETS_CHECK(meta_off >= header_bytes && dir_off >= header_bytes, Errc::parse, "ets.model.6",
            "model header says it is {} bytes, but its metadata starts at {} and its tensor directory at {}",
            header_bytes, meta_off, dir_off);
  ETS_CHECK(within(meta_off, meta_len, body) && within(dir_off, dir_len, body),
            Errc::parse, "ets.model.6", "model file sections lie outside the file (metadata {}+{}, tensors {}+{}, body {})",
            meta_off, meta_len, dir_off, dir_len, body);

  // A model has a few dozen entries; the caps keep a crafted file of millions of tiny ones from costing memory many
  // times its size (each entry becomes a map node).
  ETS_CHECK(meta_count <= kMaxEntries && tensor_count <= kMaxEntries, Errc::parse, "ets.model.6",
            "model file lists {} metadata entries and {} tensors (at most {} each)", meta_count, tensor_count,
            kMaxEntries);

  // Metadata.
  std::map<std::string, Meta> meta;
  Reader r{data, static_cast<std::size_t>(meta_off), static_cast<std::size_t>(meta_off + meta_len),
           static_cast<std::size_t>(meta_off), "model metadata"};
  for (std::uint64_t i = 0; i < meta_count; ++i) {
    Meta e;
    const auto key_len = r.uint(2);
    const auto key = r.take(key_len);
    e.key.assign(key.begin(), key.end());
    e.type = static_cast<MetaType>(r.uint(1));
    switch (e.type) {
      case kInt: e.i = static_cast<std::int64_t>(r.uint(8)); break;
      case kFloat: {
        const std::uint64_t bits = r.uint(8);
        std::memcpy(&e.f, &bits, 8);
        break;
      }
      case kString: e.bytes = r.take(r.uint(4)); break;
      case kBytes: e.bytes = r.take(r.uint(8)); break;
      default:
        ETS_THROW(Errc::parse, "ets.model.6", "model metadata '{}' has unknown value type {}", e.key,
                  static_cast<int>(e.type));
    }
    ETS_CHECK(!e.key.empty() && meta.count(e.key) == 0, Errc::parse, "ets.model.6",
              "model metadata key '{}' is empty or repeated", e.key);
    meta.emplace(e.key, std::move(e));
  }
  const auto get = [&](const std::string& key, MetaType type, bool required) -> const Meta* {
    auto it = meta.find(key);
    if (it == meta.end()) {
      ETS_CHECK(!required, Errc::parse, "ets.model.6", "model metadata lacks required key '{}'", key);
      return nullptr;
    }
    ETS_CHECK(it->second.type == type, Errc::parse, "ets.model.6", "model metadata '{}' has type {}, expected {}", key,
              static_cast<int>(it->second.type), static_cast<int>(type));
    return &it->second;
  };
  const auto get_int = [&](const std::string& key, std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = get(key, kInt, true)->i;
    ETS_CHECK(v >= lo && v <= hi, Errc::parse, "ets.model.6", "model metadata '{}' = {} is outside {}..{}", key, v, lo, hi);
    return static_cast<int>(v);
  };
  const auto get_string = [&](const std::string& key) {
    const Meta* e = get(key, kString, false);
    return e ? std::string(e->bytes.begin(), e->bytes.end()) : std::string();
  };
  const auto get_float = [&](const std::string& key, double fallback) {
    const Meta* e = get(key, kFloat, false);
    return e ? e->f : fallback;
  };

  const Meta* arch_entry = get("arch", kString, true);
  const std::string arch(arch_entry->bytes.begin(), arch_entry->bytes.end());
  ETS_CHECK(arch == "bilstm" || arch == "bigru", Errc::unsupported, "ets.model.11",
            "model architecture '{}' is not supported (expected 'bilstm' or 'bigru')", arch);
  ModelFile m;
  m.file_major = major;
  m.file_minor = minor;
  LstmConfig& c = m.weights.config;
  c.input_size = get_int("lstm.input_size", 1, 1 << 16);
  c.hidden = get_int("lstm.hidden", 1, 1 << 16);
  c.layers = get_int("lstm.layers", 1, 64);
  c.outputs = get_int("lstm.outputs", 1, 1 << 16);
  c.bidirectional = get_int("lstm.bidirectional", 0, 1) == 1;
  c.cell = arch == "bigru" ? RnnCell::gru : RnnCell::lstm;
  m.window_width = get_int("window.width", 1, 4096);
  m.window_stride = get_int("window.stride", 1, m.window_width);
  if (const Meta* e = get("encoder.state", kBytes, false)) m.encoder_state = e->bytes;
  m.labels.transform = meta.count("labels.transform") ? get_string("labels.transform") : m.labels.transform;
  m.labels.time_mean = get_float("labels.time_mean", 0.0);
  m.labels.time_scale = get_float("labels.time_scale", 1.0);
  m.labels.gap_mean = get_float("labels.gap_mean", 0.0);
  m.labels.gap_scale = get_float("labels.gap_scale", 1.0);
  ETS_CHECK(valid_labels(m.labels), Errc::parse, "ets.model.6",
            "labels.* metadata is not a log1p transform with finite means and positive scales (transform '{}', time "
            "{} / {}, gap {} / {})",
            m.labels.transform, m.labels.time_mean, m.labels.time_scale, m.labels.gap_mean, m.labels.gap_scale);
  m.hardware_env = get_string("hardware.env");
  for (const auto& [k, e] : meta)
    if (k.rfind("provenance.", 0) == 0 && e.type == kString)
      m.provenance[k.substr(11)] = std::string(e.bytes.begin(), e.bytes.end());

  // Tensor directory.
  std::map<std::string, TensorIn> tensors;
  Reader td{data, static_cast<std::size_t>(dir_off), static_cast<std::size_t>(dir_off + dir_len),
            static_cast<std::size_t>(dir_off), "model tensor directory"};
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    const auto name_bytes = td.take(td.uint(2));
    const std::string name(name_bytes.begin(), name_bytes.end());
    const auto dtype = td.uint(1);
    const auto ndim = td.uint(1);
    ETS_CHECK(dtype == kF32, Errc::unsupported, "ets.model.11", "tensor '{}' has unsupported dtype {}", name, dtype);
    ETS_CHECK(ndim >= 1 && ndim <= kMaxDims, Errc::parse, "ets.model.6", "tensor '{}' has {} dimensions", name, ndim);
    TensorIn t;
    std::uint64_t count = 1;
    for (std::uint64_t k = 0; k < ndim; ++k) {
      const std::uint64_t d = td.uint(8);
      ETS_CHECK(d <= body && (d == 0 || count <= body / d), Errc::parse, "ets.model.6",
                "tensor '{}' dimensions are larger than the file", name);
      count *= d;
      t.dims.push_back(d);
    }
    t.offset = td.uint(8);
    t.nbytes = td.uint(8);
    ETS_CHECK(t.nbytes == count * 4 && t.offset % kAlign == 0 && t.offset >= header_bytes && within(t.offset, t.nbytes, body),
              Errc::parse, "ets.model.6", "tensor '{}' ({} bytes at offset {}) does not fit its shape {} or the file",
              name, t.nbytes, t.offset, dims_str(t.dims));
    ETS_CHECK(tensors.count(name) == 0, Errc::parse, "ets.model.6", "tensor '{}' appears twice", name);
    tensors.emplace(name, std::move(t));
  }
  // Every byte belongs to one section or one tensor: tensors sharing data would make a small file decode into
  // many times its size of weights.
  {
    struct Span {
      std::uint64_t begin, end;
      std::string what;
    };
    std::vector<Span> spans = {{meta_off, meta_off + meta_len, "the metadata"},
                               {dir_off, dir_off + dir_len, "the tensor directory"}};
    for (const auto& [name, t] : tensors)
      if (t.nbytes) spans.push_back({t.offset, t.offset + t.nbytes, "tensor '" + name + "'"});
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < spans.size(); ++i)
      ETS_CHECK(spans[i - 1].end <= spans[i].begin, Errc::parse, "ets.model.6", "{} and {} overlap in the file",
                spans[i - 1].what, spans[i].what);
  }
  // A cell tensor of a layer or direction the metadata does not have: the file's weights and its metadata disagree
  // (a model cut to fewer layers by editing its metadata), and loading it would predict with part of the network.
  // Other unknown tensors are skipped (a newer minor version may add some).
  const int dirs = c.directions();
  for (const auto& [name, t] : tensors) {
    const auto layer = cell_tensor_layer(name);
    if (!layer) continue;
    ETS_CHECK(layer->first < c.layers && (!layer->second || dirs == 2), Errc::shape, "ets.model.7",
              "tensor '{}' belongs to a {} the metadata does not have (lstm.layers {}, lstm.bidirectional {})", name,
              layer->first >= c.layers ? "layer" : "direction", c.layers, dirs == 2 ? 1 : 0);
  }
  const auto read_tensor = [&](const std::string& name, const std::vector<std::uint64_t>& shape) {
    auto it = tensors.find(name);
    ETS_CHECK(it != tensors.end(), Errc::shape, "ets.model.7", "model file lacks tensor '{}' (shape {})", name,
              dims_str(shape));
    ETS_CHECK(it->second.dims == shape, Errc::shape, "ets.model.7", "tensor '{}' has shape {}, the model needs {}", name,
              dims_str(it->second.dims), dims_str(shape));
    std::vector<float> v(static_cast<std::size_t>(it->second.nbytes / 4));
    const std::uint8_t* p = data + it->second.offset;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto bits = static_cast<std::uint32_t>(le(p + 4 * i, 4));
      std::memcpy(&v[i], &bits, 4);
      // without a self-test a NaN weight would load and fail every prediction later (ets.aggregate.3)
      ETS_CHECK(std::isfinite(v[i]), Errc::parse, "ets.model.6", "tensor '{}' holds a non-finite value at index {}",
                name, i);
    }
    return v;
  };

  const auto gate_rows = static_cast<std::uint64_t>(c.gate_rows());
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < dirs; ++d) {
      LstmCellWeights cell;
      cell.w_ih =
          read_tensor(tensor_name("weight_ih", l, d), {gate_rows, static_cast<std::uint64_t>(c.layer_input(l))});
      cell.w_hh = read_tensor(tensor_name("weight_hh", l, d), {gate_rows, static_cast<std::uint64_t>(c.hidden)});
      cell.b_ih = read_tensor(tensor_name("bias_ih", l, d), {gate_rows});
      cell.b_hh = read_tensor(tensor_name("bias_hh", l, d), {gate_rows});
      m.weights.cells.push_back(std::move(cell));
    }
  m.weights.head_w = read_tensor("head.weight", {static_cast<std::uint64_t>(c.outputs), static_cast<std::uint64_t>(c.hidden * dirs)});
  m.weights.head_b = read_tensor("head.bias", {static_cast<std::uint64_t>(c.outputs)});
  detail::validate_weights(m.weights);

  const auto in_it = tensors.find("selftest.input");
  const auto out_it = tensors.find("selftest.output");
  ETS_CHECK((in_it == tensors.end()) == (out_it == tensors.end()), Errc::shape, "ets.model.7",
            "model self-test needs both selftest.input and selftest.output");
  if (in_it != tensors.end()) {
    const auto& dims = in_it->second.dims;
    ETS_CHECK(dims.size() == 3 && dims[0] >= 1 && dims[1] >= 1 && dims[0] <= kMaxSelfTestPositions &&
                  dims[0] * dims[1] <= kMaxSelfTestPositions,
              Errc::shape, "ets.model.7", "selftest.input has shape {}, expected [windows, width, {}] with ≤ {} positions",
              dims_str(dims), c.input_size, kMaxSelfTestPositions);
    auto& st = m.self_test;
    st.windows = static_cast<int>(dims[0]);
    st.width = static_cast<int>(dims[1]);
    st.input = read_tensor("selftest.input", {dims[0], dims[1], static_cast<std::uint64_t>(c.input_size)});
    st.expected = read_tensor("selftest.output", {dims[0], dims[1], static_cast<std::uint64_t>(c.outputs)});
    st.tolerance = get_float("selftest.tolerance", st.tolerance);
    ETS_CHECK(std::isfinite(st.tolerance) && st.tolerance >= 0, Errc::parse, "ets.model.6",
              "selftest.tolerance {} is not a finite non-negative number", st.tolerance);
    if (options.verify_self_test) {
      std::size_t at = 0;
      const double worst = self_test_deviation(m.weights, st, at);
      ETS_CHECK(worst <= st.tolerance, Errc::checksum, "ets.model.8",
                "model self-test failed: output {} differs by {:.3g} from the stored result (tolerance {:.3g})", at,
                worst, st.tolerance);
    }
  }
  return m;
}

ModelFile load_model(const std::string& path, const ModelLoadOptions& options) {
  std::error_code ec;
  ETS_CHECK(std::filesystem::is_regular_file(path, ec), Errc::io, "ets.model.1", "cannot open model file '{}': {}", path,
            ec ? ec.message() : std::string("not a regular file"));
  const auto file_size = std::filesystem::file_size(path, ec);
  ETS_CHECK(!ec && file_size <= kMaxFileBytes, Errc::io, "ets.model.1",
            "cannot read model file '{}': {}", path, ec ? ec.message() : std::string("larger than 2 GiB"));
  const detail::UniqueFile f(detail::fopen_cloexec(path.c_str(), "rb"));  // close-on-exec
  ETS_CHECK(f != nullptr, Errc::io, "ets.model.1", "cannot open model file '{}': {}", path, std::strerror(errno));
  constexpr auto kMaxModel = static_cast<std::size_t>(kMaxFileBytes);
  // A format error names the file; the io errors above and below name it already.
  const auto in_file = [&](const auto& check) {
    try {
      return check();
    } catch (const Error& e) {
      throw Error(e.code(), e.id(), e.message() + " [" + path + "]");
    }
  };
  // The prefix first: a file that is no model, or not the size its header gives, is refused before the rest is read
  // (a 2 GiB file of zeros took 4 GiB of memory and seconds to be called "bad magic"). Then the rest, into a buffer
  // of the file's size; parse_model checks the whole again as read, since the file may have changed in between.
  std::uint8_t prefix[kPrefixBytes];
  const std::size_t want = static_cast<std::size_t>(std::min<std::uintmax_t>(kPrefixBytes, file_size));
  const std::size_t have = std::fread(prefix, 1, want, f.get());
  ETS_CHECK(!std::ferror(f.get()), Errc::io, "ets.model.1", "cannot read model file '{}'", path);
  if (have == want) in_file([&] { check_prefix(prefix, file_size); });
  std::vector<std::uint8_t> bytes;
  bytes.reserve(static_cast<std::size_t>(file_size));
  bytes.assign(prefix, prefix + have);
  ETS_CHECK(detail::read_rest(f.get(), bytes, kMaxModel - have), Errc::io, "ets.model.1", "cannot read model file '{}'",
            path);
  ETS_CHECK(bytes.size() <= kMaxModel, Errc::io, "ets.model.1", "cannot read model file '{}': {}", path,
            "larger than 2 GiB");
  return in_file([&] { return parse_model(bytes.data(), bytes.size(), options); });
}

}  // namespace ets
