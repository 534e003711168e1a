// Where the writers of the library and of the ets tool put a file they replace: they write a temporary beside the
// destination and rename it into place (a reader never sees half a file). Renaming over a symlink would replace the
// user's link, and over a pipe or device would turn it into a regular file, so both are resolved first.
//
// FileReplacement is that procedure, once for every writer: resolve the destination, create the temporary, and on
// commit() flush it to the disk, give it the old file's mode, rename it and flush the folder. The temporary is
// created new (O_EXCL, O_NOFOLLOW: a file or symlink someone else put under its name is never written through, the
// next name is taken instead) and written through the descriptor that created it, close-on-exec. Without the two flushes
// a crash or power cut soon after a save can leave an empty or missing file where the old one was (XFS, ext4 with
// noauto_da_alloc): a checkpoint or a model would be lost, not just the last epoch's update.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#if defined(_WIN32)
#include <fcntl.h>
#include <io.h>
#include <sys/stat.h>
#else
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#endif

#include "ets/detail/temporary_path.hpp"
#include "ets/error.hpp"

namespace ets::detail {

/// The temporaries of the FileReplacements alive in this process, listed for a program's signal handler: a process
/// ended by a signal (Ctrl-C) runs no destructor, so without remove_live_temporaries() it would leave
/// "<path><tag>-<pid>-<n>" beside the destination. A fixed table, so that the removal is async-signal-safe: a path
/// longer than a slot, or a writer beyond kSlots at once, is not listed (its temporary is still removed on every way
/// out but a signal). Constant-initialised: no guard a handler could block on.
struct LiveTemporaries {
  static constexpr int kSlots = 16;
  static constexpr std::size_t kPathMax = 4096;
  std::atomic<int> state[kSlots];  // 0 free, 1 being filled in, 2 listed
  char path[kSlots][kPathMax];
};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads the table's states");
inline LiveTemporaries live_temporaries{};

/// Lists `path`; returns its slot for unlist_temporary, or -1 where it could not be listed.
inline int list_temporary(const std::string& path) noexcept {
  if (path.size() >= LiveTemporaries::kPathMax) return -1;
  for (int i = 0; i < LiveTemporaries::kSlots; ++i) {
    int free_slot = 0;
    if (!live_temporaries.state[i].compare_exchange_strong(free_slot, 1)) continue;
    std::memcpy(live_temporaries.path[i], path.c_str(), path.size() + 1);
    live_temporaries.state[i].store(2);
    return i;
  }
  return -1;
}

inline void unlist_temporary(int slot) noexcept {
  if (slot >= 0) live_temporaries.state[slot].store(0);
}

/// Removes every listed temporary. Async-signal-safe (atomic loads and unlink): for a handler of SIGINT / SIGTERM
/// that then ends the process, as the ets tool's does.
inline void remove_live_temporaries() noexcept {
  for (int i = 0; i < LiveTemporaries::kSlots; ++i)
    if (live_temporaries.state[i].load() == 2) {
#if defined(_WIN32)
      ::_unlink(live_temporaries.path[i]);
#else
      ::unlink(live_temporaries.path[i]);
#endif
    }
}

/// Whether `path` exists and is neither a regular file nor a directory (a pipe, device or socket): written in place,
/// since renaming a temporary over it would replace it.
inline bool is_stream_output(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

/// Whether `p` names an open file descriptor: /proc/<pid or self>/fd/<n> or /dev/fd/<n> (the links behind
/// /dev/stdout and /dev/stderr).
inline bool names_descriptor(const std::filesystem::path& p) {
  const std::string s = p.lexically_normal().generic_string();
  const auto digits_after = [&](std::size_t at) {
    return at < s.size() && s.find_first_not_of("0123456789", at) == std::string::npos;
  };
  if (s.rfind("/dev/fd/", 0) == 0) return digits_after(8);
  if (s.rfind("/proc/", 0) != 0) return false;
  const std::size_t fd = s.find("/fd/", 6);
  return fd != std::string::npos && s.find('/', 6) == fd && digits_after(fd + 4);
}

/// Follows `path` to the end of its chain of symlinks (a dangling last link included: the file is created where it
/// points). A link that ends at a pipe, device or socket is left as it is: it is written in place through the link
/// (the kernel's own links, /dev/stdout -> /proc/self/fd/1 -> "pipe:[…]", name no path to follow). Returns false,
/// with `why` set, for a loop of links or a link that cannot be read. `via_descriptor`, when given, is set to whether
/// the chain went through a link naming an open descriptor (names_descriptor).
inline bool follow_output_links(std::string& path, std::string& why, bool* via_descriptor = nullptr) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = path;
  if (via_descriptor) *via_descriptor = false;
  for (int hops = 0; hops < 40; ++hops) {
    if (!fs::is_symlink(p, ec) || is_stream_output(p.string())) {
      path = p.string();
      return true;
    }
    if (via_descriptor && names_descriptor(p)) *via_descriptor = true;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) {
      why = "cannot read the symlink '" + p.string() + "': " + ec.message();
      return false;
    }
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  why = "'" + path + "' is a loop of symlinks";
  return false;
}

/// Gives the temporary `tmp` the permissions of the file `target` it is about to replace, so that rewriting a
/// private file does not widen its mode. Nothing when `target` does not exist yet (the umask's default stays).
inline void keep_permissions(const std::string& target, const std::string& tmp) noexcept {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (ec || !fs::is_regular_file(st)) return;
  fs::permissions(tmp, st.permissions(), fs::perm_options::replace, ec);
}

/// keep_permissions for the temporary open as `fd` (fchmod: a name swapped for a symlink meanwhile is not followed).
inline void keep_permissions(const std::string& target, int fd) noexcept {
#if defined(_WIN32)
  (void)target;
  (void)fd;
#else
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  (void)::fchmod(fd, st.st_mode & 07777);
#endif
}

/// Flushes the open file `fd` to the disk; errno, or 0 (as sync_to_disk).
inline int sync_fd(int fd) noexcept {
#if defined(_WIN32)
  (void)fd;
  return 0;
#else
  if (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP && errno != EROFS) return errno;
  return 0;
#endif
}

/// Flushes the file or folder at `path` to the disk. Returns errno on a failure that may lose data, 0 otherwise: a
/// file system that cannot sync (EINVAL, ENOTSUP: pipes, some network and virtual file systems) has nothing to lose.
inline int sync_to_disk(const std::string& path, bool folder) noexcept {
#if defined(_WIN32)
  (void)path;
  (void)folder;
  return 0;  // MoveFileEx, behind std::filesystem::rename, is the durable primitive there
#else
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
  if (fd < 0) return folder ? 0 : errno;  // a folder that cannot be opened to sync is not the file's loss
  const int err = sync_fd(fd);
  ::close(fd);
  return folder ? 0 : err;
#endif
}

/// Where a replacement of `path` writes, resolved once for the writers and for the check before a long computation
/// (unwritable_reason). Sets `target` (symlinks followed to the end of their chain) and `in_place` (a pipe, device or
/// socket, written through directly). Returns "" when it may be replaced, else why not: no path, a loop of links, a
/// directory, or a pipe or device where `streams_ok` is false (a checkpoint must be read back).
inline std::string resolve_destination(const std::string& path, bool streams_ok, std::string& target,
                                       bool& in_place) {
  if (path.empty()) return "no path given";
  target = path;
  std::string why;
  bool via_descriptor = false;
  if (!follow_output_links(target, why, &via_descriptor)) return why;
  std::error_code ec;
  if (std::filesystem::is_directory(target, ec)) return "it is a directory";
  in_place = is_stream_output(target);
  if (in_place && !streams_ok) return "it is not a regular file (a pipe or device)";
  // /dev/stdout redirected to a log (>> log): replacing that file would drop what it held and what the process
  // writes to the descriptor afterwards (into the replaced file); writing it in place would truncate or interleave
  if (via_descriptor && !in_place)
    return "it names an open descriptor whose file ('" + target + "') would be replaced; name that file itself";
  // The temporary's name is cut to fit (temporary_path), the destination's is not: a name the folder cannot hold
  // is refused here, before minutes of work, not at the rename
  const std::filesystem::path name = std::filesystem::path(target).filename();
  if (name.native().size() > kMaxFileName) return std::strerror(ENAMETOOLONG);
  return "";
}

/// Names tried for a temporary beside a destination (its probe, or a FileReplacement's file) before giving up: a
/// name is taken by a file a killed process left, or one of another process with the same pid (another container).
inline constexpr int kTemporaryNameAttempts = 100;

/// Whether a FileReplacement of `path` would succeed as far as can be told without writing it: "" when it would,
/// else the reason. Beyond resolve_destination: a pipe or device must be writable; otherwise the target's folder
/// must take a new file, tested with a temporary of its own name (created empty, removed), so no file of the user's
/// is touched. For a place to write found out before minutes of work, not after.
inline std::string unwritable_reason(const std::string& path, bool streams_ok) {
  std::string target;
  bool in_place = false;
  std::string why = resolve_destination(path, streams_ok, target, in_place);
  if (!why.empty()) return why;
#if defined(_WIN32)
  (void)in_place;
  return "";  // no probe there: the writer's own open reports it
#else
  if (in_place) return ::access(target.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  // A folder with the sticky bit (/tmp, a shared scratch folder) takes new files from anyone, but lets only the
  // owner of a file, of the folder, or root replace it: the rename at the end would fail after all the work.
  struct stat file_st {}, dir_st {};
  const std::filesystem::path parent = std::filesystem::path(target).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  if (::lstat(target.c_str(), &file_st) == 0 && ::stat(folder.c_str(), &dir_st) == 0 && (dir_st.st_mode & S_ISVTX) &&
      ::geteuid() != 0 && file_st.st_uid != ::geteuid() && dir_st.st_uid != ::geteuid())
    return "it belongs to another user, in a folder with the sticky bit (only its owner may replace it)";
  // The probe: a temporary of its own name, created empty and removed. A name taken is not a reason to refuse:
  // the next name is tried, as the writer does.
  int fd = -1, err = 0;
  for (int attempt = 0; attempt < kTemporaryNameAttempts; ++attempt) {
    const std::string probe = temporary_path(target, ".probe");
    const int slot = list_temporary(probe);
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    err = errno;
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
    }
    unlist_temporary(slot);
    if (fd >= 0 || err != EEXIST) break;
  }
  return fd < 0 ? std::strerror(err) : "";
#endif
}

/// One replacement of a whole file by a writer (a model, a trace file, a checkpoint, the ets tool's outputs). The
/// writer writes through open_for_write() (a descriptor of its own: a stream, zlib's gzdopen), closes it, then calls
/// commit(); or hands the whole content to write_all().
/// - A symlink is followed to the end of its chain (its target is replaced, the link stays).
/// - A pipe, device or socket is written in place (write_path() is the destination itself), unless refused with
///   `streams_ok = false` (a checkpoint must be read back).
/// - A regular file is written to a temporary of this replacement's own beside it, created by the constructor with
///   O_CREAT | O_EXCL | O_NOFOLLOW (mode 0666 less the umask, as any new file): a name that exists already, a file or
///   a symlink someone planted, is never opened; the next name is tried, up to kNameAttempts. commit() syncs it, gives
///   it the replaced file's permissions, renames it over the destination and syncs the folder.
/// - Every descriptor is close-on-exec: a process the host starts meanwhile does not inherit it.
/// - Without commit() (an exception on the way) the temporary is removed: nothing half-written is left. It is also
///   listed in live_temporaries, for a program's signal handler to remove (remove_live_temporaries).
/// Every failure throws ets::Error with Errc::io, `error_id` and a message naming `what` and the path as given.
class FileReplacement {
 public:
  /// Names tried for the temporary before giving up (each taken one is skipped).
  static constexpr int kNameAttempts = kTemporaryNameAttempts;

