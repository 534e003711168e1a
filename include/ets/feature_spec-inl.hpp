// Definitions for feature_spec.hpp: fitting, per-op encoding, the label transform and the serialised form.
// Per-op encoding allocates nothing, so WindowEncoder can encode 100k ops in a few tens of milliseconds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ets/detail/ascii.hpp"
#include "ets/detail/fnv1a.hpp"

#include "ets/error.hpp"
#include "ets/feature_spec.hpp"

namespace ets {
namespace detail {
namespace fspec {

// A z-score as a feature or target: finite whatever the statistics. A fitted spec's stay far inside (its smallest
// std still leaves |z| < 1e20 for the log-scale columns); a crafted blob's std of 1e-300 would make them ±inf, which
// the network documents it never gets.
inline double finite_z(double z) noexcept { return std::clamp(z, -1e30, 1e30); }

// Welford's update: stable for the wide ranges of tensor sizes and hyper-parameters we see.
struct Welford {
  // A hyper-parameter of 1e154 would overflow the variance (and ±1.7e308 the mean), spoiling the statistic of
  // every op of its type. Such values stay out of the statistics; encoding then clips them to ±hyper_clip.
  static constexpr double kMaxValue = 1e150;
  std::int64_t n = 0;
  double mean = 0.0;
  double m2 = 0.0;
  void add(double x) noexcept {
    if (!(std::fabs(x) <= kMaxValue)) return;
    ++n;
    const double d = x - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (x - mean);
  }
  FeatureSpec::Moments moments() const noexcept {
    FeatureSpec::Moments m;
    m.n = n;
    m.mean = n > 0 ? mean : 0.0;
    const double sd = n > 0 ? std::sqrt(std::max(m2, 0.0) / static_cast<double>(n)) : 0.0;
    m.stdev = (sd > 0.0 && std::isfinite(sd)) ? sd : 1.0;  // a constant feature must not divide by zero
    return m;
  }
};

// log1p(numel) computed in double: TensorInfo::numel() multiplies int64s and could overflow on hostile dims.
// A product beyond double's range (1,100 dims of 2) falls back to Σ log(d), which log1p(numel) equals there to
// double precision, so the feature stays finite.
inline double log_numel(const TensorInfo& t) noexcept {
  double n = 1.0;
  for (auto d : t.dims) {
    if (d <= 0) return 0.0;  // an empty tensor
    n *= static_cast<double>(d);
  }
  if (std::isfinite(n)) return std::log1p(n);
  double s = 0.0;
  for (auto d : t.dims) s += std::log(static_cast<double>(d));
  return s;
}

// log1p of a tensor dimension; small ones (nearly all) come from a table built with std::log1p, so the
// values are identical to the direct call, only cheaper.
inline double log1p_dim(std::int64_t d) noexcept {
  constexpr int kTable = 4096;
  struct Table {
    double v[kTable];
    Table() noexcept {
      for (int i = 0; i < kTable; ++i) v[i] = std::log1p(static_cast<double>(i));
    }
  };
  static const Table table;
  if (d <= 0) return 0.0;
  return d < kTable ? table.v[d] : std::log1p(static_cast<double>(d));
}

inline bool usable(double v) noexcept { return std::isfinite(v) && v >= 0.0; }

inline int optimizer_code(const std::string& name) {
  std::string t;
  t.reserve(name.size());
  for (char c : name) t.push_back(detail::ascii_tolower(c));
  const std::string prefix = "torch.optim.";
  if (t.compare(0, prefix.size(), prefix) == 0) t.erase(0, prefix.size());
  if (t.empty()) return 4;
  if (t == "sgd") return 0;
  if (t == "adam") return 1;
  if (t == "adamw") return 2;
  return 3;
}

// Byte order is fixed (little-endian) by shifting, so blobs move between hosts unchanged.
struct Writer {
  std::vector<std::uint8_t>& out;
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    u64(b);
  }
  void str(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  void moments(const FeatureSpec::Moments& m) {
    i64(m.n);
    f64(m.mean);
    f64(m.stdev);
  }
};

inline std::uint64_t load_u64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

struct Reader {
  const std::uint8_t* p;
  std::size_t size;
  std::size_t pos = 0;

