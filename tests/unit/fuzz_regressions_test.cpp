// ets-test-labels: unit
// Regression inputs for what fuzzing (fuzz/, tools/fuzz.sh) found in the readers: each runs the input that failed
// and checks the fixed behaviour. The undefined-behaviour cases are caught as such by the ASan+UBSan CI job.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ets/error.hpp"
#include "import/importers.hpp"

namespace {

std::vector<ets::ExecutionTrace> kineto(const std::string& json) {
  return ets::import::read_kineto_json(json, "regression.json", {});
}

}  // namespace

// Kernels without a correlation arg are matched to their launch through the ac2g flow ending on them, looked up
// by (ts ns, tid). The key was ts_ns * 31 + tid in int64: signed overflow (UB) for every real epoch timestamp.
TEST_CASE("fuzz regression: flow lookup with epoch-nanosecond timestamps (signed overflow)") {
  const std::string json = R"({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1689360788495700,"dur":300},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":1689360788495710,"dur":50},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1689360788495720,"dur":5,"args":{"correlation":77}},
{"ph":"X","cat":"kernel","name":"relu_kernel","pid":0,"tid":7,"ts":1689360788495798,"dur":20,"args":{"device":0,"stream":7}},
{"ph":"f","cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":1689360788495798,"id":77,"bp":"e"},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1689360788496000,"dur":300},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":1689360788496010,"dur":50},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1689360788496020,"dur":5,"args":{"correlation":78}},
{"ph":"X","cat":"kernel","name":"relu_kernel","pid":0,"tid":7,"ts":1689360788496098,"dur":20,"args":{"device":0,"stream":7}},
{"ph":"f","cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":1689360788496098,"id":78,"bp":"e"}
]})";
  const auto traces = kineto(json);
  REQUIRE(traces.size() == 2);
  for (const auto& t : traces) {
    REQUIRE(t.ops.size() == 1);
    CHECK(t.ops[0].kernels == 1);             // found through the flow
    CHECK(t.ops[0].time_us == Approx(20.0));  // the kernel's duration
  }
}

// Digit strings and doubles that do not fit an int64 (ids, pids, timestamps, step numbers) must not overflow
// or hit an out-of-range float->int conversion; such events are dropped or their ids fall back.
TEST_CASE("fuzz regression: over-long numbers in ids, timestamps and step names") {
  const std::string json = R"({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#99999999999999999999999","pid":1,"tid":1,"ts":100,"dur":300},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1e300,"tid":"thread 99999999999999999999999","ts":110,"dur":5},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":99999999999999999999999,"dur":5},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1e300,"dur":5},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":120,"dur":5,"args":{"External id":-1e300,"Sequence number":1e300}},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":130,"dur":5},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":400,"dur":300},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":410,"dur":5}
]})";
  std::vector<ets::ExecutionTrace> traces;
  try {
    traces = kineto(json);
  } catch (const ets::Error& e) {
    FAIL("unexpected ets::Error " << e.what());
  }
  REQUIRE(!traces.empty());
  for (const auto& t : traces)
    for (const auto& op : t.ops) {
      CHECK(std::isfinite(op.time_us));
      CHECK(std::isfinite(op.gap_us));
    }
}

// fill_from_args indexed addmm's third tensor (bias, x, w) whenever the name said addmm: a heap read past the
// inputs when the trace lists only two tensors. Such an addmm is now read like mm.
TEST_CASE("fuzz regression: aten::addmm with two tensor inputs (heap-buffer-overflow)") {
  const std::string json = R"({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":100,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":110,"dur":20,
 "args":{"Input Dims":[[4,8],[8,2]],"Input type":["float","float"]}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":200,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":210,"dur":20}
]})";
  const auto traces = kineto(json);
  REQUIRE(traces.size() == 2);
  REQUIRE(traces[0].ops.size() == 1);
  CHECK(traces[0].ops[0].name == "linear");
  CHECK(traces[0].ops[0].inputs.size() == 2);
}

// parse_ints (Concrete Inputs) looped forever on a lone '-': strtoll consumed nothing and the cursor stayed.
TEST_CASE("fuzz regression: a lone '-' in Concrete Inputs (hang)") {
  const std::string json = R"({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":100,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":110,"dur":20,
 "args":{"Input Dims":[[1,3,8,8],[4,3,3,3],[],[],[],[],[]],"Input type":["float","float","","ScalarList","ScalarList","ScalarList","Int"],
 "Concrete Inputs":["","","","[-]","[1, -]","-","1"]}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":200,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":210,"dur":20}
]})";
  const auto traces = kineto(json);
  REQUIRE(traces.size() == 2);
  REQUIRE(traces[0].ops.size() == 1);
  CHECK(traces[0].ops[0].name == "conv2d");
  CHECK(traces[0].ops[0].hyper.get(ets::Hyper::KernelH) == 3);  // from the weight's shape, untouched by the bad ints
}

// A run of events that the parser refuses before it can iterate it (a control byte inside a string, found at once)
// left the document without an iterator, and the message asked it for its position: a null pointer read (UB).
TEST_CASE("fuzz regression: a run the parser refuses at once is placed without asking its document") {
  const std::string json("{\"traceEvents\":[\n{\"pea\x95\",\"pi\\:\xdc" "ent\0ph\":7],\xa5\xcd\xa2\xa2\x82\xfc{8}]y\n", 54);
  try {
    kineto(json);
    FAIL("a trace with a control byte inside a string was read");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.kineto.1");
    CHECK(std::string(e.what()).find("(near byte 16)") != std::string::npos);  // the run's start: its first event
  }
}
