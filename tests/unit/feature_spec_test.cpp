// FeatureSpec: vocabulary ranking and the two-level op-type code, per-op-type hyper-parameter z-scores and
// size statistics against hand computations, the label transform's inverse, and the serialised form.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "encoder_fixtures.hpp"
#include "test_support.hpp"
#include "ets/detail/fnv1a.hpp"
#include "ets/error.hpp"
#include "ets/feature_spec.hpp"
#include "ets/window_encoder.hpp"

namespace {

using ets::Hyper;
using ets::OpRecord;
using ets_test::make_op;

int col(const ets::FeatureSpec& s, const std::string& name) {
  const auto names = s.feature_names();
  const auto it = std::find(names.begin(), names.end(), name);
  INFO("feature " << name);
  REQUIRE(it != names.end());
  return static_cast<int>(it - names.begin());
}

std::vector<float> row(const ets::FeatureSpec& s, const OpRecord& op, const ets::TraceMeta& meta = {},
                       ets::EncodeStats* st = nullptr) {
  std::vector<float> r(static_cast<std::size_t>(s.feature_count()), -99.f);
  s.encode_op(op, meta, r.data(), st);
  return r;
}

float at(const ets::FeatureSpec& s, const std::vector<float>& r, const std::string& name) {
  return r[static_cast<std::size_t>(col(s, name))];
}

using ets_test::error_id;

// Independent mean / population standard deviation (two-pass) for the hand computations.
struct MeanStd {
  double mean, sd;
};
MeanStd mean_std(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  const double sd = std::sqrt(ss / static_cast<double>(v.size()));
  return {m, sd > 0 ? sd : 1.0};
}

ets::ExecutionTrace counted_trace(const std::vector<std::pair<std::string, int>>& counts) {
  ets::ExecutionTrace t;
  bool more = true;
  std::vector<int> left;
  for (const auto& c : counts) left.push_back(c.second);
  while (more) {  // interleave so order in the trace cannot matter
    more = false;
    for (std::size_t i = 0; i < counts.size(); ++i)
      if (left[i] > 0) {
        t.ops.push_back(make_op(counts[i].first));
        --left[i];
        more = true;
      }
  }
  return t;
}

std::uint64_t fnv1a(const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void reseal(std::vector<std::uint8_t>& blob) {
  const std::uint64_t h = fnv1a(blob.data(), blob.size() - 8);
  for (int i = 0; i < 8; ++i) blob[blob.size() - 8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(h >> (8 * i));
}

}  // namespace

TEST_CASE("vocabulary is ranked by frequency and K covers the requested share of ops") {
  const auto t = counted_trace({{"e", 1}, {"c", 15}, {"a", 50}, {"d", 4}, {"b", 30}});
  ets::FeatureOptions by_count;  // every op takes the same time: only the frequency rule is under test
  by_count.time_share = 0;
  const auto s = ets::FeatureSpec::fit({t}, by_count);
  REQUIRE(s.vocab_size() == 5);
  CHECK(s.fitted_ops() == 100);
  for (int r = 0; r < 5; ++r) CHECK(s.type_name(r) == std::string(1, static_cast<char>('a' + r)));
  CHECK(s.type_rank("e") == 4);
  CHECK(s.type_rank("zzz") == -1);
  // 50 + 30 + 15 + 4 = 99 of 100 ops: four types reach 99 %.
  CHECK(s.one_hot_count() == 4);
  CHECK(col(s, "type.d") == 3);
  CHECK(col(s, "type.other") == 4);

  auto k_for = [&](double coverage, int cap = 64) {
    ets::FeatureOptions o = by_count;
    o.coverage = coverage;
    o.max_one_hot = cap;
    return ets::FeatureSpec::fit({t}, o).one_hot_count();
  };
  CHECK(k_for(0.80) == 2);  // 80 of 100 exactly
  CHECK(k_for(0.81) == 3);
  CHECK(k_for(1.0) == 5);
  CHECK(k_for(0.99, 1) == 1);
  CHECK(k_for(0.99, 0) == 0);

  // Ties break by name so the layout is deterministic.
  const auto tie = ets::FeatureSpec::fit({counted_trace({{"y", 2}, {"z", 3}, {"x", 2}})});
  CHECK(tie.type_name(0) == "z");
  CHECK(tie.type_name(1) == "x");
  CHECK(tie.type_name(2) == "y");
}

TEST_CASE("two-level op-type code keeps rare types distinguishable and flags unknown ones") {
  const auto t = counted_trace({{"a", 50}, {"b", 30}, {"c", 15}, {"d", 4}, {"e", 1}});
  ets::FeatureOptions by_count;  // "e" holds 1 % of the time: no column of its own for its time share here
  by_count.time_share = 0;
  const auto s = ets::FeatureSpec::fit({t}, by_count);
  const auto ra = row(s, make_op("a"));
  CHECK(at(s, ra, "type.a") == 1.f);
  CHECK(at(s, ra, "type.other") == 0.f);
  CHECK(at(s, ra, "freq.log_count") == Approx(std::log1p(50.0) / std::log1p(100.0)));
  CHECK(at(s, ra, "freq.rank") == Approx(1.0));

  const auto re = row(s, make_op("e"));
  for (const char* c : {"type.a", "type.b", "type.c", "type.d"}) CHECK(at(s, re, c) == 0.f);
  CHECK(at(s, re, "type.other") == 1.f);
  CHECK(at(s, re, "freq.log_count") == Approx(std::log1p(1.0) / std::log1p(100.0)));
  CHECK(at(s, re, "freq.rank") == Approx(1.0 - 4.0 / 5.0));

  ets::EncodeStats st;
  const auto ru = row(s, make_op("never_seen"), {}, &st);
  CHECK(at(s, ru, "type.other") == 1.f);
  CHECK(at(s, ru, "freq.log_count") == 0.f);
  CHECK(at(s, ru, "freq.rank") == 0.f);
  CHECK(ru != re);
  row(s, make_op("never_seen"), {}, &st);
  row(s, make_op("a"), {}, &st);
  CHECK(st.ops == 3);
  CHECK(st.unknown_ops == 2);
  REQUIRE(st.unknown_types.size() == 1);
  CHECK(st.unknown_types.at("never_seen") == 2);
}

// One rare but expensive op per iteration (an aten::gru among hundreds of cheap ops).
ets::ExecutionTrace rare_expensive_trace(double z_time_us) {
  auto t = counted_trace({{"a", 50}, {"b", 30}, {"c", 14}, {"d", 4}, {"f", 1}});
  t.ops.push_back(make_op("z", ets::Phase::Forward, z_time_us, 0.0));  // 99 ops x 11 us + z
  return t;
}

TEST_CASE("a rare type holding a large share of the training time gets its own one-hot column") {
  // By count, "f" and "z" tie at 1 op (rank 4 = f, rank 5 = z by name) and 99 % coverage takes a..f (K = 5).
  const auto t = rare_expensive_trace(50.0);  // z: 50 of 1,139 us = 4.39 %
  const auto s = ets::FeatureSpec::fit({t});
  REQUIRE(s.vocab_size() == 6);
  REQUIRE(s.type_rank("z") == 5);
  CHECK(s.one_hot_count() == 6);
  CHECK(s.type_column(5) == 5);
  CHECK(s.type_column(4) == 4);
  CHECK(col(s, "type.z") == 5);
  CHECK(col(s, "type.other") == 6);
  const auto rz = row(s, make_op("z"));
  CHECK(at(s, rz, "type.z") == 1.f);
  CHECK(at(s, rz, "type.other") == 0.f);
  CHECK(at(s, rz, "freq.rank") == Approx(1.0 - 5.0 / 6.0));  // the frequency code is unchanged
  CHECK(at(s, row(s, make_op("f")), "type.z") == 0.f);

  // z's column under a time_share / cap: -1 = it shares "other"; the frequency cut stays K = 5.
  auto z_column = [&](const ets::ExecutionTrace& tr, double share, int cap = 64) {
    ets::FeatureOptions o;
    o.time_share = share;
    o.max_one_hot = cap;
    const auto fitted = ets::FeatureSpec::fit({tr}, o);
    CHECK(fitted.one_hot_count() == 5 + (fitted.type_column(5) >= 0 ? 1 : 0));
    return fitted.type_column(5);
  };
  CHECK(z_column(t, 0.043) == 5);
  CHECK(z_column(t, 0.045) == -1);  // below its share
  CHECK(z_column(t, 0.0) == -1);    // off
  CHECK(z_column(t, 0.001, 5) == -1);  // the cap holds
  CHECK(z_column(t, 0.001, 6) == 5);
  auto unlabelled = t;
  for (auto& op : unlabelled.ops) op.time_us = std::nan("");
  CHECK(z_column(unlabelled, 0.001) == -1);  // no labels, no time shares

  const auto back = ets::FeatureSpec::deserialize(s.serialize());
  CHECK(back == s);
  CHECK(back.serialize() == s.serialize());
  CHECK(back.feature_names() == s.feature_names());
  CHECK(back.type_column(5) == 5);
  CHECK(back.options().time_share == s.options().time_share);
  ets::FeatureOptions off;
  off.time_share = 0;
  CHECK(ets::FeatureSpec::fit({t}, off) != s);
}

TEST_CASE("hyper-parameters are z-scored per op type with training statistics") {
  ets::ExecutionTrace t;
  const std::vector<double> conv_k = {1, 3, 3, 7}, conv_in = {3, 64, 64, 256}, lin_in = {128, 512};
  for (std::size_t i = 0; i < conv_k.size(); ++i) {
    auto op = make_op("conv2d");
    op.hyper.set(Hyper::KernelH, conv_k[i]);
    op.hyper.set(Hyper::InChannels, conv_in[i]);
    op.hyper.set(Hyper::Groups, 1);
    t.ops.push_back(op);
  }
  for (double v : lin_in) {
    auto op = make_op("linear");
    op.hyper.set(Hyper::InChannels, v);
    t.ops.push_back(op);
  }
  const auto s = ets::FeatureSpec::fit({t});

  auto conv = make_op("conv2d");
  conv.hyper.set(Hyper::KernelH, 5);
  conv.hyper.set(Hyper::InChannels, 100);
  conv.hyper.set(Hyper::Groups, 2);
  const auto rc = row(s, conv);
  const auto ck = mean_std(conv_k), ci = mean_std(conv_in);
  CHECK(at(s, rc, "hyper.kernel_h") == Approx((5 - ck.mean) / ck.sd));
  CHECK(at(s, rc, "hyper.in_channels") == Approx((100 - ci.mean) / ci.sd));
  CHECK(at(s, rc, "hyper.groups") == Approx(1.0));  // constant in training: std 0 → 1, mean 1
  CHECK(at(s, rc, "hyper.kernel_w") == 0.f);        // absent slot
  CHECK(at(s, rc, "hyper.heads") == 0.f);

  auto lin = make_op("linear");
  lin.hyper.set(Hyper::InChannels, 100);
  lin.hyper.set(Hyper::KernelH, 5);  // a slot linear never had: falls back to all training ops
  const auto rl = row(s, lin);
  const auto li = mean_std(lin_in);
  CHECK(at(s, rl, "hyper.in_channels") == Approx((100 - li.mean) / li.sd));
  CHECK(at(s, rl, "hyper.kernel_h") == Approx((5 - ck.mean) / ck.sd));

  auto unk = make_op("mystery");
  unk.hyper.set(Hyper::InChannels, 100);
  const auto all_in = mean_std({3, 64, 64, 256, 128, 512});
  CHECK(at(s, row(s, unk), "hyper.in_channels") == Approx((100 - all_in.mean) / all_in.sd));

  auto huge = make_op("conv2d");
  huge.hyper.set(Hyper::InChannels, 1e9);
  CHECK(at(s, row(s, huge), "hyper.in_channels") == Approx(10.0));  // hyper_clip
}

TEST_CASE("tensor sizes, cost, dtype, phase, batch and optimizer features") {
  ets::ExecutionTrace t;
  t.meta.batch_size = 32;
  auto a = make_op("mm");
  a.inputs = {{{2, 3}, ets::DType::Float32}};
  a.flops = 100;
  auto b = make_op("mm");
  b.inputs = {{{4, 5, 6}, ets::DType::Float16}, {{7}, ets::DType::Float16}};
  b.flops = 1000;
  auto c = make_op("relu");
  t.ops = {a, b, c};
  const auto s = ets::FeatureSpec::fit({t});

  auto probe = make_op("mm", ets::Phase::Backward);
  probe.inputs = {{{10, 20}, ets::DType::BFloat16}};
  probe.flops = 100;
  probe.bytes = 10;
  ets::TraceMeta meta;
  meta.batch_size = 64;
  meta.optimizer = "SGD";
  const auto r = row(s, probe, meta);

  const auto numel = mean_std({std::log1p(6.0), std::log1p(120.0)});
  const auto d1 = mean_std({std::log1p(3.0), std::log1p(6.0)});
  const auto d2 = mean_std({std::log1p(2.0), std::log1p(5.0)});
  CHECK(at(s, r, "in0.present") == 1.f);
  CHECK(at(s, r, "in0.log_numel") == Approx((std::log1p(200.0) - numel.mean) / numel.sd));
  CHECK(at(s, r, "in0.rank") == Approx(-1.0));  // ranks 2 and 3: mean 2.5, std 0.5
  CHECK(at(s, r, "in0.log_dim[-1]") == Approx((std::log1p(20.0) - d1.mean) / d1.sd));
  CHECK(at(s, r, "in0.log_dim[-2]") == Approx((std::log1p(10.0) - d2.mean) / d2.sd));
  CHECK(at(s, r, "in0.log_dim[-3]") == 0.f);
  for (const char* n : {"in1.present", "in1.log_numel", "in1.rank", "in2.present"}) CHECK(at(s, r, n) == 0.f);
  CHECK(at(s, r, "cost.log_flops") == Approx(-1.0));  // the lower of two known values
  CHECK(at(s, r, "cost.flops_known") == 1.f);
  CHECK(at(s, r, "cost.log_bytes") == 0.f);  // no bytes in training: the value the model saw there, not log1p(10)
  CHECK(at(s, r, "cost.bytes_known") == 1.f);
  CHECK(at(s, r, "dtype.bfloat16") == 1.f);
  CHECK(at(s, r, "dtype.float32") == 0.f);
  CHECK(at(s, r, "phase.backward") == 1.f);
  CHECK(at(s, r, "phase.forward") + at(s, r, "phase.update") == 0.f);
  CHECK(at(s, r, "batch.log_size") == Approx(std::log1p(64.0) - std::log1p(32.0)));
  CHECK(at(s, r, "batch.known") == 1.f);
  CHECK(at(s, r, "opt.sgd") == 1.f);

  probe.flops = ets::kUnknown;
  const auto rn = row(s, probe);
  CHECK(at(s, rn, "cost.log_flops") == 0.f);
  CHECK(at(s, rn, "cost.flops_known") == 0.f);
  CHECK(at(s, rn, "batch.log_size") == 0.f);
  CHECK(at(s, rn, "batch.known") == 0.f);
  CHECK(at(s, rn, "opt.unknown") == 1.f);

  const std::vector<std::pair<std::string, std::string>> opts = {
      {"Adam", "opt.adam"}, {"torch.optim.AdamW", "opt.adamw"}, {"lamb", "opt.other"}, {"sgd", "opt.sgd"}};
  for (const auto& [name, column] : opts) {
    meta.optimizer = name;
    const auto ro = row(s, probe, meta);
    float sum = 0;
    for (const char* o : {"opt.sgd", "opt.adam", "opt.adamw", "opt.other", "opt.unknown"}) sum += at(s, ro, o);
    CHECK(at(s, ro, column) == 1.f);
    CHECK(sum == 1.f);
  }
}

TEST_CASE("label transform: log1p then z-score on labelled training ops, with an exact inverse") {
  ets::ExecutionTrace t;
  const std::vector<double> times = {1, 10, 100, 1000}, gaps = {0, 1, 2, 3};
  for (std::size_t i = 0; i < times.size(); ++i) t.ops.push_back(make_op("x", ets::Phase::Forward, times[i], gaps[i]));
  ets::ExecutionTrace unlabelled;  // all-zero timings carry no labels and must not move the statistics
  for (int i = 0; i < 5; ++i) unlabelled.ops.push_back(make_op("x", ets::Phase::Forward, 0, 0));
  CHECK_FALSE(ets::FeatureSpec::has_labels(unlabelled));
  CHECK(ets::FeatureSpec::has_labels(t));
  const auto s = ets::FeatureSpec::fit({t, unlabelled});

  std::vector<double> lt, lg;
  for (double v : times) lt.push_back(std::log1p(v));
  for (double v : gaps) lg.push_back(std::log1p(v));
  const auto mt = mean_std(lt), mg = mean_std(lg);
  CHECK(s.normalize_time(50) == Approx((std::log1p(50.0) - mt.mean) / mt.sd));
  CHECK(s.normalize_gap(50) == Approx((std::log1p(50.0) - mg.mean) / mg.sd));
  CHECK(s.normalize_time(-3) == s.normalize_time(0));
  CHECK(s.label_moments(0).n == 4);
  CHECK(s.label_moments(0).mean == Approx(mt.mean));
  CHECK(s.label_moments(1).stdev == Approx(mg.sd));

  for (double x : {0.0, 1e-6, 0.5, 1.0, 37.25, 1e3, 123456.789, 1e8}) {
    for (int ch = 0; ch < 2; ++ch) {
      INFO("x = " << x << " channel " << ch);
      const double back = s.denormalize_label(ch, s.normalize_label(ch, x));
      CHECK(std::abs(back - x) <= 1e-12 * std::max(1.0, x));
      // Through the float tensors the model sees: float rounding of z only.
      const double via_float = s.denormalize_label(ch, static_cast<float>(s.normalize_label(ch, x)));
      CHECK(std::abs(via_float - x) <= 1e-5 * std::max(1.0, x));
    }
  }
  CHECK(s.denormalize_time(-1e6) == 0.0);
  CHECK(error_id([&] { s.normalize_label(2, 1.0); }) == "ets.encoder.11");
}

TEST_CASE("serialised spec round-trips bit-exactly and encodes identically") {
  std::vector<ets::ExecutionTrace> train;
  for (std::uint32_t i = 0; i < 4; ++i) train.push_back(ets_test::synthetic_trace(400, i));
  ets::FeatureOptions o;
  o.max_one_hot = 12;
  o.dims_per_input = 3;
  const auto s = ets::FeatureSpec::fit(train, o);
  const auto blob = s.serialize();
  REQUIRE(blob.size() > 16);
  CHECK(std::memcmp(blob.data(), "ETSF", 4) == 0);
  CHECK(blob[4] == 3);
  CHECK(blob[5] + blob[6] + blob[7] == 0);

  const auto back = ets::FeatureSpec::deserialize(blob);
  CHECK(back == s);
  CHECK(back.serialize() == blob);
  CHECK(back.feature_names() == s.feature_names());
  CHECK(back.one_hot_count() == s.one_hot_count());

  auto probe = ets_test::synthetic_trace(300, 99, 60);  // types 40..59 never seen in training
  const std::size_t f = static_cast<std::size_t>(s.feature_count());
  std::vector<float> r1(probe.ops.size() * f), r2(probe.ops.size() * f);
  ets::EncodeStats st1, st2;
  s.encode_ops(probe, r1.data(), &st1);
  back.encode_ops(probe, r2.data(), &st2);
  CHECK(std::memcmp(r1.data(), r2.data(), r1.size() * sizeof(float)) == 0);
  CHECK(st1.unknown_ops == st2.unknown_ops);
  CHECK(st1.unknown_ops > 0);
  for (double x : {0.0, 3.5, 1e4})
    CHECK(back.normalize_time(x) == s.normalize_time(x));  // bit-exact statistics
}

TEST_CASE("truncated, corrupt or inconsistent blobs throw ets::Error") {
  const auto s = ets::FeatureSpec::fit({ets_test::synthetic_trace(200, 1)});
  const auto blob = s.serialize();
  for (std::size_t n = 0; n < blob.size(); ++n) {
    INFO("prefix " << n);
    const std::string id = error_id([&] { ets::FeatureSpec::deserialize(blob.data(), n); });
    CHECK((id == "ets.encoder.3" || id == "ets.encoder.6"));
  }
  for (std::size_t i = 0; i < blob.size(); ++i) {
    auto bad = blob;
    bad[i] ^= 0x10;
    INFO("flipped byte " << i);
    const std::string id = error_id([&] { ets::FeatureSpec::deserialize(bad); });
    CHECK((id == "ets.encoder.4" || id == "ets.encoder.5" || id == "ets.encoder.6"));
  }
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(nullptr, 100); }) == "ets.encoder.3");

  auto bad_magic = blob;
  bad_magic[0] = 'X';
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(bad_magic); }) == "ets.encoder.4");
  auto newer = blob;
  newer[4] = 4;
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(newer); }) == "ets.encoder.5");

  // Valid checksum, impossible content: one-hot width (offset 48) beyond the vocabulary.
  auto wide = blob;
  wide[48] = 0xff;
  wide[49] = 0xff;
  reseal(wide);
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(wide); }) == "ets.encoder.7");
  // coverage (offset 8, f64) = 2.0 is not a valid option.
  auto cov = blob;
  const double two = 2.0;
  std::uint64_t bits;
  std::memcpy(&bits, &two, 8);
  for (int i = 0; i < 8; ++i) cov[8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(bits >> (8 * i));
  reseal(cov);
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(cov); }) == "ets.encoder.7");
  auto longer = blob;
  longer.insert(longer.end() - 8, std::uint8_t{0});
  reseal(longer);
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(longer); }) == "ets.encoder.7");
  auto share = blob;  // time_share (offset 36, f64) = 2.0
  for (int i = 0; i < 8; ++i) share[36 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(bits >> (8 * i));
  reseal(share);
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(share); }) == "ets.encoder.7");
  auto twin = blob;  // backward_twin (offset 44, u32) is 0 or 1
  twin[44] = 2;
  reseal(twin);
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(twin); }) == "ets.encoder.7");
}

