#ifndef H2RPC_RPC_CHANNELZ_SERVICE_H_
#define H2RPC_RPC_CHANNELZ_SERVICE_H_

#include <memory>

#include "rpc/channelz.h"
#include "rpc/server.h"

namespace h2rpc {

// gRPC's channelz service, grpc.channelz.v1.Channelz (Debian's grpc-proto
// grpc/channelz/v1/channelz.proto, compiled as //proto:channelz_proto), as
// gRPC C++'s ChannelzService: tools such as grpcdebug and grpc_cli read the
// channels, subchannels, servers and sockets a Channelz (rpc/channelz.h)
// sees, with their states and counts.
//
//   auto channelz = std::make_shared<Channelz>();
//   ServerOptions options;
//   options.channelz = channelz;  // and ChannelOptions::channelz
//   Server::Builder builder;
//   builder.AddListeningPort("127.0.0.1:0", &port).SetOptions(options);
//   ChannelzService(channelz).AddTo(builder);
//   std::unique_ptr<Server> server = builder.BuildAndStart(&status);
//
// The service may be registered on any server, whether or not that server
// is itself registered with the Channelz it shows.
//
// Methods (all unary), each answering from one reading of the registry:
//   - GetTopChannels(start_channel_id, max_results), GetServers(
//     start_server_id, max_results): the channels (servers) with an id at
//     or above the start, by increasing id, at most max_results of them
//     (0 or below: a page of ChannelzRegistry's default size, 100; above
//     100: 100), and `end` when no more follow. The next page starts at the
//     last id + 1.
//   - GetServerSockets(server_id, start_socket_id, max_results): the
//     server's connections (not its listening sockets) as SocketRefs, paged
//     the same way.
//   - GetChannel, GetSubchannel, GetServer, GetSocket: one entity by id;
//     GetSocket also answers a listening socket.
// An id that names no entity of the kind asked for (never registered, gone,
// or another kind's) fails the call with NOT_FOUND naming the kind and the
// id ("no channel 42"); GetServerSockets of an unknown server likewise
// ("no server 42").
//
// What the messages hold, as gRPC C++ fills them:
//   - refs (ChannelRef, SubchannelRef, ServerRef, SocketRef): the id and the
//     registry's name (a channel's target, a subchannel's address, a
//     socket's "local -> remote", a listening socket's address).
//   - Channel and Subchannel: data.state (IDLE, CONNECTING, READY,
//     TRANSIENT_FAILURE, SHUTDOWN), data.target, data.calls_started,
//     _succeeded, _failed and last_call_started_timestamp; a channel's
//     subchannel_refs, a subchannel's socket_refs. No trace.
//   - Server: data.calls_* and last_call_started_timestamp, the
//     listen_socket refs. No trace.
//   - Socket: local and remote as Address, none for an address the
//     registry does not have (a listening socket's remote): tcpip_address
//     with the address's 4 (IPv4) or 16 (IPv6, an IPv4-mapped one
//     included) bytes and its port; uds_address for a unix-domain socket,
//     whose filename is the path, "@" and the name for one in the abstract
//     namespace (as grpc-go and Linux's ss write it; gRPC C++ gives those
//     an other_address "unix-abstract:name" instead), or empty for an
//     unnamed one (a client's end); a byte outside printable ASCII, or a
//     backslash, is written \xNN as in the socket's name (filename is a
//     proto3 string, which must be UTF-8). remote_name; data's stream,
//     message and keepalive counts and its four timestamps; security.tls
//     (standard_name, local_certificate, remote_certificate) once a TLS
//     connection completed its handshake. A listening socket has only its
//     ref and local.
// A timestamp is wall-clock (google.protobuf.Timestamp), and absent when
// the event never happened. Counts are int64 (a count above INT64_MAX shows
// INT64_MAX). Flow-control windows and socket options are not reported.
//
// Threads. The methods run on the server's loop threads as callback
// handlers: they never hold a worker thread, and never wait beyond the
// registry's mutex, which a call takes once while the registry copies the
// entities out (at most a page of them); the response is built outside it.
// AddTo may be called from any thread.
//
// Bounds. A listing holds at most 100 entities. A response larger than the
// server's ConnectionOptions::max_send_message_size fails the call with
// RESOURCE_EXHAUSTED.
//
// Lifetime. The handlers hold a reference to the Channelz; the
// ChannelzService object itself may be destroyed once AddTo returned. It
// may be added to several servers.
//
// Allocations: AddTo the handlers' registration objects; each call the
// registry's copy of what it reads (names, refs) and the response.
class ChannelzService {
 public:
  // Serves what `channelz` sees. A null `channelz` is misuse (reported; a
  // debug build aborts; otherwise every call fails with INTERNAL).
  explicit ChannelzService(std::shared_ptr<Channelz> channelz);
  ChannelzService(const ChannelzService&) = delete;
  ChannelzService& operator=(const ChannelzService&) = delete;

  // Registers the seven methods of /grpc.channelz.v1.Channelz/ (callback
  // handlers) on `builder`. Before BuildAndStart; once per builder.
  Server::Builder& AddTo(Server::Builder& builder);

 private:
  const std::shared_ptr<Channelz> channelz_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CHANNELZ_SERVICE_H_
