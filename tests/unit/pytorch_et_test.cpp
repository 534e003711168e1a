// PyTorch Execution Trace reader: schema 1.0.1 and chakra 1.1.0 files from ../shared/data (plain .gz and tar
// members), checked against the architectures they record (ResNet-18 / ResNet-50 conv counts, stem conv shape).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <zlib.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trace.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "alloc_hooks.hpp"  // measures the heap a read holds at once (operator new replaced; not under ASan / TSan)
#include "test_support.hpp"

namespace {

std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  std::vector<char> buf(1 << 16);
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) out.append(buf.data(), static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

// One member of a (gunzipped) ustar archive.
std::string tar_member(const std::string& tar, const std::string& name) {
  std::size_t pos = 0;
  while (pos + 512 <= tar.size() && tar[pos] != '\0') {
    const std::string member(tar.c_str() + pos, strnlen(tar.c_str() + pos, 100));
    const std::size_t size = std::stoull(std::string(tar, pos + 124, 12), nullptr, 8);
    if (member == name) return tar.substr(pos + 512, size);
    pos += 512 + (size + 511) / 512 * 512;
  }
  FAIL("no member " << name);
  return {};
}

std::vector<ets::ExecutionTrace> read_et(const std::string& bytes, const std::string& name) {
  return ets::import::read_pytorch_et(bytes, name, ets::import::Options{});
}

std::string error_id(const std::string& bytes) {
  try {
    read_et(bytes, "x.json");
  } catch (const ets::Error& e) {
    return e.id();
  }
  return "no error";
}

int count(const ets::ExecutionTrace& t, const std::string& raw, ets::Phase phase) {
  int n = 0;
  for (const auto& op : t.ops) n += op.raw_name == raw && op.phase == phase;
  return n;
}

int count_named(const ets::ExecutionTrace& t, const std::string& name, ets::Phase phase) {
  int n = 0;
  for (const auto& op : t.ops) n += op.name == name && op.phase == phase;
  return n;
}

void check_untimed(const ets::ExecutionTrace& t) {
  CHECK(t.meta.source_format == "pytorch-et");
  CHECK(t.meta.extra.at("timings") == "absent");
  CHECK_FALSE(t.has_measurement());
  CHECK(t.sum_us() == 0.0);
}

}  // namespace

TEST_CASE("ET schema 1.0.1: HTA simple-add benchmark", "[shared]") {
  const std::string rel = "kineto-gpu/hta/execution_trace__benchmark_simple_add_et.json.gz";
  ETS_REQUIRE_SHARED(rel);
  const auto traces = read_et(gunzip_file(ets_test::shared_data(rel)), rel);
  REQUIRE(traces.size() == 1);
  const auto& t = traces[0];
  check_untimed(t);
  CHECK(t.meta.extra.at("schema") == "1.0.1");
  CHECK(t.meta.device == "gpu");  // its tensors live on "cuda:0"
  REQUIRE(!t.ops.empty());
  // torch.rand(256, 256) on cuda, twice, then the benchmarked add: nested aten::empty / uniform_ are not ops.
  CHECK(t.ops[0].raw_name == "aten::rand");
  CHECK(t.ops[1].raw_name == "aten::rand");
  CHECK(count(t, "aten::empty", ets::Phase::Forward) == 0);
  CHECK(count(t, "aten::uniform_", ets::Phase::Forward) == 0);
  bool add = false;
  for (const auto& op : t.ops) {
    if (op.raw_name != "aten::add") continue;
    add = true;
    REQUIRE(op.inputs.size() >= 2);
    CHECK(op.inputs[0].dims == std::vector<std::int64_t>{256, 256});
    CHECK(op.inputs[0].dtype == ets::DType::Float32);
  }
  CHECK(add);
}

TEST_CASE("ET schema 1.0.1: ResNet-18 training step from PARAM", "[shared]") {
  const std::string rel = "kineto-gpu/param/resnet_et_2023-07-12.json.gz";
  ETS_REQUIRE_SHARED(rel);
  const auto traces = read_et(gunzip_file(ets_test::shared_data(rel)), rel);
  REQUIRE(traces.size() == 1);
  const auto& t = traces[0];
  check_untimed(t);
  CHECK(t.meta.device == "gpu");
  // ResNet-18: stem conv + 8 basic blocks x 2 convs + 3 downsample 1x1 convs = 20 convolutions, each with a backward.
  CHECK(count(t, "aten::conv2d", ets::Phase::Forward) == 20);
  // backward ops are the autograd nodes' evaluate_function scopes, as in a Kineto trace
  CHECK(count(t, "autograd::engine::evaluate_function: ConvolutionBackward0", ets::Phase::Backward) == 20);
  CHECK(count(t, "aten::convolution_backward", ets::Phase::Backward) == 0);
  CHECK(count_named(t, "conv2d", ets::Phase::Backward) == 20);
  // The stem: Conv2d(3, 64, kernel_size=7, stride=2, padding=3).
  const ets::OpRecord* stem = nullptr;
  for (const auto& op : t.ops)
    if (op.raw_name == "aten::conv2d") {
      stem = &op;
      break;
    }
  REQUIRE(stem != nullptr);
  CHECK(stem->name == "conv2d");
  REQUIRE(stem->inputs.size() >= 2);
  CHECK(stem->inputs[1].dims == std::vector<std::int64_t>{64, 3, 7, 7});
  CHECK(stem->hyper.get(ets::Hyper::KernelH) == 7);
  CHECK(stem->hyper.get(ets::Hyper::StrideH) == 2);
  CHECK(stem->hyper.get(ets::Hyper::PadW) == 3);
  CHECK(stem->hyper.get(ets::Hyper::OutChannels) == 64);
  CHECK(stem->sequence >= 0);
  // SGD step ops are update
  int update = 0;
  for (const auto& op : t.ops) update += op.phase == ets::Phase::Update;
  CHECK(update > 0);
}

TEST_CASE("ET chakra 1.1.0: ResNet-50, one iteration per ProfilerStep", "[shared]") {
  const std::string rel = "kineto-gpu/param/resnet_et_2024-06-30_chakra004.json.gz";
  ETS_REQUIRE_SHARED(rel);
  const auto traces = read_et(gunzip_file(ets_test::shared_data(rel)), rel);
  REQUIRE(traces.size() == 3);  // ProfilerStep#6, #7, #8
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto& t = traces[i];
    check_untimed(t);
    CHECK(t.iteration == static_cast<std::int64_t>(6 + i));
    CHECK(t.meta.extra.at("schema") == "1.1.0-chakra.0.0.4");
    CHECK(t.meta.device == "gpu");  // chakra's "inputs.values" end with the device too
    CHECK(count(t, "aten::conv2d", ets::Phase::Forward) == 53);  // ResNet-50 has 53 convolutions
    CHECK(count(t, "autograd::engine::evaluate_function: ConvolutionBackward0", ets::Phase::Backward) == 53);
    CHECK(count_named(t, "conv2d", ets::Phase::Backward) == 53);
  }
}

