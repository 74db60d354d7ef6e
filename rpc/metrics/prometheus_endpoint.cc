#include "rpc/metrics/prometheus_endpoint.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/metrics/prometheus_text.h"

namespace h2rpc {
namespace {

// A listening TCP socket on host:port; -1 with `*status` set otherwise.
int Listen(const std::string& host, int port, Status* status) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (error != 0) {
    *status = Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("the metrics endpoint's host \"", host,
                     "\" is not a numeric address: ", gai_strerror(error)));
    return -1;
  }
  const auto failed = [&](const char* what) {
    *status = Status(StatusCode::kUnavailable,
                     absl::StrCat("cannot serve metrics on ", host, ":", port,
                                  ": ", what, ": ", strerror(errno)));
  };
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    failed("socket");
    freeaddrinfo(found);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    failed("bind");
  } else if (listen(fd, 64) != 0) {
    failed("listen");
  } else {
    freeaddrinfo(found);
    return fd;
  }
  freeaddrinfo(found);
  close(fd);
  return -1;
}

int BoundPort(int fd) {
  sockaddr_storage address = {};
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

MHD_Result Answer(MHD_Connection* connection, unsigned int code,
                  const std::string& body, const char* content_type) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  const MHD_Result queued = MHD_queue_response(connection, code, response);
  MHD_destroy_response(response);
  return queued;
}

// libmicrohttpd's request handler, on its thread.
MHD_Result HandleRequest(void* endpoint, MHD_Connection* connection,
                         const char* url, const char* method,
                         const char* /*version*/, const char* /*upload*/,
                         size_t* upload_size, void** /*state*/) {
  // A body is not read: the answer goes out at once.
  *upload_size = 0;
  constexpr char kPlain[] = "text/plain; charset=utf-8";
  if (std::strcmp(url, "/metrics") != 0) {
    return Answer(connection, MHD_HTTP_NOT_FOUND,
                  "not found: metrics are at /metrics\n", kPlain);
  }
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return Answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                  "only GET and HEAD are allowed\n", kPlain);
  }
  return Answer(connection, MHD_HTTP_OK,
                static_cast<PrometheusEndpoint*>(endpoint)->Render(),
                kPrometheusTextContentType);
}

}  // namespace

std::unique_ptr<PrometheusEndpoint> PrometheusEndpoint::Start(
    std::shared_ptr<CallMetrics> metrics, const Options& options,
    Status* status) {
  if (options.max_connections < 1 || options.port < 0 || options.port > 65535 ||
      options.idle_timeout < absl::Seconds(1)) {
    *status = Status(StatusCode::kInvalidArgument,
                     "the metrics endpoint needs a port from 0 to 65535, at "
                     "least one connection and an idle timeout of at least "
                     "one second");
    return nullptr;
  }
  const int fd = Listen(options.host, options.port, status);
  if (fd < 0) return nullptr;
  std::unique_ptr<PrometheusEndpoint> endpoint(
      new PrometheusEndpoint(std::move(metrics), BoundPort(fd)));
  endpoint->daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, nullptr, nullptr,
      &HandleRequest, endpoint.get(), MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned int>(options.max_connections),
      MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned int>(absl::ToInt64Seconds(options.idle_timeout)),
      MHD_OPTION_END);
  if (endpoint->daemon_ == nullptr) {
    close(fd);
    *status = Status(StatusCode::kUnavailable,
                     absl::StrCat("cannot start the metrics endpoint on ",
                                  options.host, ":", endpoint->port()));
    return nullptr;
  }
  *status = Status();
  return endpoint;
}

PrometheusEndpoint::~PrometheusEndpoint() {
  // Closes the listening socket too.
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

std::string PrometheusEndpoint::Render() const {
  std::string text;
  AppendPrometheusText(metrics_->Snapshot(), &text);
  return text;
}

}  // namespace h2rpc
