// Definitions for error.hpp; included by the header in header-only mode, compiled once in ets::ets.
#pragma once

#include "ets/error.hpp"

namespace ets {

ETS_INLINE const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::ok: return "ok";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::io: return "io";
    case Errc::parse: return "parse";
    case Errc::unsupported: return "unsupported";
    case Errc::version: return "version";
    case Errc::checksum: return "checksum";
    case Errc::shape: return "shape";
    case Errc::backend: return "backend";
    case Errc::invalid_trace: return "invalid_trace";
    case Errc::internal: return "internal";
  }
  return "unknown";
}

ETS_INLINE Error::Error(Errc code, std::string id, const std::string& message)
    : std::runtime_error("[" + id + "] " + message), code_(code),
      id_(std::make_shared<const std::string>(std::move(id))) {}

ETS_INLINE std::string Error::message() const {
  std::string_view w = what();
  const std::size_t skip = id_->size() + 3;  // "[" id "] "
  return std::string(w.size() >= skip ? w.substr(skip) : w);
}

namespace detail {
ETS_INLINE void throw_error(Errc code, const char* id, const char* file, int line,
                            std::string message) {
  // Backend failures always carry file:line (the status alone rarely tells which call failed).
  if (code == Errc::backend || code == Errc::internal) {
    message += fmt::format(" ({}:{})", file, line);
  } else {
    (void)file;
    (void)line;
  }
  throw Error(code, id, message);
}
}  // namespace detail

}  // namespace ets
