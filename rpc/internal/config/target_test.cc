#include "rpc/internal/config/target.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<std::string> Strings(
    const std::vector<transport::io::SocketAddress>& addresses) {
  std::vector<std::string> strings;
  for (const auto& address : addresses) strings.push_back(address.ToString());
  return strings;
}

struct DnsCase {
  std::string target;
  std::string host_port;
  std::string host;
  std::string authority;
};

TEST(ParseTargetTest, DnsTargets) {
  const DnsCase cases[] = {
      {"dns:///example.com:8080", "example.com:8080", "example.com",
       "example.com:8080"},
      {"dns:///example.com", "example.com:443", "example.com", "example.com"},
      {"dns:example.com:80", "example.com:80", "example.com", "example.com:80"},
      {"dns:/example.com:80", "example.com:80", "example.com",
       "example.com:80"},
      {"dns:localhost", "localhost:443", "localhost", "localhost"},
      {"dns:///[::1]:80", "[::1]:80", "::1", "[::1]:80"},
      // No scheme.
      {"example.com:50051", "example.com:50051", "example.com",
       "example.com:50051"},
      {"localhost:50051", "localhost:50051", "localhost", "localhost:50051"},
      {"localhost", "localhost:443", "localhost", "localhost"},
      {"my_host-1.internal.:0", "my_host-1.internal.:0", "my_host-1.internal.",
       "my_host-1.internal.:0"},
      {"host:65535", "host:65535", "host", "host:65535"},
      {"127.0.0.1:80", "127.0.0.1:80", "127.0.0.1", "127.0.0.1:80"},
      {"[::1]:50051", "[::1]:50051", "::1", "[::1]:50051"},
      {"[::1]", "[::1]:443", "::1", "[::1]"},
      {"::1", "[::1]:443", "::1", "::1"},
      {"2001:db8::1", "[2001:db8::1]:443", "2001:db8::1", "2001:db8::1"},
      // The scheme is unknown but the whole target is host:port.
      {"fe80:80", "fe80:80", "fe80", "fe80:80"},
  };
  for (const DnsCase& c : cases) {
    ParsedTarget parsed;
    parsed.addresses.resize(1);  // Replaced.
    Status status = ParseTarget(c.target, &parsed);
    ASSERT_TRUE(status.ok()) << c.target << ": " << status.ToString();
    EXPECT_EQ(parsed.kind, ParsedTarget::Kind::kDns) << c.target;
    EXPECT_EQ(parsed.dns_host_port, c.host_port) << c.target;
    EXPECT_EQ(parsed.dns_host, c.host) << c.target;
    EXPECT_EQ(parsed.authority, c.authority) << c.target;
    EXPECT_TRUE(parsed.addresses.empty()) << c.target;
  }
}

struct AddressCase {
  std::string target;
  std::vector<std::string> addresses;
  std::string authority;
};

TEST(ParseTargetTest, AddressTargets) {
  const std::string longest_path = "/" + std::string(106, 'p');
  const std::string longest_name(107, 'n');
  const AddressCase cases[] = {
      {"ipv4:127.0.0.1:80", {"127.0.0.1:80"}, "127.0.0.1:80"},
      {"ipv4:127.0.0.1", {"127.0.0.1:443"}, "127.0.0.1"},
      {"ipv4:10.0.0.1:1,10.0.0.2:2,10.0.0.3",
       {"10.0.0.1:1", "10.0.0.2:2", "10.0.0.3:443"},
       "10.0.0.1:1,10.0.0.2:2,10.0.0.3"},
      {"ipv4:///127.0.0.1:80", {"127.0.0.1:80"}, "127.0.0.1:80"},
      {"ipv4:0.0.0.0:0", {"0.0.0.0:0"}, "0.0.0.0:0"},
      {"ipv6:[::1]:80", {"[::1]:80"}, "[::1]:80"},
      {"ipv6:[::1]", {"[::1]:443"}, "[::1]"},
      {"ipv6:::1", {"[::1]:443"}, "::1"},
      {"ipv6:[::1]:1,[2001:db8::2],2001:db8::3",
       {"[::1]:1", "[2001:db8::2]:443", "[2001:db8::3]:443"},
       "[::1]:1,[2001:db8::2],2001:db8::3"},
      {"ipv6:[fe80::1%2]:80", {"[fe80::1%2]:80"}, "[fe80::1%2]:80"},
      {"unix:/tmp/x.sock", {"unix:/tmp/x.sock"}, "localhost"},
      {"unix:relative/x.sock", {"unix:relative/x.sock"}, "localhost"},
      {"unix:///tmp/x.sock", {"unix:/tmp/x.sock"}, "localhost"},
      {"unix:" + longest_path, {"unix:" + longest_path}, "localhost"},
      {"unix-abstract:name", {"unix-abstract:name"}, "localhost"},
      // Every byte after the colon is the name.
      {"unix-abstract://x/%41", {"unix-abstract://x/%41"}, "localhost"},
      {"unix-abstract:" + longest_name,
       {"unix-abstract:" + longest_name},
       "localhost"},
  };
  for (const AddressCase& c : cases) {
    ParsedTarget parsed;
    parsed.dns_host_port = "replaced";
    Status status = ParseTarget(c.target, &parsed);
    ASSERT_TRUE(status.ok()) << c.target << ": " << status.ToString();
    EXPECT_EQ(parsed.kind, ParsedTarget::Kind::kAddresses) << c.target;
    EXPECT_THAT(Strings(parsed.addresses), ElementsAreArray(c.addresses))
        << c.target;
    EXPECT_EQ(parsed.authority, c.authority) << c.target;
    EXPECT_TRUE(parsed.dns_host_port.empty()) << c.target;
    EXPECT_TRUE(parsed.dns_host.empty()) << c.target;
  }
}

