#ifndef H2RPC_TEST_UTIL_GOOGLE_RPC_STATUS_H_
#define H2RPC_TEST_UTIL_GOOGLE_RPC_STATUS_H_

#include <string>
#include <utility>
#include <vector>

namespace h2rpc::testing {

// A google.rpc.Status in its wire form (what Status::details() carries):
// `code`, and one google.protobuf.Any per (type URL, value) of `details`.
// Built with protobuf's own coded stream and Any (Debian ships no
// google/rpc/status.proto).
std::string EncodeGoogleRpcStatus(
    int code, const std::vector<std::pair<std::string, std::string>>& details);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_GOOGLE_RPC_STATUS_H_
