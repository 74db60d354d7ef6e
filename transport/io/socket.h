#ifndef H2RPC_TRANSPORT_IO_SOCKET_H_
#define H2RPC_TRANSPORT_IO_SOCKET_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/status.h"

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

// An IPv4, IPv6 or unix-domain socket address.
struct SocketAddress {
  // sockaddr_in, sockaddr_in6 or sockaddr_un, `size` bytes of it valid (0:
  // none). A unix-domain address is a pathname (sun_path holds the path and
  // its terminating NUL), a name in the abstract namespace (sun_path holds a
  // NUL, then the name's bytes, with no terminator: `size` ends the name),
  // or unnamed (`size` covers only the family: a connecting socket that was
  // never bound, as accept() and getpeername() report it).
  sockaddr_storage storage = {};
  socklen_t size = 0;

  // AF_INET, AF_INET6, AF_UNIX, or AF_UNSPEC when empty.
  int family() const { return storage.ss_family; }
  // The port in host byte order; -1 for other families (AF_UNIX included).
  int port() const;
  // AF_UNIX with a name in the abstract namespace.
  bool is_abstract() const;
  // AF_UNIX: the path of a pathname address, or the name (without the
  // leading NUL) of an abstract one; empty for an unnamed address and for
  // other families. Points into `storage`.
  absl::string_view unix_name() const;
  // "127.0.0.1:50051" or "[::1]:50051" ("[fe80::1%2]:50051" with a scope);
  // "unix:/path/to/socket" (as bound: a relative path stays relative) or
  // "unix-abstract:name", a byte of the path or name outside printable ASCII
  // (or a backslash) written \xNN; "unix:" for an unnamed unix-domain
  // address; "(unspecified address)" when empty.
  std::string ToString() const;
};

// The longest unix-domain socket path, and the longest abstract name, in
// bytes: sun_path (108 bytes on Linux) less the path's terminating NUL, or
// less the abstract name's leading NUL.
inline constexpr size_t kMaxUnixPathLength = 107;

// Builds a unix-domain address: a pathname (`abstract` false; relative to
// the working directory unless it starts with '/') or a name in the abstract
// namespace (`abstract` true; any bytes, NUL included). INVALID_ARGUMENT,
// `*address` untouched, when it is empty, longer than kMaxUnixPathLength
// (naming the length and the limit), or a path containing a NUL byte.
Status UnixSocketAddress(absl::string_view path, bool abstract,
                         SocketAddress* address);

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

// The functions below take TCP (AF_INET, AF_INET6) and unix-domain stream
// (AF_UNIX) addresses alike, whatever their names say. TCP_NODELAY is set on
// TCP sockets only.

// A non-blocking, close-on-exec listening socket bound to `address` (TCP
// port 0: the kernel picks; read it back with LocalAddress). SO_REUSEADDR on
// TCP. For a unix-domain pathname, bind() creates the socket file and fails
// (EADDRINUSE) if any file exists at the path: see RemoveStaleSocketFile and
// SocketFile. UNAVAILABLE naming the address and errno text on failure.
Status ListenTcp(const SocketAddress& address, int backlog,
                 FileDescriptor* listener);

// Accepts one connection: non-blocking, close-on-exec, TCP_NODELAY (TCP).
// Returns an invalid descriptor when none is pending (EAGAIN) or on an
// error. If `error` is not null it receives 0 on success, else the errno:
// EAGAIN means "drained, wait for readability"; EMFILE, ENFILE, ENOBUFS or
// ENOMEM mean the connection is still pending and accepting again at once
// would spin, so back off; anything else (ECONNABORTED...) concerned only
// that connection, so accept again. `peer` may be null; a unix-domain peer
// is usually unnamed (see SocketAddress).
FileDescriptor AcceptTcp(int listener, SocketAddress* peer,
                         int* error = nullptr);

// Starts a non-blocking connect (TCP_NODELAY set on TCP). `*in_progress`
// tells whether to wait for writability and then call FinishConnectTcp.
// UNAVAILABLE naming the address and errno text on immediate failure (a
// unix-domain connect fails at once when nothing listens: ENOENT,
// ECONNREFUSED; EAGAIN when the listener's backlog is full).
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

// Before ListenTcp on a unix-domain pathname: removes a socket file left at
// the path (by a process that did not remove it, or one still listening
// there: its clients then reach the new listener), as gRPC does. OK when
// nothing exists there or `address` is not a unix-domain pathname;
// UNAVAILABLE, the file left in place, when a file that is not a socket
// exists there (naming the path and the file's type) or unlink() fails.
Status RemoveStaleSocketFile(const SocketAddress& address);

// The file a listening unix-domain pathname socket created: removed when the
// listener is done with it (Remove(), or destruction), if the path still
// names that file (same device and inode), so a socket file another server
// has since bound at the path is left alone. Holds nothing for other
// addresses. Move-only; not thread-safe.
class SocketFile {
 public:
  // Holds no file.
  SocketFile() = default;
  // The file at the path of `address`, just bound by ListenTcp; none if
  // `address` is not a unix-domain pathname (or no file is there).
  static SocketFile Bound(const SocketAddress& address);
  ~SocketFile() { Remove(); }
  SocketFile(SocketFile&& other) noexcept;
  SocketFile& operator=(SocketFile&& other) noexcept;

  // The path; empty when none is held.
  const std::string& path() const { return path_; }
  // Unlinks the file if the path still names it, and holds none after.
  // Failures are ignored (the file is gone or not ours).
  void Remove();

 private:
  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SOCKET_H_
