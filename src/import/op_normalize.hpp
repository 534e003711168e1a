// Operator naming and static features shared by the importers (the live Tracer records what its caller passes):
// normalised names, phase hints, hyper-parameters from argument shapes, analytic FLOPs / bytes (trace-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ets/trace.hpp"

namespace ets::import {

/// Normalised op type for a raw profiler name: "aten::cudnn_convolution" -> "conv2d",
/// "autograd::engine::evaluate_function: AddmmBackward0" -> "linear" (with *backward = true).
/// weight_rank (dims of the weight argument, 0 if unknown) tells conv1d/2d/3d apart for generic convolution names.
std::string normalize_op_name(std::string_view raw, bool* backward = nullptr, int weight_rank = 0);
/// normalize_op_name with the weight's rank taken from the op's tensor arguments, as every importer does: the second
/// argument's rank for a forward op, the third's for a backward one (grad_out comes first); -1 when absent.
std::string normalize_op_name_by_args(std::string_view raw, bool* backward, int second_rank, int third_rank);

/// Raw argument lists as profilers record them (positional; tensors and non-tensors alike).
struct RawArgs {
  std::vector<std::vector<std::int64_t>> dims;  ///< "Input Dims" (a TensorList contributes its first tensor)
  std::vector<std::string> types;                ///< "Input type"
  std::vector<std::string> concrete;             ///< "Concrete Inputs" ("" for tensors)
};

/// Sets rec.inputs (tensor arguments only, in order) and rec.hyper (what the arguments determine) from raw args.
/// rec.name must already be normalised.
void fill_from_args(OpRecord& rec, const RawArgs& args);

/// Fills rec.flops / rec.bytes analytically when NaN and the op type and shapes allow it (common ops only).
void fill_analytic(OpRecord& rec);

}  // namespace ets::import