TEST(ParseTargetTest, UnixAddressesAreReadyToConnect) {
  ParsedTarget parsed;
  ASSERT_TRUE(ParseTarget("unix:///tmp/x.sock", &parsed).ok());
  ASSERT_EQ(parsed.addresses.size(), 1u);
  const transport::io::SocketAddress& path = parsed.addresses[0];
  EXPECT_EQ(path.family(), AF_UNIX);
  EXPECT_FALSE(path.is_abstract());
  EXPECT_EQ(path.unix_name(), "/tmp/x.sock");
  EXPECT_EQ(path.size, offsetof(sockaddr_un, sun_path) + 12);

  const std::string name("a\0b", 3);
  ASSERT_TRUE(ParseTarget("unix-abstract:" + name, &parsed).ok());
  ASSERT_EQ(parsed.addresses.size(), 1u);
  const transport::io::SocketAddress& abstract = parsed.addresses[0];
  EXPECT_TRUE(abstract.is_abstract());
  EXPECT_EQ(abstract.unix_name(), name);
  EXPECT_EQ(abstract.size, offsetof(sockaddr_un, sun_path) + 4);
  EXPECT_EQ(abstract.ToString(), "unix-abstract:a\\x00b");
}

// What the messages quote of a target: bytes outside printable ASCII (and
// backslashes) as \xNN.
std::string Printable(absl::string_view bytes) {
  std::string text;
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

struct ErrorCase {
  std::string target;
  std::string why;  // What the message says after "invalid target '...': ".
};

TEST(ParseTargetTest, MalformedTargetsAreInvalidArguments) {
  const std::string too_long_path = "/" + std::string(107, 'p');
  const std::string too_long_name(108, 'n');
  const std::string unknown =
      "unknown scheme '%s' (supported: dns, ipv4, ipv6, unix, "
      "unix-abstract), and not host:port either: ";
  auto Unknown = [&](const std::string& scheme, const std::string& why) {
    std::string text = unknown;
    text.replace(text.find("%s"), 2, scheme);
    return text + why;
  };
  const ErrorCase cases[] = {
      {"", "empty target"},
      // DNS.
      {"dns://8.8.8.8/example.com:80",
       "DNS authorities ('8.8.8.8') are not supported; write "
       "dns:///host:port"},
      {"dns://example.com:80",
       "DNS authorities ('example.com:80') are not supported; write "
       "dns:///host:port"},
      {"dns:///", "empty host"},
      {"dns:", "empty host"},
      {"dns:///:80", "empty host in ':80'"},
      {":80", "empty host in ':80'"},
      {"[]:80", "empty host in '[]:80'"},
      {"dns:///host:", "empty port after ':' in 'host:'"},
      {"dns:///host:99999", "port '99999' is not a number from 0 to 65535"},
      {"dns:///host:-1", "port '-1' is not a number from 0 to 65535"},
      {"dns:///host: 80", "port ' 80' is not a number from 0 to 65535"},
      {"dns:///host:http", "port 'http' is not a number from 0 to 65535"},
      {"[::1", "missing ']' in '[::1'"},
      {"[::1]80", "'80' after ']' (expected ':port')"},
      {"[not-v6]:80", "'not-v6' is not an IPv6 address"},
      {"[127.0.0.1]:80", "'127.0.0.1' is not an IPv6 address"},
      {"host name:80",
       "'host name' is not a host name (letters, digits, '-', '.', '_')"},
      {"dns:///a/b:80",
       "'a/b' is not a host name (letters, digits, '-', '.', '_')"},
      // Unknown schemes.
      {"foo:///x", Unknown("foo",
                           "port '///x' is not a number from 0 to "
                           "65535")},
      {"http://example.com",
       Unknown("http",
               "port '//example.com' is not a number from 0 to "
               "65535")},
      {"DNS:///example.com",
       Unknown("DNS",
               "port '///example.com' is not a number from 0 to "
               "65535")},
      {"host:12ab",
       Unknown("host", "port '12ab' is not a number from 0 to 65535")},
      {"a::b::c", Unknown("a", "'a::b::c' is not an IPv6 address")},
      {"http://example.com:80",
       Unknown("http", "'http://example.com:80' is not an IPv6 address")},
      // ipv4 and ipv6.
      {"ipv4:", "no address after the scheme"},
      {"ipv4:1.2.3.4,,1.2.3.5", "empty address in the list"},
      {"ipv4:1.2.3.4,", "empty address in the list"},
      {"ipv4:1.2.3.4:70000", "port '70000' is not a number from 0 to 65535"},
      {"ipv4:1.2.3.4:", "empty port after ':' in '1.2.3.4:'"},
      {"ipv4:localhost:80", "'localhost' is not a numeric IPv4 address"},
      {"ipv4:[::1]:80", "'::1' is not a numeric IPv4 address"},
      {"ipv4:127.1:80", "'127.1' is not a numeric IPv4 address"},
      {"ipv4://1.2.3.4:80", "an authority ('1.2.3.4:80') is not allowed here"},
      {"ipv6:127.0.0.1:80", "'127.0.0.1' is not a numeric IPv6 address"},
      {"ipv6:[localhost]:80", "'localhost' is not a numeric IPv6 address"},
      {"ipv6:[::1]:x", "port 'x' is not a number from 0 to 65535"},
      {"ipv6:", "no address after the scheme"},
      // unix and unix-abstract.
      {"unix:", "empty unix socket path"},
      {"unix://", "no path after 'unix://' (unix:///absolute/path)"},
      {"unix://host/tmp/x",
       "an authority ('host') is not allowed in a unix target; write "
       "unix:///absolute/path or unix:path"},
      {"unix:" + too_long_path,
       "unix socket path '" + too_long_path +
           "' is 108 bytes; the limit is 107 (sun_path)"},
      {std::string("unix:/tmp/a\0b", 13),
       "unix socket path '/tmp/a\\x00b' contains a NUL byte"},
      {"unix-abstract:", "empty abstract unix socket name"},
      {"unix-abstract:" + too_long_name,
       "abstract unix socket name '" + too_long_name +
           "' is 108 bytes; the limit is 107 (sun_path)"},
  };
  for (const ErrorCase& c : cases) {
    ParsedTarget parsed;
    parsed.dns_host_port = "untouched";
    Status status = ParseTarget(c.target, &parsed);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
        << "'" << c.target << "': " << status.ToString();
    EXPECT_EQ(status.message(),
              "invalid target '" + Printable(c.target) + "': " + c.why);
    EXPECT_EQ(parsed.dns_host_port, "untouched") << c.target;
  }
}

TEST(ParseTargetTest, MessagesEscapeUnprintableBytes) {
  ParsedTarget parsed;
  Status status = ParseTarget(std::string("unix:/tmp/\n\0", 12), &parsed);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "invalid target 'unix:/tmp/\\x0a\\x00': unix socket path "
            "'/tmp/\\x0a\\x00' contains a NUL byte");
}

