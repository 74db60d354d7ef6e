#ifndef H2RPC_BASE_STATUS_H_
#define H2RPC_BASE_STATUS_H_

#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "base/status_code.h"

namespace h2rpc {

// The outcome of an RPC or of a transport operation: a gRPC status code, a
// human-readable message (sent as `grpc-message`) and optional binary details
// (sent as `grpc-status-details-bin`, usually a serialized google.rpc.Status).
//
// An OK status holds empty strings and never allocates.
class [[nodiscard]] Status {
 public:
  // OK.
  Status() = default;
  Status(StatusCode code, std::string message, std::string details = {})
      : code_(code),
        message_(std::move(message)),
        details_(std::move(details)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& details() const { return details_; }

  // "DEADLINE_EXCEEDED: message" (or "OK"), for logs and test failures.
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_ &&
           a.details_ == b.details_;
  }
  friend bool operator!=(const Status& a, const Status& b) { return !(a == b); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string details_;
};

}  // namespace h2rpc

#endif  // H2RPC_BASE_STATUS_H_
