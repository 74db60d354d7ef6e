#include "rpc/channelz_service.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "proto/grpc/channelz/v1/channelz.pb.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "rpc/unary_done.h"

namespace h2rpc {

namespace {

using grpc::channelz::v1::Address;
using grpc::channelz::v1::Channel;
using grpc::channelz::v1::ChannelConnectivityState;
using grpc::channelz::v1::ChannelData;
using grpc::channelz::v1::GetChannelRequest;
using grpc::channelz::v1::GetChannelResponse;
using grpc::channelz::v1::GetServerRequest;
using grpc::channelz::v1::GetServerResponse;
using grpc::channelz::v1::GetServerSocketsRequest;
using grpc::channelz::v1::GetServerSocketsResponse;
using grpc::channelz::v1::GetServersRequest;
using grpc::channelz::v1::GetServersResponse;
using grpc::channelz::v1::GetSocketRequest;
using grpc::channelz::v1::GetSocketResponse;
using grpc::channelz::v1::GetSubchannelRequest;
using grpc::channelz::v1::GetSubchannelResponse;
using grpc::channelz::v1::GetTopChannelsRequest;
using grpc::channelz::v1::GetTopChannelsResponse;
using grpc::channelz::v1::ServerData;
using grpc::channelz::v1::Socket;
using grpc::channelz::v1::SocketData;
using grpc::channelz::v1::Subchannel;
using internal::ChannelzCallCountsData;
using internal::ChannelzChannelData;
using internal::ChannelzRef;
using internal::ChannelzRegistry;
using internal::ChannelzServerData;
using internal::ChannelzSocketData;
using transport::io::SocketAddress;

constexpr char kServicePrefix[] = "/grpc.channelz.v1.Channelz/";

// A count as channelz's int64 fields hold it.
int64_t Count(uint64_t count) {
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(count > kMax ? kMax : count);
}

// The registry's page size for a request's max_results: 0 (the registry's
// default page) for 0 and below.
size_t PageSize(int64_t max_results) {
  return max_results <= 0 ? 0 : static_cast<size_t>(max_results);
}

// Sets the timestamp `mutable_timestamp()` gives to `time` if the event
// happened (the registry gives absl::InfinitePast() when it never did);
// otherwise leaves the field absent.
template <class MutableTimestamp>
void SetTimeIfHappened(absl::Time time, MutableTimestamp mutable_timestamp) {
  if (time == absl::InfinitePast() || time == absl::InfiniteFuture()) return;
  // ToUnixSeconds rounds toward the past, so nanos is in [0, 1e9).
  const int64_t seconds = absl::ToUnixSeconds(time);
  google::protobuf::Timestamp* timestamp = mutable_timestamp();
  timestamp->set_seconds(seconds);
  timestamp->set_nanos(static_cast<int32_t>(
      (time - absl::FromUnixSeconds(seconds)) / absl::Nanoseconds(1)));
}

ChannelConnectivityState::State StateOf(ConnectivityState state) {
  switch (state) {
    case ConnectivityState::kIdle:
      return ChannelConnectivityState::IDLE;
    case ConnectivityState::kConnecting:
      return ChannelConnectivityState::CONNECTING;
    case ConnectivityState::kReady:
      return ChannelConnectivityState::READY;
    case ConnectivityState::kTransientFailure:
      return ChannelConnectivityState::TRANSIENT_FAILURE;
    case ConnectivityState::kShutdown:
      return ChannelConnectivityState::SHUTDOWN;
  }
  return ChannelConnectivityState::UNKNOWN;
}

// The refs: the same two fields under each kind's names.
template <class Ref>
void FillChannelRef(const ChannelzRef& ref, Ref* out) {
  out->set_channel_id(ref.id);
  out->set_name(ref.name);
}
template <class Ref>
void FillSubchannelRef(const ChannelzRef& ref, Ref* out) {
  out->set_subchannel_id(ref.id);
  out->set_name(ref.name);
}
template <class Ref>
void FillServerRef(const ChannelzRef& ref, Ref* out) {
  out->set_server_id(ref.id);
  out->set_name(ref.name);
}
template <class Ref>
void FillSocketRef(const ChannelzRef& ref, Ref* out) {
  out->set_socket_id(ref.id);
  out->set_name(ref.name);
}

// ChannelData and ServerData name their call counts alike.
template <class Data>
void FillCalls(const ChannelzCallCountsData& calls, Data* out) {
  out->set_calls_started(Count(calls.started));
  out->set_calls_succeeded(Count(calls.succeeded));
  out->set_calls_failed(Count(calls.failed));
  SetTimeIfHappened(calls.last_started, [out] {
    return out->mutable_last_call_started_timestamp();
  });
}

void FillChannelData(const ChannelzChannelData& data, ChannelData* out) {
  out->mutable_state()->set_state(StateOf(data.state));
  out->set_target(data.target);
  FillCalls(data.calls, out);
}

void FillChannel(const ChannelzChannelData& data, Channel* out) {
  FillChannelRef(data.ref, out->mutable_ref());
  FillChannelData(data, out->mutable_data());
  for (const ChannelzRef& subchannel : data.subchannels) {
    FillSubchannelRef(subchannel, out->add_subchannel_ref());
  }
}

void FillSubchannel(const ChannelzChannelData& data, Subchannel* out) {
  FillSubchannelRef(data.ref, out->mutable_ref());
  FillChannelData(data, out->mutable_data());
  for (const ChannelzRef& socket : data.sockets) {
    FillSocketRef(socket, out->add_socket_ref());
  }
}

void FillServer(const ChannelzServerData& data,
                grpc::channelz::v1::Server* out) {
  FillServerRef(data.ref, out->mutable_ref());
  FillCalls(data.calls, out->mutable_data());
  for (const ChannelzRef& socket : data.listen_sockets) {
    FillSocketRef(socket, out->add_listen_socket());
  }
}

// A unix-domain socket's name as UdsAddress::filename holds it: the path;
// for a name in the abstract namespace "@" and the name, as grpc-go and
// Linux's tools (ss, /proc/net/unix) write it, which keeps it a UdsAddress
// that tools show as a unix socket (gRPC C++ gives it an OtherAddress named
// "unix-abstract:name"); empty for an unnamed socket. The bytes are escaped
// as SocketAddress::ToString escapes them (\xNN outside printable ASCII),
// since the field is a proto3 string and must be UTF-8, which a path need
// not be.
std::string UnixFilename(const SocketAddress& address) {
  const std::string text = address.ToString();
  absl::string_view name = text;
  if (address.is_abstract()) {
    absl::ConsumePrefix(&name, "unix-abstract:");
    return absl::StrCat("@", name);
  }
  absl::ConsumePrefix(&name, "unix:");
  return std::string(name);
}

// `address` (not empty) as channelz's Address.
void FillAddress(const SocketAddress& address, Address* out) {
  switch (address.family()) {
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&address.storage);
      auto* tcp = out->mutable_tcpip_address();
      tcp->set_ip_address(&in->sin_addr, sizeof(in->sin_addr));
      tcp->set_port(address.port());
      break;
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
      auto* tcp = out->mutable_tcpip_address();
      tcp->set_ip_address(&in6->sin6_addr, sizeof(in6->sin6_addr));
      tcp->set_port(address.port());
      break;
    }
    case AF_UNIX:
      out->mutable_uds_address()->set_filename(UnixFilename(address));
      break;
    default:
      // Another family (the registry is given none): its text.
      out->mutable_other_address()->set_name(address.ToString());
      break;
  }
}

