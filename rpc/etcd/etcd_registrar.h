#ifndef H2RPC_RPC_ETCD_ETCD_REGISTRAR_H_
#define H2RPC_RPC_ETCD_ETCD_REGISTRAR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"

namespace h2rpc {

// Registers a server's address in etcd for EtcdResolverFactory (and for Go
// programs using etcd's naming/endpoints package) to find: puts the key
// "SERVICE/ADDRESS" with the value {"Op":0,"Addr":ADDRESS,"Metadata":...}
// under a lease of `ttl`, and keeps the lease alive with a LeaseKeepAlive
// stream (a keep-alive every ttl/3) on a thread of its own. If the process
// dies, the lease expires and etcd deletes the key: watchers see the
// backend leave within `ttl`. If etcd becomes unreachable or the lease
// expires meanwhile, the registrar registers again (a new lease) once etcd
// answers, retrying every second. Stop() revokes the lease, which deletes
// the key at once: call it when the server starts its graceful shutdown.
//
// Thread-safe. Allocates a channel to etcd and one thread.
class EtcdRegistrar {
 public:
  struct Options {
    // etcd's client endpoints: "HOST:PORT", or several numeric ones
    // separated by commas (as in an etcd:// target).
    std::string etcd;
    // The service name, the key prefix: "greeter" registers
    // "greeter/ADDRESS".
    std::string service;
    // What clients connect to: "IP:PORT" ("[IPv6]:PORT"), "unix:PATH".
    std::string address;
    // The endpoint's Metadata, JSON text; empty: null.
    std::string metadata_json;
    // The lease's time to live; etcd takes whole seconds, at least 1 (a
    // fraction is rounded up).
    absl::Duration ttl = absl::Seconds(10);
    // Deadline of each call to etcd.
    absl::Duration call_timeout = absl::Seconds(5);
    // Credentials of the channel to etcd; null: plaintext.
    std::shared_ptr<ChannelCredentials> credentials;
  };

  // Registers (LeaseGrant, then Put) and starts keeping the lease alive.
  // Blocks until the key is in etcd: OK with the registrar in `*out`, or
  // the error of the first attempt (INVALID_ARGUMENT for bad options;
  // UNAVAILABLE, DEADLINE_EXCEEDED, ... from etcd) and nothing left
  // running.
  static Status Start(Options options, std::unique_ptr<EtcdRegistrar>* out);

  // Stop()s.
  ~EtcdRegistrar();
  EtcdRegistrar(const EtcdRegistrar&) = delete;
  EtcdRegistrar& operator=(const EtcdRegistrar&) = delete;

  // Stops keeping the lease alive and revokes it, deleting the key. Blocks
  // for at most two call_timeouts (a registration under way, then the
  // revocation). The revocation's error if it failed (the
  // key then stays until the lease expires). Later calls return OK and do
  // nothing.
  Status Stop();

  // "SERVICE/ADDRESS".
  const std::string& key() const { return key_; }
  // The lease the key is under now (0 while registering again).
  int64_t lease_id();
  // Registrations so far: 1 after Start(), one more each time the lease was
  // lost and granted again.
  int registrations();
  // Why the latest keep-alive stream or registration attempt failed (OK if
  // none has): what an operator wants to see while the registrar retries.
  Status last_error();

 private:
  EtcdRegistrar(Options options, std::shared_ptr<Channel> etcd);

  // One LeaseGrant and Put; the lease into lease_id_.
  Status Register();
  // The keep-alive thread.
  void KeepAlive();
  // Keeps `lease` alive on one stream until it breaks, the lease is gone
  // (false) or the registrar stops.
  bool KeepAliveOnStream(int64_t lease);
  void SetLastError(Status status);
  // Waits up to `timeout` unless stopping; true when stopping.
  bool WaitUnlessStopping(absl::Duration timeout);

  const Options options_;
  const std::string key_;
  const std::string value_;
  const std::shared_ptr<Channel> etcd_;
  std::thread thread_;

  Mutex mu_;
  CondVar stop_requested_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t lease_id_ ABSL_GUARDED_BY(mu_) = 0;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  Status last_error_ ABSL_GUARDED_BY(mu_);
  // The keep-alive stream's, to cancel it on Stop(); null between streams.
  ClientContext* stream_context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_ETCD_ETCD_REGISTRAR_H_