  std::size_t left() const noexcept { return size - pos; }
  void need(std::size_t k) const {
    ETS_CHECK(k <= left(), Errc::parse, "ets.encoder.3",
              "feature spec blob is truncated (need {} bytes at offset {}, {} left)", k, pos, left());
  }
  std::uint32_t u32() {
    need(4);
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[pos + i]) << (8 * i);
    pos += 4;
    return v;
  }
  std::uint64_t u64() {
    need(8);
    const std::uint64_t v = load_u64(p + pos);
    pos += 8;
    return v;
  }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  double f64() {
    const std::uint64_t b = u64();
    double v;
    std::memcpy(&v, &b, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint32_t n = u32();
    need(n);
    std::string s(reinterpret_cast<const char*>(p + pos), n);
    pos += n;
    return s;
  }
  FeatureSpec::Moments moments() {
    FeatureSpec::Moments m;
    m.n = i64();
    m.mean = f64();
    m.stdev = f64();
    ETS_CHECK(m.n >= 0 && std::isfinite(m.mean) && std::isfinite(m.stdev) && m.stdev > 0.0, Errc::parse,
              "ets.encoder.7", "feature spec blob holds an invalid statistic (n={}, mean={}, std={})", m.n,
              m.mean, m.stdev);
    return m;
  }
};

inline constexpr std::uint8_t kMagic[4] = {'E', 'T', 'S', 'F'};
constexpr std::size_t kMomentsBytes = 24;

}  // namespace fspec
}  // namespace detail

namespace detail::fspec {
// ets.encoder.9: an unfitted (default-constructed or moved-from) spec asked to encode or transform labels.
inline void require_fitted(const FeatureSpec& spec) {
  ETS_CHECK(spec.fitted(), Errc::invalid_argument, "ets.encoder.9", "FeatureSpec is not fitted");
}
}  // namespace detail::fspec

ETS_INLINE bool FeatureSpec::Moments::operator==(const Moments& o) const noexcept {
  return n == o.n && mean == o.mean && stdev == o.stdev;
}

ETS_INLINE std::string FeatureSpec::options_problem(const FeatureOptions& o) {
  if (!(std::isfinite(o.coverage) && o.coverage > 0.0 && o.coverage <= 1.0))
    return fmt::format("coverage must be in (0, 1], got {}", o.coverage);
  if (o.max_one_hot < 0 || o.max_one_hot > 65536)
    return fmt::format("max_one_hot must be in [0, 65536], got {}", o.max_one_hot);
  if (o.input_slots < 0 || o.input_slots > 16)
    return fmt::format("input_slots must be in [0, 16], got {}", o.input_slots);
  if (o.dims_per_input < 0 || o.dims_per_input > 8)
    return fmt::format("dims_per_input must be in [0, 8], got {}", o.dims_per_input);
  if (!(std::isfinite(o.hyper_clip) && o.hyper_clip > 0.0))
    return fmt::format("hyper_clip must be positive, got {}", o.hyper_clip);
  if (!(std::isfinite(o.time_share) && o.time_share >= 0.0 && o.time_share <= 1.0))
    return fmt::format("time_share must be in [0, 1], got {}", o.time_share);
  return {};
}

ETS_INLINE void FeatureSpec::build_layout() {
  Layout& l = layout_;
  l.type = 0;
  l.other = one_hot_;
  l.freq = l.other + 1;
  l.phase = l.freq + 2;
  l.dtype = l.phase + kPhaseCount;
  l.inputs = l.dtype + kDTypeCount;
  l.input_stride = 3 + options_.dims_per_input;
  l.cost = l.inputs + options_.input_slots * l.input_stride;
  l.hyper = l.cost + 4;
  l.batch = l.hyper + kHyperCount;
  l.optimizer = l.batch + 2;
  l.features = l.optimizer + kOptimizerCount;
}

ETS_INLINE void FeatureSpec::build_index() {
  index_.clear();
  index_.reserve(types_.size());
  freq_.assign(types_.size(), {0.f, 0.f});
  column_.assign(types_.size(), -1);
  const int cut = one_hot_ - static_cast<int>(promoted_.size());
  for (int r = 0; r < cut; ++r) column_[static_cast<std::size_t>(r)] = r;
  for (std::size_t i = 0; i < promoted_.size(); ++i)
    column_[static_cast<std::size_t>(promoted_[i])] = cut + static_cast<int>(i);
  const double denom = std::log1p(static_cast<double>(total_ops_));
  const double v = static_cast<double>(types_.size());
  for (std::size_t r = 0; r < types_.size(); ++r) {
    index_.emplace(types_[r].name, static_cast<int>(r));
    // Strictly positive for every known type, so "0, 0" singles out types never seen in training.
    freq_[r][0] = static_cast<float>(std::log1p(static_cast<double>(types_[r].count)) / denom);
    freq_[r][1] = static_cast<float>(1.0 - static_cast<double>(r) / v);
  }
}

ETS_INLINE FeatureSpec FeatureSpec::fit(const std::vector<ExecutionTrace>& traces, const FeatureOptions& options) {
  const std::string why = options_problem(options);
  ETS_CHECK(why.empty(), Errc::invalid_argument, "ets.encoder.1", "invalid FeatureOptions: {}", why);

  struct Tally {
    std::int64_t count = 0;
    double us = 0.0;  // labelled time + gap, for time_share
  };
  std::unordered_map<std::string, Tally> tally;
  std::int64_t total = 0;
  double total_us = 0.0;
  for (const auto& t : traces) {
    const bool labelled = has_labels(t);
    for (const auto& op : t.ops) {
      Tally& e = tally[op.name];
      ++e.count;
      ++total;
      if (!labelled) continue;
      const double us = std::max(op.time_us, 0.0) + std::max(op.gap_us, 0.0);
      e.us += us;
      total_us += us;
    }
  }
  ETS_CHECK(total > 0, Errc::invalid_argument, "ets.encoder.2",
            "cannot fit features: the {} training trace(s) hold no ops", traces.size());

  FeatureSpec s;
  s.options_ = options;
  s.total_ops_ = total;
  s.types_.reserve(tally.size());
  for (auto& [name, c] : tally) {
    TypeEntry e;
    e.name = name;
    e.count = c.count;
    s.types_.push_back(std::move(e));
  }
  std::sort(s.types_.begin(), s.types_.end(), [](const TypeEntry& a, const TypeEntry& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });

  // Smallest K whose most frequent types cover `coverage` of all ops (the tolerance absorbs 0.99 * n rounding).
  const double target = options.coverage * static_cast<double>(total) - 1e-9 * static_cast<double>(total);
  std::int64_t covered = 0;
  int k = 0;
  const int v = static_cast<int>(s.types_.size());
  while (k < v && static_cast<double>(covered) < target) covered += s.types_[static_cast<std::size_t>(k++)].count;
  s.one_hot_ = std::min(k, options.max_one_hot);
  // Then the rarer types that hold a large share of the time, most frequent first, within the cap.
  if (options.time_share > 0.0 && total_us > 0.0)
    for (int r = s.one_hot_; r < v && s.one_hot_ < options.max_one_hot; ++r) {
      if (tally.at(s.types_[static_cast<std::size_t>(r)].name).us < options.time_share * total_us) continue;
      s.promoted_.push_back(r);
      ++s.one_hot_;
    }
  s.build_layout();
  s.build_index();

  using detail::fspec::Welford;
  std::vector<std::array<Welford, kHyperCount>> hyper(s.types_.size());
  std::array<Welford, kHyperCount> hyper_global{};
  const int slots = options.input_slots, dims = options.dims_per_input, per_slot = s.cont_per_slot();
  const int cf = s.cont_flops();
  std::vector<Welford> cont(static_cast<std::size_t>(cf + 3));
  std::array<Welford, kLabelCount> labels{};

  std::vector<std::int32_t> twins;
  for (const auto& t : traces) {
    const bool labelled = has_labels(t);
    const bool batch_known = t.meta.batch_size > 0;
    const double log_batch = batch_known ? std::log1p(static_cast<double>(t.meta.batch_size)) : 0.0;
    if (options.backward_twin) backward_twins(t, twins);
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
      const OpRecord& op = t.ops[i];
      const OpRecord& desc = s.described(t, twins, i);  // the statistics of what encoding will write
      const int r = s.index_.find(op.name)->second;
      for (int h = 0; h < kHyperCount; ++h) {
        const Hyper hh = static_cast<Hyper>(h);
        if (!desc.hyper.has(hh) || !std::isfinite(desc.hyper.get(hh))) continue;
        hyper[static_cast<std::size_t>(r)][static_cast<std::size_t>(h)].add(desc.hyper.get(hh));
        hyper_global[static_cast<std::size_t>(h)].add(desc.hyper.get(hh));
      }
      const int n_in = std::min(slots, static_cast<int>(desc.inputs.size()));
      for (int si = 0; si < n_in; ++si) {
        const TensorInfo& in = desc.inputs[static_cast<std::size_t>(si)];
        const int base = si * per_slot;
        const int rank = static_cast<int>(in.dims.size());
        cont[static_cast<std::size_t>(base)].add(detail::fspec::log_numel(in));
        cont[static_cast<std::size_t>(base + 1)].add(static_cast<double>(rank));
        for (int j = 0; j < dims; ++j) {
          const int di = rank - dims + j;
          if (di < 0) continue;
          cont[static_cast<std::size_t>(base + 2 + j)].add(detail::fspec::log1p_dim(in.dims[static_cast<std::size_t>(di)]));
        }
      }
      if (detail::fspec::usable(desc.flops)) cont[static_cast<std::size_t>(cf)].add(std::log1p(desc.flops));
      if (detail::fspec::usable(desc.bytes)) cont[static_cast<std::size_t>(cf + 1)].add(std::log1p(desc.bytes));
      if (batch_known) cont[static_cast<std::size_t>(cf + 2)].add(log_batch);
      if (labelled) {
        labels[0].add(std::log1p(std::max(op.time_us, 0.0)));
        labels[1].add(std::log1p(std::max(op.gap_us, 0.0)));
      }
    }
  }

