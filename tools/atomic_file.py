"""The Python tools' one atomic file writer (the C++ library has its own, src/temporary_path.hpp)."""
import os


def atomic_write(path, data) -> None:
    """Writes data (str or bytes) to a temporary file in path's folder, then renames it over path: a reader, or an
    interrupted run, sees the old file or the new one, never a partial one. The temporary file never outlives the
    call."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb" if isinstance(data, (bytes, bytearray)) else "w") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
