#include "rpc/internal/config/target.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/optional.h"

namespace h2rpc::internal {
namespace {

using transport::io::SocketAddress;

constexpr char kSupportedSchemes[] = "dns, ipv4, ipv6, unix, unix-abstract";

// `bytes` with each byte outside printable ASCII, and each backslash, as
// \xNN (as SocketAddress::ToString writes unix paths and names).
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

Status Invalid(absl::string_view target, absl::string_view why) {
  return Status(
      StatusCode::kInvalidArgument,
      absl::StrCat("invalid target '", Printable(target), "': ", why));
}

// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool IsScheme(absl::string_view text) {
  if (text.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(text[0])))
    return false;
  for (const char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' &&
        c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

// "//authority/path" -> authority and "/path"; anything else is all path.
void SplitAuthority(absl::string_view rest, absl::string_view* authority,
                    absl::string_view* path) {
  if (!absl::StartsWith(rest, "//")) {
    *authority = absl::string_view();
    *path = rest;
    return;
  }
  rest.remove_prefix(2);
  const size_t slash = rest.find('/');
  *authority = rest.substr(0, slash);
  *path = slash == absl::string_view::npos ? absl::string_view()
                                           : rest.substr(slash);
}

// A host and an optional port, as gRPC splits them: "host", "host:port",
// "[v6]", "[v6]:port", or a bare IPv6 address ("::1", two colons or more:
// no port).
struct HostPort {
  std::string host;
  // The host needs brackets in "host:port" (it has a colon).
  bool ipv6 = false;
  int port = kDefaultTargetPort;
};

// Decimal, 0 to 65535, digits only.
bool ParsePort(absl::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int value = 0;
  for (const char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value > 65535) return false;
  *port = value;
  return true;
}

// Splits `text`; false with `*why` when it cannot.
bool SplitHostPort(absl::string_view text, HostPort* out, std::string* why) {
  absl::string_view host;
  absl::optional<absl::string_view> port_text;
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      *why = absl::StrCat("missing ']' in '", text, "'");
      return false;
    }
    host = text.substr(1, close - 1);
    const absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        *why = absl::StrCat("'", rest, "' after ']' (expected ':port')");
        return false;
      }
      port_text = rest.substr(1);
    }
    out->ipv6 = true;
  } else {
    const size_t colon = text.find(':');
    if (colon == absl::string_view::npos) {
      host = text;
    } else if (text.find(':', colon + 1) == absl::string_view::npos) {
      host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
    } else {
      // Several colons and no brackets: an IPv6 address without a port.
      host = text;
      out->ipv6 = true;
    }
  }
  if (host.empty()) {
    *why = text.empty() ? "empty host"
                        : absl::StrCat("empty host in '", text, "'");
    return false;
  }
  if (port_text.has_value() && !ParsePort(*port_text, &out->port)) {
    *why = port_text->empty()
               ? absl::StrCat("empty port after ':' in '", text, "'")
               : absl::StrCat("port '", *port_text,
                              "' is not a number from 0 to 65535");
    return false;
  }
  out->host = std::string(host);
  return true;
}

// "host:port" with the host bracketed if it is IPv6.
std::string JoinHostPort(const HostPort& host_port) {
  return host_port.ipv6
             ? absl::StrCat("[", host_port.host, "]:", host_port.port)
             : absl::StrCat(host_port.host, ":", host_port.port);
}

// The numeric IPv6 address (scope allowed) `host_port` names; false if it
// is not one.
bool ToIpv6Address(const HostPort& host_port, SocketAddress* address) {
  std::vector<SocketAddress> addresses;
  const Status status = transport::io::ResolveNumericTarget(
      absl::StrCat("[", host_port.host, "]:", host_port.port), &addresses);
  if (!status.ok() || addresses.size() != 1 ||
      addresses[0].family() != AF_INET6) {
    return false;
  }
  *address = addresses[0];
  return true;
}

