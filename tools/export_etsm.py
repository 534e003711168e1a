#!/usr/bin/python3
# Exports a PyTorch BiLSTM or BiGRU + linear head (random init or a trained state_dict) to ETS's .etsm model format and
# writes parity fixtures (input windows + torch output); also reads .etsm back for the benchmark peers.
"""Usage (Debian torch 1.13, /usr/bin/python3):

  export_etsm.py export --out m.etsm [--input-size 16 --hidden 16 --layers 4 --seed 1 --cell lstm|gru]
                        [--state-dict trained.pt] [--encoder-from ets_model.etsm]
                        [--width 12 --stride 4] [--parity p.bin --parity-windows 4]

--width / --stride are the window geometry written into the model (1 ≤ stride ≤ width ≤ 4096, as `ets` reads it);
with --encoder-from they come from that model, and a different --width or --stride is refused.
  export_etsm.py fixtures --out-dir tests/data      # the committed test fixtures (see tests/data/README.md)

The byte layout is docs/model-format.md; this writer and src/model/model_file.cpp must agree byte for byte.
"""
import argparse
import os
import struct
import sys
import tempfile

import numpy as np

from atomic_file import atomic_write  # tools/atomic_file.py, beside this script

MAGIC = b"ETSMODEL"
END_MAGIC = b"ETSM_END"
MAJOR, MINOR = 1, 0
HEADER_BYTES, TRAILER_BYTES, ALIGN = 64, 16, 64
T_INT, T_FLOAT, T_STRING, T_BYTES = 1, 2, 3, 4
MAX_WIDTH = 4096            # window.width a reader accepts (src/model/model_file.cpp)
MAX_SELFTEST_POSITIONS = 4096  # windows × width of selftest.input (ModelFile::SelfTest::kMaxPositions)
MAX_SIZE, MAX_LAYERS = 1 << 16, 64  # lstm.input_size / lstm.hidden, lstm.layers a reader accepts
DT_F32 = 1
PARITY_MAGIC = b"ETSPAR01"


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def build_model(input_size, hidden, layers, outputs=2, bidirectional=True, cell="lstm"):
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            # Called "lstm" for either cell: nn.GRU's state_dict names match nn.LSTM's, and so do the .etsm names.
            rnn = nn.GRU if cell == "gru" else nn.LSTM
            self.lstm = rnn(input_size, hidden, layers, batch_first=True, bidirectional=bidirectional)
            self.head = nn.Linear(hidden * (2 if bidirectional else 1), outputs)

        def forward(self, x):
            return self.head(self.lstm(x)[0])

    return Net()


def lstm_tensors(net):
    """(name, float32 array) in .etsm naming: the nn.LSTM state_dict names plus head.weight / head.bias."""
    out = []
    sd = net.state_dict()
    for k, v in sd.items():
        name = k[len("lstm."):] if k.startswith("lstm.") else k
        out.append((name, v.detach().cpu().numpy().astype(np.float32)))
    return out