  for (std::size_t r = 0; r < s.types_.size(); ++r)
    for (int h = 0; h < kHyperCount; ++h)
      s.types_[r].hyper[static_cast<std::size_t>(h)] = hyper[r][static_cast<std::size_t>(h)].moments();
  for (int h = 0; h < kHyperCount; ++h)
    s.hyper_global_[static_cast<std::size_t>(h)] = hyper_global[static_cast<std::size_t>(h)].moments();
  s.cont_.resize(cont.size());
  for (std::size_t c = 0; c < cont.size(); ++c) s.cont_[c] = cont[c].moments();
  for (int c = 0; c < kLabelCount; ++c) s.labels_[static_cast<std::size_t>(c)] = labels[static_cast<std::size_t>(c)].moments();
  return s;
}

ETS_INLINE std::vector<std::string> FeatureSpec::feature_names() const {
  std::vector<std::string> names;
  if (!fitted()) return names;  // one name per column: an unfitted spec has none
  names.reserve(static_cast<std::size_t>(layout_.features));
  names.resize(static_cast<std::size_t>(one_hot_));
  for (std::size_t r = 0; r < types_.size(); ++r)
    if (column_[r] >= 0) names[static_cast<std::size_t>(column_[r])] = "type." + types_[r].name;
  names.emplace_back("type.other");
  names.emplace_back("freq.log_count");
  names.emplace_back("freq.rank");
  for (int p = 0; p < kPhaseCount; ++p) names.push_back(std::string("phase.") + phase_name(static_cast<Phase>(p)));
  for (int d = 0; d < kDTypeCount; ++d) names.push_back(std::string("dtype.") + dtype_name(static_cast<DType>(d)));
  for (int si = 0; si < options_.input_slots; ++si) {
    const std::string in = "in" + std::to_string(si) + ".";
    names.push_back(in + "present");
    names.push_back(in + "log_numel");
    names.push_back(in + "rank");
    for (int j = 0; j < options_.dims_per_input; ++j)
      names.push_back(in + "log_dim[-" + std::to_string(options_.dims_per_input - j) + "]");
  }
  for (const char* n : {"cost.log_flops", "cost.flops_known", "cost.log_bytes", "cost.bytes_known"}) names.emplace_back(n);
  for (int h = 0; h < kHyperCount; ++h) names.push_back(std::string("hyper.") + hyper_name(static_cast<Hyper>(h)));
  names.emplace_back("batch.log_size");
  names.emplace_back("batch.known");
  for (const char* n : {"opt.sgd", "opt.adam", "opt.adamw", "opt.other", "opt.unknown"}) names.emplace_back(n);
  return names;
}

