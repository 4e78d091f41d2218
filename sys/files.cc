#include "sys/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
