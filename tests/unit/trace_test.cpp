// The trace data model: sums, gap share, dtype/phase parsing, hyper-parameter slots, equality.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ets/trace.hpp"

TEST_CASE("sum and gap share of an iteration") {
  ets::ExecutionTrace t;
  CHECK(t.sum_us() == 0.0);
  CHECK(t.gap_share() == 0.0);
  CHECK_FALSE(t.has_measurement());
  for (double d : {10.0, 20.0, 30.0}) {
    ets::OpRecord op;
    op.time_us = d;
    op.gap_us = d / 10;
    t.ops.push_back(op);
  }
  CHECK(t.sum_us() == Approx(66.0));
  CHECK(t.gap_share() == Approx(6.0 / 66.0));
  // times that overflow their sum while the gaps stay finite: no share to tell (gaps / inf was 0)
  t.ops[0].time_us = t.ops[1].time_us = std::numeric_limits<double>::max();
  CHECK(std::isinf(t.sum_us()));
  CHECK(std::isnan(t.gap_share()));
}

TEST_CASE("dtype spellings from PyTorch traces") {
  CHECK(ets::parse_dtype("float") == ets::DType::Float32);
  CHECK(ets::parse_dtype("c10::Half") == ets::DType::Float16);
  CHECK(ets::parse_dtype("torch.bfloat16") == ets::DType::BFloat16);
  CHECK(ets::parse_dtype("long int") == ets::DType::Int64);
  CHECK(ets::parse_dtype("unsigned char") == ets::DType::UInt8);
  CHECK(ets::parse_dtype("something else") == ets::DType::Unknown);
  CHECK(ets::dtype_size(ets::DType::Float16) == 2);
  CHECK(std::string(ets::dtype_name(ets::DType::Float32)) == "float32");
}

TEST_CASE("phase names round-trip") {
  for (auto p : {ets::Phase::Forward, ets::Phase::Backward, ets::Phase::Update}) {
    ets::Phase q{};
    REQUIRE(ets::parse_phase(ets::phase_name(p), q));
    CHECK(q == p);
  }
  ets::Phase q{};
  CHECK_FALSE(ets::parse_phase("sideways", q));
}

TEST_CASE("hyper-parameter slots distinguish absent from zero") {
  ets::HyperParams h;
  CHECK_FALSE(h.has(ets::Hyper::PadH));
  h.set(ets::Hyper::PadH, 0);
  CHECK(h.has(ets::Hyper::PadH));
  CHECK(h.get(ets::Hyper::PadH, -1) == 0);
  CHECK(h.get(ets::Hyper::Groups, -1) == -1);
  CHECK(std::string(ets::hyper_name(ets::Hyper::Groups)) == "groups");
  // A slot number cast from an integer outside the table is ignored, not written past the array (UBSan checks it).
  ets::HyperParams before = h;
  for (int slot : {ets::kHyperCount, 31, 32, 200}) {
    h.set(static_cast<ets::Hyper>(slot), 5);
    CHECK_FALSE(h.has(static_cast<ets::Hyper>(slot)));
    CHECK(h.get(static_cast<ets::Hyper>(slot), -1) == -1);
  }
  CHECK(h == before);
  CHECK_FALSE(h != before);
}

TEST_CASE("tensor numel and equality treat unknown numbers as equal") {
  ets::TensorInfo t{{2, 3, 4}, ets::DType::Float32};
  CHECK(t.numel() == 24);
  CHECK(ets::TensorInfo{}.numel() == 1);
  CHECK(ets::TensorInfo{{2, -1, 4}, ets::DType::Float32}.numel() == 0);
  // Hostile dims saturate instead of overflowing a signed 64-bit product.
  const std::int64_t big = std::int64_t{1} << 32;
  CHECK(ets::TensorInfo{{big, big}, ets::DType::Float32}.numel() == std::numeric_limits<std::int64_t>::max());
  CHECK(ets::TensorInfo{{big, big, 0}, ets::DType::Float32}.numel() == 0);
  CHECK(t != ets::TensorInfo{{2, 3}, ets::DType::Float32});
  ets::OpRecord a, b;
  CHECK(std::isnan(a.flops));
  CHECK(a == b);
  b.gap_us = 1;
  CHECK_FALSE(a == b);
  CHECK(a != b);
}

TEST_CASE("a measurement bears on a model's hardware by environment id, else by device kind") {
  ets::ExecutionTrace cpu;
  cpu.ops.resize(3);
  CHECK_FALSE(cpu.ran_gpu_kernels());
  ets::ExecutionTrace gpu = cpu;
  gpu.ops[1].kernels = 2;
  CHECK(gpu.ran_gpu_kernels());

  // no environment named: the device kind against the id's "cpu-" / "gpu-" prefix
  CHECK(cpu.measured_on("cpu-xeon-1t"));
  CHECK_FALSE(gpu.measured_on("cpu-xeon-1t"));
  CHECK(gpu.measured_on("gpu-v100"));
  CHECK_FALSE(cpu.measured_on("gpu-v100"));
  // an id that names no device kind, or none at all: compared as a sanity check
  CHECK(cpu.measured_on("lab-box"));
  CHECK(gpu.measured_on("lab-box"));
  CHECK(gpu.measured_on(""));
  CHECK(gpu.measured_on("cpu"));        // "cpu" alone is no prefix "cpu-": compared
  CHECK(gpu.measured_on("cpux-1"));

  // an environment named: only that id, whatever the device kind
  gpu.meta.environment = "gpu-v100";
  CHECK(gpu.measured_on("gpu-v100"));
  CHECK_FALSE(gpu.measured_on("gpu-a100"));
  CHECK_FALSE(gpu.measured_on("lab-box"));
  CHECK(gpu.measured_on(""));
  cpu.meta.environment = "gpu-v100";  // the id wins over the device kind: an importer may see no kernels
  CHECK(cpu.measured_on("gpu-v100"));
  CHECK_FALSE(cpu.measured_on("cpu-xeon-1t"));
}