ETS_INLINE void FeatureSpec::check_rank(int rank) const {
  ETS_CHECK(rank >= 0 && rank < vocab_size(), Errc::invalid_argument, "ets.encoder.13",
            "op type rank {} is outside [0, {})", rank, vocab_size());
}

ETS_INLINE const std::string& FeatureSpec::type_name(int rank) const {
  check_rank(rank);
  return types_[static_cast<std::size_t>(rank)].name;
}

ETS_INLINE int FeatureSpec::type_column(int rank) const {
  check_rank(rank);
  return column_[static_cast<std::size_t>(rank)];
}

ETS_INLINE std::int64_t FeatureSpec::type_count(int rank) const {
  check_rank(rank);
  return types_[static_cast<std::size_t>(rank)].count;
}

ETS_INLINE const FeatureSpec::Moments& FeatureSpec::label_moments(int channel) const {
  ETS_CHECK(channel >= 0 && channel < kLabelCount, Errc::invalid_argument, "ets.encoder.11",
            "label channel {} is not 0 (time) or 1 (gap)", channel);
  detail::fspec::require_fitted(*this);
  return labels_[static_cast<std::size_t>(channel)];
}

ETS_INLINE int FeatureSpec::type_rank(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? -1 : it->second;
}

ETS_INLINE bool FeatureSpec::has_labels(const ExecutionTrace& trace) noexcept {
  if (trace.ops.empty()) return false;
  bool positive = false;
  for (const auto& op : trace.ops) {
    if (!std::isfinite(op.time_us) || !std::isfinite(op.gap_us)) return false;
    positive = positive || op.time_us > 0.0 || op.gap_us > 0.0;
  }
  return positive;
}