// Where the promoted-rank list (u32 n, n x u32) starts: before the global hyper moments, the size statistics and the
// label moments at the end (default FeatureOptions: 3 slots x (2 + 4 dims) + flops, bytes, batch = 21 statistics).
std::size_t promoted_offset(const std::vector<std::uint8_t>& blob, std::size_t n) {
  return blob.size() - 8 - 2 * 24 - 21 * 24 - 4 - ets::kHyperCount * 24 - 4 * (n + 1);
}

TEST_CASE("time-share columns that contradict the vocabulary are rejected") {
  const auto s = ets::FeatureSpec::fit({rare_expensive_trace(50.0)});
  REQUIRE(s.type_column(5) == 5);
  const auto blob = s.serialize();
  const std::size_t at_n = promoted_offset(blob, 1);
  REQUIRE(blob[at_n] == 1);
  REQUIRE(blob[at_n + 4] == 5);
  for (std::uint8_t rank : {std::uint8_t{4}, std::uint8_t{6}, std::uint8_t{200}}) {  // inside the cut, past V
    auto bad = blob;
    bad[at_n + 4] = rank;
    reseal(bad);
    INFO("rank " << int{rank});
    CHECK(error_id([&] { ets::FeatureSpec::deserialize(bad); }) == "ets.encoder.7");
  }
  auto many = blob;  // more promoted types than one-hot columns
  many[at_n] = 7;
  reseal(many);
  CHECK(error_id([&] { ets::FeatureSpec::deserialize(many); }) == "ets.encoder.7");
}

