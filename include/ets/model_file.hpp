// ModelFile: everything a trained ETS model carries (.etsm): LSTM weights, window geometry, encoder state,
// label normalisation, target hardware, provenance and a self-test. Byte layout: docs/model-format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ets/lstm_weights.hpp"

namespace ets {

/// A model as stored in an .etsm file. Reading and writing live in the compiled library (ets::ets).
struct ModelFile {
  static constexpr std::uint16_t kMajor = 1;  ///< readers reject any other major version
  static constexpr std::uint16_t kMinor = 0;  ///< newer minors only add metadata keys / tensors; readers skip them
  /// The largest file load_model reads and save_model writes (2 GiB); so a network of more than kMaxBytes / 4
  /// float parameters cannot be stored, and the trainer refuses one (ets.train.2).
  static constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 31;

  /// Labels are predicted as z = (transform(us) - mean) / scale, channel 0 = time, 1 = gap. A copy of what
  /// encoder_state's FeatureSpec holds, for readers that do not parse it; ETS itself denormalises with the
  /// FeatureSpec. Reader and writer require transform "log1p", finite means and positive scales.
  struct LabelNorm {
    std::string transform = "log1p";
    double time_mean = 0.0, time_scale = 1.0;
    double gap_mean = 0.0, gap_scale = 1.0;
    bool operator==(const LabelNorm& o) const {
      return transform == o.transform && time_mean == o.time_mean && time_scale == o.time_scale &&
             gap_mean == o.gap_mean && gap_scale == o.gap_scale;
    }
    bool operator!=(const LabelNorm& o) const { return !(*this == o); }
  };

  /// An input batch and the output the exporting framework computed for it; checked on load. At most kMaxPositions
  /// positions (windows × width), so the check costs little more than reading the weights.
  struct SelfTest {
    /// windows × width a file may carry: ets.model.10 when writing more, ets.model.7 when reading more
    static constexpr int kMaxPositions = 4096;
    int windows = 0;
    int width = 0;
    std::vector<float> input;     ///< windows × width × input_size
    std::vector<float> expected;  ///< windows × width × outputs
    double tolerance = 1e-4;      ///< max absolute error accepted on load
    bool empty() const noexcept { return windows == 0; }
  };

  LstmWeights weights;
  int window_width = 12;
  int window_stride = 4;
  /// FeatureSpec::serialize() bytes, stored and returned verbatim (the encoder owns the format).
  std::vector<std::uint8_t> encoder_state;
  LabelNorm labels;
  /// Which hardware environment the model predicts for, e.g. "h200-sxm/torch-2.3/cuda-12.4".
  std::string hardware_env;
  /// Free-form training provenance: "trainer", "dataset", "git_commit", "created_utc", "epochs", ...
  std::map<std::string, std::string> provenance;
  SelfTest self_test;

  /// Version of the file this was read from (kMajor/kMinor for models built in memory).
  std::uint16_t file_major = kMajor;
  std::uint16_t file_minor = kMinor;
};

/// Options of load_model().
struct ModelLoadOptions {
  /// Run the embedded self-test on the CPU backend and throw ets.model.8 when it is off by more than its
  /// tolerance. Costs one forward pass of a few windows.
  bool verify_self_test = true;
};

/// Encodes a model into .etsm bytes. Throws ets::Error (ets.predictor.* / ets.model.10) for inconsistent content.
std::vector<std::uint8_t> serialize_model(const ModelFile& model);
/// Writes serialize_model() to path (via a temporary file renamed into place). ets.model.9 on I/O failure.
void save_model(const ModelFile& model, const std::string& path);

/// Decodes .etsm bytes. Every malformed, truncated or corrupted input throws ets::Error (ets.model.*); nothing
/// is read outside [data, data + size).
ModelFile parse_model(const std::uint8_t* data, std::size_t size, const ModelLoadOptions& options = {});
/// Reads and decodes a file. ets.model.1 when it cannot be read.
ModelFile load_model(const std::string& path, const ModelLoadOptions& options = {});

}  // namespace ets
