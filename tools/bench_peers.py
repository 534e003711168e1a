#!/usr/bin/python3
# Benchmark peers for `ets bench`: PyTorch CPU (nn.LSTM, OpenBLAS, 1 thread) and ONNX Runtime (1 thread) on the
# same .etsm weights and input windows, driven line by line from ets bench so all three are timed interleaved.
"""Protocol (stdin → stdout, one line each):
  start:             prints  ready <json: versions, blas, ort availability>
  check H N          prints  <max|torch-ets|> <max|ort-ets|>   (reads DIR/in_H_N.bin and DIR/ets_H_N.bin)
  run H N K          prints  <torch ms per call> <ort ms per call>   (K calls each, "null" for a missing peer)
  quit
Files in DIR (written by ets bench): model_H.etsm, in_H_N.bin (raw float32 N×12×H).
Run it with a Python that has torch (Debian's /usr/bin/python3, or the /opt/ets-venv venv that adds onnxruntime).
"""
import json
import os
import re
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_etsm  # noqa: E402

try:
    import onnxruntime as ort  # noqa: E402
except ImportError:
    ort = None


def blas_info():
    cfg = torch.__config__.show()
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1] if line.strip() else ""
                if "blas" in p or "mkl" in p:
                    libs.add(os.path.realpath(p))
    except OSError:
        pass
    m = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    return {"torch_build_blas": m.group(1) if m else None,
            "loaded_blas_libraries": sorted(libs),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}


class Peers:
    def __init__(self, folder, width):
        self.dir = folder
        self.width = width
        self.models, self.sessions, self.inputs = {}, {}, {}

    def model(self, h):
        if h not in self.models:
            net, _ = export_etsm.model_from_etsm(os.path.join(self.dir, "model_%d.etsm" % h))
            self.models[h] = net
            if ort is not None:
                path = os.path.join(self.dir, "model_%d.onnx" % h)
                x = torch.zeros(2, self.width, h)
                torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"],
                                  dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=14)
                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                so.inter_op_num_threads = 1
                so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                # denormals flushed as in ETS's forward (FTZ/DAZ) and torch (set_flush_denormal below)
                so.add_session_config_entry("session.set_denormal_as_zero", "1")
                self.sessions[h] = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        return self.models[h]

    def x(self, h, n):
        key = (h, n)
        if key not in self.inputs:
            raw = np.fromfile(os.path.join(self.dir, "in_%d_%d.bin" % (h, n)), dtype="<f4")
            self.inputs[key] = raw.reshape(n, self.width, h)
        return self.inputs[key]

    def torch_out(self, h, n):
        with torch.no_grad():
            return self.model(h)(torch.from_numpy(self.x(h, n))).numpy()

    def ort_out(self, h, n):
        self.model(h)
        return self.sessions[h].run(["y"], {"x": self.x(h, n)})[0] if h in self.sessions else None

    def check(self, h, n):
        ets = np.fromfile(os.path.join(self.dir, "ets_%d_%d.bin" % (h, n)), dtype="<f4").reshape(n, self.width, -1)
        t = float(np.abs(self.torch_out(h, n) - ets).max())
        o = self.ort_out(h, n)
        return t, (float(np.abs(o - ets).max()) if o is not None else None)

    def run(self, h, n, k):
        net = self.model(h)
        xt = torch.from_numpy(self.x(h, n))
        with torch.no_grad():
            t0 = time.perf_counter()
            for _ in range(k):
                net(xt)
            torch_ms = (time.perf_counter() - t0) * 1e3 / k
        ort_ms = None
        if h in self.sessions:
            sess, feed = self.sessions[h], {"x": self.x(h, n)}
            t0 = time.perf_counter()
            for _ in range(k):
                sess.run(["y"], feed)
            ort_ms = (time.perf_counter() - t0) * 1e3 / k
        return torch_ms, ort_ms


def fmt(v):
    return "null" if v is None else repr(v)


def main():
    folder, width = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    flushed = torch.set_flush_denormal(True)  # as ETS's forward sets FTZ/DAZ: both or neither
    peers = Peers(folder, width)
    info = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "onnxruntime": ort.__version__ if ort is not None else None, "python": sys.executable,
            "flush_denormal": flushed}
    info.update(blas_info())
    print("ready " + json.dumps(info), flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "quit":
            break
        if parts[0] == "check":
            t, o = peers.check(int(parts[1]), int(parts[2]))
            print(fmt(t), fmt(o), flush=True)
        elif parts[0] == "run":
            t, o = peers.run(int(parts[1]), int(parts[2]), int(parts[3]))
            print(fmt(t), fmt(o), flush=True)
        else:
            print("error unknown command", flush=True)


if __name__ == "__main__":
    main()