// The numeric dotted-quad IPv4 address `host_port` names (inet_pton, as
// gRPC); false if it is not one.
bool ToIpv4Address(const HostPort& host_port, SocketAddress* address) {
  if (host_port.ipv6) return false;
  SocketAddress result;
  auto* in = reinterpret_cast<sockaddr_in*>(&result.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(static_cast<uint16_t>(host_port.port));
  if (inet_pton(AF_INET, host_port.host.c_str(), &in->sin_addr) != 1) {
    return false;
  }
  result.size = sizeof(sockaddr_in);
  *address = result;
  return true;
}

// A DNS host: letters, digits, '-', '.', '_' and bytes beyond ASCII
// (internationalized names); an IPv6 literal is checked as one.
bool IsHostName(absl::string_view host) {
  for (const char c : host) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !absl::ascii_isalnum(byte) && c != '-' && c != '.' &&
        c != '_') {
      return false;
    }
  }
  return true;
}

// The DNS endpoint "host[:port]" into `*out`; false with `*why`.
bool ParseDnsEndpoint(absl::string_view endpoint, ParsedTarget* out,
                      std::string* why) {
  HostPort host_port;
  if (!SplitHostPort(endpoint, &host_port, why)) return false;
  if (host_port.ipv6) {
    SocketAddress unused;
    if (!ToIpv6Address(host_port, &unused)) {
      *why = absl::StrCat("'", host_port.host, "' is not an IPv6 address");
      return false;
    }
  } else if (!IsHostName(host_port.host)) {
    *why = absl::StrCat("'", host_port.host,
                        "' is not a host name (letters, digits, '-', '.', "
                        "'_')");
    return false;
  }
  out->kind = ParsedTarget::Kind::kDns;
  out->dns_host_port = JoinHostPort(host_port);
  out->dns_host = std::move(host_port.host);
  out->authority = std::string(endpoint);
  return true;
}

// "ipv4:" or "ipv6:" followed by `list`.
Status ParseAddressList(absl::string_view target, absl::string_view list,
                        bool ipv6, ParsedTarget* out) {
  absl::string_view authority;
  SplitAuthority(list, &authority, &list);
  if (!authority.empty()) {
    return Invalid(target, absl::StrCat("an authority ('", authority,
                                        "') is not allowed here"));
  }
  absl::ConsumePrefix(&list, "/");
  const char* family = ipv6 ? "IPv6" : "IPv4";
  out->kind = ParsedTarget::Kind::kAddresses;
  for (const absl::string_view entry : absl::StrSplit(list, ',')) {
    if (entry.empty()) {
      return Invalid(target, list.empty() ? "no address after the scheme"
                                          : "empty address in the list");
    }
    HostPort host_port;
    std::string why;
    if (!SplitHostPort(entry, &host_port, &why)) return Invalid(target, why);
    SocketAddress address;
    if (!(ipv6 ? ToIpv6Address(host_port, &address)
               : ToIpv4Address(host_port, &address))) {
      return Invalid(target, absl::StrCat("'", host_port.host, "' is not a ",
                                          "numeric ", family, " address"));
    }
    out->addresses.push_back(address);
  }
  out->authority = std::string(list);
  return Status();
}

// `rest` follows "unix:" (`abstract` false) or "unix-abstract:".
Status ParseUnix(absl::string_view target, absl::string_view rest,
                 bool abstract, SocketAddress* address) {
  absl::string_view path = rest;
  if (!abstract) {
    absl::string_view authority;
    SplitAuthority(rest, &authority, &path);
    if (!authority.empty()) {
      return Invalid(target,
                     absl::StrCat("an authority ('", authority,
                                  "') is not allowed in a unix target; write "
                                  "unix:///absolute/path or unix:path"));
    }
    if (absl::StartsWith(rest, "//") && path.empty()) {
      return Invalid(target, "no path after 'unix://' (unix:///absolute/path)");
    }
  }
  const Status status =
      transport::io::UnixSocketAddress(path, abstract, address);
  if (!status.ok()) return Invalid(target, status.message());
  return Status();
}

}  // namespace