ETS_INLINE FeatureSpec::MetaCode FeatureSpec::encode_meta(const TraceMeta& meta) const {
  MetaCode mc;
  mc.optimizer = detail::fspec::optimizer_code(meta.optimizer);
  if (meta.batch_size > 0) {
    const Moments& m = cont_[static_cast<std::size_t>(cont_flops() + 2)];
    if (m.n > 0)
      mc.batch_z = static_cast<float>(
          detail::fspec::finite_z((std::log1p(static_cast<double>(meta.batch_size)) - m.mean) / m.stdev));
    mc.batch_known = 1.f;
  }
  return mc;
}

ETS_INLINE void FeatureSpec::encode_row(const OpRecord& op, const OpRecord& desc, const MetaCode& mc, float* row,
                                        EncodeStats* stats) const {
  const Layout& l = layout_;
  std::fill(row, row + l.features, 0.f);
  // A column no training op had (e.g. FLOPs never known, an input slot never used) is written as 0, the value
  // the model was trained on, like an unfitted hyper-parameter; the raw value would drive untrained weights.
  auto z = [this](int c, double v) {
    const Moments& m = cont_[static_cast<std::size_t>(c)];
    return m.n > 0 ? static_cast<float>(detail::fspec::finite_z((v - m.mean) / m.stdev)) : 0.f;
  };

  const auto it = index_.find(op.name);
  const int r = it == index_.end() ? -1 : it->second;
  if (r < 0) {
    row[l.other] = 1.f;
    if (stats) {
      ++stats->unknown_ops;
      ++stats->unknown_types[op.name];
    }
  } else {
    const int c = column_[static_cast<std::size_t>(r)];
    row[c >= 0 ? l.type + c : l.other] = 1.f;
    row[l.freq] = freq_[static_cast<std::size_t>(r)][0];
    row[l.freq + 1] = freq_[static_cast<std::size_t>(r)][1];
  }

  const int phase = static_cast<int>(op.phase);
  if (phase >= 0 && phase < kPhaseCount) row[l.phase + phase] = 1.f;

  int dtype = 0;
  for (const auto& in : desc.inputs)
    if (in.dtype != DType::Unknown) {
      dtype = static_cast<int>(in.dtype);
      break;
    }
  if (dtype < 0 || dtype >= kDTypeCount) dtype = 0;
  row[l.dtype + dtype] = 1.f;

  const int dims = options_.dims_per_input, per_slot = cont_per_slot();
  const int n_in = std::min(options_.input_slots, static_cast<int>(desc.inputs.size()));
  for (int si = 0; si < n_in; ++si) {
    const TensorInfo& in = desc.inputs[static_cast<std::size_t>(si)];
    float* out = row + l.inputs + si * l.input_stride;
    const int cbase = si * per_slot;
    const int rank = static_cast<int>(in.dims.size());
    out[0] = 1.f;
    out[1] = z(cbase, detail::fspec::log_numel(in));
    out[2] = z(cbase + 1, static_cast<double>(rank));
    for (int j = 0; j < dims; ++j) {
      const int di = rank - dims + j;
      if (di < 0) continue;
      out[3 + j] = z(cbase + 2 + j, detail::fspec::log1p_dim(in.dims[static_cast<std::size_t>(di)]));
    }
  }

  const int cf = cont_flops();
  if (detail::fspec::usable(desc.flops)) {
    row[l.cost] = z(cf, std::log1p(desc.flops));
    row[l.cost + 1] = 1.f;
  }
  if (detail::fspec::usable(desc.bytes)) {
    row[l.cost + 2] = z(cf + 1, std::log1p(desc.bytes));
    row[l.cost + 3] = 1.f;
  }

  if (desc.hyper.present != 0) {
    const double clip = options_.hyper_clip;
    for (int h = 0; h < kHyperCount; ++h) {
      const Hyper hh = static_cast<Hyper>(h);
      if (!desc.hyper.has(hh)) continue;
      const double v = desc.hyper.get(hh);
      if (!std::isfinite(v)) continue;
      const Moments* m = &hyper_global_[static_cast<std::size_t>(h)];
      if (r >= 0 && types_[static_cast<std::size_t>(r)].hyper[static_cast<std::size_t>(h)].n > 0)
        m = &types_[static_cast<std::size_t>(r)].hyper[static_cast<std::size_t>(h)];
      if (m->n == 0) continue;
      // finite_z as well: any finite hyper_clip is a valid option, and one past float's range (1e300, meaning
      // "no clip") would otherwise cast an outlier's z to ±inf
      row[l.hyper + h] =
          static_cast<float>(detail::fspec::finite_z(std::clamp((v - m->mean) / m->stdev, -clip, clip)));
    }
  }

  row[l.batch] = mc.batch_z;
  row[l.batch + 1] = mc.batch_known;
  row[l.optimizer + mc.optimizer] = 1.f;
  if (stats) ++stats->ops;
}

