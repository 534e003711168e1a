"""ets_predictor_add_default_model from a host installed elsewhere than libets (python3 through ctypes): a prefix
with lib/libets.so and share/ets/models/default.etsm, as `cmake --install` lays it out, must be enough; a prefix
without the model is ETS_IO, ets.predict.8.
argv: LIBETS_SO MODEL.etsm WORK_DIR"""
import ctypes
import os
import shutil
import subprocess
import sys

ETS_IO = 2


def add_default_model(so):
    ets = ctypes.CDLL(so)
    ets.ets_last_error.restype = ctypes.c_char_p
    ets.ets_last_error_id.restype = ctypes.c_char_p
    p = ctypes.c_void_p()
    assert ets.ets_predictor_create(ctypes.byref(p)) == 0
    status = ets.ets_predictor_add_default_model(p, b"x")
    message, error_id = ets.ets_last_error().decode(), ets.ets_last_error_id().decode()
    ets.ets_predictor_destroy(p)
    return status, message, error_id


os.environ.pop("ETS_MODEL", None)
if sys.argv[1] == "--no-model":  # the child below: a libets of a prefix without share/ets/models
    status, message, error_id = add_default_model(sys.argv[2])
    if status != ETS_IO or error_id != "ets.predict.8":
        sys.exit(f"no model beside {sys.argv[2]}: status {status}, {error_id}: {message}")
    print(f"no model beside {sys.argv[2]}: ETS_IO, {error_id}")
    sys.exit(0)

lib_so, model, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
for libdir in ("lib", "lib/x86_64-linux-gnu"):  # the default layout and Debian's multiarch one
    prefix = os.path.join(work, libdir.replace("/", "_"))
    os.makedirs(os.path.join(prefix, libdir))
    os.makedirs(os.path.join(prefix, "share/ets/models"))
    so = os.path.join(prefix, libdir, os.path.basename(lib_so))
    shutil.copy(lib_so, so)
    shutil.copy(model, os.path.join(prefix, "share/ets/models/default.etsm"))
    status, message, _ = add_default_model(so)
    if status != 0:
        sys.exit(f"{libdir}: ets_predictor_add_default_model -> {status}: {message}")
    print(f"{libdir}: default model found beside {so}")

# A prefix without the model, in a process of its own (the libets copies above stay loaded in this one). Skipped
# where the interpreter's own prefix holds a model (an ETS installed beside python3), which would be found first.
exe_dir = os.path.dirname(os.path.realpath(sys.executable))
if any(os.path.exists(os.path.join(exe_dir, rel)) for rel in ("../share/ets/models/default.etsm", "models/default.etsm")):
    print(f"no-model case skipped: {exe_dir} has a default model of its own")
    sys.exit(0)
bare = os.path.join(work, "no_model", "lib")
os.makedirs(bare)
so = os.path.join(bare, os.path.basename(lib_so))
shutil.copy(lib_so, so)
r = subprocess.run([sys.executable, __file__, "--no-model", so], capture_output=True, text=True)
print(r.stdout.strip())
if r.returncode != 0:
    sys.exit(f"{r.stdout}{r.stderr}")