TEST_CASE("ET tar members: DLRM rank 0 and HuggingFace GPT-2", "[shared]") {
  {
    const std::string rel = "kineto-gpu/param/dlrm_pytorch_et.tar.gz";
    ETS_REQUIRE_SHARED(rel);
    const std::string tar = gunzip_file(ets_test::shared_data(rel));
    const auto traces = read_et(tar_member(tar, "dlrm_pytorch_et/dlrm_eg_0.json"), "dlrm_eg_0.json");
    REQUIRE(traces.size() == 1);
    check_untimed(traces[0]);
    CHECK(traces[0].meta.device == "gpu");  // 8 V100s
    CHECK(count(traces[0], "aten::linear", ets::Phase::Forward) > 0);
  }
  {
    const std::string rel = "kineto-gpu/param/hf_GPT2_et.json.tar.gz";
    ETS_REQUIRE_SHARED(rel);
    const std::string tar = gunzip_file(ets_test::shared_data(rel));
    const auto traces = read_et(tar_member(tar, "hf_GPT2_et.json"), "hf_GPT2_et.json");
    REQUIRE(!traces.empty());
    int phases[3] = {0, 0, 0};
    for (const auto& t : traces) {
      check_untimed(t);
      CHECK(t.meta.device == "gpu");
      for (const auto& op : t.ops) ++phases[static_cast<int>(op.phase)];
    }
    CHECK(phases[0] > 0);
    CHECK(phases[1] > 0);
    CHECK(phases[2] > 0);  // Adam
  }
}

TEST_CASE("ET: AccumulateGrad is one op as in Kineto traces; generic convolutions are named by the weight's rank") {
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "parent": 1, "seq_id": -1,
     "inputs": [], "input_shapes": [], "input_types": []},
    {"name": "aten::convolution", "id": 3, "parent": 2, "seq_id": 1, "inputs": [[], [], []],
     "input_shapes": [[2, 4, 100], [8, 4, 5], [8]], "input_types": ["Tensor(float)", "Tensor(float)", "Tensor(float)"]},
    {"name": "aten::convolution", "id": 4, "parent": 2, "seq_id": 2, "inputs": [[], [], []],
     "input_shapes": [[2, 4, 9, 9, 9], [6, 4, 3, 3, 3], [6]], "input_types": ["Tensor(float)", "Tensor(float)", "Tensor(float)"]},
    {"name": "torch::autograd::AccumulateGrad", "id": 5, "parent": 2, "seq_id": -1, "inputs": [[]],
     "input_shapes": [[8]], "input_types": ["Tensor(float)"]},
    {"name": "aten::add_", "id": 6, "parent": 5, "seq_id": -1, "inputs": [[], []],
     "input_shapes": [[8], [8]], "input_types": ["Tensor(float)", "Tensor(float)"]},
    {"name": "torch.distributed.ddp.reducer::copy_bucket_to_grad", "id": 7, "parent": 2, "seq_id": -1, "inputs": [],
     "input_shapes": [], "input_types": []},
    {"name": "aten::copy_", "id": 8, "parent": 7, "seq_id": -1, "inputs": [[], []],
     "input_shapes": [[8], [8]], "input_types": ["Tensor(float)", "Tensor(float)"]}]})J";
  const auto t = read_et(et, "conv_and_grad.json");
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].ops.size() == 4);
  CHECK(t[0].ops[0].name == "conv1d");
  CHECK(t[0].ops[1].name == "conv3d");
  CHECK(t[0].ops[2].name == "accumulate_grad");  // the autograd node, not its aten::add_ child
  CHECK(t[0].ops[3].raw_name == "aten::copy_");   // a record_function label is not an op; its child is
}

TEST_CASE("ET: a GRU's input size, hidden size and layers come from its arguments, as in Kineto traces") {
  // gru.input(input, hx, params[], has_biases, num_layers, dropout, train, bidirectional, batch_first)
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "parent": 1, "seq_id": -1,
     "inputs": [], "input_shapes": [], "input_types": []},
    {"name": "aten::gru", "id": 3, "parent": 2, "seq_id": 1,
     "inputs": [[10, 11, 0, 1, 4], [20, 21, 0, 1, 4], [[30, 31, 0, 1, 4], [32, 33, 0, 1, 4]], true, 2, 0.0, true, false, true],
     "input_shapes": [[4, 10, 16], [2, 4, 32], [[96, 16], [96, 32]], [], [], [], [], [], []],
     "input_types": ["Tensor(float)", "Tensor(float)", "GenericList[Tensor(float),Tensor(float)]", "Bool", "Int",
                     "Double", "Bool", "Bool", "Bool"]}]})J";
  const auto t = read_et(et, "gru.json");
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].ops.size() == 1);
  const auto& h = t[0].ops[0].hyper;
  CHECK(t[0].ops[0].name == "gru");
  CHECK(h.get(ets::Hyper::InChannels) == 16);
  CHECK(h.get(ets::Hyper::Hidden) == 32);
  CHECK(h.get(ets::Hyper::Layers) == 2);
}

TEST_CASE("ET: an LSTM's hx list gives its hidden size and an input, as in an exported Kineto trace; other lists no input") {
  // As torch 1.13's ExecutionGraphObserver writes nn.LSTM(16, 20, num_layers=2) on a [10, 4, 16] input:
  // lstm.input(input, hx[], params[], has_biases, num_layers, dropout, train, bidirectional, batch_first)
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "parent": 1, "seq_id": -1,
     "inputs": [], "input_shapes": [], "input_types": []},
    {"name": "aten::lstm", "id": 3, "parent": 2, "seq_id": 1,
     "inputs": [[10, 11, 0, 640, 4, "cpu"], [[20, 21, 0, 160, 4, "cpu"], [22, 23, 0, 160, 4, "cpu"]],
                [[30, 31, 0, 1280, 4, "cpu"], [32, 33, 0, 1600, 4, "cpu"]], true, 2, 0.0, true, false, false],
     "input_shapes": [[10, 4, 16], [[2, 4, 20], [2, 4, 20]], [[80, 16], [80, 20]], [], [], [], [], [], []],
     "input_types": ["Tensor(float)", "GenericList[Tensor(float),Tensor(float)]",
                     "GenericList[Tensor(float),Tensor(float)]", "Bool", "Int", "Double", "Bool", "Bool", "Bool"]},
    {"name": "aten::cat", "id": 4, "parent": 2, "seq_id": 2,
     "inputs": [[[40, 41, 0, 80, 4, "cpu"], [42, 43, 0, 80, 4, "cpu"]], 0],
     "input_shapes": [[[4, 20], [4, 20]], []], "input_types": ["GenericList[Tensor(float),Tensor(float)]", "Int"]}]})J";
  const auto t = read_et(et, "lstm.json");
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].ops.size() == 2);
  const auto& lstm = t[0].ops[0];
  CHECK(lstm.name == "lstm");
  CHECK(lstm.hyper.get(ets::Hyper::InChannels) == 16);
  CHECK(lstm.hyper.get(ets::Hyper::Hidden) == 20);
  CHECK(lstm.hyper.get(ets::Hyper::Layers) == 2);
  REQUIRE(lstm.inputs.size() == 2);  // the input and hx's first tensor; the weights' list stays without a shape
  CHECK(lstm.inputs[1].dims == std::vector<std::int64_t>{2, 4, 20});
  CHECK(t[0].ops[1].inputs.empty());  // cat's list as torch 1.13's profiler records it: no shape, no input

  // the same LSTM in a Kineto trace whose hx shapes were recorded (tools/trace_export.py) reads alike
  const std::string kineto = R"J({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 7, "tid": 7, "ts": 1000, "dur": 200, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::lstm", "pid": 7, "tid": 7, "ts": 1010, "dur": 50, "args": {"External id": 2,
     "Input Dims": [[10, 4, 16], [[2, 4, 20], [2, 4, 20]], [], [], [], [], [], [], []],
     "Input type": ["float", "TensorList", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"],
     "Concrete Inputs": ["", "", "", "True", "2", "0.0", "True", "False", "False"]}}]})J";
  const auto k = ets::import::read_kineto_json(kineto, "lstm.kineto.json", ets::import::Options{});
  REQUIRE(k.size() == 1);
  REQUIRE(k[0].ops.size() == 1);
  CHECK(k[0].ops[0].hyper == lstm.hyper);
  REQUIRE(k[0].ops[0].inputs.size() == lstm.inputs.size());
  for (std::size_t i = 0; i < lstm.inputs.size(); ++i) CHECK(k[0].ops[0].inputs[i] == lstm.inputs[i]);
}

