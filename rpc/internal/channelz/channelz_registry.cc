#include "rpc/internal/channelz/channelz_registry.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

using transport::http2::CallCounts;
using transport::io::MonotonicTime;

ChannelzNode::~ChannelzNode() { registry_->Remove(this); }

CallCounts* ChannelzNode::NewCallCounts() {
  return registry_->NewCallCounts(this);
}

void ChannelzNode::SetTls(ChannelzTlsData tls) {
  registry_->SetTls(this, std::move(tls));
}

void ChannelzNode::SetTlsOf(const transport::http2::Session& session) {
  transport::io::TlsDetails details;
  if (!session.GetTlsDetails(&details)) return;
  ChannelzTlsData tls;
  tls.standard_name = std::move(details.cipher);
  tls.local_certificate = std::move(details.local_certificate);
  tls.remote_certificate = std::move(details.peer_certificate);
  SetTls(std::move(tls));
}

// The clocks read once per listing: the loops stamp events with their
// monotonic clock, channelz shows wall-clock times.
struct ChannelzRegistry::Clocks {
  absl::Time wall = absl::Now();
  MonotonicTime monotonic = MonotonicTime::Now();

  absl::Time ToWall(MonotonicTime time) const {
    if (time == MonotonicTime::InfinitePast()) return absl::InfinitePast();
    return transport::io::WallFromMonotonic(time, wall, monotonic);
  }
};

std::unique_ptr<ChannelzNode> ChannelzRegistry::Add(ChannelzNode::Kind kind,
                                                    Entry entry,
                                                    ChannelzNode* parent) {
  MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  std::unique_ptr<ChannelzNode> node(new ChannelzNode(this, kind, id));
  entry.node = node.get();
  entry.created = absl::Now();
  if (parent != nullptr) {
    entry.parent = parent->id();
    entries_.at(parent->id()).children.emplace(id, kind);
  }
  entries_.emplace(id, std::move(entry));
  return node;
}

void ChannelzRegistry::Remove(ChannelzNode* node) {
  MutexLock lock(&mu_);
  auto it = entries_.find(node->id());
  if (it == entries_.end()) return;
  // Children that outlive their parent are listed on their own.
  for (const auto& child : it->second.children) {
    entries_.at(child.first).parent = 0;
  }
  if (it->second.parent != 0) {
    entries_.at(it->second.parent).children.erase(node->id());
  }
  entries_.erase(it);
}

CallCounts* ChannelzRegistry::NewCallCounts(ChannelzNode* node) {
  auto counts = std::make_unique<CallCounts>();
  CallCounts* result = counts.get();
  MutexLock lock(&mu_);
  entries_.at(node->id()).call_counts.push_back(std::move(counts));
  return result;
}

void ChannelzRegistry::SetTls(ChannelzNode* node, ChannelzTlsData tls) {
  MutexLock lock(&mu_);
  entries_.at(node->id()).tls = std::move(tls);
}

std::unique_ptr<ChannelzNode> ChannelzRegistry::AddChannel(
    std::string target) {
  Entry entry;
  entry.name = target;
  entry.target = std::move(target);
  return Add(ChannelzNode::Kind::kChannel, std::move(entry), nullptr);
}

std::unique_ptr<ChannelzNode> ChannelzRegistry::AddSubchannel(
    ChannelzNode& channel, std::string address) {
  Entry entry;
  entry.name = address;
  entry.target = std::move(address);
  return Add(ChannelzNode::Kind::kSubchannel, std::move(entry), &channel);
}

std::unique_ptr<ChannelzNode> ChannelzRegistry::AddServer() {
  return Add(ChannelzNode::Kind::kServer, Entry(), nullptr);
}

std::unique_ptr<ChannelzNode> ChannelzRegistry::AddSocket(
    ChannelzNode& parent, const transport::io::SocketAddress& local,
    const transport::io::SocketAddress& remote, std::string remote_name) {
  Entry entry;
  // gRPC names a socket by its two ends.
  entry.name = local.ToString() + " -> " + remote.ToString();
  entry.local = local;
  entry.remote = remote;
  entry.remote_name = std::move(remote_name);
  return Add(ChannelzNode::Kind::kSocket, std::move(entry), &parent);
}