TEST_CASE("a version-1 blob (before time-share columns) still reads, with the frequency layout") {
  ets::FeatureOptions off;
  off.time_share = 0;
  off.backward_twin = false;  // version 1 has neither
  const auto s = ets::FeatureSpec::fit({rare_expensive_trace(50.0)}, off);
  REQUIRE(s.type_column(5) == -1);
  auto v1 = s.serialize();
  const std::size_t at_n = promoted_offset(v1, 0);
  REQUIRE(v1[at_n] == 0);
  v1.erase(v1.begin() + static_cast<std::ptrdiff_t>(at_n), v1.begin() + static_cast<std::ptrdiff_t>(at_n + 4));
  v1.erase(v1.begin() + 36, v1.begin() + 48);  // version 1 had no time_share or backward_twin option
  v1[4] = 1;
  reseal(v1);
  const auto back = ets::FeatureSpec::deserialize(v1);
  CHECK(back == s);
  CHECK(back.options().time_share == 0.0);
  CHECK(back.one_hot_count() == 5);
  CHECK(back.type_column(5) == -1);
  CHECK(back.serialize() == s.serialize());  // re-written as version 3
}

TEST_CASE("invalid options, empty training sets and unfitted specs are rejected") {
  const auto t = ets_test::synthetic_trace(20, 3);
  auto fit_with = [&](auto change) {
    ets::FeatureOptions o;
    change(o);
    return error_id([&] { ets::FeatureSpec::fit({t}, o); });
  };
  CHECK(fit_with([](ets::FeatureOptions& o) { o.coverage = 0; }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.coverage = 1.5; }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.coverage = std::nan(""); }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.max_one_hot = -1; }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.time_share = -0.1; }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.time_share = 1.5; }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.time_share = std::nan(""); }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.input_slots = 17; }) == "ets.encoder.1");
  CHECK(fit_with([](ets::FeatureOptions& o) { o.hyper_clip = 0; }) == "ets.encoder.1");
  CHECK(error_id([] { ets::FeatureSpec::fit({}); }) == "ets.encoder.2");
  CHECK(error_id([] { ets::FeatureSpec::fit({ets::ExecutionTrace{}}); }) == "ets.encoder.2");
  ets::FeatureSpec empty;
  CHECK_FALSE(empty.fitted());
  float r[4];
  CHECK(error_id([&] { empty.encode_op(make_op("a"), {}, r); }) == "ets.encoder.9");
}

