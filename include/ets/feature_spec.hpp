// FeatureSpec: the fitted, serialisable recipe that turns one OpRecord into a fixed-length float row, and
// (time, gap) labels into normalised targets and back. Fitted on training traces only; stored in the model file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ets/common.hpp"
#include "ets/encode_stats.hpp"
#include "ets/feature_options.hpp"
#include "ets/trace.hpp"

namespace ets {

/// Feature layout (column offsets into a row of feature_count() floats), in this order:
///   type      K one-hot columns: the most frequent training op types, then those holding a large share of the
///             training time however rare (FeatureOptions::time_share), then 1 shared "other" column
///   freq      2: log1p(count)/log1p(total ops), 1 - rank/vocab (both 0 for an op type never seen in training)
///   phase     3 one-hot (forward, backward, update)
///   dtype     kDTypeCount one-hot (the first input with a known dtype)
///   inputs    input_slots × (present, z(log1p numel), z(rank), z(log1p dim) × dims_per_input, right-aligned)
///   cost      4: z(log1p flops), flops known, z(log1p bytes), bytes known
///   hyper     kHyperCount: per-op-type z-score of each hyper-parameter slot (0 when absent), clipped
///   batch     2: z(log1p batch size), batch size known
///   optimizer 5 one-hot: sgd, adam, adamw, other, unknown
/// z(.) is a z-score with training mean/std; absent values are 0 after scoring and flagged where ambiguous.
class FeatureSpec {
 public:
  static constexpr std::uint32_t kFormatVersion = 3;  ///< written; 1 (no time_share) and 2 (no backward_twin) are read
  static constexpr int kOptimizerCount = 5;
  static constexpr int kLabelCount = 2;  ///< (time, gap), the order of WindowBatch::y

  struct Layout {
    int type = 0, other = 0, freq = 0, phase = 0, dtype = 0, inputs = 0, input_stride = 0, cost = 0,
        hyper = 0, batch = 0, optimizer = 0, features = 0;
  };

