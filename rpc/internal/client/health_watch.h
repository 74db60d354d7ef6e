#ifndef H2RPC_RPC_INTERNAL_CLIENT_HEALTH_WATCH_H_
#define H2RPC_RPC_INTERNAL_CLIENT_HEALTH_WATCH_H_

#include <string>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "rpc/internal/client/control_call.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"

namespace h2rpc::internal {

// What a channel's health checks ask for. Owned by the channel.
struct HealthCheckSettings {
  // `healthCheckConfig.serviceName` ("": the server as a whole).
  std::string service_name;
  // The channel's.
  const ControlCallSettings* call;
};

// Client-side health checking (gRPC's A17) of one connection: a
// grpc.health.v1.Health/Watch call for one service, whose responses say
// whether the backend serves. Reused across connections; one call at a
// time. Loop thread only.
class HealthWatch final : private transport::http2::ClientStream::Observer {
 public:
  class Listener {
   public:
    // A response: SERVING (`serving`), or not, `why` (UNAVAILABLE) naming
    // the status the backend sent.
    virtual void OnHealthChanged(bool serving, const Status& why) = 0;
    // The call ended with `status`; `cancelled`: by Cancel(). The watch
    // may be started again once this has returned, not from inside.
    virtual void OnHealthWatchEnded(const Status& status, bool cancelled) = 0;

   protected:
    ~Listener() = default;
  };

  // `settings` and `listener` must outlive the watch.
  HealthWatch(const HealthCheckSettings* settings, Listener* listener)
      : settings_(settings), listener_(listener) {}
  HealthWatch(const HealthWatch&) = delete;
  HealthWatch& operator=(const HealthWatch&) = delete;

  // Starts the call on `connection` (established) unless one is still in
  // progress (active()). The outcome, even an immediate failure, is
  // reported later or from inside this call.
  void Start(transport::http2::ClientSession* connection);
  // Ends the call in progress, if any: no more OnHealthChanged, and
  // OnHealthWatchEnded with `cancelled` (which may come later: a stream
  // cancelled ends when its connection says so).
  void Cancel();
  // A call is in progress (until OnHealthWatchEnded).
  bool active() const { return stream_.active(); }

 private:
  Status OnMessage(absl::string_view message, bool compressed) override;
  void OnClose(const Status& status, Metadata& trailing) override;

  const HealthCheckSettings* const settings_;
  Listener* const listener_;
  transport::http2::ClientStream stream_;
  bool cancelled_ = false;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_HEALTH_WATCH_H_
