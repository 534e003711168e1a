// Where the writers of the library and of the ets tool put a file they replace: they write a temporary beside the
// destination and rename it into place (a reader never sees half a file). Renaming over a symlink would replace the
// user's link, and over a pipe or device would turn it into a regular file, so both are resolved first.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace ets::detail {

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

}  // namespace ets::detail
