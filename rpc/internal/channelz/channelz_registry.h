#ifndef H2RPC_RPC_INTERNAL_CHANNELZ_CHANNELZ_REGISTRY_H_
#define H2RPC_RPC_INTERNAL_CHANNELZ_CHANNELZ_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/connectivity_state.h"
#include "transport/http2/connection_stats.h"
#include "transport/http2/session.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {

// What channelz (gRPC's A14, grpc.channelz.v1) shows, as plain data read
// at one moment: the entities' identities and relations, their states and
// counts. Times are wall-clock; absl::InfinitePast() when the event never
// happened.

// An entity as another refers to it: its id (unique in the registry, never
// reused, from 1) and its name.
struct ChannelzRef {
  int64_t id = 0;
  std::string name;
};

struct ChannelzCallCountsData {
  uint64_t started = 0;
  uint64_t succeeded = 0;
  uint64_t failed = 0;
  absl::Time last_started = absl::InfinitePast();
};

// A channel, or a subchannel (one backend address of a channel).
struct ChannelzChannelData {
  ChannelzRef ref;
  // A channel's target as given; a subchannel's address ("127.0.0.1:5").
  std::string target;
  ConnectivityState state = ConnectivityState::kIdle;
  absl::Time created = absl::InfinitePast();
  ChannelzCallCountsData calls;
  std::vector<ChannelzRef> subchannels;  // a channel's, by id
  std::vector<ChannelzRef> sockets;      // a subchannel's connections, by id
};

// What TLS established on a socket.
struct ChannelzTlsData {
  // The cipher suite's standard (RFC) name, "TLS_AES_128_GCM_SHA256".
  std::string standard_name;
  // DER certificates: the one this side presented, the peer's.
  std::string local_certificate;
  std::string remote_certificate;
};

// A connection (a subchannel's or a server's), or a server's listening
// socket (`listen`: only the local address and no counts).
struct ChannelzSocketData {
  ChannelzRef ref;
  bool listen = false;
  transport::io::SocketAddress local;
  transport::io::SocketAddress remote;  // empty for a listening socket
  // The peer as named by the channel (a subchannel's address); servers:
  // empty.
  std::string remote_name;
  uint64_t streams_started = 0;
  uint64_t streams_succeeded = 0;
  uint64_t streams_failed = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t keepalives_sent = 0;
  absl::Time last_local_stream_created = absl::InfinitePast();
  absl::Time last_remote_stream_created = absl::InfinitePast();
  absl::Time last_message_sent = absl::InfinitePast();
  absl::Time last_message_received = absl::InfinitePast();
  // Set once a TLS connection completed its handshake.
  std::optional<ChannelzTlsData> tls;
};

struct ChannelzServerData {
  ChannelzRef ref;
  absl::Time created = absl::InfinitePast();
  ChannelzCallCountsData calls;
  std::vector<ChannelzRef> listen_sockets;  // by id
};

// A page of a listing: entries by increasing id from the start asked for;
// `end` when no entry follows.
template <class T>
struct ChannelzPage {
  std::vector<T> entries;
  bool end = true;
};

class ChannelzRegistry;

// One registered entity, owned by what it describes (a channel core, a
// subchannel, a server core, a connection's owner), which writes its
// counts and state; it leaves the registry when destroyed. Kinds:
//   channel: state (SetState), calls (NewCallCounts: one set per writer);
//   subchannel: child of a channel; state, calls (one set, counted by its
//     connections' sessions through ConnectionStats::calls);
//   server: calls (one set per server loop, counted by its connections);
//   socket: child of a subchannel or a server; connection_stats() for its
//     session; SetTls once its handshake is done;
//   listen socket: child of a server; nothing to write.
// Writers: each CallCounts and the ConnectionStats have one writer at a
// time (their loop thread); SetState, NewCallCounts and SetTls any thread.
class ChannelzNode {
 public:
  enum class Kind { kChannel, kSubchannel, kServer, kSocket, kListenSocket };

  ~ChannelzNode();
  ChannelzNode(const ChannelzNode&) = delete;
  ChannelzNode& operator=(const ChannelzNode&) = delete;

  int64_t id() const { return id_; }
  Kind kind() const { return kind_; }

  // Channels and subchannels.
  void SetState(ConnectivityState state) {
    state_.store(state, std::memory_order_relaxed);
  }
  // Channels, subchannels, servers: a new set of call counts, read with
  // the node's other sets, valid as long as the node. Allocates.
  transport::http2::CallCounts* NewCallCounts();

  // Sockets: what the connection's session counts (Session::set_stats).
  transport::http2::ConnectionStats& connection_stats() {
    return connection_stats_;
  }
  void SetTls(ChannelzTlsData tls);
  // SetTls with what `session`'s wire negotiated, if it is secure; loop
  // thread, once its handshake is done.
  void SetTlsOf(const transport::http2::Session& session);

  ChannelzRegistry& registry() const { return *registry_; }

 private:
  friend class ChannelzRegistry;
  ChannelzNode(ChannelzRegistry* registry, Kind kind, int64_t id)
      : registry_(registry), kind_(kind), id_(id) {}

