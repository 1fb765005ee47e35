// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Result<T>: the error type used at every seam of librcnet. No exception
// crosses an event-loop callback (docs/design.md "Conventions" item 3); C calls are converted by
// their own documented contract with the helpers below.

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace rcnet {

// An error: an errno-style code plus the context a log line needs
// ("rdma_resolve_addr 10.99.0.2:7471").
struct Error {
  std::error_code code;
  std::string context;

  static Error from_errno(int err, std::string context) {
    return Error{std::error_code(err, std::generic_category()), std::move(context)};
  }
  // An error that is not an errno value (validation, protocol); code is EINVAL.
  static Error invalid(std::string context) { return from_errno(EINVAL, std::move(context)); }
  std::string message() const { return context + ": " + code.message(); }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_{};
  bool ok_ = true;
};

// --- Converting C calls by their documented error contract -----------------
// rdma_* (librdmacm): return -1 and set errno (rdma_cm(7)).
inline Result<void> check_rdma(int rc, const char* what) {
  if (rc == 0)
    return {};
  return Error::from_errno(rc == -1 ? errno : -rc, what);
}
// ibv_modify_*, ibv_post_*, ibv_destroy_*, ibv_req_notify_cq: return 0 or the
// errno value itself (ibv_modify_qp(3), ibv_post_send(3), ibv_destroy_qp(3)).
inline Result<void> check_ibv_rc(int rc, const char* what) {
  if (rc == 0)
    return {};
  return Error::from_errno(rc < 0 ? -rc : rc, what);
}
// ibv_create_*/ibv_alloc_*/ibv_reg_mr: return NULL and set errno.
template <class P>
inline Result<P*> check_ibv_ptr(P* p, const char* what) {
  if (p != nullptr)
    return p;
  return Error::from_errno(errno != 0 ? errno : ENOMEM, what);
}

}  // namespace rcnet
