#ifndef H2RPC_RPC_INTERNAL_CONFIG_TARGET_H_
#define H2RPC_RPC_INTERNAL_CONFIG_TARGET_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {

// The port of a DNS, ipv4 or ipv6 target that names none (gRPC's default).
inline constexpr int kDefaultTargetPort = 443;

// A channel target in gRPC's naming syntax (gRPC doc/naming.md), parsed.
struct ParsedTarget {
  enum class Kind {
    // A host name (or an IP literal) to resolve: dns_host_port.
    kDns,
    // A fixed list of addresses (ipv4:, ipv6:, unix:, unix-abstract:):
    // `addresses`, nothing to resolve.
    kAddresses,
    // A scheme a resolver plugin resolves (rpc/resolver.h); set by the
    // channel, never by ParseTarget.
    kResolver,
  };
  Kind kind = Kind::kDns;
  // kDns: "host:port", the port filled in (kDefaultTargetPort when the
  // target names none), an IPv6 literal in brackets ("[::1]:443"): what
  // transport::io::ResolveTarget takes.
  std::string dns_host_port;
  // kDns: the host, without brackets (for TLS SNI and certificate checks).
  std::string dns_host;
  // kAddresses: at least one, in the target's order (a unix target has
  // exactly one).
  std::vector<transport::io::SocketAddress> addresses;
  // The :authority gRPC C++ sends by default for this target: for DNS the
  // endpoint as written, without the scheme and without a default port
  // ("dns:///example.com" -> "example.com", "localhost:50051" ->
  // "localhost:50051"); for ipv4/ipv6 the address list as written
  // ("127.0.0.1:1,127.0.0.2:2"); "localhost" for unix and unix-abstract.
  std::string authority;
};

// Parses `target` into `*out` (replaced on success, untouched on error).
// Any thread; allocates what `*out` holds; never blocks (ipv4/ipv6 literals
// are converted without lookups). The forms, as gRPC C++ takes them:
//   dns:///host[:port], dns:host[:port], dns:/host[:port]
//   host[:port], [ipv6]:port, [ipv6], bare ipv6 ("::1": no port)
//     (a target whose scheme is not one below and that parses as
//     host[:port] is DNS: "localhost:50051")
//   ipv4:addr[:port][,addr[:port]...]   (numeric IPv4 only)
//   ipv6:addr[,...], ipv6:[addr]:port[,...]   (numeric IPv6 only; a scope
//     "%eth0" or "%2" is allowed)
//   unix:path (relative or absolute), unix:///absolute/path
//   unix-abstract:name (the name is every byte after the colon, NUL
//     included: a name in the abstract namespace, no percent-decoding)
// A port is decimal, 0 to 65535; kDefaultTargetPort when absent. Paths and
// names are taken as written (no percent-decoding). INVALID_ARGUMENT naming
// the target and the problem for: an empty target or host; a DNS authority
// ("dns://8.8.8.8/host": not supported); a bad port; an ipv4/ipv6 entry
// that is not a numeric address of that family, or empty; a unix path or
// abstract name that is empty or longer than
// transport::io::kMaxUnixPathLength (107 bytes), or a path with a NUL; an
// authority in a unix target ("unix://host/path"); a scheme that is not
// dns, ipv4, ipv6, unix or unix-abstract (when the target does not parse as
// host:port either), naming the scheme and listing the supported ones.
Status ParseTarget(absl::string_view target, ParsedTarget* out);

// Splits `target` as a URI ("scheme://authority/path" or "scheme:path")
// when it starts with a scheme and a colon: true with the scheme in
// lowercase, the authority (empty without "//") and the path without its
// leading '/'. False, nothing written, when it has no scheme. Allocates.
bool SplitTargetUri(absl::string_view target, std::string* scheme,
                    std::string* authority, std::string* endpoint);

// `authority` with every byte RFC 3986 does not allow in an authority
// percent-encoded ("%2F" for '/'), as grpc-go encodes a target's endpoint
// for :authority. Allocates.
std::string EncodeAuthority(absl::string_view authority);

// Parses an address a resolver returned: "IP:PORT" with a numeric IPv4
// address, "[IPv6]:PORT" (a scope allowed), "unix:PATH" or
// "unix-abstract:NAME" (taken as written, as ParseTarget's). INVALID_ARGUMENT
// naming the address and the problem otherwise (a host name, no port).
Status ParseResolvedAddress(absl::string_view address,
                            transport::io::SocketAddress* out);

// For listening addresses (Server::Builder::AddListeningPort): sets
// `*is_unix` to whether `target` has the scheme "unix" or "unix-abstract"
// and, if it does, parses it into `*address` as ParseTarget does (with its
// errors). Anything else (*is_unix false) is left to the caller and OK.
Status ParseUnixTarget(absl::string_view target, bool* is_unix,
                       transport::io::SocketAddress* address);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CONFIG_TARGET_H_
