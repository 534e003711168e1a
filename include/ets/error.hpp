// ets::Error — the one exception type ETS throws, with a machine-readable code and a stable id.
// Every failure goes through ETS_THROW so ids stay greppable and docs/errors.md can list them all.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "ets/common.hpp"

namespace ets {

/// Broad category of a failure; the stable id in the message says exactly which one.
enum class Errc : int {
  ok = 0,
  invalid_argument = 1,  ///< caller passed something out of range
  io = 2,                ///< file could not be opened / read / written
  parse = 3,             ///< input is not well-formed for its format
  unsupported = 4,       ///< well-formed, but a format / feature ETS does not handle
  version = 5,           ///< file format version not understood
  checksum = 6,          ///< integrity check failed
  shape = 7,             ///< tensor / dimension mismatch
  backend = 8,           ///< CUDA / cuDNN / CUPTI failure or unavailable
  invalid_trace = 9,     ///< trace is syntactically fine but semantically unusable
  internal = 10,         ///< a bug in ETS
};

/// Short lower-case name of an error code ("parse", "io", ...).
ETS_INLINE const char* errc_name(Errc code) noexcept;

/// The exception ETS throws. what() reads "[ets.<area>.<n>] message". Copying cannot throw (as for the standard
/// exceptions): the id is shared between copies.
class Error : public std::runtime_error {
 public:
  Error(Errc code, std::string id, const std::string& message);

  Errc code() const noexcept { return code_; }
  /// Stable id, e.g. "ets.model.5"; documented in docs/errors.md.
  const std::string& id() const noexcept { return *id_; }
  /// The message without the "[id] " prefix.
  std::string message() const;

 private:
  Errc code_;
  std::shared_ptr<const std::string> id_;
};

namespace detail {
[[noreturn]] ETS_INLINE void throw_error(Errc code, const char* id, const char* file, int line,
                                         std::string message);
}  // namespace detail

}  // namespace ets

/// Throws ets::Error: ETS_THROW(ets::Errc::parse, "ets.etst.5", "bad {} at {}", what, where).
/// Backend and internal errors (Errc::backend / Errc::internal) append the throwing file:line in every build: a CUDA,
/// cuDNN or CUPTI status alone rarely tells which call failed.
#define ETS_THROW(code, id, ...) \
  ::ets::detail::throw_error((code), (id), __FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

/// Throws unless cond holds.
#define ETS_CHECK(cond, code, id, ...) \
  do {                                  \
    if (!(cond)) ETS_THROW(code, id, __VA_ARGS__); \
  } while (false)

#ifndef ETS_COMPILED_LIB
#include "ets/error-inl.hpp"
#endif
