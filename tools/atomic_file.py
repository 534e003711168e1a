"""The Python tools' one atomic file writer (the C++ library's is detail::FileReplacement in
include/ets/detail/output_file.hpp, and does the same)."""
import os


def sync_path(path: str) -> None:
    """Flushes a file or a folder to the disk. A file system that cannot (EINVAL: some network and virtual ones) has
    nothing to lose by it."""
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if os.path.isdir(path) else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (22, 95):  # EINVAL, EOPNOTSUPP
            raise
    finally:
        os.close(fd)


def durable_replace(tmp: str, path: str) -> None:
    """Renames the written and closed file tmp over path, flushing tmp to the disk first and the folder after: without
    the flushes a crash soon after could leave an empty file where the old one was (XFS, ext4 noauto_da_alloc)."""
    sync_path(tmp)
    os.replace(tmp, path)
    try:
        sync_path(os.path.dirname(os.path.abspath(path)))
    except OSError:
        pass  # the file is in place; a folder that cannot be flushed loses nothing already written


def atomic_write(path, data) -> None:
    """Writes data (str or bytes) to a temporary file in path's folder, then renames it over path (durable_replace):
    a reader, or an interrupted run, sees the old file or the new one, never a partial one. The temporary file never
    outlives the call."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb" if isinstance(data, (bytes, bytearray)) else "w") as fh:
            fh.write(data)
        durable_replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
