#include "test/util/raw_http1_client.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"

namespace h2rpc::testing {
namespace {

std::string Find(const std::vector<std::pair<std::string, std::string>>& list,
                 absl::string_view name) {
  for (const auto& [n, v] : list) {
    if (n == name) return v;
  }
  return std::string();
}

RawHttp1Client* Self(http_parser* parser) {
  return static_cast<RawHttp1Client*>(parser->data);
}

}  // namespace

std::string Http1Response::Header(absl::string_view name) const {
  return Find(headers, name);
}

std::string Http1Response::Trailer(absl::string_view name) const {
  return Find(trailers, name);
}

std::unique_ptr<RawHttp1Client> RawHttp1Client::Connect(int port,
                                                        int receive_buffer) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  if (receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer,
               sizeof(receive_buffer));
  }
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<RawHttp1Client>(new RawHttp1Client(fd));
}

RawHttp1Client::RawHttp1Client(int fd) : fd_(fd) {
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_header_field = &OnHeaderField;
  settings_.on_header_value = &OnHeaderValue;
  settings_.on_headers_complete = &OnHeadersComplete;
  settings_.on_body = &OnBody;
  settings_.on_message_complete = &OnMessageComplete;
}

RawHttp1Client::~RawHttp1Client() { Close(); }

void RawHttp1Client::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool RawHttp1Client::Send(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

size_t RawHttp1Client::SendSome(absl::string_view bytes) {
  const ssize_t n =
      send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

bool RawHttp1Client::ReadMore(absl::Time deadline) {
  if (closed_ || fd_ < 0) return false;
  // A deadline already past still looks at what has arrived.
  const int64_t left_ms =
      std::max<int64_t>(0, absl::ToInt64Milliseconds(absl::Ceil(
                               deadline - absl::Now(), absl::Milliseconds(1))));
  pollfd watched = {fd_, POLLIN, 0};
  const int ready = poll(&watched, 1, static_cast<int>(left_ms));
  if (ready <= 0) return false;
  char buffer[64 * 1024];
  const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
  if (n <= 0) {
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    closed_ = true;
    return false;
  }
  input_.append(buffer, static_cast<size_t>(n));
  return true;
}

absl::optional<Http1Response> RawHttp1Client::ReadResponse(
    absl::Duration timeout, bool head) {
  const absl::Time deadline = absl::Now() + timeout;
  response_ = Http1Response();
  in_trailers_ = false;
  value_next_ = false;
  complete_ = false;
  head_ = head;
  for (;;) {
    if (!input_.empty()) {
      const size_t parsed = http_parser_execute(&parser_, &settings_,
                                                input_.data(), input_.size());
      input_.erase(0, parsed);
      const http_errno error = HTTP_PARSER_ERRNO(&parser_);
      if (error != HPE_OK && error != HPE_PAUSED) return absl::nullopt;
    }
    if (complete_) {
      http_parser_pause(&parser_, 0);
      return response_;
    }
    if (!ReadMore(deadline)) {
      if (closed_) {
        // A body that ends with the connection.
        http_parser_execute(&parser_, &settings_, nullptr, 0);
        if (complete_) {
          http_parser_pause(&parser_, 0);
          return response_;
        }
      }
      return absl::nullopt;
    }
  }
}

bool RawHttp1Client::WaitForClose(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!closed_) {
    input_.clear();
    if (!ReadMore(deadline) && !closed_) return false;
  }
  return true;
}

int RawHttp1Client::OnHeaderField(http_parser* parser, const char* at,
                                  size_t size) {
  RawHttp1Client* self = Self(parser);
  auto& list =
      self->in_trailers_ ? self->response_.trailers : self->response_.headers;
  if (list.empty() || self->value_next_) {
    list.emplace_back();
    self->value_next_ = false;
  }
  list.back().first.append(absl::AsciiStrToLower(absl::string_view(at, size)));
  return 0;
}

int RawHttp1Client::OnHeaderValue(http_parser* parser, const char* at,
                                  size_t size) {
  RawHttp1Client* self = Self(parser);
  auto& list =
      self->in_trailers_ ? self->response_.trailers : self->response_.headers;
  list.back().second.append(at, size);
  self->value_next_ = true;
  return 0;
}

int RawHttp1Client::OnHeadersComplete(http_parser* parser) {
  RawHttp1Client* self = Self(parser);
  self->response_.status = static_cast<int>(parser->status_code);
  self->in_trailers_ = true;
  self->value_next_ = false;
  // HEAD: the parser must not wait for a body.
  return self->head_ ? 1 : 0;
}

int RawHttp1Client::OnBody(http_parser* parser, const char* at, size_t size) {
  Self(parser)->response_.body.append(at, size);
  return 0;
}

int RawHttp1Client::OnMessageComplete(http_parser* parser) {
  RawHttp1Client* self = Self(parser);
  self->response_.keep_alive = http_should_keep_alive(parser) != 0;
  self->complete_ = true;
  http_parser_pause(parser, 1);
  return 0;
}

}  // namespace h2rpc::testing