TEST_CASE("feature names are unique and match the layout") {
  const auto s = ets::FeatureSpec::fit({ets_test::synthetic_trace(500, 7)});
  const auto names = s.feature_names();
  CHECK(static_cast<int>(names.size()) == s.feature_count());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  const auto& l = s.layout();
  CHECK(names[static_cast<std::size_t>(l.other)] == "type.other");
  CHECK(names[static_cast<std::size_t>(l.phase)] == "phase.forward");
  CHECK(names[static_cast<std::size_t>(l.hyper)] == "hyper.kernel_h");
  CHECK(names[static_cast<std::size_t>(l.optimizer + 4)] == "opt.unknown");
  CHECK(names.back() == "opt.unknown");
}

TEST_CASE("a tensor whose element count exceeds double's range still encodes finite features") {
  ets::ExecutionTrace t;
  auto a = make_op("mm");
  a.inputs = {{{2, 3}, ets::DType::Float32}};
  t.ops = {a, make_op("mm")};
  const auto s = ets::FeatureSpec::fit({t});
  auto huge = make_op("mm");
  huge.inputs = {{std::vector<std::int64_t>(1100, 2), ets::DType::Float32}};  // 2^1100 elements
  const auto r = row(s, huge);
  for (std::size_t i = 0; i < r.size(); ++i) {
    INFO("feature " << s.feature_names()[i]);
    CHECK(std::isfinite(r[i]));
  }
  // log1p(2^1100) = 1100 log 2 to double precision, z-scored like any other size
  auto big = make_op("mm");
  big.inputs = {{std::vector<std::int64_t>(1000, 2), ets::DType::Float32}};  // 2^1000 still fits in a double
  const float f1100 = at(s, r, "in0.log_numel"), f1000 = at(s, row(s, big), "in0.log_numel");
  CHECK(f1100 > f1000);
  // an empty tensor beside overflowing dims has no elements
  huge.inputs.front().dims.push_back(0);
  CHECK(std::isfinite(at(s, row(s, huge), "in0.log_numel")));
}