TEST_CASE("ET: the device is where tensor arguments live; a string argument is not a device") {
  const auto et = [](const std::string& values) {
    return R"J({"schema": "1.0.1", "pid": 1, "nodes": [
      {"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "parent": 1, "seq_id": -1,
       "inputs": [], "input_shapes": [], "input_types": []},
      {"name": "aten::_to_copy", "id": 3, "parent": 2, "seq_id": -1, "inputs": )J" + values + R"J(,
       "input_shapes": [[4, 8], [], [], [], []], "input_types": ["Tensor(float)", "Device", "Int", "Bool", "Bool"]}]})J";
  };
  const auto device = [&](const std::string& values) { return read_et(et(values), "to_copy.json").at(0).meta.device; };
  CHECK(device(R"([[10, 11, 0, 32, 4, "cuda:0"], "cpu", 6, false, false])") == "gpu");
  CHECK(device(R"([[10, 11, 0, 32, 4, "cpu"], "cuda:0", 6, false, false])") == "cpu");  // the target is no tensor's
  CHECK(device(R"([[[10, 11, 0, 32, 4, "cpu"], [12, 13, 0, 32, 4, "cuda:1"]], "cpu", 6, false, false])") == "gpu");
  CHECK(device(R"([[10, 11, 0, 32, 4], "cuda", 6, false, false])").empty());  // a schema without devices: unknown
  CHECK(device(R"([[10, 11, 0, 32, 4, "xpu:0"], "cpu", 6, false, false])") == "gpu");  // any accelerator
  CHECK(device(R"([[10, 11, 0, 32, 4, "meta"], "cpu", 6, false, false])").empty());   // no device at all
  CHECK(device(R"([[10, 11, 0, 32, 4, "cudafy"], "cpu", 6, false, false])").empty()); // a word, not a device
}

TEST_CASE("ET of a CPU run: only the training thread's ops, as a Kineto CPU trace keeps them") {
  // The training thread (node 2) steps and runs its backward pass itself, as torch does on a CPU; another thread
  // (node 20) runs torch ops meanwhile, more of them. Its ops were taken into the iteration by their node ids.
  const auto et = [](bool with_step) {
    const std::string cpu =
        R"J("inputs": [[10, 11, 0, 64, 4, "cpu"]], "input_shapes": [[8, 8]], "input_types": ["Tensor(float)"])J";
    const std::string parent = with_step ? "3" : "2";
    return R"J({"schema": "1.0.1", "pid": 1, "nodes": [
      {"name": "[pytorch|profiler|execution_graph|thread]", "id": 2, "parent": 1, "seq_id": -1},)J" +
           std::string(with_step ? R"J({"name": "ProfilerStep#1", "id": 3, "parent": 2, "seq_id": -1},)J" : "") +
           R"J({"name": "aten::relu", "id": 4, "parent": )J" + parent + R"J(, "seq_id": 1, )J" + cpu + R"J(},
      {"name": "[pytorch|profiler|execution_graph|thread]", "id": 20, "parent": 1, "seq_id": -1},
      {"name": "aten::tanh", "id": 21, "parent": 20, "seq_id": -1, )J" + cpu + R"J(},
      {"name": "aten::mm", "id": 22, "parent": 20, "seq_id": -1, )J" + cpu + R"J(},
      {"name": "aten::sigmoid", "id": 23, "parent": 20, "seq_id": -1, )J" + cpu + R"J(},
      {"name": "autograd::engine::evaluate_function: ReluBackward0", "id": 30, "parent": )J" + parent +
           R"J(, "seq_id": -1},
      {"name": "aten::threshold_backward", "id": 31, "parent": 30, "seq_id": 1, )J" + cpu + R"J(}]})J";
  };
  for (const bool with_step : {true, false}) {
    INFO((with_step ? "with a ProfilerStep# node" : "without one: the thread that ran the backward pass"));
    const std::vector<ets::ExecutionTrace> t = read_et(et(with_step), "threads.json");
    REQUIRE(t.size() == 1);
    CHECK(t[0].meta.device == "cpu");
    REQUIRE(t[0].ops.size() == 2);
    CHECK(t[0].ops[0].raw_name == "aten::relu");
    CHECK(t[0].ops[1].phase == ets::Phase::Backward);
  }
}