Status ParseTarget(absl::string_view target, ParsedTarget* out) {
  if (target.empty()) return Invalid(target, "empty target");
  ParsedTarget parsed;
  const size_t colon = target.find(':');
  const absl::string_view scheme =
      colon != absl::string_view::npos && IsScheme(target.substr(0, colon))
          ? target.substr(0, colon)
          : absl::string_view();
  const absl::string_view rest =
      scheme.empty() ? target : target.substr(colon + 1);
  if (scheme == "dns") {
    absl::string_view authority, endpoint;
    SplitAuthority(rest, &authority, &endpoint);
    if (!authority.empty()) {
      return Invalid(target, absl::StrCat("DNS authorities ('", authority,
                                          "') are not supported; write "
                                          "dns:///host:port"));
    }
    absl::ConsumePrefix(&endpoint, "/");
    std::string why;
    if (!ParseDnsEndpoint(endpoint, &parsed, &why)) return Invalid(target, why);
  } else if (scheme == "ipv4" || scheme == "ipv6") {
    const Status status =
        ParseAddressList(target, rest, scheme == "ipv6", &parsed);
    if (!status.ok()) return status;
  } else if (scheme == "unix" || scheme == "unix-abstract") {
    SocketAddress address;
    const Status status =
        ParseUnix(target, rest, scheme == "unix-abstract", &address);
    if (!status.ok()) return status;
    parsed.kind = ParsedTarget::Kind::kAddresses;
    parsed.addresses.push_back(address);
    parsed.authority = "localhost";
  } else {
    // No scheme, or one gRPC would not know either: DNS if the whole target
    // is host[:port] ("localhost:50051").
    std::string why;
    if (!ParseDnsEndpoint(target, &parsed, &why)) {
      if (scheme.empty()) return Invalid(target, why);
      return Invalid(target,
                     absl::StrCat("unknown scheme '", scheme,
                                  "' (supported: ", kSupportedSchemes,
                                  "), and not host:port either: ", why));
    }
  }
  *out = std::move(parsed);
  return Status();
}

bool SplitTargetUri(absl::string_view target, std::string* scheme,
                    std::string* authority, std::string* endpoint) {
  const size_t colon = target.find(':');
  if (colon == absl::string_view::npos || !IsScheme(target.substr(0, colon))) {
    return false;
  }
  absl::string_view uri_authority, path;
  SplitAuthority(target.substr(colon + 1), &uri_authority, &path);
  absl::ConsumePrefix(&path, "/");
  *scheme = absl::AsciiStrToLower(target.substr(0, colon));
  *authority = std::string(uri_authority);
  *endpoint = std::string(path);
  return true;
}

std::string EncodeAuthority(absl::string_view authority) {
  std::string out;
  out.reserve(authority.size());
  for (const char c : authority) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(byte) ||
        absl::StrContains("-._~!$&'()*+,;=:[]@", c)) {
      out.push_back(c);
    } else {
      constexpr char kHex[] = "0123456789ABCDEF";
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    }
  }
  return out;
}

Status ParseResolvedAddress(absl::string_view address, SocketAddress* out) {
  auto invalid = [address](absl::string_view why) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("invalid address '", Printable(address), "': ", why));
  };
  absl::string_view rest = address;
  const bool abstract = absl::ConsumePrefix(&rest, "unix-abstract:");
  if (abstract || absl::ConsumePrefix(&rest, "unix:")) {
    const Status status = transport::io::UnixSocketAddress(rest, abstract, out);
    return status.ok() ? status : invalid(status.message());
  }
  HostPort host_port;
  std::string why;
  if (!SplitHostPort(address, &host_port, &why)) return invalid(why);
  const bool has_port = host_port.ipv6 ? absl::StrContains(address, "]:")
                                       : absl::StrContains(address, ':');
  if (!has_port) return invalid("no port (IP:PORT or [IPv6]:PORT)");
  if (!(host_port.ipv6 ? ToIpv6Address(host_port, out)
                       : ToIpv4Address(host_port, out))) {
    return invalid(
        absl::StrCat("'", host_port.host, "' is not a numeric IP address"));
  }
  return Status();
}

Status ParseUnixTarget(absl::string_view target, bool* is_unix,
                       transport::io::SocketAddress* address) {
  absl::string_view rest = target;
  const bool abstract = absl::ConsumePrefix(&rest, "unix-abstract:");
  *is_unix = abstract || absl::ConsumePrefix(&rest, "unix:");
  if (!*is_unix) return Status();
  return ParseUnix(target, rest, abstract, address);
}

}  // namespace h2rpc::internal