TEST(ParseUnixTargetTest, ParsesUnixSchemesOnly) {
  transport::io::SocketAddress address;
  bool is_unix = false;
  ASSERT_TRUE(ParseUnixTarget("unix:///tmp/s", &is_unix, &address).ok());
  EXPECT_TRUE(is_unix);
  EXPECT_EQ(address.ToString(), "unix:/tmp/s");
  ASSERT_TRUE(ParseUnixTarget("unix:s", &is_unix, &address).ok());
  EXPECT_TRUE(is_unix);
  EXPECT_EQ(address.ToString(), "unix:s");
  ASSERT_TRUE(ParseUnixTarget("unix-abstract:n", &is_unix, &address).ok());
  EXPECT_TRUE(is_unix);
  EXPECT_EQ(address.ToString(), "unix-abstract:n");

  for (const char* other : {"127.0.0.1:0", "[::1]:0", "unixhost:80",
                            "dns:///unix:80", "localhost:0"}) {
    address = transport::io::SocketAddress();
    is_unix = true;
    ASSERT_TRUE(ParseUnixTarget(other, &is_unix, &address).ok()) << other;
    EXPECT_FALSE(is_unix) << other;
    EXPECT_EQ(address.size, 0u) << other;
  }
}

TEST(ParseUnixTargetTest, MalformedUnixTargetsAreInvalidArguments) {
  for (const char* target :
       {"unix:", "unix://", "unix://host/x", "unix-abstract:"}) {
    transport::io::SocketAddress address;
    bool is_unix = false;
    Status status = ParseUnixTarget(target, &is_unix, &address);
    EXPECT_TRUE(is_unix) << target;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << target;
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("invalid target '") + target + "'"));
  }
}

