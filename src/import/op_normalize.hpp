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

/// Phase flags of a scope, by the name torch gives it: kScopeBackward for autograd::engine::evaluate_function,
/// kScopeUpdate for Optimizer.step# and Optimizer.zero_grad#, kScopeZeroGrad also for the latter (it stays update
/// in a closure, where its ops run with grad enabled). Shared by the Kineto and the PyTorch ET reader.
inline constexpr std::uint8_t kScopeBackward = 1, kScopeUpdate = 2, kScopeZeroGrad = 4;
std::uint8_t scope_phase_flags(std::string_view name);

/// An outermost op's phase (trace-format.md, Phases): backward under an evaluate_function scope or by its name,
/// update under an optimizer scope, else forward. An optimizer given a closure (LBFGS, or step(closure) of any)
/// runs the closure's forward and backward passes inside its Optimizer.step# span, and they are still the forward
/// and backward passes: in a step during which a backward pass began (`closure_step`), an op with an autograd
/// sequence number is forward, as the optimizer's own update ops run with grad disabled and carry none. (A step
/// without a backward pass is all update: user work wrapped in an Optimizer.step# span, such as clip_grad_norm_,
/// runs with grad enabled too.)
Phase op_phase(std::uint8_t scope_flags, bool backward_name, bool closure_step, std::int64_t sequence);

/// The op type of a span without an operator name that launched device work itself (a torch.compile
/// `CompiledFunction`, an `Optimizer.step#FusedAdam.step` scope; trace-format.md, GPU rule): the text after the
/// last '#' (a record_function label's detail), snake-cased as an autograd node's class is, so that
/// "CompiledFunction" pairs with its "CompiledFunctionBackward" node ("compiled_function"); a name ending in
/// Backward<N> maps as a backward node does (*backward = true).
std::string launch_scope_op_name(std::string_view raw, bool* backward = nullptr);

/// record_function's own tensor bookkeeping (torch <= 2.0), which the readers drop where it is an outermost op.
bool is_record_function_bookkeeping(std::string_view raw);

/// The lower-case optimizer class of a span torch names "Optimizer.step#<Class>.step"; "" for any other name (a
/// user scope borrowing the prefix, "Optimizer.step#clip", names no optimizer).
std::string torch_optimizer_class(std::string_view name);
/// The same for the span of its zero_grad(), "Optimizer.zero_grad#<Class>.zero_grad".
std::string torch_zero_grad_class(std::string_view name);

/// Raw argument lists as profilers record them (positional; tensors and non-tensors alike).
struct RawArgs {
  std::vector<std::vector<std::int64_t>> dims;  ///< "Input Dims" (a TensorList contributes its first tensor)
  std::vector<std::string> types;                ///< "Input type"
  std::vector<std::string> concrete;             ///< "Concrete Inputs" ("" for tensors)
};

/// Where a recurrent op's (gru, lstm, rnn_*) weights list stands among its argument types: the last list argument
/// after the first (hx, a tensor or a list, stands just before it); types.size() when there is none.
std::size_t recurrent_weights_argument(const std::vector<std::string>& types);

/// Sets rec.inputs (tensor arguments only, in order) and rec.hyper (what the arguments determine) from raw args.
/// rec.name must already be normalised.
void fill_from_args(OpRecord& rec, const RawArgs& args);

/// Fills rec.flops / rec.bytes analytically when NaN and the op type and shapes allow it (common ops only).
void fill_analytic(OpRecord& rec);

}  // namespace ets::import
