#ifndef H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_
#define H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_

#include <memory>
#include <utility>

#include "transport/io/event_loop.h"
#include "transport/io/socket.h"
#include "transport/io/socket_driver.h"

namespace h2rpc::transport::io {

// A ByteSession of type `SessionT` on a socket: the session (constructed
// with the loop as its Scheduler, then `session_args`), up to two
// ByteFilters between them (`outer_filter` next to the socket, TLS;
// `inner_filter` next to the session, the HTTP/1.1 bridge; null: none) and
// the SocketDriver that moves the bytes, owned and destroyed together. Loop
// thread.
template <class SessionT>
class SocketConnection {
 public:
  template <class... Args>
  SocketConnection(EventLoop* loop, FileDescriptor socket,
                   std::unique_ptr<ByteFilter> outer_filter,
                   std::unique_ptr<ByteFilter> inner_filter,
                   Args&&... session_args)
      : session_(loop, std::forward<Args>(session_args)...),
        inner_filter_(std::move(inner_filter)),
        outer_filter_(std::move(outer_filter)),
        driver_(loop, std::move(socket),
                Wrap(outer_filter_.get(),
                     Wrap(inner_filter_.get(), &session_))) {}

  // Starts the session and watches the socket.
  void Start() { driver_.Start(); }
  SessionT& session() { return session_; }

 private:
  // `filter` in front of `session`, or `session` without one.
  static ByteSession* Wrap(ByteFilter* filter, ByteSession* session) {
    if (filter == nullptr) return session;
    filter->Attach(session);
    return filter;
  }

  SessionT session_;
  std::unique_ptr<ByteFilter> inner_filter_;
  std::unique_ptr<ByteFilter> outer_filter_;
  SocketDriver driver_;  // destroyed first: it calls into the others
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_