TEST_CASE("ET of a GPU run: ops without device work are left out, as a Kineto GPU trace leaves them out") {
  // Each op: name, id, parent; tensors on `where`. Children say whether an op that may copy (to, reshape) did.
  const auto et = [](const std::string& where) {
    std::string nodes = R"J({"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "parent": 1, "seq_id": -1,
                              "inputs": [], "input_shapes": [], "input_types": []})J";
    const std::vector<std::array<std::string, 3>> ops = {
        {"aten::view", "3", "2"},                                      // a view: left out on a GPU
        {"aten::reshape", "4", "2"}, {"aten::clone", "5", "4"},        // a reshape that copies: kept
        {"aten::to", "6", "2"},                                        // to() of a tensor already there: left out
        {"aten::to", "7", "2"}, {"aten::_to_copy", "8", "7"},          // a copy to the device: kept
        {"autograd::engine::evaluate_function: AddBackward0", "9", "2"}, {"AddBackward0", "10", "9"},  // passes grads on
        {"autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "11", "2"},
        {"torch::autograd::AccumulateGrad", "12", "11"}, {"aten::add_", "13", "12"},  // accumulates: kept
        {"autograd::engine::evaluate_function: MyFunctionBackward", "14", "2"},
        {"fbgemm::jagged_to_padded_dense", "15", "14"},                 // another namespace's op inside: kept
        {"mylib::fused_op", "16", "2"},                                // a custom op, no children: kept
        {"aten::relu", "17", "2"},
        {"autograd::engine::evaluate_function: MulBackward0", "18", "2"},  // recorded without its work: kept
        {"c10d::allreduce_", "19", "2"}, {"record_param_comms", "20", "19"},  // NCCL only: no op time, left out
        {"c10d::allreduce_", "21", "2"}, {"aten::copy_", "22", "21"},        // a copy into the bucket: kept
        {"aten::dropout", "23", "2"},  // in eval mode or with p = 0: returns its input, left out
        {"aten::dropout", "24", "2"}, {"aten::native_dropout", "25", "24"},  // training: kept
        {"aten::feature_dropout", "26", "2"}, {"aten::bernoulli_", "27", "26"}};  // through bernoulli_: kept
    for (const auto& [name, id, parent] : ops)
      nodes += fmt::format(R"J(, {{"name": "{}", "id": {}, "parent": {}, "seq_id": -1, "inputs": [[1, 1, 0, 8, 4, "{}"]],
                                  "input_shapes": [[8]], "input_types": ["Tensor(float)"]}})J", name, id, parent, where);
    return R"J({"schema": "1.0.1", "pid": 1, "nodes": [)J" + nodes + "]}";
  };
  const auto names = [](const ets::ExecutionTrace& t) {
    std::vector<std::string> out;
    for (const auto& op : t.ops) out.push_back(op.raw_name);
    return out;
  };
  const auto gpu = read_et(et("cuda:0"), "gpu.json");
  REQUIRE(gpu.size() == 1);
  CHECK(gpu[0].meta.device == "gpu");
  CHECK(names(gpu[0]) == std::vector<std::string>{"aten::reshape", "aten::to",
                                                  "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                                                  "autograd::engine::evaluate_function: MyFunctionBackward",
                                                  "mylib::fused_op", "aten::relu",
                                                  "autograd::engine::evaluate_function: MulBackward0",
                                                  "c10d::allreduce_", "aten::dropout", "aten::feature_dropout"});
  const auto cpu = read_et(et("cpu"), "cpu.json");  // a CPU run times every op on the training thread: all stay
  REQUIRE(cpu.size() == 1);
  CHECK(cpu[0].ops.size() == 15);
  // a GPU run of views only has no op left: the error says why
  const std::string views = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "aten::view", "id": 3, "parent": 1, "seq_id": -1, "inputs": [[1, 1, 0, 8, 4, "cuda:0"], [8]],
     "input_shapes": [[8], []], "input_types": ["Tensor(float)", "GenericList[Int]"]}]})J";
  CHECK(error_id(views) == "ets.et.5");
  CHECK_THROWS_WITH(read_et(views, "views.json"), Catch::Contains("device work"));
}

TEST_CASE("ET and Kineto GPU traces of one run give the same ops and phases (PARAM ResNet-18 and MLP pairs)",
          "[shared]") {
  // The Kineto files have no ProfilerStep#: their iterations run from one Optimizer.zero_grad# to the next, so
  // each is the ET's step turned round (its first ops close the Kineto iteration before). ResNet-18: 81 of the ET's
  // 240 ops did no device work (62 AccumulateGrad nodes that take the gradient as it is, 8 AddBackward0 that pass
  // it on, the backward nodes of a transpose and a reshape, a flatten, two to() calls that found their tensor in
  // place, and twice lift_fresh / detach_ / set_ on CPU tensors at the step's end); the MLP: 21 of 196.
  const struct {
    const char* et;
    const char* kineto;
    std::size_t ops;
  } pairs[] = {{"kineto-gpu/param/resnet_et_2023-07-12.json.gz", "kineto-gpu/param/resnet_kineto.json.gz", 159},
               {"kineto-gpu/param/linear_et.json.gz", "kineto-gpu/param/linear_kineto.json.gz", 175}};
  for (const auto& pair : pairs) {
    INFO(pair.et);
    ETS_REQUIRE_SHARED(pair.et);
    ETS_REQUIRE_SHARED(pair.kineto);
    const auto et = read_et(gunzip_file(ets_test::shared_data(pair.et)), pair.et);
    const auto kineto = ets::import::read_kineto_json(gunzip_file(ets_test::shared_data(pair.kineto)), pair.kineto,
                                                      ets::import::Options{});
    REQUIRE(et.size() == 1);
    REQUIRE(kineto.size() >= 3);
    const auto& a = et[0].ops;
    REQUIRE(a.size() == pair.ops);
    const auto same_at = [&](const std::vector<ets::OpRecord>& b, std::size_t turn) {
      std::size_t same = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        const auto& k = b[(i + a.size() - turn) % a.size()];
        same += a[i].name == k.name && a[i].phase == k.phase;
      }
      return same;
    };
    std::size_t turn = 0;  // found on the first whole Kineto iteration, then held for every other
    while (turn < a.size() && same_at(kineto[1].ops, turn) != a.size()) ++turn;
    REQUIRE(turn < a.size());
    for (std::size_t it = 1; it + 1 < kineto.size(); ++it) {
      INFO("Kineto iteration " << it);
      REQUIRE(kineto[it].ops.size() == a.size());
      CHECK(same_at(kineto[it].ops, turn) == a.size());
    }
  }
}

TEST_CASE("ET and Kineto GPU traces of one DLRM run give the same ops and phases, rank by rank (PARAM, 8 V100s)",
          "[shared]") {
  // 260 ops in rank 0's ET; 109 did no device work: CPU-side input preparation (fill_, item(), pin_memory), a
  // scalar's item() in the update, record_stream, resolve_conj / resolve_neg / numpy_T views, and the all-to-all
  // collectives, whose NCCL kernels a Kineto GPU trace never counts as op time.
  const std::string et_rel = "kineto-gpu/param/dlrm_pytorch_et.tar.gz";
  const std::string kineto_rel = "kineto-gpu/param/dlrm_kineto.tar.gz";
  ETS_REQUIRE_SHARED(et_rel);
  ETS_REQUIRE_SHARED(kineto_rel);
  const std::string ets_tar = gunzip_file(ets_test::shared_data(et_rel));
  const std::string kineto_tar = gunzip_file(ets_test::shared_data(kineto_rel));
  const std::pair<int, const char*> ranks[] = {{0, "1694128201545"}, {3, "1694128201557"}, {7, "1694128201553"}};
  for (const auto& [rank, stamp] : ranks) {
    INFO("rank " << rank);
    const auto et = read_et(tar_member(ets_tar, fmt::format("dlrm_pytorch_et/dlrm_eg_{}.json", rank)), "dlrm_eg.json");
    ets::import::Options keep;
    keep.keep_incomplete = true;  // step 12 alone: no successor and no end marker of its own
    const auto kineto = ets::import::read_kineto_json(
        tar_member(kineto_tar, fmt::format("dlrm_kineto/worker{}_step_12.{}.pt.trace.json", rank, stamp)),
        "dlrm_kineto.json", keep);
    REQUIRE(et.size() == 1);
    REQUIRE(kineto.size() == 1);
    const auto& a = et[0].ops;
    const auto& b = kineto[0].ops;
    CHECK(a.size() == 151);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("op " << i << ": " << a[i].raw_name << " / " << b[i].raw_name);
      CHECK(a[i].name == b[i].name);
      CHECK(a[i].phase == b[i].phase);
    }
  }
}

