#ifndef H2RPC_TRANSPORT_IO_SOCKET_H_
#define H2RPC_TRANSPORT_IO_SOCKET_H_

#include <sys/socket.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "transport/core/status.h"

namespace h2rpc::transport::io {

// Owns a file descriptor; closes it on destruction. Move-only.
class FileDescriptor {
 public:
  // Holds no descriptor.
  FileDescriptor() = default;
  // Takes ownership of `fd` (-1: none).
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept;
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;

  // The descriptor, or -1.
  int get() const { return fd_; }
  // True if a descriptor is held.
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing; returns the descriptor (or -1).
  int release();
  // Closes the held descriptor (if any) and takes ownership of `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// An IPv4 or IPv6 socket address.
struct SocketAddress {
  // sockaddr_in or sockaddr_in6, `size` bytes of it valid (0: none).
  sockaddr_storage storage = {};
  socklen_t size = 0;

  // AF_INET, AF_INET6, or AF_UNSPEC when empty.
  int family() const { return storage.ss_family; }
  // The port in host byte order; -1 for other families.
  int port() const;
  // "127.0.0.1:50051" or "[::1]:50051" ("[fe80::1%2]:50051" with a scope);
  // "(unspecified address)" when empty.
  std::string ToString() const;
};

// Resolves "host:port", "[v6]:port" (and "localhost:port") with
// getaddrinfo into `*addresses` (replaced; in the resolver's preference
// order). The port is decimal, 0 to 65535 (0: listen on any port); an IPv6
// literal must be bracketed. UNAVAILABLE with the resolver's message on
// failure, INVALID_ARGUMENT for a malformed target. Blocks while resolving
// names: keep it off the loop threads for anything but numeric addresses.
Status ResolveTarget(absl::string_view target,
                     std::vector<SocketAddress>* addresses);

// ResolveTarget for a target whose host is an IP address literal
// ("127.0.0.1:80", "[::1]:80"): converted without any lookup
// (AI_NUMERICHOST), so it never blocks and may run on a loop thread. A host
// name leaves `*addresses` empty and returns OK: resolve it with
// ResolveTarget, off the loop (transport/io/resolver.h). INVALID_ARGUMENT for
// a malformed target, as ResolveTarget.
Status ResolveNumericTarget(absl::string_view target,
                            std::vector<SocketAddress>* addresses);

// A non-blocking, close-on-exec listening TCP socket bound to `address`
// (port 0: the kernel picks; read it back with LocalAddress). SO_REUSEADDR.
// UNAVAILABLE naming the address and errno text on failure.
Status ListenTcp(const SocketAddress& address, int backlog,
                 FileDescriptor* listener);

// Accepts one connection: non-blocking, close-on-exec, TCP_NODELAY. Returns
// an invalid descriptor when none is pending (EAGAIN) or on an error. If
// `error` is not null it receives 0 on success, else the errno: EAGAIN means
// "drained, wait for readability"; EMFILE, ENFILE, ENOBUFS or ENOMEM mean the
// connection is still pending and accepting again at once would spin, so back
// off; anything else (ECONNABORTED...) concerned only that connection, so
// accept again. `peer` may be null.
FileDescriptor AcceptTcp(int listener, SocketAddress* peer,
                         int* error = nullptr);

// Starts a non-blocking connect (TCP_NODELAY set). `*in_progress` tells
// whether to wait for writability and then call FinishConnect. UNAVAILABLE
// naming the address and errno text on immediate failure.
Status StartConnectTcp(const SocketAddress& address, FileDescriptor* socket,
                       bool* in_progress);
// Result of a connect that was in progress (SO_ERROR), UNAVAILABLE naming
// `address` and the errno text on failure.
Status FinishConnectTcp(int socket, const SocketAddress& address);

// The address `socket` is bound to (getsockname). UNAVAILABLE on failure.
Status LocalAddress(int socket, SocketAddress* address);
// The address `socket` is connected to (getpeername). UNAVAILABLE on failure
// (ENOTCONN for a socket whose connect has not completed).
Status PeerAddress(int socket, SocketAddress* address);

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SOCKET_H_
