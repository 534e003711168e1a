#!/usr/bin/env python3
# Seed corpora for the libFuzzer targets in fuzz/: written at run time under the build folder, never committed.
# Sources: tests/data fixtures, ../shared/data files read in place (truncated), and tiny hand-written inputs.
import gzip
import os
import sqlite3
import sys

MAX_SEED = 256 * 1024  # truncated seeds still carry the format's tokens; libFuzzer mutates from there


def read_maybe_gz(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except Exception:
            pass
    return data


def put(outdir, name, data):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data[:MAX_SEED])


KINETO_GPU = b"""{"schemaVersion":1,"distributedInfo":{"rank":0},"deviceProperties":[{"name":"Test GPU"}],
"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":1000.5,"dur":500},
{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":1010,"dur":40,"args":{"External id":7,
 "Input Dims":[[8,3,32,32],[16,3,3,3],[16],[],[],[],[]],"Input type":["float","float","float","ScalarList",
 "ScalarList","ScalarList","Int"],"Concrete Inputs":["","","","[1, 1]","[1, 1]","[1, 1]","1"],"Sequence number":4}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1020,"dur":5,"args":{"correlation":11,"External id":7}},
{"ph":"X","cat":"kernel","name":"implicit_gemm","pid":0,"tid":7,"ts":1030,"dur":30,"args":{"device":0,"stream":7,"correlation":11}},
{"ph":"f","cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":1030,"id":11,"bp":"e"},
{"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: ConvolutionBackward0","pid":1,"tid":2,"ts":1100,"dur":60,"args":{"Sequence number":4}},
{"ph":"X","cat":"cpu_op","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":1300,"dur":50},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":1310,"dur":3,"args":{"correlation":12}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#4","pid":1,"tid":1,"ts":1500.5,"dur":400},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":1510,"dur":"7.5","args":{"External id":9}},
{"ph":"i","cat":"cpu_instant_event","name":"mark","pid":1,"tid":1,"ts":1600,"s":"t"}
],"ets":{"model":"toy","batch_size":8,"optimizer":"sgd"}}
"""

KINETO_CPU = b"""{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"Optimizer.zero_grad#SGD.zero_grad","pid":"5","tid":"5","ts":10,"dur":2},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":"5","tid":"5","ts":13,"dur":20,"args":{"Input Dims":[[4,8],[2,8],[2]]}},
{"ph":"X","cat":"cpu_op","name":"aten::add_","pid":"5","tid":"5","ts":40,"dur":1e1},
{"ph":"X","cat":"cpu_op","name":"Optimizer.step#SGD.step","pid":"5","tid":"5","ts":60,"dur":5},
{"ph":"X","cat":"cpu_op","name":"Optimizer.zero_grad#SGD.zero_grad","pid":"5","tid":"5","ts":70,"dur":2},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":"5","tid":"5","ts":75,"dur":9}]}
"""

ETS_TRACE = (
    b'{"format":"ets-trace","version":[1,0]}\n'
    b'{"trace":{"source_format":"kineto","source_path":"a.json","framework":"pytorch","framework_version":"2.3",'
    b'"device":"cpu","environment":"e","model":"m","family":"f","optimizer":"sgd","batch_size":8,"extra":{"k":"v"},'
    b'"iteration":3,"start_us":1.5,"measured_us":100.25,"ops":2}}\n'
    b'{"n":"conv2d","r":"aten::conv2d","p":0,"i":[[[8,3,32,32],"float32"],[[16,3,3,3],"float16"]],'
    b'"h":{"kernel_h":3,"kernel_w":3,"groups":1},"f":1.2e9,"b":null,"s":0,"t":51.5,"g":3.25,"q":12,"k":2}\n'
    b'{"n":"relu","r":"aten::relu","p":1,"i":[],"h":{},"f":null,"b":4096,"s":55,"t":4,"g":-0.5,"q":-1,"k":0}\n'
    b'{"trace":{"source_format":"live","source_path":"","framework":"","framework_version":"","device":"",'
    b'"environment":"","model":"","family":"","optimizer":"","batch_size":0,"extra":{},'
    b'"iteration":4,"start_us":200,"measured_us":null,"ops":1}}\n'
    b'{"n":"add","r":"aten::add_","p":2,"i":[[[1],"bool"]],"h":{},"f":0,"b":0,"s":-0.0,"t":0,"g":0,"q":0,"k":1}\n'
    b'{"end":{"traces":2}}\n'
)

NSIGHT_SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT);
INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'Test GPU');
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'kernel_a'), (3, 'aten::relu, seq = 11');
INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text) VALUES
  (1000, 50000, 59, 1, 'ProfilerStep#5'),
  (1200, 5000, 59, 1, 'aten::conv2d, seq = 10, op_id = 1, sizes = [[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []]'),
  (21000, 30000, 59, 2, 'backward pass'), (21100, 25000, 59, 2, 'aten::convolution_backward, seq = 10'),
  (50000, 90000, 59, 1, 'ProfilerStep#6'), (51000, 52000, 59, 1, 'aten::relu, seq = 20');
INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES (6000, 7000, 59, 1, 3);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1400, 1500, 0, 1, 1, 1, 0, NULL), (6100, 6200, 0, 1, 3, 1, 0, NULL),
  (21200, 21300, 0, 2, 5, 1, 0, NULL), (51100, 51200, 0, 1, 7, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10000, 12000, 0, 1, 7, 1, 1, 2, 2), (13500, 14500, 0, 1, 7, 3, 1, 2, 2),
  (16000, 19000, 0, 1, 7, 5, 1, 2, 2), (60000, 61000, 0, 1, 7, 7, 1, 2, 2), (19500, 19600, 0, 1, 7, 999, 1, 2, 2);
