#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_LISTENER_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_LISTENER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/io/event_loop.h"
#include "transport/io/socket.h"
#include "transport/tls/tls_context.h"

namespace h2rpc::internal {

// What the listener does after accept() failed with `error` (an errno).
enum class AcceptFailure {
  // EAGAIN: nothing pending; wait for readability.
  kDrained,
  // The failure concerned only the connection being accepted (ECONNABORTED,
  // EPROTO, EPERM, a network error reported early): accept the next one.
  kSkipConnection,
  // EMFILE, ENFILE, ENOBUFS, ENOMEM, or an error of the listening socket
  // itself: the connection stays pending, so accepting again at once would
  // spin; stop watching the socket for a while.
  kBackOff,
};
AcceptFailure ClassifyAcceptFailure(int error);

// Back-off while accept() fails for lack of resources: the first pause, and
// the longest (each pause of an episode doubles the previous one).
inline constexpr absl::Duration kAcceptBackoffInitial = absl::Milliseconds(10);
inline constexpr absl::Duration kAcceptBackoffMax = absl::Seconds(1);
// The pause that follows a pause of `previous` (kAcceptBackoffInitial after
// none, i.e. ZeroDuration()).
absl::Duration NextAcceptBackoff(absl::Duration previous);

// Accepts connections on one listening socket and hands each to the server
// (Host::Adopt, which picks a loop). Runs on one event loop (the
// server's first), which all of the server's listeners share.
//
// The socket is watched level-triggered; the listener stops watching it
// (so the loop never spins on a connection it cannot take) in two cases:
//  - accept() fails for lack of resources (see AcceptFailure::kBackOff): it
//    logs one line to stderr at the start of the episode and watches again
//    after kAcceptBackoffInitial, doubling up to kAcceptBackoffMax while the
//    failures last; an accepted connection ends the episode.
//  - ServerOptions::max_connections connections are open: it watches again
//    when ConnectionSlotFreed() reports that one has closed.
//
// Start() may be called from any thread, once; ConnectionSlotFreed() from
// any thread; everything else runs on the loop thread. Destroy the listener
// only after Stop() has run on its loop. Accepting allocates only what
// Adopt() does; the pauses allocate nothing beyond the log line that starts
// an episode.
class ServerListener final : private transport::io::FdWatcher,
                             private transport::io::Timer,
                             private transport::io::Task {
 public:
  // What a listener needs of its server. ServerCore implements it.
  class Host {
   public:
    // Any thread: true while ServerOptions::max_connections connections are
    // open.
    virtual bool AtConnectionLimit() = 0;
    // Any thread: serve an accepted connection on one of the server's loops,
    // over TLS with `tls` unless it is null.
    virtual void Adopt(
        transport::io::FileDescriptor socket, std::string peer,
        std::shared_ptr<const transport::tls::TlsContext> tls) = 0;

   protected:
    ~Host() = default;
  };

  // `server` must outlive the listener. `file`: the socket file of a
  // unix-domain pathname `socket` (none for others), removed by Stop().
  // `tls`: where the port's TLS context is (null: plaintext); each accepted
  // connection gets the context it holds then.
  ServerListener(Host* server, transport::io::FileDescriptor socket,
                 transport::io::SocketFile file,
                 std::shared_ptr<transport::tls::TlsContextSlot> tls);
  ServerListener(const ServerListener&) = delete;
  ServerListener& operator=(const ServerListener&) = delete;

  // Starts watching the socket on `loop` (from a task posted to it).
  void Start(transport::io::EventLoop* loop);
  // Loop thread: stops accepting, closes the socket and removes its socket
  // file (unix-domain pathname) if it is still the one bound. Idempotent.
  void Stop();
  // Any thread: the server's open connections dropped below
  // ServerOptions::max_connections; a listener paused at the limit accepts
  // again. Never allocates (posts an embedded task).
  void ConnectionSlotFreed();

 private:
  // Readable listening socket: accepts up to a batch of connections.
  void OnFdReady(uint32_t events) override;
  // The back-off pause is over: watch the socket again.
  void OnTimer() override;
  // Posted by ConnectionSlotFreed(): resume if paused at the limit.
  void Run() override;

  // The peer string of an accepted connection (ServerContext::peer()).
  std::string PeerName(const transport::io::SocketAddress& peer) const;
  // Registers the socket with the loop unless it is; backs off on failure.
  void Watch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(*loop_);
  void Unwatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(*loop_);
  // Stops watching for the next pause of the back-off episode, logging
  // "`what` failed on <address>: `reason`" if the episode starts here.
  void BackOff(const char* what, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*loop_);

  Host* const server_;
  transport::io::FileDescriptor socket_;
  transport::io::SocketFile file_;
  const std::shared_ptr<transport::tls::TlsContextSlot> tls_;
  // "127.0.0.1:50051" or "unix:/path", for the log line, and the peer of a
  // connection from an unnamed unix-domain socket.
  std::string address_;
  transport::io::EventLoop* loop_ = nullptr;
  bool watching_ ABSL_GUARDED_BY(*loop_) = false;
  bool paused_at_limit_ ABSL_GUARDED_BY(*loop_) = false;
  // The last pause of the current back-off episode; zero outside one.
  absl::Duration backoff_ ABSL_GUARDED_BY(*loop_) = absl::ZeroDuration();
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_LISTENER_H_
