"""The Python tools' one atomic file writer (the C++ library's is detail::FileReplacement in
include/ets/detail/output_file.hpp, and does the same)."""
import contextlib
import errno
import itertools
import os
import re
import stat


def sync_path(path: str) -> None:
    """Flushes a file or a folder to the disk. A file system that cannot (EINVAL: some network and virtual ones) has
    nothing to lose by it. On Windows a folder cannot be opened to flush (the rename itself is durable there, as for
    the C++ writer), and a file is flushed only through a descriptor open for writing (FlushFileBuffers)."""
    folder = os.path.isdir(path)
    if os.name == "nt":
        if folder:
            return
        flags = os.O_RDWR | getattr(os, "O_BINARY", 0)
    else:
        flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if folder else 0)
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
        # the folder as named: abspath() would fold "link/.." in text, and flush another folder than the link's
        sync_path(os.path.dirname(path) or ".")
    except OSError:
        pass  # the file is in place; a folder that cannot be flushed loses nothing already written


def _names_descriptor(path: str) -> bool:
    """Whether path names an open file descriptor: /proc/<pid or self>/fd/<n> or /dev/fd/<n> (the links behind
    /dev/stdout and /dev/stderr), as the C++ writer's names_descriptor."""
    return re.fullmatch(r"/dev/fd/\d+|/proc/[^/]+/fd/\d+", os.path.normpath(path)) is not None


def _follow_links(path: str) -> tuple:
    """Follows path to the end of its chain of symlinks, as the C++ writer's follow_output_links: a dangling last
    link included (the file is created where it points), a link that ends at a pipe or device left as it is (it is
    written through in place). Returns (the end, whether the chain went through a link naming an open descriptor).
    A loop of links raises OSError(ELOOP)."""
    p, via_descriptor = path, False
    for _ in range(40):
        if not os.path.islink(p) or _is_stream(p):
            return p, via_descriptor
        via_descriptor = via_descriptor or _names_descriptor(p)
        to = os.readlink(p)
        p = to if os.path.isabs(to) else os.path.join(os.path.dirname(p), to)
    raise OSError(errno.ELOOP, "a loop of symlinks", path)


def _is_stream(path: str) -> bool:
    """Whether path exists and is neither a regular file nor a folder (a pipe, device or socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextlib.contextmanager
def replacing(path: str, binary: bool = True):
    """Yields a new file object for a temporary in path's folder; when the block ends without an exception, the file
    is closed and renamed over path (durable_replace), else removed: path holds the old file or the whole new one,
    never a partial one. As the C++ writer's, the temporary is created new under a name of its own
    (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0666 less the umask), so a file or symlink someone put under a name it might
    take is never written through, and two writers of one path never share it; it gets the mode of the file it
    replaces, so replacing a private file does not widen it. Also as the C++ writer's, a symlink at path is
    followed to the end of its chain and its target replaced (the link stays), and a pipe or device is written in
    place; an empty path, a folder, a loop of links and a descriptor open on a regular file (/dev/stdout redirected
    to a log) raise OSError before anything is created."""
    if not path:
        raise FileNotFoundError(errno.ENOENT, "no path given", path)
    # resolved as the C++ writer's resolve_destination: a folder, then a pipe or device (written in place), then
    # /dev/stdout redirected to a log, whose replacement would drop what it held and what is written to it later
    given = path
    path, via_descriptor = _follow_links(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "cannot replace a folder", path)
    in_place = _is_stream(path)
    if via_descriptor and not in_place:
        raise OSError(errno.EINVAL, f"it names an open descriptor whose file ('{path}') would be replaced; "
                      "name that file itself", given)
    if in_place:
        with open(path, "wb" if binary else "w") as fh:
            yield fh
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd, tmp = -1, ""
    for n in itertools.count():
        tmp = f"{path}.tmp{os.getpid()}-{n}"
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            if n >= 1000:
                raise
    try:
        with contextlib.suppress(OSError):
            mode = os.stat(path).st_mode
            if stat.S_ISREG(mode) and hasattr(os, "fchmod"):
                os.fchmod(fd, stat.S_IMODE(mode))
        with os.fdopen(fd, "wb" if binary else "w") as fh:
            fd = -1  # the file object owns it now
            yield fh
        durable_replace(tmp, path)
        tmp = ""  # renamed: the name may already be another writer's (a thread of this process) new temporary
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def atomic_write(path, data) -> None:
    """Writes data (str or bytes) to a temporary file in path's folder, then renames it over path (replacing()):
    a reader, or an interrupted run, sees the old file or the new one, never a partial one. The temporary file never
    outlives the call."""
    with replacing(path, binary=isinstance(data, (bytes, bytearray))) as fh:
        fh.write(data)