TEST_CASE("malformed Execution Traces raise documented ids") {
  const std::string good = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "parent": 1, "seq_id": -1,
     "inputs": [], "input_shapes": [], "input_types": []},
    {"name": "aten::relu", "id": 3, "parent": 2, "seq_id": 7,
     "inputs": [[1,2,0,6,4,"cpu"]], "input_shapes": [[2,3]], "input_types": ["Tensor(float)"]}]})J";
  const auto t = read_et(good, "tiny.json");
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].ops.size() == 1);
  CHECK(t[0].ops[0].raw_name == "aten::relu");
  CHECK(t[0].ops[0].sequence == 7);
  REQUIRE(t[0].ops[0].inputs.size() == 1);
  CHECK(t[0].ops[0].inputs[0].dims == std::vector<std::int64_t>{2, 3});

  CHECK(error_id("[1, 2]") == "ets.et.2");
  CHECK(error_id(R"({"traceEvents": []})") == "ets.et.2");
  CHECK(error_id(R"({"schema": "2.0", "nodes": []})") == "ets.et.3");
  CHECK(error_id(R"({"schema": "1.5.0", "nodes": []})") == "ets.et.3");   // only the schemas read: 1.0.x ...
  CHECK(error_id(R"({"schema": "1.1.0", "nodes": []})") == "ets.et.3");   // ... and 1.1.x-chakra
  CHECK(error_id(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": []})") != "ets.et.3");
  CHECK(error_id(R"({"schema": "1.0.1", "nodes": [{"name": "aten::relu"}]})") == "ets.et.4");
  CHECK(error_id(R"({"schema": "1.0.1", "nodes": []})") == "ets.et.5");
  CHECK(error_id(R"({"schema": "1.0.1", "nodes": [{"name": 5, "id": 1}]})") == "ets.et.1");
  // a schema string each iteration would copy, longer than a metadata field may hold
  CHECK(error_id(R"({"schema": "1.0.)" + std::string(5000, '1') + R"(", "nodes": []})") == "ets.import.6");
  // ... and an optimizer name (Optimizer.step#<class>.step), as the Kineto reader refuses it
  CHECK(error_id(R"({"schema": "1.0.1", "nodes": [{"name": "Optimizer.step#)" + std::string(5000, 'X') +
                 R"J(.step", "id": 2, "parent": 1}, {"name": "aten::add_", "id": 3, "parent": 2}]})J") == "ets.import.6");
  // a parent cycle must not hang: it is cut where the walk closes it, and each node counts once
  const auto cycle = read_et(R"({"schema": "1.0.1", "nodes": [{"name": "aten::a", "id": 1, "parent": 2},
                                                              {"name": "aten::b", "id": 2, "parent": 1}]})", "cycle.json");
  REQUIRE(cycle.size() == 1);
  CHECK(cycle[0].ops.size() == 1);
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    try {
      read_et(good.substr(0, cut), "cut.json");
    } catch (const ets::Error&) {
    }
  }
}

TEST_CASE("ET: two ProfilerStep nodes of one number stay two iterations, with warning ets.et.6") {
  // A step counter restarted within one trace: ProfilerStep#3 twice, one op in each, plus a backward op of the
  // second step on the autograd thread (outside the step's subtree, placed by its id).
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 1, "parent": 0, "seq_id": -1},
    {"name": "ProfilerStep#3", "id": 2, "parent": 1, "seq_id": -1},
    {"name": "aten::relu", "id": 3, "parent": 2, "seq_id": 1},
    {"name": "ProfilerStep#3", "id": 4, "parent": 1, "seq_id": -1},
    {"name": "aten::sigmoid", "id": 5, "parent": 4, "seq_id": 2},
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 6, "parent": 0, "seq_id": -1},
    {"name": "autograd::engine::evaluate_function: SigmoidBackward0", "id": 7, "parent": 6, "seq_id": -1},
    {"name": "aten::sigmoid_backward", "id": 8, "parent": 7, "seq_id": 2}]})J";
  ets_test::CapturedWarnings log;
  const std::vector<ets::ExecutionTrace> t = read_et(et, "dup.json");
  const std::vector<std::string> warnings = log.lines;
  REQUIRE(t.size() == 2);
  CHECK(t[0].iteration == 3);
  CHECK(t[1].iteration == 3);
  REQUIRE(t[0].ops.size() == 1);
  CHECK(t[0].ops[0].raw_name == "aten::relu");
  REQUIRE(t[1].ops.size() == 2);
  CHECK(t[1].ops[0].raw_name == "aten::sigmoid");
  CHECK(t[1].ops[1].raw_name == "autograd::engine::evaluate_function: SigmoidBackward0");
  CHECK(t[1].ops[1].name == "sigmoid");
  CHECK(t[1].ops[1].phase == ets::Phase::Backward);
  CHECK(t[1].ops[1].sequence == 2);  // its aten::sigmoid_backward's, as the Kineto reader takes a descendant's
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("[ets.et.6]") != std::string::npos);
}

TEST_CASE("ET: a ProfilerStep node with no op beneath it is named by warning ets.import.11, not dropped unseen") {
  // Steps 1 and 3 hold an op each; step 2 only a view, which is no op; step 4 nothing (the profiler stopped in it)
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 1, "parent": 0, "seq_id": -1},
    {"name": "ProfilerStep#1", "id": 2, "parent": 1, "seq_id": -1},
    {"name": "aten::relu", "id": 3, "parent": 2, "seq_id": 1},
    {"name": "ProfilerStep#2", "id": 4, "parent": 1, "seq_id": -1},
    {"name": "ProfilerStep#3", "id": 5, "parent": 1, "seq_id": -1},
    {"name": "aten::sigmoid", "id": 6, "parent": 5, "seq_id": 2},
    {"name": "ProfilerStep#4", "id": 7, "parent": 1, "seq_id": -1}]})J";
  ets_test::CapturedWarnings log;
  const std::vector<ets::ExecutionTrace> t = read_et(et, "gap.json");
  REQUIRE(t.size() == 2);
  CHECK(t[0].iteration == 1);
  CHECK(t[1].iteration == 3);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].rfind("[ets.import.11]", 0) == 0);
  CHECK(log.lines[0].find("2 steps hold no operator as a descendant and are not returned") != std::string::npos);
  CHECK(log.lines[0].find("steps 2, 4") != std::string::npos);
}

