#ifndef H2RPC_RPC_INTERNAL_CLIENT_CONTROL_CALL_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CONTROL_CALL_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"

namespace h2rpc::internal {

// Calls a channel makes on its own behalf on a subchannel's connection
// (health checks, ORCA load reports), not the application's: they carry
// the channel's :authority, :scheme and user agent and nothing else. Owned
// by the channel, fixed once it is constructed.
struct ControlCallSettings {
  std::string authority;
  absl::string_view scheme;
  std::string user_agent;
};

// Starts a call to `method_path` (a literal) sending `request` and
// half-closing, on `connection` (established), in `stream` (not active,
// reset here), whose events go to `observer`. Loop thread. Not OK when the
// request does not serialize: nothing is started.
Status StartControlCall(const ControlCallSettings& settings,
                        absl::string_view method_path,
                        const google::protobuf::MessageLite& request,
                        transport::http2::ClientStream::Observer* observer,
                        transport::http2::ClientStream* stream,
                        transport::http2::ClientSession* connection);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CONTROL_CALL_H_