ETS_INLINE void FeatureSpec::encode_op(const OpRecord& op, const TraceMeta& meta, float* row,
                                       EncodeStats* stats) const {
  detail::fspec::require_fitted(*this);
  encode_row(op, op, encode_meta(meta), row, stats);
}

ETS_INLINE void FeatureSpec::encode_ops(const ExecutionTrace& trace, float* rows, EncodeStats* stats) const {
  detail::fspec::require_fitted(*this);
  const MetaCode mc = encode_meta(trace.meta);
  const std::size_t f = static_cast<std::size_t>(layout_.features);
  std::vector<std::int32_t> twins;
  if (options_.backward_twin) backward_twins(trace, twins);
  for (std::size_t i = 0; i < trace.ops.size(); ++i)
    encode_row(trace.ops[i], described(trace, twins, i), mc, rows + i * f, stats);
}

ETS_INLINE void FeatureSpec::backward_twins(const ExecutionTrace& trace, std::vector<std::int32_t>& twins) {
  const std::size_t n = trace.ops.size();
  ETS_CHECK(n <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()), Errc::invalid_argument,
            "ets.encoder.10", "trace has too many ops ({})", n);
  twins.assign(n, -1);
  if (!has_backward_sequences(trace)) return;
  std::unordered_multimap<std::int64_t, std::int32_t> forward;  // forward ops by sequence number
  for (std::size_t i = 0; i < n; ++i) {
    const OpRecord& op = trace.ops[i];
    if (op.sequence >= 0 && op.phase == Phase::Forward) forward.emplace(op.sequence, static_cast<std::int32_t>(i));
  }
  if (forward.empty()) return;
  for (std::size_t i = 0; i < n; ++i) {
    const OpRecord& op = trace.ops[i];
    if (op.phase != Phase::Backward || op.sequence < 0) continue;
    // A composite op's autograd node can come from a nested op recorded after the top-level op's own number (a
    // linear's from its addmm, after the transpose of its weight): up to kTwinReach numbers below, nearest first.
    for (std::int64_t d = 0; d <= kTwinReach && twins[i] < 0 && op.sequence - d >= 0; ++d) {
      const auto range = forward.equal_range(op.sequence - d);
      for (auto it = range.first; it != range.second; ++it)
        if (trace.ops[static_cast<std::size_t>(it->second)].name == op.name && (twins[i] < 0 || it->second < twins[i]))
          twins[i] = it->second;
    }
  }
}

ETS_INLINE bool FeatureSpec::has_backward_sequences(const ExecutionTrace& trace) noexcept {
  return std::any_of(trace.ops.begin(), trace.ops.end(),
                     [](const OpRecord& op) { return op.phase == Phase::Backward && op.sequence >= 0; });
}

ETS_INLINE double FeatureSpec::normalize_label(int channel, double us) const {
  ETS_CHECK(channel >= 0 && channel < kLabelCount, Errc::invalid_argument, "ets.encoder.11",
            "label channel {} is not 0 (time) or 1 (gap)", channel);
  detail::fspec::require_fitted(*this);
  const Moments& m = labels_[static_cast<std::size_t>(channel)];
  return detail::fspec::finite_z((std::log1p(us < 0.0 ? 0.0 : us) - m.mean) / m.stdev);
}