TEST_CASE("columns no training op had are written as 0, whatever the value") {
  // The model saw only zeros there, so its weights on them are untrained; a raw log value (≈ 20 for 1e9 FLOPs)
  // would shift its predictions arbitrarily. The known / present flags still say the value exists.
  ets::ExecutionTrace t;  // no FLOPs, no bytes, no batch size, only 1-D single inputs
  auto a = make_op("mm");
  a.inputs = {{{8}, ets::DType::Float32}};
  t.ops = {a, a};
  const auto s = ets::FeatureSpec::fit({t});
  auto probe = make_op("mm");
  probe.inputs = {{{4, 5, 6}, ets::DType::Float32}, {{7, 9, 11}, ets::DType::Float32}};
  probe.flops = 1e9;
  probe.bytes = 1e8;
  ets::TraceMeta meta;
  meta.batch_size = 256;
  const auto r = row(s, probe, meta);
  for (const char* n : {"cost.log_flops", "cost.log_bytes", "batch.log_size", "in1.log_numel", "in1.rank",
                        "in1.log_dim[-1]", "in0.log_dim[-2]"})
    CHECK(at(s, r, n) == 0.f);
  for (const char* n : {"cost.flops_known", "cost.bytes_known", "batch.known", "in1.present"}) CHECK(at(s, r, n) == 1.f);
  // columns that had training values are still z-scored
  CHECK(at(s, r, "in0.rank") == Approx(2.0));  // rank 3 against a constant rank 1 (std 0 → 1)
}

