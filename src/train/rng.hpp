// Deterministic random numbers for initialisation and shuffling: std::mt19937_64's sequence is fixed by the
// standard, while std's distributions and std::shuffle are not, so both are written out here.
#pragma once

#include <cmath>
#include <cstdint>
#include <locale>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ets::train {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  /// Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(gen_() >> 11) * (1.0 / 9007199254740992.0); }
  float uniform(float lo, float hi) { return lo + static_cast<float>(uniform01()) * (hi - lo); }
  /// Uniform integer in [0, n) (rejection sampling, unbiased).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    std::uint64_t r;
    do r = gen_(); while (r >= limit);
    return r % n;
  }
  /// Fisher–Yates.
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<std::size_t>(below(i))]);
  }
  /// Standard normal (Box–Muller).
  double normal() {
    const double u1 = 1.0 - uniform01(), u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::string save() const {
    std::ostringstream o;
    o.imbue(std::locale::classic());  // a global locale with digit grouping would write "12.345.678"
    o << gen_;
    return o.str();
  }
  /// false (and the generator unchanged) when s is not a saved state.
  bool load(const std::string& s) {
    std::istringstream i(s);
    i.imbue(std::locale::classic());
    std::mt19937_64 g;
    i >> g;
    if (!i) return false;
    gen_ = g;
    return true;
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace ets::train