TEST_CASE("ET: deep nesting is read without recursion, and each node's chain of parents once") {
  // An argument nested 100,000 levels deep (200 KB): the recursive argument reader overflowed the stack (SIGSEGV,
  // through the C API as well). The op is kept; its argument is not one ETS reads.
  const int depth = 100000;
  const std::string deep_args = R"({"schema": "1.0.1", "nodes": [{"name": "aten::relu", "id": 3, "parent": 0,)"
                                R"( "inputs": [)" + std::string(depth, '[') + std::string(depth, ']') +
                                R"J(], "input_shapes": [[2, 3]], "input_types": ["Tensor(float)"]}]})J";
  const auto a = read_et(deep_args, "deep_args.json");
  REQUIRE(a.size() == 1);
  REQUIRE(a[0].ops.size() == 1);
  CHECK(a[0].ops[0].inputs.at(0).dims == std::vector<std::int64_t>{2, 3});

  // 50,000 operators each nested in the one before, inside an optimizer scope inside ProfilerStep#4, inside a
  // user scope, inside ProfilerStep#9: one op (the outermost), its phase from the scopes, its step the nearest.
  // Walking every node's ancestors took time quadratic in the depth (a 3 MB chain took 1.5 minutes).
  std::string chain = R"({"schema": "1.0.1", "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 1, "parent": 1},
    {"name": "ProfilerStep#4", "id": 2, "parent": 1},
    {"name": "Optimizer.step#SGD.step", "id": 3, "parent": 2},
    {"name": "my::annotation", "id": 4, "parent": 3, "scope": 7},
    {"name": "ProfilerStep#9", "id": 5, "parent": 4})";
  const int ops = 50000;
  for (int i = 0; i < ops; ++i)
    chain += fmt::format(R"(,{{"name": "aten::mul", "id": {}, "parent": {}}})", 6 + i, 5 + i);
  // a cycle of two scopes (malformed) above another op: it is still an outermost op, of the optimizer, in no step
  // subtree (so in the last step started before its id, as a backward op on the autograd thread is)
  chain += R"(,{"name": "Optimizer.zero_grad#SGD.zero_grad", "id": 900001, "parent": 900002},
               {"name": "record_param_comms", "id": 900002, "parent": 900001},
               {"name": "aten::zero_", "id": 900003, "parent": 900001}]})";
  const auto c = read_et(chain, "chain.json");
  REQUIRE(c.size() == 1);
  CHECK(c[0].iteration == 9);  // the nearest step of the chain
  REQUIRE(c[0].ops.size() == 2);
  CHECK(c[0].ops[0].raw_name == "aten::mul");
  CHECK(c[0].ops[0].phase == ets::Phase::Update);
  CHECK(c[0].ops[1].raw_name == "aten::zero_");
  CHECK(c[0].ops[1].phase == ets::Phase::Update);
}

TEST_CASE("ET and Kineto traces of one run give the same ops, phases, shapes and hyper-parameters") {
  // tests/data/et_pair_*: steps 3 and 4 of one fresh CPU run, captured once by ExecutionGraphObserver and once by
  // the Kineto-style exporter (tools/make_fixtures/et_pair.py). A model trained on Kineto traces predicts from an
  // ET only if the two readers turn one run into one sequence: backward ops are the autograd nodes (not their aten
  // children), record_function's bookkeeping tensors are dropped, and an LBFGS closure's forward and backward ops
  // inside Optimizer.step# keep their phases.
  for (const std::string kind : {"sgd", "lbfgs"}) {
    INFO(kind);
    const auto et = read_et(gunzip_file(ets_test::fixture("et_pair_" + kind + ".et.json.gz")), kind + ".et");
    const auto kineto = ets::import::read_kineto_json(
        gunzip_file(ets_test::fixture("et_pair_" + kind + ".kineto.json.gz")), kind + ".kineto", ets::import::Options{});
    REQUIRE(et.size() == 2);
    REQUIRE(kineto.size() == 2);
    for (std::size_t it = 0; it < 2; ++it) {
      INFO("iteration " << it);
      check_untimed(et[it]);
      CHECK(et[it].meta.optimizer == kind);
      CHECK(et[it].meta.optimizer == kineto[it].meta.optimizer);
      CHECK(et[it].meta.device == "cpu");  // a CPU run (the Kineto file names the CPU, which an ET does not)
      CHECK_FALSE(kineto[it].ran_gpu_kernels());
      const auto& a = et[it].ops;
      const auto& b = kineto[it].ops;
      REQUIRE(a.size() == b.size());
      int phases[3] = {0, 0, 0};
      for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("op " << i << ": " << a[i].raw_name << " / " << b[i].raw_name);
        CHECK(a[i].name == b[i].name);
        CHECK(a[i].phase == b[i].phase);
        CHECK((a[i].sequence >= 0) == (b[i].sequence >= 0));
        REQUIRE(a[i].inputs.size() == b[i].inputs.size());
        for (std::size_t k = 0; k < a[i].inputs.size(); ++k) CHECK(a[i].inputs[k].dims == b[i].inputs[k].dims);
        // The ET records int-list arguments (a convolution's stride, padding, dilation), which torch 1.13's
        // profiler leaves out of "Concrete Inputs": what the Kineto trace holds, the ET holds with the same value.
        CHECK((a[i].hyper.present & b[i].hyper.present) == b[i].hyper.present);
        for (int h = 0; h < ets::kHyperCount; ++h)
          if (b[i].hyper.has(static_cast<ets::Hyper>(h)))
            CHECK(a[i].hyper.get(static_cast<ets::Hyper>(h)) == b[i].hyper.get(static_cast<ets::Hyper>(h)));
        ++phases[static_cast<int>(a[i].phase)];
      }
      // every phase is present: the closure's forward and backward ops are not read as update
      CHECK(phases[static_cast<int>(ets::Phase::Forward)] >= 5);
      CHECK(phases[static_cast<int>(ets::Phase::Backward)] >= 5);
      CHECK(phases[static_cast<int>(ets::Phase::Update)] >= 5);
      // each closure evaluation (LBFGS runs up to two per step here) has its convolution's backward op
      CHECK(count_named(et[it], "conv2d", ets::Phase::Backward) >= 1);
      CHECK(count_named(et[it], "conv2d", ets::Phase::Backward) == count_named(et[it], "conv2d", ets::Phase::Forward));
    }
  }
}

TEST_CASE("an ET parsed whole is read in place where its buffer has room for simdjson's padding, not copied") {
  using ets::import::detail::kWholeDocument;
  using ets::import::detail::read_pytorch_et_runs;
  std::string text = ets::import::read_file_bytes(ets_test::fixture("et_pair_lbfgs.et.json.gz"));
  text.reserve(text.size() + 64);  // what read_file_bytes leaves for the parsers (simdjson's padding is 64 bytes)
  const auto copied = read_pytorch_et_runs(text, "et.json", 0, kWholeDocument);
  const auto in_place = read_pytorch_et_runs(text, "et.json", text.capacity(), kWholeDocument);
  REQUIRE_FALSE(copied.empty());
  CHECK(in_place == copied);
  // too little room past the text: copied, as without a size
  CHECK(read_pytorch_et_runs(text, "et.json", text.size() + 63, kWholeDocument) == copied);
  // through Tracer::load (a buffer read_file_bytes sized, its nodes parsed in runs): the same
  const auto loaded = ets::Tracer::load(ets_test::fixture("et_pair_lbfgs.et.json.gz"));
  REQUIRE(loaded.size() == copied.size());
  CHECK(loaded.front().ops == copied.front().ops);
#if ETS_TEST_ALLOC_HOOKS
  namespace alloc = ets_test::alloc;
  const auto peak_of = [&](std::size_t readable) {
    return alloc::peak_while([&] { read_pytorch_et_runs(text, "et.json", readable, kWholeDocument); });
  };
  const long long with_copy = peak_of(0), without = peak_of(text.capacity());
  INFO("peak " << with_copy << " bytes with the copy, " << without << " without; the text is " << text.size());
  // the copy was held beside simdjson's index while the document was read: about its whole size at the peak
  CHECK(with_copy - without >= static_cast<long long>(0.9 * static_cast<double>(text.size())));
#endif
}

