#ifndef H2RPC_RPC_INTERNAL_CLIENT_SUBCHANNEL_H_
#define H2RPC_RPC_INTERNAL_CLIENT_SUBCHANNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/connectivity_state.h"
#include "rpc/internal/call_metric_shards.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/internal/client/channel_connector.h"
#include "rpc/internal/client/connection_backoff.h"
#include "rpc/internal/client/control_call.h"
#include "rpc/internal/client/health_watch.h"
#include "rpc/internal/client/load_report_watch.h"
#include "rpc/load_balancing.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"
#include "transport/http2/session.h"
#include "transport/io/byte_session.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/socket.h"
#include "transport/io/socket_connection.h"

namespace h2rpc::internal {

class ChannelCore;

// How the channel marks the subchannels it made, so that a policy's pick of
// anything else is refused.
struct LbSubchannelAccess {
  static void SetChannel(LbSubchannel& subchannel, const ChannelCore* channel) {
    subchannel.channel_ = channel;
  }
  static const ChannelCore* Channel(const LbSubchannel& subchannel) {
    return subchannel.channel_;
  }
};

// A channel's connection to one backend address (the LbSubchannel of
// rpc/load_balancing.h), with its
// own backoff: an attempt is the TCP (or unix-domain) connect, the TLS
// handshake and the server's HTTP/2 handshake up to its SETTINGS frame, all
// before the attempt's deadline (ConnectionBackoff). After a failure it is
// in TRANSIENT_FAILURE and tries again by itself once the backoff has
// passed; a connection that ends (closed, or GOAWAY: it drains while its
// calls finish) leaves it IDLE.
//
// With health checking (gRPC's A17), an established connection is READY
// only while the backend's grpc.health.v1.Health/Watch says SERVING: it
// stays CONNECTING until the first answer, and is in TRANSIENT_FAILURE
// while the answer is anything else or the watch call has failed (it is
// started again after kHealthRetryDelay). A backend without the health
// service (UNIMPLEMENTED) counts as serving.
//
// With a load report watcher (WatchLoadReports), an established connection
// also carries an ORCA StreamCoreMetrics call, made again after a backoff
// when it fails.
//
// Made and owned by the channel, held by one LB policy until orphaned. An
// orphaned subchannel closes its connections gracefully and tells its host
// when none is left, so the host can free it. Loop thread only.
class Subchannel final : public LbSubchannel,
                         private transport::http2::ClientSession::Listener,
                         private ChannelConnector::Listener,
                         private HealthWatch::Listener,
                         private LoadReportWatch::Listener {
 public:
  // How long after a failed health watch call the next one starts.
  static constexpr absl::Duration kHealthRetryDelay = absl::Seconds(1);
  // How long after a failed load report call the next one starts: doubled
  // after each failure up to the maximum, reset by a report.
  static constexpr absl::Duration kLoadReportInitialBackoff = absl::Seconds(1);
  static constexpr absl::Duration kLoadReportMaxBackoff = absl::Minutes(2);

  // The channel's side.
  class Host {
   public:
    // Options of each new connection (read at each connect).
    virtual const transport::http2::ConnectionOptions& transport_options()
        const = 0;
    // The TLS filter of a new connection to `address` (for TLS session
    // resumption); null: plaintext.
    virtual std::unique_ptr<transport::io::ByteFilter> NewConnectionFilter(
        const std::string& address) = 0;
    // The filter between that one and the HTTP/2 session of a new
    // connection (the HTTP/1.1 bridge); null: none.
    virtual std::unique_ptr<transport::io::ByteFilter> NewProtocolFilter() {
      return nullptr;
    }
    // The subchannel's state changed (not reported once orphaned).
    virtual void OnSubchannelStateChange(Subchannel* subchannel) = 0;
    // A connection's server sent GOAWAY ENHANCE_YOUR_CALM "too_many_pings"
    // (once per connection).
    virtual void OnTooManyPings(const std::string& peer) = 0;
    // Orphaned, with no connection left: free it, though not from inside
    // this call.
    virtual void OnSubchannelDone(Subchannel* subchannel) = 0;
    // Where connection attempts and disconnections are counted
    // (CallMetrics); null: nowhere.
    virtual ClientMetricShard* metric_shard() const = 0;
    // The channel's channelz entry, the parent of the subchannel's; null
    // without channelz.
    virtual ChannelzNode* channelz_node() const = 0;
    // What the subchannel's own calls (load reports) send.
    virtual const ControlCallSettings& control_call_settings() const = 0;

   protected:
    ~Host() = default;
  };

  // `loop`, `host` and `health` (null: no health checking) must outlive
  // the subchannel. `address` is `socket_address` as the policy sees it.
  Subchannel(transport::io::EventLoop* loop, Host* host,
             ResolvedAddress address,
             const transport::io::SocketAddress& socket_address,
             const ConnectionBackoff::Options& backoff,
             const HealthCheckSettings* health);
  ~Subchannel() override;

  // LbSubchannel.
  ConnectivityState state() const override { return state_; }
  const Status& last_error() const override { return last_error_; }
  void RequestConnection() override;
  void WatchLoadReports(LbLoadReportWatcher* watcher,
                        absl::Duration interval) override;

  // Orphaned: the policy let it go.
  bool orphaned() const { return orphaned_; }
  // READY only: puts a call's stream on the connection.
  void StartCall(transport::http2::ClientStream* stream);

  // The channel is going: closes every connection with `why` (their calls
  // fail with it) and stops connecting. Reports nothing.
  void Close(const Status& why);

 private:
  using Connection =
      transport::io::SocketConnection<transport::http2::ClientSession>;
  template <void (Subchannel::*kFire)()>
  class MemberTimer final : public transport::io::Timer {
   public:
    explicit MemberTimer(Subchannel* subchannel) : subchannel_(subchannel) {}
    void OnTimer() override { (subchannel_->*kFire)(); }

   private:
    Subchannel* const subchannel_;
  };

  void Orphan() override;
  void SetState(ConnectivityState state);
  // Starts an attempt.
  void Connect();
  void OnConnected(transport::io::FileDescriptor socket,
                   std::string peer) override;
  void OnConnectFailed(const Status& why) override;
  void OnAttemptDeadline();
  void EnterTransientFailure(const Status& why);
  void OnBackoffDone();
  // Moves the connection to draining_, ending its health watch.
  void DrainConnection();
  // Starts the health watch on the established connection, if it still is.
  void StartHealthWatch();
  void OnHealthChanged(bool serving, const Status& why) override;
  void OnHealthWatchEnded(const Status& status, bool cancelled) override;
  // Starts the load report call on the established connection, if there
  // is one and a watcher.
  void StartLoadReportWatch();
  void OnLoadReport(absl::string_view report) override;
  void OnLoadReportWatchEnded(const Status& status, bool cancelled) override;
  // Orphaned and without connections: tells the host, once.
  void MaybeDone();
  void OnConnectionReady(transport::http2::ClientSession* connection) override;
  void OnGoAwayReceived(transport::http2::ClientSession* connection,
                        uint32_t error_code,
                        absl::string_view debug_data) override;
  void OnConnectionDraining(
      transport::http2::ClientSession* connection) override;
  void OnConnectionClosed(transport::http2::ClientSession* connection,
                          const Status& why) override;
  // CallMetrics: `connection` closed; if it was established, counts its
  // disconnection with the reason it first had.
  void CountDisconnection(transport::http2::ClientSession* connection);
  // The channelz entry of `connection`; null without channelz.
  ChannelzNode* ChannelzSocketOf(
      const transport::http2::ClientSession* connection) const;

  transport::io::EventLoop* const loop_;
  Host* const host_;
  const transport::io::SocketAddress socket_address_;
  // CallMetrics: the calls the policy picked this address for; null
  // without metrics.
  OwnedCounter* picks_ = nullptr;
  // channelz: the subchannel's entry and its call counts, written by its
  // connections' sessions; the entries of its open connections, each
  // destroyed with its connection. Empty without channelz. Declared before
  // the connections, which count into them until destroyed.
  std::unique_ptr<ChannelzNode> channelz_node_;
  transport::http2::CallCounts* channelz_calls_ = nullptr;
  std::vector<std::pair<transport::http2::ClientSession*,
                        std::unique_ptr<ChannelzNode>>>
      channelz_sockets_;
  ChannelConnector connector_;
  ConnectionBackoff backoff_;
  ConnectivityState state_ = ConnectivityState::kIdle;
  Status last_error_;
  // Under way (CONNECTING) or established (READY); null otherwise.
  std::unique_ptr<Connection> connection_;
  // Connections closing while their calls finish.
  std::vector<std::unique_ptr<Connection>> draining_;
  transport::io::MonotonicTime attempt_deadline_;
  absl::Duration attempt_timeout_;
  // The connection that reported "too_many_pings" last.
  transport::http2::ClientSession* calmed_ = nullptr;
  // The first GOAWAY error code each open connection received, for the
  // reason of its disconnection (CallMetrics); at most one entry per
  // connection in connection_ and draining_.
  std::vector<std::pair<transport::http2::ClientSession*, uint32_t>>
      goaway_codes_;
  // Null without health checking.
  const std::unique_ptr<HealthWatch> health_watch_;
  // WatchLoadReports(): null watcher, no call; the watch is made at the
  // first call.
  LbLoadReportWatcher* load_report_watcher_ = nullptr;
  absl::Duration load_report_interval_;
  absl::Duration load_report_backoff_ = kLoadReportInitialBackoff;
  std::unique_ptr<LoadReportWatch> load_report_watch_;
  bool orphaned_ = false;
  bool closed_ = false;  // Close(): the channel frees it
  bool done_ = false;    // OnSubchannelDone reported
  // Fires at once: RequestConnection() reports nothing itself.
  MemberTimer<&Subchannel::Connect> connect_timer_{this};
  MemberTimer<&Subchannel::OnAttemptDeadline> attempt_timer_{this};
  MemberTimer<&Subchannel::OnBackoffDone> backoff_timer_{this};
  MemberTimer<&Subchannel::StartHealthWatch> health_retry_timer_{this};
  MemberTimer<&Subchannel::StartLoadReportWatch> load_report_timer_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_SUBCHANNEL_H_