  /// `what` names the file in messages ("model file"); `tag` marks the temporary ("<path><tag>-<pid>-<n>").
  FileReplacement(std::string path, const char* error_id, std::string what, const char* tag = ".tmp",
                  bool streams_ok = true)
      : path_(std::move(path)), id_(error_id), what_(std::move(what)) {
    bool in_place = false;
    const std::string why = resolve_destination(path_, streams_ok, target_, in_place);
    if (!why.empty()) ETS_THROW(Errc::io, id_, "cannot write {} '{}': {}", what_, path_, why);
    if (in_place) {
      write_path_ = target_;
      return;
    }
    for (int attempt = 0;; ++attempt) {
      write_path_ = temporary_path(target_, tag);
      slot_ = list_temporary(write_path_);  // before it exists: a signal right after the open still removes it
#if defined(_WIN32)
      fd_ = ::_open(write_path_.c_str(), _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY | _O_NOINHERIT,
                    _S_IREAD | _S_IWRITE);
#else
      fd_ = ::open(write_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
#endif
      if (fd_ >= 0) return;
      const int err = errno;
      unlist_temporary(slot_);
      slot_ = -1;
      // EEXIST: the name is taken, by a file or a symlink (O_CREAT | O_EXCL never follows one): the next name
      if (err != EEXIST || attempt + 1 >= kNameAttempts)
        ETS_THROW(Errc::io, id_, "cannot write {} '{}': {}", what_, path_,
                  err == EEXIST ? "no free name for a temporary beside it" : std::strerror(err));
    }
  }
  FileReplacement(const FileReplacement&) = delete;
  FileReplacement& operator=(const FileReplacement&) = delete;
  ~FileReplacement() {
    close_fd();
    if (!done_ && !in_place()) {
      std::error_code ignored;
      std::filesystem::remove(write_path_, ignored);
    }
    unlist_temporary(slot_);
  }

  /// Where the writer writes: the temporary, or the pipe or device itself. Write through open_for_write(): opening
  /// the temporary again by its name would follow whatever was put there since.
  const std::string& write_path() const noexcept { return write_path_; }
  /// The file replaced on commit(): `path` with its symlinks followed.
  const std::string& target() const noexcept { return target_; }
  /// Whether write_path() is the destination itself (a pipe or device): commit() then has nothing to move.
  bool in_place() const noexcept { return write_path_ == target_; }
  /// The temporary this replacement created and holds open (close-on-exec), until commit(); -1 when in place.
  int fd() const noexcept { return fd_; }

  /// A new descriptor for the writer to write the whole file through, close-on-exec, which the writer closes
  /// (gzdopen, fdopen take it over) before commit(): a duplicate of fd(), or the pipe or device in place opened for
  /// writing. -1 with errno set on a failure.
  int open_for_write() const noexcept {
#if defined(_WIN32)
    if (fd_ >= 0) return ::_dup(fd_);
    return ::_open(write_path_.c_str(), _O_WRONLY | _O_CREAT | _O_TRUNC | _O_BINARY | _O_NOINHERIT,
                   _S_IREAD | _S_IWRITE);
#else
    if (fd_ >= 0) return ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    return ::open(write_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
#endif
  }

  /// Writes `size` bytes at `data` as the whole file, then commit(). A failed open or write (a full disk) throws,
  /// and the destination keeps its old content.
  void write_all(const void* data, std::size_t size) {
    errno = 0;
    const int fd = open_for_write();
    if (fd < 0) fail_write();
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const unsigned chunk = static_cast<unsigned>(size < (std::size_t{1} << 30) ? size : std::size_t{1} << 30);
#if defined(_WIN32)
      const auto n = ::_write(fd, p, chunk);
#else
      const auto n = ::write(fd, p, chunk);
#endif
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : 0;
        close_descriptor(fd);
        errno = err;
        fail_write();
      }
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    errno = 0;
    if (close_descriptor(fd) != 0) fail_write();
    commit();
  }

  /// Moves the written temporary into place, durably. Call once the writer has closed its descriptor.
  void commit() {
    if (in_place()) {
      done_ = true;
      return;
    }
#if defined(_WIN32)
    close_fd();  // a file open there cannot be renamed
    keep_permissions(target_, write_path_);
#else
    if (const int err = sync_fd(fd_))
      ETS_THROW(Errc::io, id_, "cannot write {} '{}': flushing it to the disk failed: {}", what_, path_,
                std::strerror(err));
    keep_permissions(target_, fd_);
    close_fd();
#endif
    std::error_code ec;
    std::filesystem::rename(write_path_, target_, ec);  // replaces an existing file, as POSIX rename() does
    if (ec) ETS_THROW(Errc::io, id_, "cannot move {} into place at '{}': {}", what_, path_, ec.message());
    done_ = true;
    unlist_temporary(slot_);  // renamed: nothing left for a signal handler to remove
    slot_ = -1;
    const std::filesystem::path folder = std::filesystem::path(target_).parent_path();
    sync_to_disk(folder.empty() ? std::string(".") : folder.string(), true);
  }

 private:
  [[noreturn]] void fail_write() const {
    // errno is the failing call's when the last system call failed; a write can fail without one.
    const int err = errno;
    ETS_THROW(Errc::io, id_, "cannot write {} '{}': {}", what_, path_,
              err != 0 ? std::strerror(err) : "the write failed (a full disk?)");
  }

  static int close_descriptor(int fd) noexcept {
#if defined(_WIN32)
    return ::_close(fd);
#else
    return ::close(fd);
#endif
  }
  void close_fd() noexcept {
    if (fd_ >= 0) close_descriptor(fd_);
    fd_ = -1;
  }

  std::string path_;
  const char* id_;
  std::string what_;
  std::string target_;
  std::string write_path_;
  int fd_ = -1;  // the temporary, created and held open by the constructor
  bool done_ = false;
  int slot_ = -1;  // in live_temporaries
};

}  // namespace ets::detail