bool HasAddress(const SocketAddress& address) {
  return address.family() != AF_UNSPEC;
}

void FillSocket(const ChannelzSocketData& data, Socket* out) {
  FillSocketRef(data.ref, out->mutable_ref());
  if (HasAddress(data.local)) FillAddress(data.local, out->mutable_local());
  if (data.listen) return;
  if (HasAddress(data.remote)) FillAddress(data.remote, out->mutable_remote());
  out->set_remote_name(data.remote_name);
  SocketData* socket_data = out->mutable_data();
  socket_data->set_streams_started(Count(data.streams_started));
  socket_data->set_streams_succeeded(Count(data.streams_succeeded));
  socket_data->set_streams_failed(Count(data.streams_failed));
  socket_data->set_messages_sent(Count(data.messages_sent));
  socket_data->set_messages_received(Count(data.messages_received));
  socket_data->set_keep_alives_sent(Count(data.keepalives_sent));
  SetTimeIfHappened(data.last_local_stream_created, [socket_data] {
    return socket_data->mutable_last_local_stream_created_timestamp();
  });
  SetTimeIfHappened(data.last_remote_stream_created, [socket_data] {
    return socket_data->mutable_last_remote_stream_created_timestamp();
  });
  SetTimeIfHappened(data.last_message_sent, [socket_data] {
    return socket_data->mutable_last_message_sent_timestamp();
  });
  SetTimeIfHappened(data.last_message_received, [socket_data] {
    return socket_data->mutable_last_message_received_timestamp();
  });
  if (data.tls.has_value()) {
    auto* tls = out->mutable_security()->mutable_tls();
    if (!data.tls->standard_name.empty()) {
      tls->set_standard_name(data.tls->standard_name);
    }
    tls->set_local_certificate(data.tls->local_certificate);
    tls->set_remote_certificate(data.tls->remote_certificate);
  }
}

Status NotFound(absl::string_view kind, int64_t id) {
  return Status(StatusCode::kNotFound, absl::StrCat("no ", kind, " ", id));
}

// The methods' bodies: the answer to `request` from `registry`.

