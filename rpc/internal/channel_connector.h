#ifndef H2RPC_RPC_INTERNAL_CHANNEL_CONNECTOR_H_
#define H2RPC_RPC_INTERNAL_CHANNEL_CONNECTOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rpc/status.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/resolver.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {

// Connects a channel's socket: resolves the target (an IP address at once,
// a host name on the resolver thread), tries each address in turn with a
// non-blocking connect, all before the attempt's deadline. Lives as long as
// the channel; one attempt at a time, everything on the loop thread.
class ChannelConnector final : private transport::io::FdWatcher,
                               private transport::io::Timer {
 public:
  // How an attempt ends: exactly one of these per Start(), on the loop
  // thread, unless Abort() came first.
  class Listener {
   public:
    virtual void OnConnected(transport::io::FileDescriptor socket,
                             std::string peer) = 0;
    virtual void OnConnectFailed(const Status& why) = 0;

   protected:
    ~Listener() = default;
  };

  // `loop` and `listener` must outlive the connector.
  ChannelConnector(transport::io::EventLoop* loop, std::string target,
                   std::shared_ptr<transport::io::Resolver> resolver,
                   Listener* listener);
  ChannelConnector(const ChannelConnector&) = delete;
  ChannelConnector& operator=(const ChannelConnector&) = delete;

  // Starts an attempt (none may be under way) that fails with UNAVAILABLE
  // if the lookup and the connect are not done by `deadline` (the message
  // names the time allowed and ChannelOptions::min_connect_timeout).
  void Start(transport::io::MonotonicTime deadline);
  // Abandons an attempt in progress (channel shutting down or going idle);
  // no-op when none is.
  void Abort();

 private:
  void OnResolved(transport::io::Resolver::Result result);
  void TryNext();
  void OnFdReady(uint32_t events) override;
  // The attempt's deadline.
  void OnTimer() override;
  void Fail(const Status& why);
  void Succeed();

  transport::io::EventLoop* const loop_;
  const std::string target_;
  absl::Duration attempt_timeout_;  // the time the attempt was given
  const std::shared_ptr<transport::io::Resolver> resolver_;
  Listener* const listener_;
  transport::io::Resolver::Resolution resolution_;
  std::vector<transport::io::SocketAddress> addresses_;
  size_t next_ = 0;
  transport::io::SocketAddress current_;
  transport::io::FileDescriptor socket_;
  Status last_error_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CHANNEL_CONNECTOR_H_