ETS_INLINE double FeatureSpec::denormalize_label(int channel, double z) const {
  ETS_CHECK(channel >= 0 && channel < kLabelCount, Errc::invalid_argument, "ets.encoder.11",
            "label channel {} is not 0 (time) or 1 (gap)", channel);
  detail::fspec::require_fitted(*this);
  const Moments& m = labels_[static_cast<std::size_t>(channel)];
  const double us = std::expm1(z * m.stdev + m.mean);
  return us < 0.0 ? 0.0 : us;  // NaN passes through: the caller decides what a NaN prediction means
}

ETS_INLINE std::vector<std::uint8_t> FeatureSpec::serialize() const {
  ETS_CHECK(fitted(), Errc::invalid_argument, "ets.encoder.9", "cannot serialise an unfitted FeatureSpec");
  std::vector<std::uint8_t> out;
  detail::fspec::Writer w{out};
  out.reserve(64 + types_.size() * (40 + kHyperCount * detail::fspec::kMomentsBytes) +
              (cont_.size() + kHyperCount + kLabelCount) * detail::fspec::kMomentsBytes);
  for (std::uint8_t c : detail::fspec::kMagic) out.push_back(c);
  w.u32(kFormatVersion);
  w.f64(options_.coverage);
  w.i32(options_.max_one_hot);
  w.i32(options_.input_slots);
  w.i32(options_.dims_per_input);
  w.f64(options_.hyper_clip);
  w.f64(options_.time_share);
  w.u32(options_.backward_twin ? 1u : 0u);
  w.i32(one_hot_);
  w.i64(total_ops_);
  w.u32(static_cast<std::uint32_t>(types_.size()));
  for (const auto& t : types_) {
    w.str(t.name);
    w.i64(t.count);
    for (const auto& m : t.hyper) w.moments(m);
  }
  w.u32(static_cast<std::uint32_t>(promoted_.size()));
  for (int r : promoted_) w.u32(static_cast<std::uint32_t>(r));
  for (const auto& m : hyper_global_) w.moments(m);
  w.u32(static_cast<std::uint32_t>(cont_.size()));
  for (const auto& m : cont_) w.moments(m);
  for (const auto& m : labels_) w.moments(m);
  w.u64(detail::fnv1a(out.data(), out.size()));
  return out;
}

