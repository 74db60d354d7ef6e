#include "transport/io/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
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

static_assert(sizeof(sockaddr_un::sun_path) == kMaxUnixPathLength + 1,
              "kMaxUnixPathLength must match sun_path");
static_assert(sizeof(sockaddr_un) <= sizeof(sockaddr_storage),
              "sockaddr_un must fit in SocketAddress::storage");

constexpr size_t kSunPathOffset = offsetof(sockaddr_un, sun_path);

bool IsTcp(int family) { return family == AF_INET || family == AF_INET6; }

// Disables Nagle on a TCP socket: gRPC frames are written whole, and latency
// matters more than coalescing small segments.
void SetNoDelay(int fd, int family) {
  if (!IsTcp(family)) return;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// `bytes` with each byte outside printable ASCII, and each backslash, as
// \xNN.
std::string Printable(absl::string_view bytes) {
  std::string text;
  text.reserve(bytes.size());
  for (const char c : bytes) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      text.push_back(c);
    } else {
      absl::StrAppend(&text, "\\x", absl::Hex(byte, absl::kZeroPad2));
    }
  }
  return text;
}

const char* FileType(mode_t mode) {
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symbolic link";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "file that is not a socket";
}

// The path of a unix-domain pathname address; empty for anything else.
std::string PathOf(const SocketAddress& address) {
  if (address.family() != AF_UNIX || address.is_abstract()) return "";
  return std::string(address.unix_name());
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

bool SocketAddress::is_abstract() const {
  return storage.ss_family == AF_UNIX && size > kSunPathOffset &&
         reinterpret_cast<const sockaddr_un*>(&storage)->sun_path[0] == '\0';
}

absl::string_view SocketAddress::unix_name() const {
  if (storage.ss_family != AF_UNIX || size <= kSunPathOffset) return {};
  const char* path = reinterpret_cast<const sockaddr_un*>(&storage)->sun_path;
  const size_t length =
      std::min<size_t>(size - kSunPathOffset, sizeof(sockaddr_un::sun_path));
  if (path[0] == '\0') return absl::string_view(path + 1, length - 1);
  return absl::string_view(path, strnlen(path, length));
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
    case AF_UNIX:
      return absl::StrCat(is_abstract() ? "unix-abstract:" : "unix:",
                          Printable(unix_name()));
    case AF_UNSPEC:
      return "(unspecified address)";
    default:
      return absl::StrCat("(address family ", storage.ss_family, ")");
  }
}

Status UnixSocketAddress(absl::string_view path, bool abstract,
                         SocketAddress* address) {
  const char* what =
      abstract ? "abstract unix socket name" : "unix socket path";
  if (path.empty()) {
    return Status(StatusCode::kInvalidArgument, absl::StrCat("empty ", what));
  }
  if (path.size() > kMaxUnixPathLength) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat(what, " '", Printable(path), "' is ",
                               path.size(), " bytes; the limit is ",
                               kMaxUnixPathLength, " (sun_path)"));
  }
  if (!abstract && path.find('\0') != absl::string_view::npos) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat(what, " '", Printable(path), "' contains a NUL byte"));
  }
  SocketAddress result;
  auto* un = reinterpret_cast<sockaddr_un*>(&result.storage);
  un->sun_family = AF_UNIX;
  char* name = abstract ? un->sun_path + 1 : un->sun_path;
  std::memcpy(name, path.data(), path.size());
  // A pathname's terminating NUL is counted; an abstract name has none (its
  // length is the address's).
  result.size = static_cast<socklen_t>(kSunPathOffset + path.size() + 1);
  *address = result;
  return Status();
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
  if (IsTcp(address.family()) &&
      setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
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
      SetNoDelay(fd, address->family());
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
  SetNoDelay(fd.get(), address.family());
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

Status RemoveStaleSocketFile(const SocketAddress& address) {
  const std::string path = PathOf(address);
  if (path.empty()) return Status();
  struct stat file;
  if (lstat(path.c_str(), &file) != 0) {
    const int error = errno;
    if (error == ENOENT) return Status();
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("cannot listen on ", address.ToString(),
                               ": lstat failed: ", ErrnoText(error)));
  }
  if (!S_ISSOCK(file.st_mode)) {
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("cannot listen on ", address.ToString(), ": a ",
                               FileType(file.st_mode),
                               " exists at that path (only a socket file "
                               "left there is replaced)"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("cannot listen on ", address.ToString(),
                               ": removing the socket file left there failed: ",
                               ErrnoText(errno)));
  }
  return Status();
}

SocketFile SocketFile::Bound(const SocketAddress& address) {
  SocketFile file;
  std::string path = PathOf(address);
  struct stat info;
  if (path.empty() || lstat(path.c_str(), &info) != 0 ||
      !S_ISSOCK(info.st_mode)) {
    return file;
  }
  file.path_ = std::move(path);
  file.device_ = info.st_dev;
  file.inode_ = info.st_ino;
  return file;
}

SocketFile::SocketFile(SocketFile&& other) noexcept
    : path_(std::move(other.path_)),
      device_(other.device_),
      inode_(other.inode_) {
  other.path_.clear();
}

SocketFile& SocketFile::operator=(SocketFile&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::move(other.path_);
    device_ = other.device_;
    inode_ = other.inode_;
    other.path_.clear();
  }
  return *this;
}

void SocketFile::Remove() {
  if (path_.empty()) return;
  struct stat info;
  if (lstat(path_.c_str(), &info) == 0 && S_ISSOCK(info.st_mode) &&
      info.st_dev == device_ && info.st_ino == inode_) {
    unlink(path_.c_str());
  }
  path_.clear();
}

}  // namespace h2rpc::transport::io