namespace {
// What a read gives: its iterations, or its error's id. (Cut into runs, an error may give another reason: a whole
// parse checks the whole text first, so a later run's invalid UTF-8 is found before an earlier run's lost comma.)
std::pair<std::vector<ets::ExecutionTrace>, std::string> read_et_runs(const std::string& text, std::size_t run_bytes) {
  try {
    return {ets::import::detail::read_pytorch_et_runs(text, "et.json", 0, run_bytes), ""};
  } catch (const ets::Error& e) {
    return {{}, e.id()};
  }
}
}  // namespace

TEST_CASE("an ET's nodes parsed in runs read as the whole document does, with the parser sized to a run") {
  using ets::import::detail::kWholeDocument;
  for (const char* name : {"et_pair_lbfgs.et.json.gz", "et_pair_sgd.et.json.gz"}) {
    INFO(name);
    const std::string text = ets::import::read_file_bytes(ets_test::fixture(name));
    ets::import::detail::ArrayRuns runs;
    REQUIRE(ets::import::detail::find_array_runs(text, "nodes", 4096, true, runs));
    CHECK(runs.cuts.size() > 20);  // the small runs below really cut the nodes
    const auto whole = read_et_runs(text, kWholeDocument);
    REQUIRE(whole.second.empty());
    REQUIRE_FALSE(whole.first.empty());
    for (std::size_t run_bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{1} << 19}) {
      INFO("runs of " << run_bytes << " bytes");
      CHECK(read_et_runs(text, run_bytes) == whole);
    }
    CHECK(read_et(text, "et.json") == whole.first);  // read_pytorch_et: runs of 512 KiB
    // Damaged copies: each read alike, iterations or error, whether cut into runs or not.
    const std::size_t from = runs.open + 1, span = runs.close - from;
    int refused = 0;
    for (int k = 1; k <= 24; ++k) {
      std::string bad = text;
      const std::size_t at = from + span * static_cast<std::size_t>(k) / 25;
      switch (k % 4) {
        case 0: bad[at] = '}'; break;
        case 1: bad.erase(at, 1); break;
        case 2: bad[at] = ','; break;
        default: bad.insert(at, "]"); break;
      }
      INFO("damage " << k << " at byte " << at);
      const auto damaged_whole = read_et_runs(bad, kWholeDocument);
      refused += !damaged_whole.second.empty();
      CHECK(read_et_runs(bad, 4096) == damaged_whole);
      CHECK(read_et_runs(bad, 0) == damaged_whole);
    }
    CHECK(refused >= 6);  // the damage is read as errors as well as read past
    // A missing element (",]", ",,", "[,"): refused as a whole parse refuses it, though a cut there leaves a run
    // of blanks, which would parse as an empty array. (Fuzzing found it.)
    for (const auto& [pos, insert] : {std::pair<std::size_t, const char*>{runs.close, ","},
                                      {text.find("},{", from + span / 2) + 1, ","}, {from, ","}}) {
      std::string bad = text;
      bad.insert(pos, insert);
      INFO("',' inserted at byte " << pos);
      const auto damaged_whole = read_et_runs(bad, kWholeDocument);
      CHECK(damaged_whole.second == "ets.et.1");
      CHECK(read_et_runs(bad, 0) == damaged_whole);
      CHECK(read_et_runs(bad, 4096) == damaged_whole);
    }
    // A stray ']' between two nodes ends the array for the scan, a node before it lost a comma, and the text is cut
    // off later: not JSON, refused before any node is read, however the nodes are cut. (Fuzzing found it: the runs
    // read the broken node first, ets.et.1, where a lazy whole parse found its root unclosed first, ets.et.2.)
    for (int k = 1; k <= 4; ++k) {
      std::string bad = text;
      const std::size_t stray = bad.find("},{", from + span * static_cast<std::size_t>(k) / 5) + 1;
      bad.insert(stray, "]");
      const std::size_t comma = bad.rfind(",\"id\":", stray);
      REQUIRE(comma > from);
      bad[comma] = ' ';
      bad.resize(bad.find("},", stray + span / 10) + 2);
      INFO("lost comma at byte " << comma << ", stray ']' at " << stray << ", cut at " << bad.size());
      const auto damaged_whole = read_et_runs(bad, kWholeDocument);
      CHECK(damaged_whole.second == "ets.et.1");
      CHECK(read_et_runs(bad, 4096) == damaged_whole);
      CHECK(read_et_runs(bad, 0) == damaged_whole);
    }
    // Damage in a value the reader never reads (an output's list opened with '{', closed with ']') is refused too:
    // a lazy parse passed it, and whether it did depended on where a run was cut. (Fuzzing found it.)
    {
      std::string bad = text;
      const std::size_t outputs = bad.find("\"outputs\":[[", from + span / 2) + 11;
      bad[outputs] = '{';
      INFO("outputs damaged at byte " << outputs);
      CHECK(read_et_runs(bad, kWholeDocument).second == "ets.et.1");
      CHECK(read_et_runs(bad, 4096).second == "ets.et.1");
      CHECK(read_et_runs(bad, 0).second == "ets.et.1");
    }
  }
#if ETS_TEST_ALLOC_HOOKS
  // The parser's index (4 bytes per byte of what it parses) and string buffer are sized to a run, not to the file.
  namespace alloc = ets_test::alloc;
  std::string text = ets::import::read_file_bytes(ets_test::fixture("et_pair_lbfgs.et.json.gz"));
  const auto peak_of = [&](std::size_t run_bytes) {
    return alloc::peak_while(
        [&] { ets::import::detail::read_pytorch_et_runs(text, "et.json", text.capacity(), run_bytes); });
  };
  const long long whole = peak_of(kWholeDocument), in_runs = peak_of(4096);
  INFO("peak " << whole << " bytes parsed whole (in place), " << in_runs << " in runs; the text is " << text.size());
  CHECK(whole - in_runs >= static_cast<long long>(3 * text.size()));
#endif
}

