#ifndef H2RPC_RPC_UNARY_DONE_H_
#define H2RPC_RPC_UNARY_DONE_H_

#include "absl/strings/string_view.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {

// What a UnaryDone completes: the server's unary call.
class UnaryCompletion {
 public:
  // Any thread, once per call: the handler finished with `status`.
  virtual void HandlerDone(const Status& status) = 0;

 protected:
  ~UnaryCompletion() = default;
};

}  // namespace internal

// Finishes a callback-style unary call: the handler fills the response, then
// calls done(status) exactly once, from any thread, then or later. Move-only
// (pass it on with std::move). Misuse is reported (see
// rpc/internal/common/misuse.h: a debug build aborts with the message, naming
// the call's method): calling it a second time (or after it was moved from) is
// ignored in optimized builds; destroying it without calling it fails the call
// with INTERNAL, so a dropped UnaryDone never leaves a call hanging (nor
// Server::Shutdown waiting for it).
class UnaryDone {
 public:
  // Made by the server, one per call, for the call's handler. `method` (the
  // server's copy of the path) names the call in misuse reports.
  UnaryDone(internal::UnaryCompletion& call, absl::string_view method)
      : call_(&call), method_(method) {}
  UnaryDone(UnaryDone&& other) noexcept
      : call_(other.call_), method_(other.method_) {
    other.call_ = nullptr;
  }
  // Reports a dropped UnaryDone if this one was not called yet.
  UnaryDone& operator=(UnaryDone&& other) noexcept;
  UnaryDone(const UnaryDone&) = delete;
  UnaryDone& operator=(const UnaryDone&) = delete;
  ~UnaryDone();

  void operator()(const Status& status);

 private:
  void Dropped();

  internal::UnaryCompletion* call_;  // null once called or moved from
  absl::string_view method_;         // the server's copy of the method path
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_UNARY_DONE_H_
