#ifndef H2RPC_TRANSPORT_HTTP2_CONNECTION_STATS_H_
#define H2RPC_TRANSPORT_HTTP2_CONNECTION_STATS_H_

#include "base/owned_counter.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::transport::http2 {

// A moment on the loop's clock (Scheduler::Now()) written by one thread,
// read by any; unset until first Set.
class StatTime {
 public:
  void Set(io::MonotonicTime time) {
    nanos_.Set(absl::ToInt64Nanoseconds(time.since_epoch()));
  }
  // InfinitePast() when never set.
  io::MonotonicTime Read() const {
    const int64_t nanos = nanos_.Read();
    return nanos == 0 ? io::MonotonicTime::InfinitePast()
                      : io::MonotonicTime::FromSinceEpoch(
                            absl::Nanoseconds(nanos));
  }

 private:
  OwnedValue nanos_;
};

// The calls carried by a group of connections (channelz's ChannelData and
// ServerData counts: a subchannel's connections, a server loop's), counted
// by their sessions as their streams start and end. One writer at a time
// (the connections' loop thread), any reader.
struct CallCounts {
  OwnedCounter started;
  OwnedCounter succeeded;  // ended with status OK
  OwnedCounter failed;     // ended with any other status
  StatTime last_started;
};

// One connection's streams, messages and keepalives, as channelz's
// SocketData counts them, written by its session (loop thread) and read by
// any thread. A session without stats (null) counts nothing: one branch
// per event.
struct ConnectionStats {
  OwnedCounter streams_started;
  // A client's stream succeeds when it receives END_STREAM (the response's
  // trailers), a server's when it has sent END_STREAM (its trailers) and
  // closes without RST_STREAM; any other end is a failure, a refused
  // stream's included.
  OwnedCounter streams_succeeded;
  OwnedCounter streams_failed;
  // gRPC messages handed to the connection (sent) and delivered by it.
  OwnedCounter messages_sent;
  OwnedCounter messages_received;
  OwnedCounter keepalives_sent;
  StatTime last_local_stream_created;   // clients
  StatTime last_remote_stream_created;  // servers
  StatTime last_message_sent;
  StatTime last_message_received;
  // Where the connection's streams are also counted as calls; may be null.
  // Set before the session starts.
  CallCounts* calls = nullptr;
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_CONNECTION_STATS_H_
