#ifndef H2RPC_TOOLS_H2RPC_PROXY_FORWARDER_H_
#define H2RPC_TOOLS_H2RPC_PROXY_FORWARDER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rpc/channel.h"
#include "rpc/server.h"
#include "rpc/status.h"

namespace h2rpc::proxy {

class ProxyCall;

// What a Forwarder has forwarded so far.
struct ForwarderStats {
  int64_t calls_started = 0;
  int64_t calls_active = 0;
  // Ended calls by the status the client got (index: StatusCode).
  std::array<int64_t, 17> calls_ended_by_code{};
  int64_t messages_to_target = 0;
  int64_t messages_to_clients = 0;
  // Serialized message bytes (before compression), each way.
  int64_t bytes_to_target = 0;
  int64_t bytes_to_clients = 0;
};

// Forwards every call a server receives to one target, as a generic
// service (Server::Builder::RegisterCallbackGenericService) on the event
// loops of the target's channels: the server gets one loop per channel, and
// each call opens a generic bidi call of the same method on the channel of
// the loop that serves it (so both calls run on one thread, and nothing
// crosses threads), made from the server call's context (so the client's
// deadline and cancellation reach the target), and relays, both ways:
//   - metadata: the client's (but user-agent, which is the channel's) to
//     the target; the target's initial and trailing metadata and its status
//     (message and grpc-status-details-bin included) to the client;
//   - messages, one at a time each way, so a side that reads slowly holds
//     the other back through its flow-control window: the forwarder holds at
//     most one message per direction per call;
//   - compression: a message arriving compressed leaves compressed, with
//     the algorithm of the side it arrived from (when the receiving side
//     accepts it).
// An unreachable target is the target channel's status (UNAVAILABLE with
// its reason); a request the server's transport refuses (a malformed one)
// never reaches the channel.
//
// A warm forwarded call allocates nothing: the forwarder's call state is
// pooled per loop. Any thread may read stats(). The forwarder (which holds
// the channels, whose loops the server runs on) must outlive the server it
// was added to.
class Forwarder {
 public:
  struct Options {
    // ":authority" of the forwarded calls; empty: the client's.
    std::string authority;
  };

  // `targets`: channels to the target, at least one; the server serves its
  // connections on their loops.
  Forwarder(std::vector<std::shared_ptr<Channel>> targets, Options options);
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Registers the forwarding generic service on `builder` (which then may
  // have no generic service of its own) and makes the server run on the
  // targets' loops (ServerOptions' num_loops, loop_cpus and busy_poll_us do
  // not apply; ChannelOptions' loop_cpu and busy_poll_us do).
  void AddTo(Server::Builder& builder);

  ForwarderStats stats() const;

 private:
  friend class ProxyCall;

  // A target channel and the idle calls of its loop (touched only on the
  // loop's thread).
  struct Loop {
    std::shared_ptr<Channel> target;
    std::vector<ProxyCall*> idle;
  };

  void CallEnded(StatusCode code);
  // The Loop of the calling loop thread.
  Loop& LocalLoop();

  const Options options_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<int64_t> calls_started_{0};
  std::atomic<int64_t> calls_ended_{0};
  std::array<std::atomic<int64_t>, 17> calls_ended_by_code_{};
  std::atomic<int64_t> messages_to_target_{0};
  std::atomic<int64_t> messages_to_clients_{0};
  std::atomic<int64_t> bytes_to_target_{0};
  std::atomic<int64_t> bytes_to_clients_{0};
};

}  // namespace h2rpc::proxy

#endif  // H2RPC_TOOLS_H2RPC_PROXY_FORWARDER_H_