std::unique_ptr<ChannelzNode> ChannelzRegistry::AddConnection(
    ChannelzNode& parent, int fd, std::string remote_name,
    transport::http2::CallCounts* calls) {
  // An end the kernel cannot tell (the peer already gone) is left empty.
  transport::io::SocketAddress local;
  transport::io::SocketAddress remote;
  if (!transport::io::LocalAddress(fd, &local).ok()) local = {};
  if (!transport::io::PeerAddress(fd, &remote).ok()) remote = {};
  std::unique_ptr<ChannelzNode> node =
      AddSocket(parent, local, remote, std::move(remote_name));
  node->connection_stats().calls = calls;
  return node;
}

std::unique_ptr<ChannelzNode> ChannelzRegistry::AddListenSocket(
    ChannelzNode& server, const transport::io::SocketAddress& local) {
  Entry entry;
  entry.name = local.ToString();
  entry.local = local;
  return Add(ChannelzNode::Kind::kListenSocket, std::move(entry), &server);
}

const ChannelzRegistry::Entry* ChannelzRegistry::Find(
    int64_t id, ChannelzNode::Kind kind) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.node->kind() != kind) return nullptr;
  return &it->second;
}

ChannelzRef ChannelzRegistry::RefOf(int64_t id, const Entry& entry) const {
  return ChannelzRef{id, entry.name};
}

ChannelzCallCountsData ChannelzRegistry::CallsOf(const Entry& entry,
                                                 const Clocks& clocks) const {
  ChannelzCallCountsData data;
  MonotonicTime last_started = MonotonicTime::InfinitePast();
  for (const auto& counts : entry.call_counts) {
    data.started += counts->started.Read();
    data.succeeded += counts->succeeded.Read();
    data.failed += counts->failed.Read();
    last_started = std::max(last_started, counts->last_started.Read());
  }
  data.last_started = clocks.ToWall(last_started);
  return data;
}

ChannelzChannelData ChannelzRegistry::ChannelOf(int64_t id, const Entry& entry,
                                                const Clocks& clocks) const {
  ChannelzChannelData data;
  data.ref = RefOf(id, entry);
  data.target = entry.target;
  data.state = entry.node->state_.load(std::memory_order_relaxed);
  data.created = entry.created;
  data.calls = CallsOf(entry, clocks);
  for (const auto& [child, kind] : entry.children) {
    const ChannelzRef ref = RefOf(child, entries_.at(child));
    if (kind == ChannelzNode::Kind::kSubchannel) {
      data.subchannels.push_back(ref);
    } else {
      data.sockets.push_back(ref);
    }
  }
  return data;
}

ChannelzServerData ChannelzRegistry::ServerOf(int64_t id, const Entry& entry,
                                              const Clocks& clocks) const {
  ChannelzServerData data;
  data.ref = RefOf(id, entry);
  data.created = entry.created;
  data.calls = CallsOf(entry, clocks);
  for (const auto& [child, kind] : entry.children) {
    if (kind == ChannelzNode::Kind::kListenSocket) {
      data.listen_sockets.push_back(RefOf(child, entries_.at(child)));
    }
  }
  return data;
}

namespace {

size_t PageSize(size_t max_results) {
  return max_results == 0 || max_results > ChannelzRegistry::kMaxPageSize
             ? ChannelzRegistry::kMaxPageSize
             : max_results;
}

}  // namespace

template <class Data, class DataOf>
ChannelzPage<Data> ChannelzRegistry::List(ChannelzNode::Kind kind,
                                          int64_t start_id, size_t max_results,
                                          DataOf data_of) const {
  const Clocks clocks;
  const size_t limit = PageSize(max_results);
  ChannelzPage<Data> page;
  MutexLock lock(&mu_);
  for (auto it = entries_.lower_bound(start_id); it != entries_.end(); ++it) {
    if (it->second.node->kind() != kind) continue;
    if (page.entries.size() == limit) {
      page.end = false;
      break;
    }
    page.entries.push_back((this->*data_of)(it->first, it->second, clocks));
  }
  return page;
}

