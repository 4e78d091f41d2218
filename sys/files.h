// Small file-system helpers (effects; not for core/). Errors come back as Status.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace tunectl {

Result<std::string> ReadFile(const std::string& path);
// Writes via a temporary file and rename, so readers never see a partial file.
Status WriteFileAtomic(const std::string& path, const std::string& content);
Status MakeDirs(const std::string& path, int mode = 0755);
// A directory only its owner may use: made 0700 when missing (its parent must exist); an existing
// one must be a real directory (a symlink is refused, never followed), owned by this process's
// user or by `other_owner` (-1: none), and not writable by group or others. For directories other
// users could plant beforehand (a socket directory, anything under /tmp).
Status EnsurePrivateDir(const std::string& path, long other_owner = -1);
// A fresh directory `<prefix>XXXXXX` with a random suffix, mode 0700 (mkdtemp): nobody can have
// made it beforehand. Returns its path.
Result<std::string> MakeTempDir(const std::string& prefix);
// Writes a file only its owner may read (0600): a temporary file made with O_EXCL|O_NOFOLLOW,
// fsynced, renamed over `path`; a symlink at `path` is refused. Parent directories are made 0700.
Status WriteSecretFile(const std::string& path, const std::string& content);
// `n` bytes from the kernel's CSPRNG (getrandom).
Result<std::string> RandomBytes(size_t n);
// Where the CLI's contexts live: $TUNECTL_CONFIG, else $XDG_CONFIG_HOME/tunectl/config, else
// ~/.config/tunectl/config.
std::string ClientConfigPath();

// An exclusive advisory lock (flock) on a file, held for the object's lifetime.
class FileLock {
 public:
  // Fails with FailedPrecondition when another process holds the lock.
  static Result<FileLock> Acquire(const std::string& path);
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace tunectl