"""


PYTORCH_ET = b"""{"schema":"1.0.1","pid":1,"time":"2024-01-01","start_ts":0,"finish_ts":9,"nodes":[
{"name":"[pytorch|profiler|execution_trace|thread]","id":1,"parent":1,"seq_id":-1,"inputs":[],"input_shapes":[],"input_types":[]},
{"name":"ProfilerStep#2","id":2,"parent":1,"seq_id":-1},
{"name":"aten::conv2d","id":3,"parent":2,"seq_id":4,"inputs":[[],[],[],[1,1],[0,0],[1,1],1],
 "input_shapes":[[8,3,32,32],[16,3,3,3],[16],[],[],[],[]],
 "input_types":["Tensor(float)","Tensor(float)","Tensor(float)","GenericList[Int,Int]","GenericList[Int,Int]","GenericList[Int,Int]","Int"]},
{"name":"aten::convolution","id":4,"parent":3,"seq_id":-1,"inputs":[[[1,2],[3]]],"input_shapes":[[8,3,32,32]],"input_types":["Tensor(float)"]},
{"name":"autograd::engine::evaluate_function: ConvolutionBackward0","id":5,"parent":1,"seq_id":-1},
{"name":"aten::convolution_backward","id":6,"parent":5,"seq_id":4,"inputs":[[]],"input_shapes":[[8,16,30,30]],"input_types":["Tensor(float)"]},
{"name":"Optimizer.step#SGD.step","id":7,"parent":2,"seq_id":-1},
{"name":"torch::autograd::AccumulateGrad","id":8,"parent":7,"ctrl_deps":7,"seq_id":-1,"inputs":[[]],"input_shapes":[[16]],"input_types":["Tensor(float)"]},
{"name":"ProfilerStep#3","id":9,"parent":1,"seq_id":-1},
{"name":"aten::relu","id":10,"parent":9,"seq_id":5,"inputs":[true],"input_shapes":[[4,4]],"input_types":["Tensor(half)"]}]}
"""


def nsight_db(path):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript(NSIGHT_SCHEMA)
    db.commit()
    db.close()


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: fuzz_seeds.py SOURCE_DIR SHARED_DATA_DIR OUT_DIR")
    src, shared, out = sys.argv[1:]
    data = os.path.join(src, "tests", "data")

    k = os.path.join(out, "fuzz_kineto_json")
    put(k, "gpu_min.json", KINETO_GPU)
    put(k, "cpu_min.json", KINETO_CPU)
    # declared tail steps (the collector's worker writes one): ProfilerStep# and Optimizer-marker steps
    put(k, "gpu_tail.json", KINETO_GPU.replace(b'"ets":{"model"', b'"ets":{"tail_steps":1,"model"', 1))
    put(k, "cpu_tail.json", KINETO_CPU.replace(b'{"traceEvents":[', b'{"ets":{"tail_steps":1},"traceEvents":[', 1))
    put(k, "cpu_small_mlp.json", read_maybe_gz(os.path.join(data, "cpu_small_mlp.json.gz")))
    # no ProfilerStep#: two Adams told apart by the shapes their steps update
    for kind in ("optimizer", "module"):
        put(k, f"gan_two_adams_{kind}.json", read_maybe_gz(os.path.join(data, f"gan_two_adams_{kind}.kineto.json.gz")))
    for rel in ["kineto-gpu/hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                "kineto-gpu/hta/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                "kineto-gpu/hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
                "kineto-gpu/hta/execution_trace__benchmark_simple_add_trace.json.gz",
                "kineto-gpu/kineto-resnet50-v100/resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"]:
        p = os.path.join(shared, rel)
        if os.path.exists(p):
            put(k, os.path.basename(rel).replace(".gz", ""), read_maybe_gz(p))

    c = os.path.join(out, "fuzz_ets_csv")
    ref = os.path.join(shared, "ets-reference")
    if os.path.isdir(ref):
        for n in sorted(os.listdir(ref)):
            if n.endswith(".csv"):
                put(c, n, read_maybe_gz(os.path.join(ref, n)))
    put(c, "min.csv", b"op,dir,params,flops,bytes,kStartTime,kEndTime,space,seq,kernels,kduration,batch,input_type\n"
        b"203,1,\"[8, 3, 32, 32, 16, 30, 30, 3, 3, 0, 0, 1, 1, 1, 1, 1, 4]\",1000,2000,100,200,5,1,1,100,8,1\n"
        b"152,2,\"[4, 8, 16, 30, 30]\",10,20,205,300,0,1,1,95,8,1\n")

    e = os.path.join(out, "fuzz_pytorch_et")
    put(e, "two_steps.json", PYTORCH_ET)
    for rel in ["kineto-gpu/hta/execution_trace__benchmark_simple_add_et.json.gz",
                "kineto-gpu/param/linear_et.json.gz", "kineto-gpu/param/resnet_et_2023-07-12.json.gz"]:
        p = os.path.join(shared, rel)
        if os.path.exists(p):
            put(e, os.path.basename(rel).replace(".gz", ""), read_maybe_gz(p))

    t = os.path.join(out, "fuzz_ets_trace")
    put(t, "two_iterations.etst", ETS_TRACE)

    n = os.path.join(out, "fuzz_nsight_sqlite")
    os.makedirs(n, exist_ok=True)
    nsight_db(os.path.join(n, "synthetic.sqlite"))
    p = os.path.join(shared, "nsight", "weatherbench2_report1.sqlite")
    if os.path.exists(p):
        put(n, "weatherbench2_head.sqlite", read_maybe_gz(p))

    m = os.path.join(out, "fuzz_model_file")
    for f in sorted(os.listdir(data)):
        if f.endswith(".etsm"):
            put(m, f, read_maybe_gz(os.path.join(data, f)))


if __name__ == "__main__":
    main()
