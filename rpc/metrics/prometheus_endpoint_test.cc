#include "rpc/metrics/prometheus_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/internal/call_metric_shards.h"

namespace h2rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A connected TCP socket to 127.0.0.1:port, or -1.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes the connection.
std::string ReadAll(int fd) {
  std::string all;
  char buffer[4096];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return all;
    all.append(buffer, static_cast<size_t>(n));
  }
}

// The whole response to one request sent with "Connection: close".
std::string Request(int port, const std::string& method,
                    const std::string& path) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  const std::string request =
      absl::StrCat(method, " ", path,
                   " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                   "Content-Length: 0\r\n\r\n");
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response = ReadAll(fd);
  close(fd);
  return response;
}

class PrometheusEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    metrics_ = std::make_shared<CallMetrics>();
    internal::ServerMethodStats& stats =
        internal::CallMetricsAccess::AcquireServerShard(*metrics_, nullptr)
            ->methods()
            .For("/echo.Echo/Say");
    stats.calls_started.Add(7);
    stats.by_status.For(StatusCode::kOk).call_duration.Record(1000);
  }

  std::shared_ptr<CallMetrics> metrics_;
};

TEST_F(PrometheusEndpointTest, GetMetricsAnswersTheTextFormat) {
  Status status;
  std::unique_ptr<PrometheusEndpoint> endpoint = PrometheusEndpoint::Start(
      metrics_, PrometheusEndpoint::Options(), &status);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_GT(endpoint->port(), 0);
  const std::string response = Request(endpoint->port(), "GET", "/metrics");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(response, HasSubstr("grpc_server_call_started_total{grpc_method="
                                  "\"/echo.Echo/Say\"} 7\n"));
  // Each scrape reads the metrics anew.
  internal::CallMetricsAccess::AcquireServerShard(*metrics_, nullptr)
      ->methods()
      .For("/echo.Echo/Say")
      .calls_started.Add(1);
  EXPECT_THAT(Request(endpoint->port(), "GET", "/metrics"),
              HasSubstr("grpc_method=\"/echo.Echo/Say\"} 8\n"));
}

TEST_F(PrometheusEndpointTest, OtherPathsAndMethodsAreRefused) {
  Status status;
  std::unique_ptr<PrometheusEndpoint> endpoint = PrometheusEndpoint::Start(
      metrics_, PrometheusEndpoint::Options(), &status);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_THAT(Request(endpoint->port(), "GET", "/"),
              StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Request(endpoint->port(), "POST", "/metrics"),
              StartsWith("HTTP/1.1 405"));
}

TEST_F(PrometheusEndpointTest, ConnectionsBeyondTheLimitWaitForAPlace) {
  PrometheusEndpoint::Options options;
  options.max_connections = 2;
  Status status;
  std::unique_ptr<PrometheusEndpoint> endpoint =
      PrometheusEndpoint::Start(metrics_, options, &status);
  ASSERT_TRUE(status.ok()) << status.message();
  // Held open and silent, they take both places.
  std::vector<int> idle = {Connect(endpoint->port()),
                           Connect(endpoint->port())};
  const int third = Connect(endpoint->port());
  ASSERT_GE(third, 0);
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  send(third, request.data(), request.size(), MSG_NOSIGNAL);
  // Not answered while both are held (the endpoint does not accept it)...
  pollfd waiting = {third, POLLIN, 0};
  EXPECT_EQ(poll(&waiting, 1, 300), 0);
  // ...and answered once one of them goes.
  close(idle[0]);
  EXPECT_THAT(ReadAll(third), StartsWith("HTTP/1.1 200"));
  close(third);
  close(idle[1]);
}

TEST_F(PrometheusEndpointTest, ABadAddressOrABusyPortIsAnError) {
  PrometheusEndpoint::Options options;
  options.host = "localhost";
  Status status;
  EXPECT_EQ(PrometheusEndpoint::Start(metrics_, options, &status), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not a numeric address"));

  std::unique_ptr<PrometheusEndpoint> first = PrometheusEndpoint::Start(
      metrics_, PrometheusEndpoint::Options(), &status);
  ASSERT_TRUE(status.ok());
  options.host = "127.0.0.1";
  options.port = first->port();
  EXPECT_EQ(PrometheusEndpoint::Start(metrics_, options, &status), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat("127.0.0.1:", first->port(), ": bind")));
}

}  // namespace
}  // namespace h2rpc