  /// An unfitted spec (feature_count() == 0); encoding with it throws.
  FeatureSpec() = default;
  FeatureSpec(const FeatureSpec&) = default;
  FeatureSpec& operator=(const FeatureSpec&) = default;
  /// A moved-from spec is unfitted (fitted() false, feature_count() 0): encoding with it throws ets.encoder.9
  /// instead of reading the emptied tables.
  FeatureSpec(FeatureSpec&& o) noexcept { swap(o); }
  FeatureSpec& operator=(FeatureSpec&& o) noexcept {
    if (this != &o) {
      FeatureSpec tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }

  /// Fits vocabulary, per-op-type hyper-parameter statistics, size statistics and label statistics.
  /// Throws ets.encoder.1 (invalid options) and ets.encoder.2 (no ops to fit on).
  ETS_INLINE static FeatureSpec fit(const std::vector<ExecutionTrace>& traces, const FeatureOptions& options = {});

  bool fitted() const noexcept { return layout_.features > 0; }
  int feature_count() const noexcept { return layout_.features; }
  const Layout& layout() const noexcept { return layout_; }
  const FeatureOptions& options() const noexcept { return options_; }
  /// One name per column ("type.conv2d", "type.other", "in0.log_numel", "hyper.kernel_h", ...).
  ETS_INLINE std::vector<std::string> feature_names() const;

  /// Op types seen in training, most frequent first; one_hot_count() of them have their own column.
  int vocab_size() const noexcept { return static_cast<int>(types_.size()); }
  int one_hot_count() const noexcept { return one_hot_; }
  /// The one-hot column of the type of rank `rank`, or -1 when it shares "other"; ets.encoder.13 outside the vocabulary.
  ETS_INLINE int type_column(int rank) const;
  /// Name / training count of the type of frequency rank `rank`; ets.encoder.13 outside [0, vocab_size()).
  ETS_INLINE const std::string& type_name(int rank) const;
  ETS_INLINE std::int64_t type_count(int rank) const;
  /// Frequency rank of a type name; -1 when the type was never seen in training.
  ETS_INLINE int type_rank(std::string_view name) const;
  std::int64_t fitted_ops() const noexcept { return total_ops_; }

  /// Writes feature_count() floats for one op, described by itself (no trace: no backward twin, see
  /// FeatureOptions::backward_twin). `meta` supplies batch size and optimizer.
  ETS_INLINE void encode_op(const OpRecord& op, const TraceMeta& meta, float* row,
                            EncodeStats* stats = nullptr) const;
  /// Writes ops.size() × feature_count() floats (row-major); per-trace work is done once. With
  /// options().backward_twin a backward op is described by its forward twin (backward_twins()).
  ETS_INLINE void encode_ops(const ExecutionTrace& trace, float* rows, EncodeStats* stats = nullptr) const;

  /// For every op of the trace (one iteration), the index of its forward twin, or -1: a backward op's twin is a
  /// forward op of the same type name whose autograd sequence number is the backward op's (>= 0) or up to
  /// kTwinReach below it, the nearest number first and the earliest op of that number (an in-place add_ can share
  /// a batch_norm's number, hence the type; a linear's backward carries its nested addmm's number, one or two above
  /// the number the profiler gives the linear). Forward and update ops have none.
  ETS_INLINE static void backward_twins(const ExecutionTrace& trace, std::vector<std::int32_t>& twins);
  /// Whether backward_twins() can find any twin: some backward op carries a sequence number (>= 0). Without one
  /// every twin is -1, so a caller may skip the lookup (which allocates) and treat an empty list as all -1.
  ETS_INLINE static bool has_backward_sequences(const ExecutionTrace& trace) noexcept;
  static constexpr std::int64_t kTwinReach = 2;

  /// Whether a trace carries usable per-op labels: at least one op, all times and gaps finite, some positive.
  ETS_INLINE static bool has_labels(const ExecutionTrace& trace) noexcept;

  /// Label transform z = (log1p(max(us, 0)) - mean) / std, channel 0 = time, 1 = gap; see docs/concepts.md. z is
  /// held within +-1e30 (a fitted spec's never get near); a NaN us gives NaN (labels are read only where finite).
  /// ets.encoder.9 when unfitted.
  ETS_INLINE double normalize_label(int channel, double us) const;
  /// Inverse of normalize_label for us >= 0 (clamped at 0 below); exact where z was not held at +-1e30.
  /// ets.encoder.9 when unfitted.
  ETS_INLINE double denormalize_label(int channel, double z) const;
  double normalize_time(double us) const { return normalize_label(0, us); }
  double normalize_gap(double us) const { return normalize_label(1, us); }
  double denormalize_time(double z) const { return denormalize_label(0, z); }
  double denormalize_gap(double z) const { return denormalize_label(1, z); }

  /// Versioned little-endian blob with a trailing checksum; the model file embeds it as-is. ets.encoder.9 when
  /// unfitted (deserialize() could not read it back).
  ETS_INLINE std::vector<std::uint8_t> serialize() const;
  /// Inverse of serialize(); truncated, corrupt or inconsistent input throws ets::Error (ets.encoder.*).
  ETS_INLINE static FeatureSpec deserialize(const std::uint8_t* data, std::size_t size);
  static FeatureSpec deserialize(const std::vector<std::uint8_t>& blob) {
    return deserialize(blob.data(), blob.size());
  }

  ETS_INLINE bool operator==(const FeatureSpec& o) const noexcept;
  bool operator!=(const FeatureSpec& o) const noexcept { return !(*this == o); }

  /// Mean/std/sample count of a fitted statistic (population std; a std of 0 is stored as 1).
  struct Moments {
    std::int64_t n = 0;
    double mean = 0.0;
    double stdev = 1.0;
    ETS_INLINE bool operator==(const Moments& o) const noexcept;
  };
  /// Statistics of log1p(µs) behind normalize_label (channel 0 = time, 1 = gap), for code that needs them in closed form.
  /// ets.encoder.11 for a channel other than 0 / 1, ets.encoder.9 when unfitted.
  ETS_INLINE const Moments& label_moments(int channel) const;

 private:
  friend class WindowEncoder;  // writes rows straight into windows, with the per-trace part computed once

  struct TypeEntry {
    std::string name;
    std::int64_t count = 0;
    std::array<Moments, kHyperCount> hyper{};
  };
  struct MetaCode {
    int optimizer = 4;
    float batch_z = 0.f;
    float batch_known = 0.f;
  };

  void swap(FeatureSpec& o) noexcept {
    using std::swap;
    swap(options_, o.options_);
    swap(layout_, o.layout_);
    swap(one_hot_, o.one_hot_);
    swap(promoted_, o.promoted_);
    swap(total_ops_, o.total_ops_);
    swap(types_, o.types_);
    swap(hyper_global_, o.hyper_global_);
    swap(cont_, o.cont_);
    swap(labels_, o.labels_);
    swap(index_, o.index_);
    swap(freq_, o.freq_);
    swap(column_, o.column_);
  }
  ETS_INLINE static std::string options_problem(const FeatureOptions& o);  ///< "" when valid
  ETS_INLINE void check_rank(int rank) const;  ///< ets.encoder.13 outside [0, vocab_size())
  ETS_INLINE void build_layout();
  ETS_INLINE void build_index();
  ETS_INLINE MetaCode encode_meta(const TraceMeta& meta) const;
  /// Type and phase from `op`; dtype, inputs, FLOPs, bytes and hyper-parameters from `desc` (op itself or its twin).
  ETS_INLINE void encode_row(const OpRecord& op, const OpRecord& desc, const MetaCode& mc, float* row,
                             EncodeStats* stats) const;
  /// The op that describes ops[i]: its twin when options().backward_twin and twins[i] >= 0, else ops[i].
  const OpRecord& described(const ExecutionTrace& t, const std::vector<std::int32_t>& twins, std::size_t i) const {
    const std::int32_t j = options_.backward_twin && i < twins.size() ? twins[i] : -1;
    return j >= 0 ? t.ops[static_cast<std::size_t>(j)] : t.ops[i];
  }
  int cont_per_slot() const noexcept { return 2 + options_.dims_per_input; }
  int cont_flops() const noexcept { return options_.input_slots * cont_per_slot(); }

  // Every member below is exchanged in swap(), which the move operations rely on to leave an unfitted spec.
  FeatureOptions options_{};
  Layout layout_{};
  int one_hot_ = 0;
  /// Ranks at or past the frequency cut that got a column for their time share, increasing; columns
  /// one_hot_ - promoted_.size() + i. The frequency cut (ranks below it have column = rank) is what is left of one_hot_.
  std::vector<int> promoted_;
  std::int64_t total_ops_ = 0;
  std::vector<TypeEntry> types_;
  std::array<Moments, kHyperCount> hyper_global_{};  ///< fallback for unknown types / slots a type never had
  std::vector<Moments> cont_;                         ///< size columns: per slot (numel, rank, dims), flops, bytes, batch
  std::array<Moments, kLabelCount> labels_{};
  // Derived from the above (never serialised): name → rank, per-rank frequency code and one-hot column.
  std::unordered_map<std::string, int> index_;
  std::vector<std::array<float, 2>> freq_;
  std::vector<int> column_;
};

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/feature_spec-inl.hpp"
#endif
