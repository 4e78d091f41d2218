#include "sys/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tunectl {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path + ": " + strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::Internal("cannot write " + tmp + ": " + strerror(errno));
    out << content;
    if (!out.flush()) return Status::Internal("cannot write " + tmp + ": " + strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::Internal("cannot rename " + tmp + " to " + path + ": " + strerror(errno));
  return Status::Ok();
}

Status MakeDirs(const std::string& path, int mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Internal("cannot create directory " + path + ": " + ec.message());
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
  return Status::Ok();
}

Status EnsurePrivateDir(const std::string& path, long other_owner) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::Internal("cannot create directory " + path + ": " + strerror(errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Status::Internal("cannot stat " + path + ": " + strerror(errno));
  if (S_ISLNK(st.st_mode))
    return Status::FailedPrecondition(path +
                                      " is a symlink; refusing to use it (someone may have "
                                      "planted it): remove it or choose another path");
  if (!S_ISDIR(st.st_mode))
    return Status::FailedPrecondition(path + " exists and is not a directory");
  const bool ours = st.st_uid == ::geteuid() ||
                    (other_owner >= 0 && st.st_uid == static_cast<uid_t>(other_owner));
  if (!ours)
    return Status::FailedPrecondition(path + " is owned by uid " + std::to_string(st.st_uid) +
                                      ", not by this server's user; refusing to use it");
  if ((st.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return Status::FailedPrecondition(path + " is writable by group or others (mode " + mode +
                                      "); refusing to use it: chmod 700 it");
  }
  return Status::Ok();
}

Result<std::string> MakeTempDir(const std::string& prefix) {
  std::string templ = prefix + "XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return Status::Internal("cannot create a directory " + templ + ": " + strerror(errno));
  return templ;
}

Status WriteSecretFile(const std::string& path, const std::string& content) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return Status::FailedPrecondition(path +
                                      " is a symlink; refusing to write a secret through it");
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent))
    if (auto s = MakeDirs(parent.string(), 0700); !s.ok()) return s;
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Internal("cannot create " + tmp + ": " + strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::Internal("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = strerror(errno);
    ::unlink(tmp.c_str());
    return Status::Internal("cannot rename " + tmp + " to " + path + ": " + why);
  }
  return Status::Ok();
}

Result<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::getrandom(out.data() + done, n - done, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Status::Internal(std::string("getrandom: ") + strerror(errno));
    done += static_cast<size_t>(got);
  }
  return out;
}

std::string ClientConfigPath() {
  if (const char* p = std::getenv("TUNECTL_CONFIG"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x)
    return std::string(x) + "/tunectl/config";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/tunectl/config";
}

Result<FileLock> FileLock::Acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Internal("cannot open lock file " + path + ": " + strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    char buf[64] = {0};
    if (::pread(fd, buf, sizeof buf - 1, 0) > 0) holder = std::string(" (pid ") + buf + ")";
    ::close(fd);
    return Status::FailedPrecondition("another process holds " + path + holder);
  }
  std::string pid = std::to_string(getpid());
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tunectl