Status GetTopChannels(const ChannelzRegistry& registry,
                      const GetTopChannelsRequest& request,
                      GetTopChannelsResponse* response) {
  const internal::ChannelzPage<ChannelzChannelData> page = registry.TopChannels(
      request.start_channel_id(), PageSize(request.max_results()));
  for (const ChannelzChannelData& channel : page.entries) {
    FillChannel(channel, response->add_channel());
  }
  response->set_end(page.end);
  return Status();
}

Status GetServers(const ChannelzRegistry& registry,
                  const GetServersRequest& request,
                  GetServersResponse* response) {
  const internal::ChannelzPage<ChannelzServerData> page = registry.Servers(
      request.start_server_id(), PageSize(request.max_results()));
  for (const ChannelzServerData& server : page.entries) {
    FillServer(server, response->add_server());
  }
  response->set_end(page.end);
  return Status();
}

Status GetServer(const ChannelzRegistry& registry,
                 const GetServerRequest& request, GetServerResponse* response) {
  const std::optional<ChannelzServerData> server =
      registry.Server(request.server_id());
  if (!server.has_value()) return NotFound("server", request.server_id());
  FillServer(*server, response->mutable_server());
  return Status();
}

Status GetServerSockets(const ChannelzRegistry& registry,
                        const GetServerSocketsRequest& request,
                        GetServerSocketsResponse* response) {
  const std::optional<internal::ChannelzPage<ChannelzRef>> page =
      registry.ServerSockets(request.server_id(), request.start_socket_id(),
                             PageSize(request.max_results()));
  if (!page.has_value()) return NotFound("server", request.server_id());
  for (const ChannelzRef& socket : page->entries) {
    FillSocketRef(socket, response->add_socket_ref());
  }
  response->set_end(page->end);
  return Status();
}

Status GetChannel(const ChannelzRegistry& registry,
                  const GetChannelRequest& request,
                  GetChannelResponse* response) {
  const std::optional<ChannelzChannelData> channel =
      registry.Channel(request.channel_id());
  if (!channel.has_value()) return NotFound("channel", request.channel_id());
  FillChannel(*channel, response->mutable_channel());
  return Status();
}

Status GetSubchannel(const ChannelzRegistry& registry,
                     const GetSubchannelRequest& request,
                     GetSubchannelResponse* response) {
  const std::optional<ChannelzChannelData> subchannel =
      registry.Subchannel(request.subchannel_id());
  if (!subchannel.has_value()) {
    return NotFound("subchannel", request.subchannel_id());
  }
  FillSubchannel(*subchannel, response->mutable_subchannel());
  return Status();
}

// `summary` asks to leave out what is costly to get; nothing here is.
Status GetSocket(const ChannelzRegistry& registry,
                 const GetSocketRequest& request, GetSocketResponse* response) {
  const std::optional<ChannelzSocketData> socket =
      registry.Socket(request.socket_id());
  if (!socket.has_value()) return NotFound("socket", request.socket_id());
  FillSocket(*socket, response->mutable_socket());
  return Status();
}

// Registers `answer` as the callback handler of `method`; the handler holds
// a reference to `channelz` and answers on the loop thread (INTERNAL when
// `channelz` is null, the misuse the constructor reported).
template <class Request, class Response>
void RegisterMethod(Server::Builder& builder, absl::string_view method,
                    const std::shared_ptr<Channelz>& channelz,
                    Status (*answer)(const ChannelzRegistry&, const Request&,
                                     Response*)) {
  builder.RegisterCallbackUnary<Request, Response>(
      absl::StrCat(kServicePrefix, method),
      [channelz, answer](ServerContext*, const Request* request,
                         Response* response, UnaryDone done) {
        if (channelz == nullptr) {
          done(Status(StatusCode::kInternal,
                      "ChannelzService was given a null Channelz"));
          return;
        }
        done(answer(internal::ChannelzAccess::Registry(*channelz), *request,
                    response));
      });
}

}  // namespace

ChannelzService::ChannelzService(std::shared_ptr<Channelz> channelz)
    : channelz_(std::move(channelz)) {
  if (channelz_ == nullptr) {
    internal::ReportMisuse("ChannelzService given a null Channelz");
  }
}

Server::Builder& ChannelzService::AddTo(Server::Builder& builder) {
  RegisterMethod(builder, "GetTopChannels", channelz_, &GetTopChannels);
  RegisterMethod(builder, "GetServers", channelz_, &GetServers);
  RegisterMethod(builder, "GetServer", channelz_, &GetServer);
  RegisterMethod(builder, "GetServerSockets", channelz_, &GetServerSockets);
  RegisterMethod(builder, "GetChannel", channelz_, &GetChannel);
  RegisterMethod(builder, "GetSubchannel", channelz_, &GetSubchannel);
  RegisterMethod(builder, "GetSocket", channelz_, &GetSocket);
  return builder;
}

}  // namespace h2rpc
