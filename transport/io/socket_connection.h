#ifndef H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_
#define H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_

#include <memory>
#include <utility>

#include "transport/io/event_loop.h"
#include "transport/io/socket.h"
#include "transport/io/socket_driver.h"

namespace h2rpc::transport::io {

// A ByteSession of type `SessionT` on a socket: the session (constructed
// with the loop as its Scheduler, then `session_args`), an optional
// ByteFilter between them (TLS; null: plaintext) and the SocketDriver that
// moves the bytes, owned and destroyed together. Loop thread.
template <class SessionT>
class SocketConnection {
 public:
  template <class... Args>
  SocketConnection(EventLoop* loop, FileDescriptor socket,
                   std::unique_ptr<ByteFilter> filter, Args&&... session_args)
      : session_(loop, std::forward<Args>(session_args)...),
        filter_(std::move(filter)),
        driver_(loop, std::move(socket), Outermost(filter_.get(), &session_)) {}

  // Starts the session and watches the socket.
  void Start() { driver_.Start(); }
  SessionT& session() { return session_; }

 private:
  static ByteSession* Outermost(ByteFilter* filter, SessionT* session) {
    if (filter == nullptr) return session;
    filter->Attach(session);
    return filter;
  }

  SessionT session_;
  std::unique_ptr<ByteFilter> filter_;
  SocketDriver driver_;  // destroyed first: it calls into the others
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_
