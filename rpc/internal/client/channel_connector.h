#ifndef H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CONNECTOR_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CONNECTOR_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "rpc/status.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {

// Connects a subchannel's socket to its address with a non-blocking connect
// before the attempt's deadline. One attempt at a time, everything on the
// loop thread.
class ChannelConnector final : private transport::io::FdWatcher,
                               private transport::io::Timer {
 public:
  // How an attempt ends: exactly one of these per Start(), on the loop
  // thread (possibly before Start() returns), unless Abort() came first.
  class Listener {
   public:
    virtual void OnConnected(transport::io::FileDescriptor socket,
                             std::string peer) = 0;
    virtual void OnConnectFailed(const Status& why) = 0;

   protected:
    ~Listener() = default;
  };

  // `loop` and `listener` must outlive the connector.
  ChannelConnector(transport::io::EventLoop* loop, Listener* listener)
      : loop_(loop), listener_(listener) {}
  ~ChannelConnector() { Abort(); }
  ChannelConnector(const ChannelConnector&) = delete;
  ChannelConnector& operator=(const ChannelConnector&) = delete;

  // Starts connecting to `address` (no attempt may be under way); fails
  // with UNAVAILABLE if not connected by `deadline` (the message names the
  // time allowed and ChannelOptions::min_connect_timeout).
  void Start(const transport::io::SocketAddress& address,
             transport::io::MonotonicTime deadline);
  // Abandons an attempt in progress; no-op when none is.
  void Abort();

 private:
  void OnFdReady(uint32_t events) override;
  // The attempt's deadline.
  void OnTimer() override;

  transport::io::EventLoop* const loop_;
  Listener* const listener_;
  absl::Duration attempt_timeout_;  // the time the attempt was given
  transport::io::SocketAddress address_;
  transport::io::FileDescriptor socket_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CONNECTOR_H_
