#include "transport/io/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace h2rpc::transport::io {
namespace {

std::string ErrnoText(int error) {
  char buffer[256];
  // GNU strerror_r: returns a pointer to the message (maybe not `buffer`).
  return strerror_r(error, buffer, sizeof(buffer));
}

Status Unavailable(absl::string_view what, const SocketAddress& address,
                   int error) {
  return Status(StatusCode::kUnavailable,
                absl::StrCat(what, " ", address.ToString(),
                             " failed: ", ErrnoText(error)));
}

Status InvalidTarget(absl::string_view target, absl::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                absl::StrCat("invalid target '", target, "': ", why,
                             " (expected host:port or [ipv6]:port)"));
}

// Disables Nagle: gRPC frames are written whole, and latency matters more
// than coalescing small segments.
void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Parses a decimal port, 0 to 65535, digits only.
bool ParsePort(absl::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int value = 0;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value > 65535) return false;
  *port = value;
  return true;
}

// Splits a target into host and port text, or explains why it cannot.
Status SplitTarget(absl::string_view target, std::string* host,
                   std::string* port, bool* bracketed) {
  absl::string_view port_text;
  if (!target.empty() && target.front() == '[') {
    const size_t close = target.find(']');
    if (close == absl::string_view::npos) {
      return InvalidTarget(target, "missing ']'");
    }
    if (close + 1 >= target.size() || target[close + 1] != ':') {
      return InvalidTarget(target, "missing ':port' after ']'");
    }
    *host = std::string(target.substr(1, close - 1));
    port_text = target.substr(close + 2);
    *bracketed = true;
  } else {
    const size_t colon = target.rfind(':');
    if (colon == absl::string_view::npos) {
      return InvalidTarget(target, "missing ':port'");
    }
    const absl::string_view host_text = target.substr(0, colon);
    if (host_text.find_first_of(":[]") != absl::string_view::npos) {
      return InvalidTarget(target, "an IPv6 address must be in brackets");
    }
    *host = std::string(host_text);
    port_text = target.substr(colon + 1);
    *bracketed = false;
  }
  if (host->empty()) return InvalidTarget(target, "empty host");
  int port_number;
  if (!ParsePort(port_text, &port_number)) {
    return InvalidTarget(target, absl::StrCat("port '", port_text,
                                              "' is not a number from 0 to "
                                              "65535"));
  }
  *port = std::string(port_text);
  return Status();
}

Status GetAddress(int socket, SocketAddress* address, bool peer) {
  address->storage = {};
  address->size = sizeof(address->storage);
  sockaddr* sa = reinterpret_cast<sockaddr*>(&address->storage);
  const int rc = peer ? getpeername(socket, sa, &address->size)
                      : getsockname(socket, sa, &address->size);
  if (rc != 0) {
    const int error = errno;
    address->size = 0;
    return Status(StatusCode::kUnavailable,
                  absl::StrCat(peer ? "getpeername" : "getsockname", " of fd ",
                               socket, " failed: ", ErrnoText(error)));
  }
  return Status();
}

}  // namespace

FileDescriptor::~FileDescriptor() { reset(); }

FileDescriptor::FileDescriptor(FileDescriptor&& other) noexcept
    : fd_(other.release()) {}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int FileDescriptor::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void FileDescriptor::reset(int fd) {
  // Linux closes the descriptor even when close() fails with EINTR, so it
  // must not be retried.
  if (fd_ >= 0 && fd_ != fd) close(fd_);
  fd_ = fd;
}

int SocketAddress::port() const {
  switch (storage.ss_family) {
    case AF_INET:
      return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
    case AF_INET6:
      return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
    default:
      return -1;
  }
}

std::string SocketAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  switch (storage.ss_family) {
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      return absl::StrCat(text, ":", port());
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      if (in6->sin6_scope_id != 0) {
        return absl::StrCat("[", text, "%", in6->sin6_scope_id, "]:", port());
      }
      return absl::StrCat("[", text, "]:", port());
    }
    case AF_UNSPEC:
      return "(unspecified address)";
    default:
      return absl::StrCat("(address family ", storage.ss_family, ")");
  }
}

