"""ets_predictor_add_default_model from a host installed elsewhere than libets (python3 through ctypes): a prefix
with lib/libets.so and share/ets/models/default.etsm, as `cmake --install` lays it out, must be enough.
argv: LIBETS_SO MODEL.etsm WORK_DIR"""
import ctypes
import os
import shutil
import sys

lib_so, model, work = sys.argv[1:4]
os.environ.pop("ETS_MODEL", None)
shutil.rmtree(work, ignore_errors=True)
for libdir in ("lib", "lib/x86_64-linux-gnu"):  # the default layout and Debian's multiarch one
    prefix = os.path.join(work, libdir.replace("/", "_"))
    os.makedirs(os.path.join(prefix, libdir))
    os.makedirs(os.path.join(prefix, "share/ets/models"))
    so = os.path.join(prefix, libdir, os.path.basename(lib_so))
    shutil.copy(lib_so, so)
    shutil.copy(model, os.path.join(prefix, "share/ets/models/default.etsm"))
    ets = ctypes.CDLL(so)
    ets.ets_last_error.restype = ctypes.c_char_p
    p = ctypes.c_void_p()
    assert ets.ets_predictor_create(ctypes.byref(p)) == 0
    status = ets.ets_predictor_add_default_model(p, b"x")
    message = ets.ets_last_error().decode()
    ets.ets_predictor_destroy(p)
    if status != 0:
        sys.exit(f"{libdir}: ets_predictor_add_default_model -> {status}: {message}")
    print(f"{libdir}: default model found beside {so}")
