// Knobs for FeatureSpec::fit: how big the op-type one-hot is and how many tensor slots each op gets.
// They fix the feature layout, so they are stored with the fitted spec (and so in the model file).
#pragma once

namespace ets {

struct FeatureOptions {
  /// K (the one-hot width) is the smallest number of most frequent op types covering this share of training ops.
  double coverage = 0.99;
  /// Upper bound on K: one-hot columns beyond this go to the shared "other" slot instead.
  int max_one_hot = 64;
  /// A type rarer than that but holding at least this share of the labelled training time (time + gap) gets its
  /// own column too, within max_one_hot: one aten::gru per iteration is too rare for `coverage` yet can be a third
  /// of the iteration, and in the shared "other" column the model cannot tell it from a cheap rare op. 0 = off.
  double time_share = 0.001;
  /// Input tensors described per op (the first ones; later inputs are ignored).
  int input_slots = 3;
  /// Trailing dimensions described per input tensor (right-aligned, like broadcasting).
  int dims_per_input = 4;
  /// |z| cap for per-op-type hyper-parameter z-scores: an unseen-large value must not saturate the LSTM.
  double hyper_clip = 10.0;
  /// A backward op is described by its forward twin: the forward op of the same iteration with the same autograd
  /// sequence number and the same type. Its inputs, hyper-parameters, FLOPs and bytes are the twin's; its type,
  /// phase and labels stay its own. A CPU profile records a convolution's backward with the incoming gradient's
  /// shape only (no weight, kernel, stride or FLOPs), though it is the costliest op of most CNNs; the paper's
  /// traces describe a backward op by its forward op's parameters. Ops without a twin keep their own description.
  /// Read by FeatureSpec::encode_ops and WindowEncoder (encode_op sees one op and no twin). Specs of format 1 and 2
  /// (models before it) read as false.
  bool backward_twin = true;
};

}  // namespace ets
