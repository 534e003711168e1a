// Where the writers of the library and of the ets tool put a file they replace: they write a temporary beside the
// destination and rename it into place (a reader never sees half a file). Renaming over a symlink would replace the
// user's link, and over a pipe or device would turn it into a regular file, so both are resolved first.
//
// FileReplacement is that procedure, once for every writer: resolve the destination, hand out the temporary, and on
// commit() flush it to the disk, give it the old file's mode, rename it and flush the folder. Without the two flushes
// a crash or power cut soon after a save can leave an empty or missing file where the old one was (XFS, ext4 with
// noauto_da_alloc): a checkpoint or a model would be lost, not just the last epoch's update.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#if defined(_WIN32)
#include <io.h>
#else
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

/// Follows `path` to the end of its chain of symlinks (a dangling last link included: the file is created where it
/// points). A link that ends at a pipe, device or socket is left as it is: it is written in place through the link
/// (the kernel's own links, /dev/stdout -> /proc/self/fd/1 -> "pipe:[…]", name no path to follow). Returns false,
/// with `why` set, for a loop of links or a link that cannot be read.
inline bool follow_output_links(std::string& path, std::string& why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (!fs::is_symlink(p, ec) || is_stream_output(p.string())) {
      path = p.string();
      return true;
    }
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
  int err = 0;
  if (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP && errno != EROFS) err = errno;
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
  if (!follow_output_links(target, why)) return why;
  std::error_code ec;
  if (std::filesystem::is_directory(target, ec)) return "it is a directory";
  in_place = is_stream_output(target);
  if (in_place && !streams_ok) return "it is not a regular file (a pipe or device)";
  return "";
}

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
  const std::string probe = temporary_path(target, ".probe");
  const int slot = list_temporary(probe);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const int err = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  unlist_temporary(slot);
  return fd < 0 ? std::strerror(err) : "";
#endif
}

/// One replacement of a whole file by a writer (a model, a trace file, a checkpoint, the ets tool's outputs). The
/// writer writes write_path() by any means (a stream, zlib, a file descriptor), closes it, then calls commit(); or
/// hands the whole content to write_all().
/// - A symlink is followed to the end of its chain (its target is replaced, the link stays).
/// - A pipe, device or socket is written in place (write_path() is the destination itself), unless refused with
///   `streams_ok = false` (a checkpoint must be read back).
/// - A regular file is written to a temporary of this replacement's own beside it, then commit() syncs it, gives it
///   the replaced file's permissions, renames it over the destination and syncs the folder.
/// - Without commit() (an exception on the way) the temporary is removed: nothing half-written is left. It is also
///   listed in live_temporaries, for a program's signal handler to remove (remove_live_temporaries).
/// Every failure throws ets::Error with Errc::io, `error_id` and a message naming `what` and the path as given.
class FileReplacement {
 public:
  /// `what` names the file in messages ("model file"); `tag` marks the temporary ("<path><tag>-<pid>-<n>").
  FileReplacement(std::string path, const char* error_id, std::string what, const char* tag = ".tmp",
                  bool streams_ok = true)
      : path_(std::move(path)), id_(error_id), what_(std::move(what)) {
    bool in_place = false;
    const std::string why = resolve_destination(path_, streams_ok, target_, in_place);
    if (!why.empty()) ETS_THROW(Errc::io, id_, "cannot write {} '{}': {}", what_, path_, why);
    write_path_ = in_place ? target_ : temporary_path(target_, tag);
    if (!in_place) slot_ = list_temporary(write_path_);
  }
  FileReplacement(const FileReplacement&) = delete;
  FileReplacement& operator=(const FileReplacement&) = delete;
  ~FileReplacement() {
    if (!done_ && !in_place()) {
      std::error_code ignored;
      std::filesystem::remove(write_path_, ignored);
    }
    unlist_temporary(slot_);
  }

  /// Where the writer writes: the temporary, or the pipe or device itself.
  const std::string& write_path() const noexcept { return write_path_; }
  /// The file replaced on commit(): `path` with its symlinks followed.
  const std::string& target() const noexcept { return target_; }
  /// Whether write_path() is the destination itself (a pipe or device): commit() then has nothing to move.
  bool in_place() const noexcept { return write_path_ == target_; }

  /// Writes `size` bytes at `data` as the whole file, then commit(). A failed open or write (a full disk) throws,
  /// and the destination keeps its old content.
  void write_all(const void* data, std::size_t size) {
    errno = 0;
    std::ofstream f(write_path_, std::ios::binary | std::ios::trunc);
    if (!f) fail_write();
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    f.close();
    if (f.fail()) fail_write();
    commit();
  }

  /// Moves the written temporary into place, durably. Call once the writer has closed write_path().
  void commit() {
    if (in_place()) {
      done_ = true;
      return;
    }
    if (const int err = sync_to_disk(write_path_, false))
      ETS_THROW(Errc::io, id_, "cannot write {} '{}': flushing it to the disk failed: {}", what_, path_,
                std::strerror(err));
    keep_permissions(target_, write_path_);
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
    // errno is the failing call's when the stream's last system call failed; a stream can fail without one.
    const int err = errno;
    ETS_THROW(Errc::io, id_, "cannot write {} '{}': {}", what_, path_,
              err != 0 ? std::strerror(err) : "the write failed (a full disk?)");
  }

  std::string path_;
  const char* id_;
  std::string what_;
  std::string target_;
  std::string write_path_;
  bool done_ = false;
  int slot_ = -1;  // in live_temporaries
};

}  // namespace ets::detail
