#ifndef H2RPC_BASE_STATUS_CODE_H_
#define H2RPC_BASE_STATUS_CODE_H_

#include "absl/strings/string_view.h"

namespace h2rpc {

// The canonical gRPC status codes, with the numeric values that go on the wire
// in `grpc-status` (doc/statuscodes.md in the gRPC repository).
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// Largest valid code; anything above it received from a peer maps to kUnknown.
inline constexpr int kMaxStatusCode = 16;

// Returns the upper-case name gRPC uses for `code` ("DEADLINE_EXCEEDED"), or
// "UNKNOWN_CODE" for a value outside the enum.
absl::string_view StatusCodeName(StatusCode code);

}  // namespace h2rpc

#endif  // H2RPC_BASE_STATUS_CODE_H_