namespace {

// getaddrinfo for a split target; `numeric_only` adds AI_NUMERICHOST (no
// lookup). `*is_name` tells that a numeric-only lookup failed because the
// host is a name.
Status Lookup(absl::string_view target, bool numeric_only,
              std::vector<SocketAddress>* addresses, bool* is_name) {
  addresses->clear();
  *is_name = false;
  std::string host, port;
  bool bracketed = false;
  Status split = SplitTarget(target, &host, &port, &bracketed);
  if (!split.ok()) return split;

  addrinfo hints = {};
  // No AI_ADDRCONFIG: it hides ::1 (and 127.0.0.1) on hosts whose only
  // interface of that family is loopback, which is common in sandboxes.
  hints.ai_flags = AI_NUMERICSERV;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  if (bracketed) {
    hints.ai_flags |= AI_NUMERICHOST;
    hints.ai_family = AF_INET6;
  }
  if (numeric_only) hints.ai_flags |= AI_NUMERICHOST;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &result);
  if (rc != 0) {
    if (bracketed && rc != EAI_SYSTEM && rc != EAI_MEMORY) {
      return InvalidTarget(target, "not an IPv6 address in brackets");
    }
    if (numeric_only && rc == EAI_NONAME) {
      *is_name = true;
      return Status();
    }
    const std::string why =
        rc == EAI_SYSTEM ? ErrnoText(errno) : std::string(gai_strerror(rc));
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("cannot resolve '", target, "': ", why));
  }
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
        ai->ai_addrlen > sizeof(sockaddr_storage)) {
      continue;
    }
    SocketAddress address;
    std::memcpy(&address.storage, ai->ai_addr, ai->ai_addrlen);
    address.size = ai->ai_addrlen;
    addresses->push_back(address);
  }
  freeaddrinfo(result);
  if (addresses->empty()) {
    return Status(
        StatusCode::kUnavailable,
        absl::StrCat("cannot resolve '", target, "': no IPv4 or IPv6 address"));
  }
  return Status();
}

}  // namespace

Status ResolveTarget(absl::string_view target,
                     std::vector<SocketAddress>* addresses) {
  bool is_name;
  return Lookup(target, /*numeric_only=*/false, addresses, &is_name);
}

Status ResolveNumericTarget(absl::string_view target,
                            std::vector<SocketAddress>* addresses) {
  bool is_name;
  return Lookup(target, /*numeric_only=*/true, addresses, &is_name);
}

Status ListenTcp(const SocketAddress& address, int backlog,
                 FileDescriptor* listener) {
  FileDescriptor fd(
      socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable("socket for", address, errno);
  const int one = 1;
  if (setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return Unavailable("SO_REUSEADDR on", address, errno);
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage),
           address.size) != 0) {
    return Unavailable("bind to", address, errno);
  }
  if (listen(fd.get(), backlog) != 0) {
    return Unavailable("listen on", address, errno);
  }
  *listener = std::move(fd);
  return Status();
}

FileDescriptor AcceptTcp(int listener, SocketAddress* peer, int* error) {
  SocketAddress unused;
  SocketAddress* address = peer != nullptr ? peer : &unused;
  for (;;) {
    address->storage = {};
    address->size = sizeof(address->storage);
    const int fd =
        accept4(listener, reinterpret_cast<sockaddr*>(&address->storage),
                &address->size, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      SetNoDelay(fd);
      if (error != nullptr) *error = 0;
      return FileDescriptor(fd);
    }
    if (errno == EINTR) continue;
    if (error != nullptr) *error = errno;
    address->size = 0;
    return FileDescriptor();
  }
}

Status StartConnectTcp(const SocketAddress& address, FileDescriptor* socket_fd,
                       bool* in_progress) {
  *in_progress = false;
  FileDescriptor fd(
      socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable("socket for", address, errno);
  SetNoDelay(fd.get());
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage),
              address.size) != 0) {
    // EINTR: the connection continues asynchronously, as with EINPROGRESS.
    if (errno != EINPROGRESS && errno != EINTR) {
      return Unavailable("connect to", address, errno);
    }
    *in_progress = true;
  }
  *socket_fd = std::move(fd);
  return Status();
}

Status FinishConnectTcp(int socket, const SocketAddress& address) {
  int error = 0;
  socklen_t size = sizeof(error);
  if (getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
    error = errno;
  }
  if (error != 0) return Unavailable("connect to", address, error);
  return Status();
}

Status LocalAddress(int socket, SocketAddress* address) {
  return GetAddress(socket, address, /*peer=*/false);
}

Status PeerAddress(int socket, SocketAddress* address) {
  return GetAddress(socket, address, /*peer=*/true);
}

}  // namespace h2rpc::transport::io
