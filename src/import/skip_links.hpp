// Forwarding links with path compression, for sweeps in which an item, once found closed, stays closed for every
// later query (spans ended before a launch, iterations ended before an op): a closed item points to where to look
// instead, so each is passed over once, not once per query.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ets::import {

class SkipLinks {
 public:
  explicit SkipLinks(std::size_t n) : next_(n, kOpen) {}

  /// The first open item reached from i by following closed items' links; -1 when none (i < 0 included).
  std::int64_t find(std::int64_t i) {
    std::int64_t r = i;
    while (r >= 0 && at(r) != kOpen) r = at(r);
    while (i >= 0 && at(i) != kOpen) {  // compress: every item on the way now points at r
      const std::int64_t n = at(i);
      at(i) = r;
      i = n;
    }
    return r;
  }
  /// Closes item i: a later find() reaching it goes on at `to` (-1: nowhere).
  void close(std::int64_t i, std::int64_t to) { at(i) = to; }

 private:
  static constexpr std::int64_t kOpen = -2;
  std::int64_t& at(std::int64_t i) { return next_[static_cast<std::size_t>(i)]; }
  std::vector<std::int64_t> next_;
};

}  // namespace ets::import