ChannelzPage<ChannelzChannelData> ChannelzRegistry::TopChannels(
    int64_t start_id, size_t max_results) const {
  return List<ChannelzChannelData>(ChannelzNode::Kind::kChannel, start_id,
                                   max_results, &ChannelzRegistry::ChannelOf);
}

ChannelzPage<ChannelzServerData> ChannelzRegistry::Servers(
    int64_t start_id, size_t max_results) const {
  return List<ChannelzServerData>(ChannelzNode::Kind::kServer, start_id,
                                  max_results, &ChannelzRegistry::ServerOf);
}

std::optional<ChannelzChannelData> ChannelzRegistry::Channel(int64_t id) const {
  const Clocks clocks;
  MutexLock lock(&mu_);
  const Entry* entry = Find(id, ChannelzNode::Kind::kChannel);
  if (entry == nullptr) return std::nullopt;
  return ChannelOf(id, *entry, clocks);
}

std::optional<ChannelzChannelData> ChannelzRegistry::Subchannel(
    int64_t id) const {
  const Clocks clocks;
  MutexLock lock(&mu_);
  const Entry* entry = Find(id, ChannelzNode::Kind::kSubchannel);
  if (entry == nullptr) return std::nullopt;
  return ChannelOf(id, *entry, clocks);
}

std::optional<ChannelzServerData> ChannelzRegistry::Server(int64_t id) const {
  const Clocks clocks;
  MutexLock lock(&mu_);
  const Entry* entry = Find(id, ChannelzNode::Kind::kServer);
  if (entry == nullptr) return std::nullopt;
  return ServerOf(id, *entry, clocks);
}

std::optional<ChannelzSocketData> ChannelzRegistry::Socket(int64_t id) const {
  const Clocks clocks;
  MutexLock lock(&mu_);
  const Entry* entry = Find(id, ChannelzNode::Kind::kSocket);
  if (entry == nullptr) entry = Find(id, ChannelzNode::Kind::kListenSocket);
  if (entry == nullptr) return std::nullopt;
  ChannelzSocketData data;
  data.ref = RefOf(id, *entry);
  data.listen = entry->node->kind() == ChannelzNode::Kind::kListenSocket;
  data.local = entry->local;
  data.remote = entry->remote;
  data.remote_name = entry->remote_name;
  data.tls = entry->tls;
  if (data.listen) return data;
  const transport::http2::ConnectionStats& stats =
      entry->node->connection_stats_;
  data.streams_started = stats.streams_started.Read();
  data.streams_succeeded = stats.streams_succeeded.Read();
  data.streams_failed = stats.streams_failed.Read();
  data.messages_sent = stats.messages_sent.Read();
  data.messages_received = stats.messages_received.Read();
  data.keepalives_sent = stats.keepalives_sent.Read();
  data.last_local_stream_created =
      clocks.ToWall(stats.last_local_stream_created.Read());
  data.last_remote_stream_created =
      clocks.ToWall(stats.last_remote_stream_created.Read());
  data.last_message_sent = clocks.ToWall(stats.last_message_sent.Read());
  data.last_message_received = clocks.ToWall(stats.last_message_received.Read());
  return data;
}

std::optional<ChannelzPage<ChannelzRef>> ChannelzRegistry::ServerSockets(
    int64_t server_id, int64_t start_socket_id, size_t max_results) const {
  const size_t limit = PageSize(max_results);
  MutexLock lock(&mu_);
  const Entry* server = Find(server_id, ChannelzNode::Kind::kServer);
  if (server == nullptr) return std::nullopt;
  ChannelzPage<ChannelzRef> page;
  for (auto it = server->children.lower_bound(start_socket_id);
       it != server->children.end(); ++it) {
    if (it->second != ChannelzNode::Kind::kSocket) continue;
    if (page.entries.size() == limit) {
      page.end = false;
      break;
    }
    page.entries.push_back(RefOf(it->first, entries_.at(it->first)));
  }
  return page;
}

}  // namespace h2rpc::internal
