// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "auth/key_file.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

namespace rcnet::auth {

std::string resolve_key_path(const std::string& file) {
  if (file.find('/') != std::string::npos)
    return file;
  const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
  if (dir == nullptr || *dir == '\0')
    return file;
  return std::string(dir) + "/" + file;
}

namespace {

// The longest file accepted: 44 characters of base64, CRLF, and some slack
// for whitespace a hand edit leaves. Larger is not a key file.
constexpr std::size_t kMaxFile = 128;

}  // namespace

Result<KeyBytes> read_key_file(const std::string& file) {
  const std::string path = resolve_key_path(file);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return Error::from_errno(errno, fmt::format("key file {}", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return Error::from_errno(e, fmt::format("key file {}: fstat", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::invalid(fmt::format("key file {}: not a regular file", path));
  }
  // A systemd credential is the service manager's copy in a directory
  // only the unit reads; on a tmpfs with ACLs it shows group bits (0440):
  // there only others' bits count.
  const bool credential = path != file;
  const mode_t forbidden = credential ? 007 : 077;
  if ((st.st_mode & forbidden) != 0) {
    ::close(fd);
    return Error::invalid(fmt::format("key file {}: mode {:04o} lets {} at it (chmod 600 {})", path,
                                      st.st_mode & 07777, credential ? "others" : "group or others",
                                      path));
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    ::close(fd);
    return Error::invalid(
        fmt::format("key file {}: owned by uid {}, neither root nor rcnetd's user (uid {}): "
                    "chown it to the user rcnetd runs as",
                    path, st.st_uid, ::geteuid()));
  }
  std::array<char, kMaxFile + 1> text{};
  std::size_t len = 0;
  while (len < text.size()) {
    const ssize_t n = ::read(fd, text.data() + len, text.size() - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += static_cast<std::size_t>(n);
  }
  ::close(fd);
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ' ||
                     text[len - 1] == '\t'))
    --len;
  KeyBytes key{};
  std::size_t key_len = 0;
  const char* end = nullptr;
  const bool decoded = len <= kMaxFile &&
                       sodium_base642bin(key.data(), key.size(), text.data(), len, nullptr,
                                         &key_len, &end, sodium_base64_VARIANT_ORIGINAL) == 0 &&
                       key_len == kKeyBytes && end == text.data() + len;
  sodium_memzero(text.data(), text.size());
  if (!decoded) {
    sodium_memzero(key.data(), key.size());
    return Error::invalid(
        fmt::format("key file {}: not one line of base64 of {} bytes (make one with: head -c {} "
                    "/dev/urandom | base64 > {})",
                    path, kKeyBytes, kKeyBytes, path));
  }
  return key;
}

}  // namespace rcnet::auth
