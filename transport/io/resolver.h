#ifndef H2RPC_TRANSPORT_IO_RESOLVER_H_
#define H2RPC_TRANSPORT_IO_RESOLVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/io/event_loop.h"
#include "transport/io/socket.h"

namespace h2rpc::transport::io {

// Resolves targets ("host:port", see ResolveTarget) on a thread of its own,
// so that a lookup that blocks (getaddrinfo waiting for a DNS server) never
// stalls an event loop. The result comes back as a task on the caller's
// EventLoop. One thread per Resolver, started by the first Resolve();
// resolutions run one at a time, in request order.
//
// Thread safety: Resolve() from any thread. A Resolution is used (cancelled,
// destroyed, asked active()) only on the loop thread it was given, or once
// that loop has stopped.
class Resolver {
 public:
  struct Result {
    Status status;
    std::vector<SocketAddress> addresses;  // when OK: at least one
  };
  // Looks up one target; runs on the resolver thread and may block. Must not
  // touch an event loop.
  using ResolveFunction = std::function<Status(
      absl::string_view target, std::vector<SocketAddress>* addresses)>;
  // Runs on the loop thread given to Resolve().
  using Callback = absl::AnyInvocable<void(Result result)>;

  struct Request;

  // A resolution in flight, owned by its requester. Move-only; destroying it
  // cancels it.
  class Resolution {
   public:
    // Refers to no resolution.
    Resolution() = default;
    ~Resolution() { Cancel(); }
    Resolution(Resolution&& other) noexcept = default;
    // Cancels the resolution held, then takes `other`'s.
    Resolution& operator=(Resolution&& other) noexcept;

    // Loop thread. From here on the callback never runs, is destroyed, and
    // the resolver no longer touches the loop for this resolution (a lookup
    // under way on the resolver thread finishes, and its result is
    // dropped). Never blocks. No-op once the callback has started, or on an
    // empty Resolution.
    void Cancel();
    // Loop thread. True from Resolve() until the callback starts or
    // Cancel().
    bool active() const;

   private:
    friend class Resolver;
    explicit Resolution(std::shared_ptr<Request> request)
        : request_(std::move(request)) {}

    std::shared_ptr<Request> request_;
  };

  // `resolve` (default: getaddrinfo through ResolveTarget) is called on the
  // resolver thread for each target; tests inject lookups that block.
  explicit Resolver(ResolveFunction resolve = ResolveTarget);
  // Returns promptly even while a lookup blocks: joins the thread when it is
  // idle, otherwise leaves it to finish the lookup under way on its own
  // (its result is dropped) and exit. Resolutions still queued are dropped
  // (their callbacks destroyed, never run); cancel yours first.
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Any thread. Queues `target` for lookup; `done` runs on `loop`'s thread
  // with the result, unless the returned Resolution is cancelled (or
  // destroyed) first. `loop` must stay alive until then. Allocates (the
  // request, and a task to deliver the result); starts the thread on first
  // use.
  Resolution Resolve(absl::string_view target, EventLoop* loop, Callback done);

 private:
  struct Shared;

  const std::shared_ptr<Shared> shared_;
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_RESOLVER_H_