ETS_INLINE FeatureSpec FeatureSpec::deserialize(const std::uint8_t* data, std::size_t size) {
  using namespace detail::fspec;
  ETS_CHECK(data != nullptr && size >= 16, Errc::parse, "ets.encoder.3",
            "feature spec blob is truncated ({} bytes)", data ? size : 0);
  ETS_CHECK(std::memcmp(data, kMagic, 4) == 0, Errc::parse, "ets.encoder.4",
            "not a feature spec blob (bad magic)");
  const std::uint32_t version = static_cast<std::uint32_t>(data[4]) | static_cast<std::uint32_t>(data[5]) << 8 |
                                static_cast<std::uint32_t>(data[6]) << 16 | static_cast<std::uint32_t>(data[7]) << 24;
  ETS_CHECK(version >= 1 && version <= kFormatVersion, Errc::version, "ets.encoder.5",
            "feature spec format version {} is not supported (this build reads 1 to {})", version, kFormatVersion);
  ETS_CHECK(load_u64(data + size - 8) == detail::fnv1a(data, size - 8), Errc::checksum, "ets.encoder.6",
            "feature spec blob is corrupt (checksum mismatch)");

  Reader r{data, size - 8, 8};
  FeatureSpec s;
  s.options_.coverage = r.f64();
  s.options_.max_one_hot = r.i32();
  s.options_.input_slots = r.i32();
  s.options_.dims_per_input = r.i32();
  s.options_.hyper_clip = r.f64();
  s.options_.time_share = version >= 2 ? r.f64() : 0.0;  // version 1 had no time-share columns
  if (version >= 3) {
    const std::uint32_t twin = r.u32();
    ETS_CHECK(twin <= 1, Errc::parse, "ets.encoder.7", "feature spec blob has backward_twin {}, not 0 or 1", twin);
    s.options_.backward_twin = twin == 1;
  } else {
    s.options_.backward_twin = false;  // the models before it described every op by itself
  }
  const std::string why = options_problem(s.options_);
  ETS_CHECK(why.empty(), Errc::parse, "ets.encoder.7", "feature spec blob holds invalid options: {}", why);
  s.one_hot_ = r.i32();
  s.total_ops_ = r.i64();
  const std::uint32_t v = r.u32();
  constexpr std::size_t min_entry = 4 + 8 + kHyperCount * kMomentsBytes;
  ETS_CHECK(v >= 1 && v <= r.left() / min_entry, Errc::parse, "ets.encoder.7",
            "feature spec blob declares {} op types, more than it can hold", v);
  ETS_CHECK(s.one_hot_ >= 0 && s.one_hot_ <= static_cast<int>(std::min<std::uint32_t>(v, 65536u)) &&
                s.one_hot_ <= s.options_.max_one_hot,
            Errc::parse, "ets.encoder.7", "feature spec blob has one-hot width {} for {} types", s.one_hot_, v);
  ETS_CHECK(s.total_ops_ > 0, Errc::parse, "ets.encoder.7", "feature spec blob was fitted on {} ops", s.total_ops_);
  s.types_.resize(v);
  std::int64_t sum = 0;
  std::unordered_set<std::string> seen;
  for (std::uint32_t i = 0; i < v; ++i) {
    TypeEntry& t = s.types_[i];
    t.name = r.str();
    t.count = r.i64();
    for (auto& m : t.hyper) m = r.moments();
    ETS_CHECK(t.count >= 1 && t.count <= s.total_ops_ - sum && (i == 0 || t.count <= s.types_[i - 1].count),
              Errc::parse, "ets.encoder.7", "feature spec blob has an inconsistent count for op type '{}'", t.name);
    ETS_CHECK(seen.insert(t.name).second, Errc::parse, "ets.encoder.7",
              "feature spec blob lists op type '{}' twice", t.name);
    sum += t.count;
  }
  ETS_CHECK(sum == s.total_ops_, Errc::parse, "ets.encoder.7",
            "feature spec blob: type counts sum to {}, not {}", sum, s.total_ops_);
  if (version >= 2) {
    const std::uint32_t n = r.u32();
    ETS_CHECK(n <= static_cast<std::uint32_t>(s.one_hot_), Errc::parse, "ets.encoder.7",
              "feature spec blob promotes {} op types into a one-hot width of {}", n, s.one_hot_);
    const int cut = s.one_hot_ - static_cast<int>(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t rank = r.u32();
      ETS_CHECK(rank >= static_cast<std::uint32_t>(cut) && rank < v &&
                    (s.promoted_.empty() || rank > static_cast<std::uint32_t>(s.promoted_.back())),
                Errc::parse, "ets.encoder.7", "feature spec blob has an inconsistent time-share column (rank {})", rank);
      s.promoted_.push_back(static_cast<int>(rank));
    }
  }
  for (auto& m : s.hyper_global_) m = r.moments();
  const std::uint32_t c = r.u32();
  const std::uint32_t expect = static_cast<std::uint32_t>(s.cont_flops() + 3);
  ETS_CHECK(c == expect, Errc::parse, "ets.encoder.7",
            "feature spec blob has {} size statistics, expected {}", c, expect);
  s.cont_.resize(c);
  for (auto& m : s.cont_) m = r.moments();
  for (auto& m : s.labels_) m = r.moments();
  ETS_CHECK(r.left() == 0, Errc::parse, "ets.encoder.7", "feature spec blob has {} trailing bytes", r.left());
  s.build_layout();
  s.build_index();
  return s;
}

ETS_INLINE bool FeatureSpec::operator==(const FeatureSpec& o) const noexcept {
  const auto same_type = [](const TypeEntry& a, const TypeEntry& b) {
    return a.name == b.name && a.count == b.count && a.hyper == b.hyper;
  };
  return options_.coverage == o.options_.coverage && options_.max_one_hot == o.options_.max_one_hot &&
         options_.input_slots == o.options_.input_slots && options_.dims_per_input == o.options_.dims_per_input &&
         options_.hyper_clip == o.options_.hyper_clip && options_.time_share == o.options_.time_share &&
         options_.backward_twin == o.options_.backward_twin &&
         one_hot_ == o.one_hot_ && promoted_ == o.promoted_ && total_ops_ == o.total_ops_ &&
         std::equal(types_.begin(), types_.end(), o.types_.begin(), o.types_.end(), same_type) &&
         hyper_global_ == o.hyper_global_ && cont_ == o.cont_ && labels_ == o.labels_;
}

}  // namespace ets
