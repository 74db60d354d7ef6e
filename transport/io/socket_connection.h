#ifndef H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_
#define H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_

#include <utility>

#include "transport/io/event_loop.h"
#include "transport/io/socket.h"
#include "transport/io/socket_driver.h"

namespace h2rpc::transport::io {

// A ByteSession of type `SessionT` on a socket: the session (constructed
// with the loop as its Scheduler, then `session_args`) and the SocketDriver
// that moves its bytes, owned and destroyed together. Loop thread.
template <class SessionT>
class SocketConnection {
 public:
  template <class... Args>
  SocketConnection(EventLoop* loop, FileDescriptor socket,
                   Args&&... session_args)
      : session_(loop, std::forward<Args>(session_args)...),
        driver_(loop, std::move(socket), &session_) {}

  // Starts the session and watches the socket.
  void Start() { driver_.Start(); }
  SessionT& session() { return session_; }

 private:
  SessionT session_;
  SocketDriver driver_;  // destroyed first: it calls into session_
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SOCKET_CONNECTION_H_
