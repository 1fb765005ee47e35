// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor's check of the cluster key files of [auth] (doctor_checks.hpp;
// rcnetctl(8) DOCTOR "auth-key", rcnetd(8) "TRUST"): each key file as rcnetd
// will read it, the way the unit hands it over (a file rcnetd's user opens,
// or a systemd credential's source), duplicate ids, and optional mode. A
// finding names the key id and the file, never a byte of the key.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "auth/key_file.hpp"
#include "doctor_checks.hpp"

namespace rcnet::rcnetctl::doctor {

namespace {

// The command that makes a key, as rcnetd.toml(5) gives it.
std::string make_key(const std::string& file) {
  return "(umask 077; head -c 32 /dev/urandom | base64 > " + file + ")";
}

std::string mode_text(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

std::string user_text(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr)
    return pw->pw_name;
  return "uid " + std::to_string(uid);
}

// read_key_file(3) of a file doctor may not own: rcnetd's user owns it, and
// read_key_file accepts only root and the caller as owners. Its bytes go
// through a private copy (a 0700 directory of doctor's own, removed at
// once, the buffer wiped), whose errors are told with `file`'s name.
Result<std::array<std::uint8_t, auth::kKeyBytes>> read_key_copy(const std::string& file) {
  std::array<char, 4096> buf{};
  ssize_t n = 0;
  {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
      return Error::from_errno(errno, file);
    n = ::read(fd, buf.data(), buf.size());
    const int err = errno;
    ::close(fd);
    if (n < 0)
      return Error::from_errno(err, file);
  }
  char dir[] = "/tmp/rcnetctl-key-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    ::explicit_bzero(buf.data(), buf.size());
    return Error::from_errno(errno, "mkdtemp /tmp/rcnetctl-key-XXXXXX");
  }
  const std::string copy = std::string(dir) + "/key";
  Result<std::array<std::uint8_t, auth::kKeyBytes>> out = Error::from_errno(EIO, "copy of " + file);
  const int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    const bool written = ::write(fd, buf.data(), static_cast<std::size_t>(n)) == n;
    ::close(fd);
    if (written)
      out = auth::read_key_file(copy);
  }
  ::explicit_bzero(buf.data(), buf.size());
  ::unlink(copy.c_str());
  ::rmdir(dir);
  if (!out) {
    Error e = out.error();
    for (std::size_t at = e.context.find(copy); at != std::string::npos;
         at = e.context.find(copy, at + file.size()))
      e.context.replace(at, copy.size(), file);
    return e;
  }
  return out;
}

// What config::load's error text says: the context alone when it is a
// validation's (it names what is wrong), else context and errno text.
std::string error_text(const Error& e) {
  return e.code == std::errc::invalid_argument ? e.context : e.message();
}

}  // namespace

void Doctor::check_auth() {
  const config::AuthConfig& a = cfg_.auth;
  if (a.mode == config::AuthMode::kOff)
    return;
  const std::string unit = unit_for(path_);
  std::map<int, int> listed;
  for (const config::AuthKeyRef& k : a.keys)
    ++listed[k.id];
  for (const auto& [id, n] : listed) {
    if (n > 1)
      add(kAuthKey, Status::kFail,
          "key id " + std::to_string(id) + " is listed " + std::to_string(n) +
              " times in auth.keys" + where("auth.keys") + ": a peer's REQ names a key by its id",
          "give each key an id of its own, 1..255, the same on every node");
  }
  for (std::size_t i = 0; i < a.keys.size(); ++i)
    check_auth_key(a.keys[i], i == 0, unit);
  if (a.mode == config::AuthMode::kOptional)
    add(kAuthKey, Status::kWarn,
        "auth.mode is \"optional\"" + where("auth.mode") + ": unproven peers are admitted",
        "switch to required once every node has the key: auth.mode = \"required\" on every "
        "node, then systemctl reload " +
            unit + " (rcnetctl connections shows no peer unproven)");
}