TEST_CASE("hyper-parameter values beyond ±1e150 stay out of the statistics and are clipped") {
  // One such value used to overflow the running variance (or, at ±1.7e308, the mean), making the slot NaN for every
  // op of the type and the serialised spec unreadable.
  ets::ExecutionTrace t;
  for (double v : {1.7e308, -1.7e308, 1.7e308, 3.0, 0.0, 1e200, 1.0, 2.0}) {
    auto op = make_op("conv2d");
    op.hyper.set(Hyper::KernelH, v);
    t.ops.push_back(op);
  }
  const auto s = ets::FeatureSpec::fit({t});
  const auto ms = mean_std({3, 0, 1, 2});
  auto probe = make_op("conv2d");
  probe.hyper.set(Hyper::KernelH, 0);
  CHECK(at(s, row(s, probe), "hyper.kernel_h") == Approx((0 - ms.mean) / ms.sd));
  probe.hyper.set(Hyper::KernelH, 1e200);
  CHECK(at(s, row(s, probe), "hyper.kernel_h") == Approx(10.0));  // hyper_clip
  probe.hyper.set(Hyper::KernelH, -1.7e308);
  CHECK(at(s, row(s, probe), "hyper.kernel_h") == Approx(-10.0));
  const auto back = ets::FeatureSpec::deserialize(s.serialize());
  CHECK(back == s);
  // a hyper_clip past float's range ("no clip") still writes finite features: an outlier's z is held at ±1e30
  ets::FeatureOptions wide;
  wide.hyper_clip = 1e300;
  const auto w = ets::FeatureSpec::fit({t}, wide);
  probe.hyper.set(Hyper::KernelH, 1e200);
  const float z = at(w, row(w, probe), "hyper.kernel_h");
  CHECK(std::isfinite(z));
  CHECK(z == Approx(1e30));
}

TEST_CASE("accessors outside the vocabulary or label channels throw ets::Error") {
  ets::ExecutionTrace t;
  t.ops = {make_op("mm"), make_op("relu")};
  const auto s = ets::FeatureSpec::fit({t});
  CHECK(s.type_rank(s.type_name(0)) == 0);
  CHECK(error_id([&] { (void)s.type_name(-1); }) == "ets.encoder.13");
  CHECK(error_id([&] { (void)s.type_count(s.vocab_size()); }) == "ets.encoder.13");
  CHECK(error_id([&] { (void)s.label_moments(2); }) == "ets.encoder.11");
  CHECK(error_id([&] { (void)s.label_moments(1); }) == "no error");
}

TEST_CASE("a moved-to spec is the source; a moved-from one is unfitted, refuses to encode, and takes a new value") {
  const ets::FeatureSpec& fitted = ets_test::fitted_spec();
  const auto trace = ets_test::synthetic_trace(50, 7);
  ets::FeatureSpec source = fitted;
  ets::FeatureSpec moved(std::move(source));
  // every member travels (swap() lists them): the serialised form and each encoded row are the source's
  CHECK(moved.serialize() == fitted.serialize());
  for (const auto& op : trace.ops) CHECK(row(moved, op, trace.meta) == row(fitted, op, trace.meta));
  CHECK_FALSE(source.fitted());  // it used to keep its layout (fitted, F columns) with emptied tables: a crash
  CHECK(source.feature_count() == 0);
  CHECK(source.vocab_size() == 0);
  std::vector<float> r(static_cast<std::size_t>(fitted.feature_count()));
  CHECK(ets_test::error_id([&] { source.encode_op(trace.ops[0], trace.meta, r.data()); }) == "ets.encoder.9");
  CHECK(ets_test::error_id([&] { (void)source.serialize(); }) == "ets.encoder.9");
  CHECK(ets_test::error_id([] { (void)ets::FeatureSpec{}.serialize(); }) == "ets.encoder.9");

  ets::FeatureSpec assigned;
  assigned = std::move(moved);
  CHECK(assigned.serialize() == fitted.serialize());
  CHECK_FALSE(moved.fitted());
  source = assigned;  // a moved-from spec is assignable again
  CHECK(source.serialize() == fitted.serialize());
  auto& self = assigned;
  assigned = std::move(self);  // self-move leaves it as it was
  CHECK(assigned.serialize() == fitted.serialize());
  static_assert(std::is_nothrow_move_constructible_v<ets::FeatureSpec>);
  static_assert(std::is_nothrow_move_assignable_v<ets::FeatureSpec>);
}

