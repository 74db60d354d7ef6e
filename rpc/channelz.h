#ifndef H2RPC_RPC_CHANNELZ_H_
#define H2RPC_RPC_CHANNELZ_H_

#include <memory>

namespace h2rpc {

namespace internal {
class ChannelzAccess;
class ChannelzRegistry;
}  // namespace internal

// channelz (gRPC's A14): a live view of channels, their subchannels and
// connections, and servers with their listening sockets and connections,
// with each one's state and call, stream and message counts, served by
// ChannelzService (rpc/channelz_service.h) as grpc.channelz.v1.Channelz,
// which gRPC's tools (grpcdebug, grpc_cli) read.
//
// A Channelz sees what is given it: the channels made with
// ChannelOptions::channelz and the servers built with
// ServerOptions::channelz set to it (one object for a whole process, or
// several). Without it nothing is registered or counted. With it, the cost
// is on connections and calls' edges: a registration under the registry's
// lock per channel, subchannel, connection and listening socket (and a
// getsockname), and per call a few single-writer counter stores on the
// loop thread, no lock and no allocation.
//
// Thread-safe. Channels and servers hold a reference (shared_ptr) to it.
class Channelz {
 public:
  Channelz();
  ~Channelz();
  Channelz(const Channelz&) = delete;
  Channelz& operator=(const Channelz&) = delete;

 private:
  friend class internal::ChannelzAccess;
  const std::unique_ptr<internal::ChannelzRegistry> registry_;
};

namespace internal {

class ChannelzAccess {
 public:
  static ChannelzRegistry& Registry(Channelz& channelz) {
    return *channelz.registry_;
  }
};

}  // namespace internal

}  // namespace h2rpc

#endif  // H2RPC_RPC_CHANNELZ_H_