void Doctor::check_auth_key(const config::AuthKeyRef& k, bool first, const std::string& unit) {
  const std::string id = "key id " + std::to_string(k.id);
  const std::string role = first ? "this node proves with it" : "accepted from peers";
  const bool credential = k.file.find('/') == std::string::npos;
  std::string file = k.file;
  std::string what = id + ": " + k.file;
  if (credential && ::getenv("CREDENTIALS_DIRECTORY") != nullptr) {
    // Doctor itself runs under a unit with credentials: rcnetd's lookup.
    file = auth::resolve_key_path(k.file);
    what = id + ": credential " + k.file + " (" + file + ")";
  } else if (credential) {
    const std::string load = "LoadCredential=" + k.file + ":/etc/rcnet/" + k.file;
    auto src = host_.credential_source ? host_.credential_source(unit, k.file)
                                       : Result<std::optional<std::string>>(Error::from_errno(
                                             ENOSYS, "LoadCredential of " + unit));
    if (!src) {
      add(kAuthKey, Status::kWarn,
          id + ": \"" + k.file + "\" is a systemd credential, and which file " + unit +
              " loads for it is unknown: " +
              (src.error().code == std::errc::function_not_supported ? src.error().context
                                                                     : src.error().message()),
          "systemctl show -p LoadCredential " + unit + " should name " + k.file +
              "; doctor then checks that file");
      return;
    }
    if (!*src) {
      add(kAuthKey, Status::kFail,
          id + ": \"" + k.file + "\" (auth.keys" + where("auth.keys") +
              ") is a systemd credential, and " + unit +
              " loads none of that name: rcnetd would not find it in $CREDENTIALS_DIRECTORY",
          load + " in a drop-in of " + unit +
              " (/usr/share/doc/rcnet/rcnetd-auth.conf, rcnetd(8) TRUST), then systemctl "
              "daemon-reload and systemctl restart " +
              unit);
      return;
    }
    file = **src;
    what = id + ": credential " + k.file + " of " + unit + ", from " + file;
  }

  // rcnetd opens a key file without following a symbolic link; systemd
  // follows one to a credential's source.
  struct stat st {};
  if ((credential ? ::stat(file.c_str(), &st) : ::lstat(file.c_str(), &st)) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      add(kAuthKey, Status::kFail, what + " does not exist",
          "make the cluster's key once, on one node: " + make_key(file) +
              "; copy it to every node with its mode kept (scp -p), and list it in auth.keys "
              "there with the same id");
    } else if (err == EACCES) {
      add(kAuthKey, Status::kWarn, what + ": " + std::strerror(err), "run rcnetctl doctor as root");
    } else {
      add(kAuthKey, Status::kFail, what + ": " + std::strerror(err),
          "auth.keys must name a readable regular file");
    }
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    add(kAuthKey, Status::kFail, what + " is a symbolic link, which rcnetd does not follow",
        "name the file itself in auth.keys");
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    add(kAuthKey, Status::kFail, what + " is not a regular file",
        "a key file holds one line, the base64 of 32 random bytes: " + make_key(file));
    return;
  }
  const std::string mode = mode_text(st.st_mode);
  if ((st.st_mode & 077) != 0) {
    add(kAuthKey, Status::kFail,
        what + " is mode " + mode + ": readable by group or others, which rcnetd refuses",
        "chmod 0600 " + file);
    return;
  }

  // Who may own it. rcnetd accepts root and its own user; the unit runs it
  // as host_.unit_user, which cannot open a 0600 file of root's, so a file
  // rcnetd opens itself must be that user's. A credential's source is read
  // by systemd, as root: root's.
  const passwd* pw = host_.unit_user.empty() ? nullptr : ::getpwnam(host_.unit_user.c_str());
  const std::optional<uid_t> unit_uid =
      pw != nullptr ? std::optional<uid_t>(pw->pw_uid) : std::nullopt;
  const std::string owner = user_text(st.st_uid);
  if (credential) {
    if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
      add(kAuthKey, Status::kFail, what + " is owned by " + owner + ", not root",
          "chown root:root " + file);
      return;
    }
  } else if (unit_uid && st.st_uid != *unit_uid) {
    const std::string chown = "chown " + host_.unit_user + ":" + host_.unit_user + " " + file;
    if (st.st_uid == 0) {
      add(kAuthKey, Status::kFail,
          what + " is root's, mode " + mode + ": " + unit + " runs rcnetd as user " +
              host_.unit_user + ", which cannot open it",
          chown + ", or keep it root's and load it as a credential: LoadCredential=cluster.key:" +
              file + " in a drop-in of " + unit +
              " (/usr/share/doc/rcnet/rcnetd-auth.conf) and file = \"cluster.key\"");
    } else {
      add(kAuthKey, Status::kFail,
          what + " is owned by " + owner + ": rcnetd (user " + host_.unit_user + ") cannot open it",
          chown);
    }
    return;
  }

  // Its contents, as rcnetd reads them.
  auto key =
      st.st_uid == 0 || st.st_uid == ::geteuid() ? auth::read_key_file(file) : read_key_copy(file);
  if (!key) {
    const Error& e = key.error();
    // read_key_file's text names the file first; `what` has named it.
    std::string why = error_text(e);
    if (const std::string named = "key file " + file + ": "; why.starts_with(named))
      why.erase(0, named.size());
    if (e.code == std::errc::permission_denied) {
      add(kAuthKey, Status::kWarn, what + ": " + why, "run rcnetctl doctor as root");
      return;
    }
    add(kAuthKey, Status::kFail, what + ": " + why,
        "a key file holds one line, the base64 of 32 random bytes: copy the cluster's key from "
        "another node (scp -p), or make a new one for every node with " +
            make_key(file));
    return;
  }
  ::explicit_bzero(key->data(), key->size());
  add(kAuthKey, Status::kPass,
      what + ": owner " + owner + ", mode " + mode + ", " + std::to_string(auth::kKeyBytes) +
          " bytes; " + role);
}

}  // namespace rcnet::rcnetctl::doctor