TEST_CASE("an unfitted spec refuses the label transform; statistics from a crafted blob still give finite features") {
  ets::FeatureSpec fitted = ets_test::fitted_spec();
  const double us = fitted.denormalize_time(0.0);
  CHECK(us > 0.0);
  ets::FeatureSpec moved_to = std::move(fitted);
  CHECK(moved_to.denormalize_time(0.0) == us);
  // a moved-from or default spec gave log1p with mean 0 and std 1 (0 µs for z = 0) and 64 names for 0 columns
  for (const ets::FeatureSpec* s : {static_cast<const ets::FeatureSpec*>(&fitted), static_cast<const ets::FeatureSpec*>(nullptr)}) {
    const ets::FeatureSpec empty;
    const ets::FeatureSpec& spec = s ? *s : empty;
    CHECK_FALSE(spec.fitted());
    CHECK(ets_test::error_id([&] { (void)spec.denormalize_time(0.0); }) == "ets.encoder.9");
    CHECK(ets_test::error_id([&] { (void)spec.normalize_time(100.0); }) == "ets.encoder.9");
    CHECK(ets_test::error_id([&] { (void)spec.label_moments(0); }) == "ets.encoder.9");
    CHECK(spec.feature_names().empty());
  }

  // A checksum-valid blob whose batch-size and time-label std are 1e-300 (fit() never makes one): the encoder gave
  // ±inf features and labels, which the network is documented never to get.
  std::vector<std::uint8_t> blob = moved_to.serialize();
  const std::size_t n = blob.size();
  const auto put_f64 = [&](std::size_t at, double v) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    for (int i = 0; i < 8; ++i) blob[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(u >> (8 * i));
  };
  // the blob ends: ... continuous moments (the last: batch size) | time | gap moments | u64 checksum; a moment is
  // i64 n, f64 mean, f64 std
  put_f64(n - 8 - 48 - 24 + 16, 1e-300);
  put_f64(n - 8 - 48 + 16, 1e-300);
  const std::uint64_t h = ets::detail::fnv1a(blob.data(), n - 8);
  for (int i = 0; i < 8; ++i) blob[n - 8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(h >> (8 * i));
  const ets::FeatureSpec crafted = ets::FeatureSpec::deserialize(blob);
  REQUIRE(crafted.label_moments(0).stdev == 1e-300);  // the edit hit the fields it meant to
  const ets::WindowBatch b = ets::WindowEncoder(crafted, 12, 4).encode(ets_test::synthetic_trace(20, 1));
  std::size_t non_finite = 0;
  for (float v : b.x) non_finite += !std::isfinite(v);
  for (float v : b.y) non_finite += !std::isfinite(v);
  CHECK(non_finite == 0);
}

namespace {

// One iteration with autograd sequence numbers as a CPU profile records them: a convolution whose backward carries
// only the incoming gradient's shape, an in-place add_ sharing the batch_norm's number, a linear whose backward has
// another number, and ops without one.
ets::ExecutionTrace twin_trace() {
  using ets::Phase;
  auto op = [](const std::string& name, Phase ph, std::int64_t seq, double us) {
    OpRecord o = make_op(name, ph, us, 2.0);
    o.sequence = seq;
    return o;
  };
  ets::ExecutionTrace t;
  t.meta.batch_size = 32;
  t.meta.optimizer = "adam";
  OpRecord conv = op("conv2d", Phase::Forward, 5, 900.0);
  conv.inputs = {{{32, 3, 16, 16}, ets::DType::Float32}, {{16, 3, 3, 3}, ets::DType::Float32}, {{16}, ets::DType::Float32}};
  conv.hyper.set(Hyper::KernelH, 3);
  conv.hyper.set(Hyper::KernelW, 3);
  conv.hyper.set(Hyper::InChannels, 3);
  conv.hyper.set(Hyper::OutChannels, 16);
  conv.flops = 2.0 * 32 * 16 * 16 * 16 * 3 * 9;
  conv.bytes = 4.0 * (32 * 3 * 16 * 16 + 16 * 27 + 32 * 16 * 16 * 16);
  t.ops.push_back(conv);                                    // 0
  OpRecord add = op("add", Phase::Forward, 6, 3.0);         // 1: num_batches_tracked.add_(1)
  add.inputs = {{{}, ets::DType::Int64}};
  t.ops.push_back(add);
  OpRecord bn = op("batch_norm", Phase::Forward, 6, 60.0);  // 2
  bn.inputs = {{{32, 16, 16, 16}, ets::DType::Float32}};
  bn.bytes = 4.0 * 2 * 32 * 16 * 16 * 16;
  t.ops.push_back(bn);
  OpRecord conv2 = conv;                                    // 3: a later forward op with the same number
  conv2.hyper.set(Hyper::KernelH, 5);
  conv2.flops = 7.0;
  t.ops.push_back(conv2);
  OpRecord lin = op("linear", Phase::Forward, 8, 40.0);     // 4
  lin.inputs = {{{32, 4096}, ets::DType::Float32}, {{10, 4096}, ets::DType::Float32}};
  lin.flops = 2.0 * 32 * 4096 * 10;
  t.ops.push_back(lin);
  OpRecord lin_b = op("linear", Phase::Backward, 10, 80.0);  // 5: its number is the nested addmm's, 2 above
  lin_b.inputs = {{{32, 10}, ets::DType::Float32}};
  t.ops.push_back(lin_b);
  OpRecord bn_b = op("batch_norm", Phase::Backward, 6, 120.0);  // 6
  bn_b.inputs = {{{32, 16, 16, 16}, ets::DType::Float32}};
  t.ops.push_back(bn_b);
  OpRecord conv_b = op("conv2d", Phase::Backward, 5, 2000.0);   // 7: the gradient's shape only
  conv_b.inputs = {{{32, 16, 16, 16}, ets::DType::Float32}};
  conv_b.bytes = 4.0 * 32 * 16 * 16 * 16;
  t.ops.push_back(conv_b);
  OpRecord conv_b2 = conv_b;                                // 8: no sequence number
  conv_b2.sequence = -1;
  t.ops.push_back(conv_b2);
  t.ops.push_back(op("add", Phase::Update, 6, 5.0));        // 9: an update op never has a twin
  OpRecord lin_far = lin_b;                                 // 10: 3 above the linear: out of reach
  lin_far.sequence = 11;
  t.ops.push_back(lin_far);
  return t;
}

std::vector<float> rows_of(const ets::FeatureSpec& s, const ets::ExecutionTrace& t) {
  std::vector<float> r(t.ops.size() * static_cast<std::size_t>(s.feature_count()));
  s.encode_ops(t, r.data());
  return r;
}

}  // namespace

TEST_CASE("a backward op's forward twin: the same sequence number and type, the earliest") {
  const auto t = twin_trace();
  std::vector<std::int32_t> twins{42};  // overwritten, not appended to
  ets::FeatureSpec::backward_twins(t, twins);
  CHECK(twins == std::vector<std::int32_t>{-1, -1, -1, -1, -1, 4, 2, 0, -1, -1, -1});
  CHECK(ets::FeatureSpec::has_backward_sequences(t));
  ets::ExecutionTrace no_seq = t;
  for (auto& op : no_seq.ops) op.sequence = -1;
  ets::FeatureSpec::backward_twins(no_seq, twins);
  CHECK(twins == std::vector<std::int32_t>(t.ops.size(), -1));
  CHECK_FALSE(ets::FeatureSpec::has_backward_sequences(no_seq));
  // Forward ops with numbers but no numbered backward op: nothing to look up.
  ets::ExecutionTrace fwd_only = t;
  for (auto& op : fwd_only.ops)
    if (op.phase == ets::Phase::Backward) op.sequence = -1;
  CHECK_FALSE(ets::FeatureSpec::has_backward_sequences(fwd_only));
  ets::FeatureSpec::backward_twins(fwd_only, twins);
  CHECK(twins == std::vector<std::int32_t>(t.ops.size(), -1));
  ets::FeatureSpec::backward_twins(ets::ExecutionTrace{}, twins);
  CHECK(twins.empty());
  CHECK_FALSE(ets::FeatureSpec::has_backward_sequences(ets::ExecutionTrace{}));

  // The nearest number below wins over a farther one, and the same number over both.
  ets::ExecutionTrace chain;
  for (auto [ph, seq] : {std::pair{ets::Phase::Forward, 7}, {ets::Phase::Forward, 8}, {ets::Phase::Backward, 9},
                         {ets::Phase::Backward, 7}, {ets::Phase::Backward, 0}}) {
    OpRecord o = make_op("linear", ph);
    o.sequence = seq;
    chain.ops.push_back(o);
  }
  ets::FeatureSpec::backward_twins(chain, twins);
  CHECK(twins == std::vector<std::int32_t>{-1, -1, 1, 0, -1});
}

TEST_CASE("a backward op is encoded with its forward twin's description, its own type and phase") {
  const auto t = twin_trace();
  const auto on = ets::FeatureSpec::fit({t});
  REQUIRE(on.options().backward_twin);
  const std::size_t f = static_cast<std::size_t>(on.feature_count());
  const auto r = rows_of(on, t);
  const auto at_op = [&](std::size_t i, const std::string& name) { return r[i * f + static_cast<std::size_t>(col(on, name))]; };
  const std::size_t phase = static_cast<std::size_t>(on.layout().phase);
  for (std::size_t c = 0; c < f; ++c) {
    INFO("column " << on.feature_names()[c]);
    if (c >= phase && c < phase + 3) continue;
    CHECK(r[7 * f + c] == r[0 * f + c]);  // conv2d backward described as its forward
    CHECK(r[6 * f + c] == r[2 * f + c]);  // batch_norm backward as the batch_norm, not the add_ of its number
  }
  CHECK(at_op(7, "phase.backward") == 1.f);
  CHECK(at_op(7, "phase.forward") == 0.f);
  CHECK(at_op(7, "hyper.kernel_h") == at_op(0, "hyper.kernel_h"));
  CHECK(at_op(7, "cost.flops_known") == 1.f);  // the gradient-only record had no FLOPs
  CHECK(at_op(5, "in1.present") == 1.f);  // the linear backward got its forward's weight as a second input
  // no twin: described by itself, exactly as encode_op writes it
  for (std::size_t i : {std::size_t{8}, std::size_t{9}, std::size_t{10}}) {
    INFO("op " << i);
    const auto own = row(on, t.ops[i], t.meta);
    CHECK(std::memcmp(r.data() + i * f, own.data(), f * sizeof(float)) == 0);
  }
  CHECK(at_op(8, "cost.flops_known") == 0.f);

  // The statistics are those of what is encoded: conv2d's kernel_h is fitted over 3 (forward), 5 (the later forward)
  // and 3 (the backward's twin), so the twin's z is that of 3 among {3, 5, 3}.
  const MeanStd k = mean_std({3, 5, 3});
  CHECK(at_op(7, "hyper.kernel_h") == Approx((3 - k.mean) / k.sd).epsilon(1e-6));

  // The window encoder writes the same rows.
  const ets::WindowBatch b = ets::WindowEncoder(on, 4, 2).encode(t);
  for (std::size_t p = 0; p < b.positions(); ++p) {
    if (!b.mask[p]) continue;
    const std::size_t i = static_cast<std::size_t>(b.op_index[p]);
    INFO("position " << p << " op " << i);
    CHECK(std::memcmp(b.x.data() + p * f, r.data() + i * f, f * sizeof(float)) == 0);
  }
}

TEST_CASE("without backward_twin every op is described by itself, and the option survives serialisation") {
  const auto t = twin_trace();
  ets::FeatureOptions o;
  o.backward_twin = false;
  const auto off = ets::FeatureSpec::fit({t}, o);
  const auto on = ets::FeatureSpec::fit({t});
  CHECK_FALSE(off == on);
  const std::size_t f = static_cast<std::size_t>(off.feature_count());
  const auto r = rows_of(off, t);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    INFO("op " << i);
    const auto own = row(off, t.ops[i], t.meta);
    CHECK(std::memcmp(r.data() + i * f, own.data(), f * sizeof(float)) == 0);
  }
  CHECK(r[7 * f + static_cast<std::size_t>(col(off, "cost.flops_known"))] == 0.f);

  for (const ets::FeatureSpec* s : {&off, &on}) {
    const auto back = ets::FeatureSpec::deserialize(s->serialize());
    CHECK(back == *s);
    CHECK(back.options().backward_twin == s->options().backward_twin);
  }
  // A version-2 blob (the models before the option) reads as backward_twin false.
  auto v2 = off.serialize();
  v2.erase(v2.begin() + 44, v2.begin() + 48);
  v2[4] = 2;
  reseal(v2);
  const auto back = ets::FeatureSpec::deserialize(v2);
  CHECK_FALSE(back.options().backward_twin);
  CHECK(back == off);
  CHECK(back.serialize() == off.serialize());
}