def write_etsm(path, tensors, config, window=(12, 4), encoder_state=b"", labels=None, hardware_env="",
               provenance=None, selftest=None):
    """tensors: list of (name, ndarray float32); config: dict input_size/hidden/layers/outputs/bidirectional
    (and cell: "lstm", the default, or "gru"); selftest: (input N×W×F, expected N×W×O, tolerance) or None."""
    labels = labels or {"transform": "log1p", "time_mean": 0.0, "time_scale": 1.0, "gap_mean": 0.0, "gap_scale": 1.0}
    meta = [("arch", T_STRING, "bigru" if config.get("cell", "lstm") == "gru" else "bilstm")]
    for k in ("input_size", "hidden", "layers", "outputs"):
        meta.append(("lstm." + k, T_INT, int(config[k])))
    meta.append(("lstm.bidirectional", T_INT, 1 if config["bidirectional"] else 0))
    meta += [("window.width", T_INT, window[0]), ("window.stride", T_INT, window[1]),
             ("encoder.state", T_BYTES, bytes(encoder_state)), ("labels.transform", T_STRING, labels["transform"])]
    for k in ("time_mean", "time_scale", "gap_mean", "gap_scale"):
        meta.append(("labels." + k, T_FLOAT, float(labels[k])))
    meta.append(("hardware.env", T_STRING, hardware_env))
    for k, v in sorted((provenance or {}).items()):
        meta.append(("provenance." + k, T_STRING, v))
    tensors = list(tensors)
    if selftest is not None:
        x, y, tol = selftest
        meta.append(("selftest.tolerance", T_FLOAT, float(tol)))
        tensors += [("selftest.input", np.asarray(x, np.float32)), ("selftest.output", np.asarray(y, np.float32))]

    meta_blob = bytearray()
    for key, typ, val in meta:
        kb = key.encode()
        meta_blob += struct.pack("<H", len(kb)) + kb + struct.pack("<B", typ)
        if typ == T_INT:
            meta_blob += struct.pack("<q", val)
        elif typ == T_FLOAT:
            meta_blob += struct.pack("<d", val)
        elif typ == T_STRING:
            vb = val.encode()
            meta_blob += struct.pack("<I", len(vb)) + vb
        else:
            meta_blob += struct.pack("<Q", len(val)) + val

    dir_off = HEADER_BYTES + len(meta_blob)
    dir_size = sum(2 + len(n.encode()) + 2 + 8 * a.ndim + 16 for n, a in tensors)
    pos = dir_off + dir_size
    offsets = []
    for _, a in tensors:
        pos = (pos + ALIGN - 1) // ALIGN * ALIGN
        offsets.append(pos)
        pos += a.size * 4
    body_end = (pos + ALIGN - 1) // ALIGN * ALIGN
    file_bytes = body_end + TRAILER_BYTES

    out = bytearray()
    out += MAGIC + struct.pack("<HHIQQQQQII", MAJOR, MINOR, HEADER_BYTES, file_bytes, HEADER_BYTES, len(meta_blob),
                               dir_off, dir_size, len(meta), len(tensors))
    assert len(out) == HEADER_BYTES
    out += meta_blob
    for (name, a), off in zip(tensors, offsets):
        nb = name.encode()
        out += struct.pack("<H", len(nb)) + nb + struct.pack("<BB", DT_F32, a.ndim)
        out += struct.pack("<%dQ" % a.ndim, *a.shape) + struct.pack("<QQ", off, a.size * 4)
    for (_, a), off in zip(tensors, offsets):
        out += b"\0" * (off - len(out))
        out += np.ascontiguousarray(a, dtype="<f4").tobytes()
    out += b"\0" * (body_end - len(out))
    out += END_MAGIC
    out += struct.pack("<II", crc32c(bytes(out)), 0)
    assert len(out) == file_bytes
    atomic_write(path, bytes(out))