namespace {
// An ET of one op and `labels` record_function labels (no ops), each with three arguments: a [2, 3, k] tensor, an
// Int and an int list, as torch writes them.
std::string et_of_labels(int labels) {
  std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 1, "parent": 0, "seq_id": -1, "inputs": [],
     "input_shapes": [], "input_types": []},
    {"name": "aten::relu", "id": 2, "parent": 1, "seq_id": -1, "inputs": [[5, 6, 0, 24, 4, "cpu"]],
     "input_shapes": [[2, 3, 4]], "input_types": ["Tensor(float)"]})J";
  for (int k = 0; k < labels; ++k)
    et += fmt::format(R"J(,
    {{"name": "forward label", "id": {}, "parent": 1, "seq_id": -1, "inputs": [[1, 2, 0, 24, 4, "cpu"], 3, [4, 5]],
     "input_shapes": [[2, 3, {}], [], []], "input_types": ["Tensor(float)", "Int", "GenericList[Int]"]}})J",
                      k + 3, k);
  return et + "]}";
}
}  // namespace

TEST_CASE("an ET node's arguments read back as the node gave them, whichever node shares its text") {
  // Two nodes of one name with other shapes and values; keys in another order; a repeated key (the last wins); more
  // shapes than types (an argument without a type is no tensor); an escaped name reads as its text.
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 1, "parent": 0, "inputs": [], "input_shapes": [],
     "input_types": []},
    {"name": "aten::conv2d", "id": 2, "parent": 1, "seq_id": 7,
     "inputs": [[1, 2, 0, 24, 4, "cpu"], [3, 4, 0, 24, 4, "cpu"], "<None>", [2, 2], [1, 1], [1, 1], 1],
     "input_shapes": [[8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], []],
     "input_types": ["Tensor(float)", "Tensor(float)", "None", "GenericList[Int]", "GenericList[Int]",
                     "GenericList[Int]", "Int"]},
    {"name": "aten::conv\u0032d", "id": 3, "parent": 1, "seq_id": 8,
     "input_types": ["Tensor(float)", "Tensor(float)", "None", "GenericList[Int]", "GenericList[Int]",
                     "GenericList[Int]", "Int"],
     "input_shapes": [[9, 9, 9, 9]],
     "inputs": [[1, 2, 0, 24, 4, "cpu"], [3, 4, 0, 24, 4, "cpu"], "<None>", [1, 1], [0, 0], [1, 1], 1],
     "input_shapes": [[4, 16, 8, 8], [32, 16, 1, 1], [], [], [], [], []]},
    {"name": "aten::add", "id": 4, "parent": 1, "seq_id": 9,
     "inputs": [[1, 2, 0, 24, 4, "cpu"], [1, 2, 0, 24, 4, "cpu"]], "input_shapes": [[4, 5], [4, 5], [6]],
     "input_types": ["Tensor(float)", "Tensor(float)"]}]})J";
  const auto t = read_et(et, "args.json");
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].ops.size() == 3);
  const auto& a = t[0].ops[0];
  const auto& b = t[0].ops[1];
  CHECK(a.raw_name == "aten::conv2d");
  CHECK(b.raw_name == "aten::conv2d");
  CHECK(a.sequence == 7);
  CHECK(b.sequence == 8);
  REQUIRE(a.inputs.size() == 2);
  REQUIRE(b.inputs.size() == 2);
  CHECK(a.inputs[0].dims == std::vector<std::int64_t>{8, 3, 32, 32});
  CHECK(a.inputs[1].dims == std::vector<std::int64_t>{16, 3, 3, 3});
  CHECK(b.inputs[0].dims == std::vector<std::int64_t>{4, 16, 8, 8});  // the second "input_shapes"
  CHECK(b.inputs[1].dims == std::vector<std::int64_t>{32, 16, 1, 1});
  CHECK(a.hyper.get(ets::Hyper::StrideH) == 2);
  CHECK(b.hyper.get(ets::Hyper::StrideH) == 1);
  CHECK(a.hyper.get(ets::Hyper::PadH) == 1);
  CHECK(b.hyper.get(ets::Hyper::PadH) == 0);
  const auto& add = t[0].ops[2];
  REQUIRE(add.inputs.size() == 2);  // the third shape has no type: no tensor
  CHECK(add.inputs[1].dims == std::vector<std::int64_t>{4, 5});

  // Many nodes, each with a shape of its own, read back as their own across the arena's growth and the runs: each
  // evaluate_function op takes its inputs from the threshold_backward node beneath it.
  std::string many = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_trace|thread]", "id": 1, "parent": 0, "inputs": [], "input_shapes": [],
     "input_types": []})J";
  for (int k = 0; k < 3000; ++k)
    many += fmt::format(R"J(,
    {{"name": "autograd::engine::evaluate_function: ReluBackward0", "id": {}, "parent": 1, "seq_id": {}, "inputs": [],
     "input_shapes": [], "input_types": []}},
    {{"name": "aten::threshold_backward", "id": {}, "parent": {}, "seq_id": -1,
     "inputs": [[1, 2, 0, 24, 4, "cpu"], [1, 2, 0, 24, 4, "cpu"], 0], "input_shapes": [[{}, 3], [{}, 3], []],
     "input_types": ["Tensor(float)", "Tensor(float)", "Int"]}})J",
                        2 * k + 2, k, 2 * k + 3, 2 * k + 2, k + 1, k + 1);
  many += "]}";
  for (std::size_t run_bytes : {ets::import::detail::kWholeDocument, std::size_t{4096}}) {
    INFO("runs of " << run_bytes << " bytes");
    const auto m = ets::import::detail::read_pytorch_et_runs(many, "many.json", 0, run_bytes);
    REQUIRE(m.size() == 1);
    REQUIRE(m[0].ops.size() == 3000);
    int own = 0;
    for (std::size_t k = 0; k < 3000; ++k) {
      const auto& op = m[0].ops[k];
      own += op.sequence == static_cast<std::int64_t>(k) && op.inputs.size() == 2 &&
             op.inputs[0].dims == std::vector<std::int64_t>{static_cast<std::int64_t>(k) + 1, 3};
    }
    CHECK(own == 3000);
  }
}

TEST_CASE("an ET's nodes are held in a few hundred bytes each, however many strings and lists they hold") {
  // 20,000 more nodes of three arguments each cost each what the reader keeps per node (its record, its arguments'
  // ids and dims, and the assembly's index), not strings and vectors of their own: ~810 bytes a node before, ~340 now.
  REQUIRE_NOTHROW(read_et(et_of_labels(2), "labels.json"));
#if ETS_TEST_ALLOC_HOOKS
  namespace alloc = ets_test::alloc;
  const auto peak_of = [](int labels) {
    const std::string text = et_of_labels(labels);
    return alloc::peak_while([&] { ets::import::detail::read_pytorch_et_runs(text, "labels.json", 0, 4096); });
  };
  const long long small = peak_of(10000), large = peak_of(30000);
  const double per_node = static_cast<double>(large - small) / 20000.0;
  INFO("peak " << small << " bytes for 10,000 labels, " << large << " for 30,000: " << per_node << " per node");
  CHECK(per_node > 50.0);  // the measure sees the nodes at all
  CHECK(per_node < 450.0);
#endif
}