TEST(SplitTargetUriTest, SplitsSchemeAuthorityAndEndpoint) {
  std::string scheme, authority, endpoint;
  ASSERT_TRUE(SplitTargetUri("Etcd://10.0.0.1:2379,10.0.0.2:2379/greeter",
                             &scheme, &authority, &endpoint));
  EXPECT_EQ(scheme, "etcd");
  EXPECT_EQ(authority, "10.0.0.1:2379,10.0.0.2:2379");
  EXPECT_EQ(endpoint, "greeter");
  ASSERT_TRUE(SplitTargetUri("consul:greeter/v1", &scheme, &authority,
                             &endpoint));
  EXPECT_EQ(scheme, "consul");
  EXPECT_EQ(authority, "");
  EXPECT_EQ(endpoint, "greeter/v1");
  ASSERT_TRUE(SplitTargetUri("x:///abs", &scheme, &authority, &endpoint));
  EXPECT_EQ(authority, "");
  EXPECT_EQ(endpoint, "abs");
  for (const char* no_scheme : {"[::1]:80", "1x:80", "noscheme", ""}) {
    scheme = "untouched";
    EXPECT_FALSE(SplitTargetUri(no_scheme, &scheme, &authority, &endpoint))
        << no_scheme;
    EXPECT_EQ(scheme, "untouched");
  }
}

TEST(ParseResolvedAddressTest, NumericAddressesAndUnixSockets) {
  transport::io::SocketAddress address;
  for (const char* text :
       {"10.0.0.7:50051", "[::1]:443", "unix:/tmp/s", "unix:rel",
        "unix-abstract:name"}) {
    ASSERT_TRUE(ParseResolvedAddress(text, &address).ok()) << text;
    EXPECT_EQ(address.ToString(), text);
  }
}

TEST(ParseResolvedAddressTest, AnythingElseIsAnInvalidArgument) {
  const struct {
    const char* address;
    const char* message;
  } cases[] = {
      {"localhost:80", "'localhost' is not a numeric IP address"},
      {"10.0.0.7", "no port"},
      {"[::1]", "no port"},
      {"::1", "no port"},
      {"10.0.0.7:99999", "port '99999' is not a number"},
      {"", "empty host"},
      {"unix:", "empty"},
  };
  for (const auto& c : cases) {
    transport::io::SocketAddress address;
    const Status status = ParseResolvedAddress(c.address, &address);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.address;
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("invalid address '") + c.address + "'"));
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.address;
  }
}

TEST(EncodeAuthorityTest, PercentEncodesWhatAnAuthorityCannotHold) {
  EXPECT_EQ(EncodeAuthority("greeter.svc:50051"), "greeter.svc:50051");
  EXPECT_EQ(EncodeAuthority("[::1]:80"), "[::1]:80");
  EXPECT_EQ(EncodeAuthority("user@host"), "user@host");
  EXPECT_EQ(EncodeAuthority("tmp/backends list.txt"),
            "tmp%2Fbackends%20list.txt");
  EXPECT_EQ(EncodeAuthority(std::string("a\x7f\xff", 3)), "a%7F%FF");
}

}  // namespace
}  // namespace h2rpc::internal