def read_etsm(path):
    """Returns (meta dict, {name: ndarray}). Checks magic, major and checksum."""
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        raise ValueError("not an .etsm file")
    major, minor, hb, fb, mo, ml, do, dl, mc, tc = struct.unpack_from("<HHIQQQQQII", data, 8)
    if major != MAJOR:
        raise ValueError("unsupported .etsm version %d.%d" % (major, minor))
    if fb != len(data) or data[fb - 16:fb - 8] != END_MAGIC:
        raise ValueError("truncated .etsm")
    if struct.unpack_from("<I", data, fb - 8)[0] != crc32c(data[:fb - 8]):
        raise ValueError(".etsm checksum mismatch")
    meta, p = {}, mo
    for _ in range(mc):
        (kl,) = struct.unpack_from("<H", data, p)
        key = data[p + 2:p + 2 + kl].decode()
        typ = data[p + 2 + kl]
        p += 3 + kl
        if typ in (T_INT, T_FLOAT):
            meta[key] = struct.unpack_from("<q" if typ == T_INT else "<d", data, p)[0]
            p += 8
        elif typ == T_STRING:
            (n,) = struct.unpack_from("<I", data, p)
            meta[key] = data[p + 4:p + 4 + n].decode()
            p += 4 + n
        else:
            (n,) = struct.unpack_from("<Q", data, p)
            meta[key] = data[p + 8:p + 8 + n]
            p += 8 + n
    tensors, p = {}, do
    for _ in range(tc):
        (nl,) = struct.unpack_from("<H", data, p)
        name = data[p + 2:p + 2 + nl].decode()
        _, nd = struct.unpack_from("<BB", data, p + 2 + nl)
        p += 4 + nl
        dims = struct.unpack_from("<%dQ" % nd, data, p)
        off, nbytes = struct.unpack_from("<QQ", data, p + 8 * nd)
        p += 8 * nd + 16
        tensors[name] = np.frombuffer(data, dtype="<f4", count=nbytes // 4, offset=off).reshape(dims).copy()
    return meta, tensors


def model_from_etsm(path):
    """A torch Net carrying the weights of an .etsm file (used by the benchmark peers)."""
    import torch
    meta, tensors = read_etsm(path)
    net = build_model(meta["lstm.input_size"], meta["lstm.hidden"], meta["lstm.layers"], meta["lstm.outputs"],
                      meta["lstm.bidirectional"] == 1, "gru" if meta.get("arch") == "bigru" else "lstm")
    sd = {}
    for k in net.state_dict():
        name = k[len("lstm."):] if k.startswith("lstm.") else k
        sd[k] = torch.from_numpy(tensors[name])
    net.load_state_dict(sd)
    return net.eval(), meta


def windows_input(rng, n, w, f, pad_last=3):
    """Random feature windows; the last window's trailing positions are zero, like the encoder's padding."""
    x = rng.standard_normal((n, w, f)).astype(np.float32)
    pad_last = min(pad_last, w - 1)  # a window keeps at least one real position
    if pad_last > 0:
        x[-1, w - pad_last:, :] = 0.0
    return x


def torch_forward(net, x):
    import torch
    with torch.no_grad():
        return net(torch.from_numpy(x)).numpy().astype(np.float32)


def write_parity(path, x, y):
    n, w, f = x.shape
    atomic_write(path, PARITY_MAGIC + struct.pack("<IIII", n, w, f, y.shape[2]) +
                       np.ascontiguousarray(x, "<f4").tobytes() + np.ascontiguousarray(y, "<f4").tobytes())


def fail(msg):
    print("export_etsm.py: " + msg, file=sys.stderr)
    sys.exit(2)


def check_export_args(parser, args):
    """Refuses (usage error, exit 2) what `ets` would refuse to load, and unusable paths, before any work."""
    for name, v, lo, hi in (("--input-size", args.input_size, 1, MAX_SIZE), ("--hidden", args.hidden, 1, MAX_SIZE),
                            ("--layers", args.layers, 1, MAX_LAYERS), ("--parity-windows", args.parity_windows, 1,
                                                                         None), ("--seed", args.seed, 0, None)):
        if v < lo or (hi is not None and v > hi):
            parser.error("%s %d is outside %d..%s" % (name, v, lo, hi if hi is not None else ""))
    for name, v in (("--width", args.width), ("--stride", args.stride)):
        if v is not None and not 1 <= v <= MAX_WIDTH:
            parser.error("%s %d is outside 1..%d" % (name, v, MAX_WIDTH))
    if args.width is not None and args.stride is not None and args.stride > args.width:
        parser.error("--stride %d exceeds --width %d: the ops between two windows would be covered by none "
                     "(1 ≤ stride ≤ width ≤ %d)" % (args.stride, args.width, MAX_WIDTH))
    for name, path in (("--state-dict", args.state_dict), ("--encoder-from", args.encoder_from)):
        if path and not os.path.isfile(path):
            parser.error("%s %s: no such file" % (name, path))
    for name, path in (("--out", args.out), ("--parity", args.parity)):
        folder = os.path.dirname(os.path.abspath(path)) if path else ""
        if path and not os.path.isdir(folder):
            parser.error("%s %s: folder %s does not exist" % (name, path, folder))
        if path and os.path.isdir(path):  # the atomic writer cannot replace a folder: refused after the export's work
            parser.error("%s %s is a folder; name the file to write" % (name, path))
        if path:  # a folder the writer cannot create its temporary in failed with a traceback after the export's work
            try:
                tempfile.TemporaryFile(dir=folder).close()
            except OSError as e:
                parser.error("%s %s: cannot write in %s (%s)" % (name, path, folder, e.strerror or e))
    # an output naming an input, or both outputs one file: the model replaced the weights it was made from, or the
    # parity file replaced the model, and the export said nothing
    paths = [(n, p) for n, p in (("--out", args.out), ("--parity", args.parity), ("--state-dict", args.state_dict),
                                 ("--encoder-from", args.encoder_from)) if p]
    for i, (name, path) in enumerate(paths):
        for other, other_path in paths[i + 1:]:
            if name in ("--out", "--parity") and os.path.realpath(path) == os.path.realpath(other_path):
                parser.error("%s and %s name the same file %s" % (name, other, path))


def window_geometry(args):
    """(width, stride, encoder state, label normalisation, source meta or None) the export writes."""
    if not args.encoder_from:
        width = 12 if args.width is None else args.width
        stride = min(4, width) if args.stride is None else args.stride  # a narrow window gets stride = width
        if stride > width:
            fail("--stride %d exceeds the width %d (1 ≤ stride ≤ width ≤ %d)" % (stride, width, MAX_WIDTH))
        return width, stride, b"", None, None
    # a network trained outside ETS on ETS's features: take the encoder (FeatureSpec), the label normalisation
    # and the window geometry from the ETS model the features came from, so `ets predict` can use the export
    try:
        src, _ = read_etsm(args.encoder_from)
        width, stride = int(src["window.width"]), int(src["window.stride"])
        labels = {k: src["labels." + k] for k in ("transform", "time_mean", "time_scale", "gap_mean", "gap_scale")}
        encoder_state, src_inputs = src["encoder.state"], src["lstm.input_size"]
    except (OSError, ValueError, KeyError, struct.error, UnicodeDecodeError) as e:
        fail("--encoder-from %s is not a readable ETS model (.etsm): %s" % (args.encoder_from, e))
    if src_inputs != args.input_size:
        fail("--encoder-from %s encodes %d features, the network takes %d (--input-size)"
             % (args.encoder_from, src_inputs, args.input_size))
    # the window geometry belongs to the encoder's model: a different one asked for here would be silently dropped
    for name, asked, got in (("--width", args.width, width), ("--stride", args.stride, stride)):
        if asked is not None and asked != got:
            fail("%s %d conflicts with --encoder-from %s, whose windows are %d wide with stride %d; leave %s out "
                 "(the export takes the encoder model's geometry)" % (name, asked, args.encoder_from, width, stride,
                                                                     name))
    return width, stride, encoder_state, labels, src


def export(args):
    width, stride, encoder_state, labels, src = window_geometry(args)
    try:
        import torch
    except ImportError:
        fail("torch is not installed for %s; run it with /usr/bin/python3 (Debian's python3-torch)" % sys.executable)
    torch.manual_seed(args.seed)
    net = build_model(args.input_size, args.hidden, args.layers, 2, not args.unidirectional, args.cell)
    provenance = {"exporter": "tools/export_etsm.py", "torch": torch.__version__}
    if args.state_dict:
        try:
            sd = torch.load(args.state_dict, map_location="cpu")
            if not isinstance(sd, dict):  # a whole saved module rather than its state_dict
                sd = sd.state_dict()
            sd = {k if (k.startswith("lstm.") or k.startswith("head.")) else "lstm." + k: v for k, v in sd.items()}
            net.load_state_dict(sd)
        except Exception as e:  # noqa: BLE001 - torch.load and load_state_dict raise many kinds
            fail("--state-dict %s does not hold the weights of a %s net with --input-size %d --hidden %d --layers %d%s:"
                 " %s" % (args.state_dict, args.cell, args.input_size, args.hidden, args.layers,
                          " --unidirectional" if args.unidirectional else "", " ".join(str(e).split())[:500]))
        provenance["state_dict"] = os.path.basename(args.state_dict)
    else:
        provenance["init"] = "random seed %d" % args.seed
    net.eval()
    rng = np.random.default_rng(args.seed + 1000)
    # the self-test runs at the window width the model is written with, within the reader's position cap
    x_st = windows_input(rng, 2 if 2 * width <= MAX_SELFTEST_POSITIONS else 1, width, args.input_size)
    cfg = dict(input_size=args.input_size, hidden=args.hidden, layers=args.layers, outputs=2,
               bidirectional=not args.unidirectional, cell=args.cell)
    if src is not None:
        provenance["encoder_from"] = os.path.basename(args.encoder_from)
    write_etsm(args.out, lstm_tensors(net), cfg, window=(width, stride), encoder_state=encoder_state, labels=labels,
               hardware_env=args.hardware_env, provenance=provenance, selftest=(x_st, torch_forward(net, x_st), 1e-4))
    if args.parity:
        x = windows_input(rng, args.parity_windows, width, args.input_size)
        write_parity(args.parity, x, torch_forward(net, x))


def fixtures(args):
    """The committed fixtures: a random-init model of the shipped architecture (small sizes) and briefly
    trained odd-sized LSTM and GRU models that go through the --state-dict path."""
    d = args.out_dir
    common = ["--width", "12", "--stride", "4", "--hardware-env", "fixture", "--parity-windows", "4"]
    main([ "export", "--out", os.path.join(d, "lstm_f16_h16.etsm"), "--parity", os.path.join(d, "lstm_f16_h16.parity"),
          "--input-size", "16", "--hidden", "16", "--layers", "4", "--seed", "1"] + common)
    trained_fixture(d, "lstm", common)
    trained_fixture(d, "gru", common)


def trained_fixture(d, cell, common):
    """A 2-layer F=5 H=7 net after 20 Adam steps on random data (seed 7), exported from its saved state_dict."""
    import torch
    torch.manual_seed(7)
    net = build_model(5, 7, 2, cell=cell)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    rng = np.random.default_rng(7)
    x = torch.from_numpy(windows_input(rng, 16, 12, 5, 0))
    target = torch.from_numpy(rng.standard_normal((16, 12, 2)).astype(np.float32))
    for _ in range(20):
        opt.zero_grad()
        loss = (net(x) - target).abs().mean()
        loss.backward()
        opt.step()
    with tempfile.TemporaryDirectory() as tmp:
        sd_path = os.path.join(tmp, "trained_f5_h7.pt")
        torch.save(net.state_dict(), sd_path)
        main(["export", "--out", os.path.join(d, "%s_f5_h7_trained.etsm" % cell),
              "--parity", os.path.join(d, "%s_f5_h7_trained.parity" % cell), "--input-size", "5", "--hidden", "7",
              "--layers", "2", "--seed", "7", "--cell", cell, "--state-dict", sd_path] + common)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--input-size", type=int, default=16)
    e.add_argument("--hidden", type=int, default=16)
    e.add_argument("--layers", type=int, default=4)
    e.add_argument("--unidirectional", action="store_true")
    e.add_argument("--cell", choices=("lstm", "gru"), default="lstm")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--state-dict", help="trained weights (torch.save of the Net or of its nn.LSTM + head)")
    e.add_argument("--width", type=int, default=None,
                   help="window width written into the model (default 12; with --encoder-from: that model's)")
    e.add_argument("--stride", type=int, default=None,
                   help="window stride, 1 ≤ stride ≤ width (default 4; with --encoder-from: that model's)")
    e.add_argument("--hardware-env", default="")
    e.add_argument("--encoder-from", help="an ETS model (.etsm) whose encoder state, label normalisation and window "
                   "geometry the export carries, so `ets predict` can use it (its input size must match)")
    e.add_argument("--parity", help="also write a parity fixture (input windows + torch output)")
    e.add_argument("--parity-windows", type=int, default=4)
    f = sub.add_parser("fixtures")
    f.add_argument("--out-dir", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "export":
        check_export_args(e, args)
        export(args)
    else:
        if not os.path.isdir(args.out_dir):
            f.error("--out-dir %s: no such folder" % args.out_dir)
        fixtures(args)


if __name__ == "__main__":
    sys.exit(main())
