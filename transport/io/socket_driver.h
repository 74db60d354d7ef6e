#ifndef H2RPC_TRANSPORT_IO_SOCKET_DRIVER_H_
#define H2RPC_TRANSPORT_IO_SOCKET_DRIVER_H_

#include <cstddef>
#include <cstdint>

#include "transport/io/byte_session.h"
#include "transport/io/event_loop.h"
#include "transport/io/socket.h"

namespace h2rpc::transport::io {

// Moves bytes between a connected non-blocking socket and a ByteSession on
// one EventLoop: what one read brings in is fed to the session and the
// output that produced is sent before the next read; output requested
// otherwise during a loop iteration leaves in one send() at its end. Reads go
// to buffers the loop's connections share, so an idle connection holds none:
// at most 32 KiB into EventLoop::read_buffer (about 28 unary calls of 1 KiB,
// which kept both sides of a loaded connection busiest: 64 KiB batched too
// much at 64 calls in flight, 16 KiB cost more sends at 120), or, while the
// session expects the rest of a large message
// (ByteSession::ExpectsLargeInput), at most 256 KiB into
// EventLoop::large_read_buffer. One readiness event takes at most 16 reads
// and 512 KiB, so one busy connection does not starve the others on its
// loop. While the socket refuses output and the session asks for it
// (ByteSession::PausesInputWhileOutputBlocked), the driver reads nothing
// until the output moves again; nor while the session wants no input
// (ByteSession::WantsInput), until it asks for a flush.
//
// Loop thread only. Allocates nothing after construction (the loop's shared
// buffers are allocated by the loop, once). The session must
// outlive the driver (io::SocketConnection owns both); it stops calling the
// driver once it has called CloseWire().
class SocketDriver final : public Wire, private FdWatcher {
 public:
  SocketDriver(EventLoop* loop, FileDescriptor socket, ByteSession* session);
  ~SocketDriver();
  SocketDriver(const SocketDriver&) = delete;
  SocketDriver& operator=(const SocketDriver&) = delete;

  // Starts the session on this driver and watches the socket.
  void Start();

  // Wire.
  void RequestFlush() override;
  void ShutdownWrite() override;
  void CloseWire(bool flush_first) override;
  int error_number() const override { return error_number_; }

 private:
  class FlushTask : public Task {
   public:
    explicit FlushTask(SocketDriver* d) : driver_(d) {}
    void Run() override { driver_->Flush(); }

   private:
    SocketDriver* driver_;
  };

  void OnFdReady(uint32_t events) override;
  void ReadAvailable();
  void Flush();
  // Watches for what the socket still needs: input until the peer closed
  // (unless input_paused()), writability while output waits.
  void UpdateInterest();
  // Output waits for the socket and the session wants no input meanwhile,
  // or the session wants no input now.
  bool input_paused() const {
    return (output_blocked_ && session_->PausesInputWhileOutputBlocked()) ||
           !session_->WantsInput();
  }

  EventLoop* const loop_;
  FileDescriptor socket_;
  ByteSession* const session_;
  FlushTask flush_task_{this};
  bool flush_requested_ = false;
  bool started_ = false;
  bool closed_ = false;
  int error_number_ = 0;         // of the read or write that failed
  bool read_closed_ = false;     // end of file seen
  bool write_shut_ = false;      // ShutdownWrite() done
  bool output_blocked_ = false;  // send() would block: wait for EPOLLOUT
  uint32_t interest_ = 0;        // the epoll mask registered
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SOCKET_DRIVER_H_