  ChannelzRegistry* const registry_;
  const Kind kind_;
  const int64_t id_;
  std::atomic<ConnectivityState> state_{ConnectivityState::kIdle};
  transport::http2::ConnectionStats connection_stats_;
};

// The registry behind Channelz (rpc/channelz.h): the registered entities
// and their relations, under one lock, taken when an entity comes or goes
// (a channel, a connection) and when a listing or lookup reads them; never
// on a call's path. Thread-safe. Entities are listed in increasing id
// order; pages hold at most kMaxPageSize entries.
class ChannelzRegistry {
 public:
  static constexpr size_t kMaxPageSize = 100;

  // Outlives every node it made.
  ChannelzRegistry() = default;
  ChannelzRegistry(const ChannelzRegistry&) = delete;
  ChannelzRegistry& operator=(const ChannelzRegistry&) = delete;

  // Registering; each returns the entity's node, which unregisters it (and
  // its link to its parent) when destroyed. Allocates.
  std::unique_ptr<ChannelzNode> AddChannel(std::string target);
  std::unique_ptr<ChannelzNode> AddSubchannel(ChannelzNode& channel,
                                              std::string address);
  std::unique_ptr<ChannelzNode> AddServer();
  // A connection of `parent` (a subchannel or a server). `remote_name`: the
  // address the subchannel dialled; empty for servers.
  std::unique_ptr<ChannelzNode> AddSocket(
      ChannelzNode& parent, const transport::io::SocketAddress& local,
      const transport::io::SocketAddress& remote, std::string remote_name);
  // AddSocket for the connected socket `fd`, its ends read from the
  // kernel; the connection's streams count as calls in `calls` too (may be
  // null). The caller hands connection_stats() to the session before it
  // starts.
  std::unique_ptr<ChannelzNode> AddConnection(
      ChannelzNode& parent, int fd, std::string remote_name,
      transport::http2::CallCounts* calls);
  std::unique_ptr<ChannelzNode> AddListenSocket(
      ChannelzNode& server, const transport::io::SocketAddress& local);

  // Reading (the channelz service). `max_results` 0 or above kMaxPageSize
  // means kMaxPageSize. Lookups of an id that is not of the kind asked for,
  // or gone, give nullopt.
  ChannelzPage<ChannelzChannelData> TopChannels(int64_t start_id,
                                                size_t max_results) const;
  ChannelzPage<ChannelzServerData> Servers(int64_t start_id,
                                           size_t max_results) const;
  std::optional<ChannelzChannelData> Channel(int64_t id) const;
  std::optional<ChannelzChannelData> Subchannel(int64_t id) const;
  std::optional<ChannelzServerData> Server(int64_t id) const;
  std::optional<ChannelzSocketData> Socket(int64_t id) const;
  // The server's connections (not its listening sockets) from
  // `start_socket_id`; nullopt when there is no such server.
  std::optional<ChannelzPage<ChannelzRef>> ServerSockets(
      int64_t server_id, int64_t start_socket_id, size_t max_results) const;

 private:
  friend class ChannelzNode;

  // What the registry keeps of a node, under mu_.
  struct Entry {
    ChannelzNode* node = nullptr;
    std::string name;    // the ref's name
    std::string target;  // channels, subchannels
    int64_t parent = 0;  // 0: none
    absl::Time created;
    std::vector<std::unique_ptr<transport::http2::CallCounts>> call_counts;
    // Sockets.
    transport::io::SocketAddress local;
    transport::io::SocketAddress remote;
    std::string remote_name;
    std::optional<ChannelzTlsData> tls;
    // Children by id: a channel's subchannels, a subchannel's sockets, a
    // server's sockets and listening sockets.
    std::map<int64_t, ChannelzNode::Kind> children;
  };

  std::unique_ptr<ChannelzNode> Add(ChannelzNode::Kind kind, Entry entry,
                                    ChannelzNode* parent);
  void Remove(ChannelzNode* node);
  transport::http2::CallCounts* NewCallCounts(ChannelzNode* node);
  void SetTls(ChannelzNode* node, ChannelzTlsData tls);

  // Readers' helpers, under mu_; `clocks` converts the loops' monotonic
  // times to wall-clock ones.
  struct Clocks;
  ChannelzRef RefOf(int64_t id, const Entry& entry) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChannelzCallCountsData CallsOf(const Entry& entry, const Clocks& clocks) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChannelzChannelData ChannelOf(int64_t id, const Entry& entry,
                                const Clocks& clocks) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChannelzServerData ServerOf(int64_t id, const Entry& entry,
                              const Clocks& clocks) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Entry* Find(int64_t id, ChannelzNode::Kind kind) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A page of the entities of `kind` from `start_id`, each made by the
  // member `data_of` (ChannelOf, ServerOf).
  template <class Data, class DataOf>
  ChannelzPage<Data> List(ChannelzNode::Kind kind, int64_t start_id,
                          size_t max_results, DataOf data_of) const;

  mutable Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CHANNELZ_CHANNELZ_REGISTRY_H_
