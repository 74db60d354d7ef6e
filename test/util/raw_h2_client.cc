#include "test/util/raw_h2_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace h2rpc::testing {
namespace {

// Poll granularity while a RST_STREAM trigger is pending.
constexpr absl::Duration kTick = absl::Milliseconds(2);
// Poll granularity for RunUntil's predicate.
constexpr absl::Duration kDoneTick = absl::Milliseconds(5);
// nghttp2 stops producing frames while this much waits to be written.
constexpr size_t kMaxPendingOutput = 1 << 20;

// Milliseconds for poll(), rounded up, at least 0.
int PollMillis(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return 0;
  const int64_t ms = absl::ToInt64Milliseconds(d + absl::Microseconds(999));
  return static_cast<int>(std::min<int64_t>(ms, 1000 * 1000));
}

// A non-blocking TCP connection to 127.0.0.1:port, or -1 and `*error`.
int ConnectLoopback(int port, absl::Duration timeout, std::string* error) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = absl::StrCat("socket: ", strerror(errno));
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
          0 &&
      errno != EINPROGRESS) {
    *error = absl::StrCat("connect to 127.0.0.1:", port, ": ", strerror(errno));
    close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int rv;
  do {
    rv = poll(&p, 1, PollMillis(timeout));
  } while (rv < 0 && errno == EINTR);
  if (rv <= 0) {
    *error = absl::StrCat("connect to 127.0.0.1:", port, " timed out");
    close(fd);
    return -1;
  }
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) {
    *error =
        absl::StrCat("connect to 127.0.0.1:", port, ": ", strerror(so_error));
    close(fd);
    return -1;
  }
  return fd;
}

RawH2Client* Self(void* user) { return static_cast<RawH2Client*>(user); }

absl::optional<std::string> Find(const RawHeaders& headers,
                                 absl::string_view name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return absl::nullopt;
}

std::string Printable(absl::string_view s, size_t limit = 200) {
  std::string out = absl::CHexEscape(s.substr(0, limit));
  if (s.size() > limit) absl::StrAppend(&out, "...(", s.size(), " bytes)");
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// RawResponse

const RawHeaders& RawResponse::headers() const {
  static const RawHeaders* const kEmpty = new RawHeaders();
  return header_blocks.empty() ? *kEmpty : header_blocks.front().fields;
}

absl::optional<std::string> RawResponse::Header(absl::string_view name) const {
  return Find(headers(), name);
}

absl::optional<std::string> RawResponse::Trailer(absl::string_view name) const {
  if (header_blocks.empty() || !header_blocks.back().end_stream) {
    return absl::nullopt;
  }
  return Find(header_blocks.back().fields, name);
}

bool RawResponse::IsTrailersOnly() const {
  return header_blocks.size() == 1 && header_blocks.front().end_stream &&
         data_frames == 0;
}

std::string RawResponse::DebugString() const {
  std::string out;
  for (size_t i = 0; i < header_blocks.size(); ++i) {
    absl::StrAppend(&out, "header block #", i,
                    header_blocks[i].end_stream ? " (END_STREAM)" : "", ":\n");
    for (const auto& [name, value] : header_blocks[i].fields) {
      absl::StrAppend(&out, "  ", Printable(name), ": ", Printable(value),
                      "\n");
    }
  }
  absl::StrAppend(&out, "data frames: ", data_frames,
                  ", body: ", Printable(body), "\n");
  absl::StrAppend(&out, "end_stream_received: ", end_stream_received,
                  ", rst_received: ", rst_received);
  if (rst_received) {
    absl::StrAppend(&out, " (", nghttp2_http2_strerror(rst_error_code), ")");
  }
  absl::StrAppend(&out, ", rst_sent: ", rst_sent,
                  ", stream_closed: ", stream_closed);
  if (stream_closed) {
    absl::StrAppend(&out, " (", nghttp2_http2_strerror(close_error_code), ")");
  }
  absl::StrAppend(&out, "\ngoaway: ", goaway_received);
  if (goaway_received) {
    absl::StrAppend(&out, " (", nghttp2_http2_strerror(goaway_error_code),
                    ", last stream ", goaway_last_stream_id, ")");
  }
  absl::StrAppend(&out, ", connection_closed: ", connection_closed,
                  ", timed_out: ", timed_out);
  if (!error.empty()) absl::StrAppend(&out, ", error: ", error);
  return out;
}

// ---------------------------------------------------------------------------
// RawH2Client

std::unique_ptr<RawH2Client> RawH2Client::Connect(int port, std::string* error,
                                                  absl::Duration timeout) {
  std::string why;
  const int fd = ConnectLoopback(port, timeout, &why);
  if (fd < 0) {
    if (error != nullptr) *error = why;
    return nullptr;
  }
  std::unique_ptr<RawH2Client> client(new RawH2Client(fd, port));
  if (!client->InitSession() || !client->Flush()) {
    if (error != nullptr) *error = client->error_;
    return nullptr;
  }
  return client;
}

std::unique_ptr<RawH2Client> RawH2Client::Adopt(int fd, std::string* error) {
  std::unique_ptr<RawH2Client> client(new RawH2Client(fd, /*port=*/0));
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    if (error != nullptr) *error = absl::StrCat("fcntl: ", strerror(errno));
    return nullptr;
  }
  if (!client->InitSession() || !client->Flush()) {
    if (error != nullptr) *error = client->error_;
    return nullptr;
  }
  return client;
}

RawH2Client::RawH2Client(int fd, int port) : fd_(fd), port_(port) {}

RawH2Client::~RawH2Client() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  if (fd_ >= 0) close(fd_);
}

bool RawH2Client::InitSession() {
  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          &OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &OnStreamClose);
  nghttp2_option* option;
  nghttp2_option_new(&option);
  // Record whatever the server sends, however malformed.
  nghttp2_option_set_no_http_messaging(option, 1);
  // Allow deliberately oversized header blocks.
  nghttp2_option_set_max_send_header_block_length(option, 16 << 20);
  const int rv =
      nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) {
    session_ = nullptr;
    error_ =
        absl::StrCat("nghttp2_session_client_new2: ", nghttp2_strerror(rv));
    return false;
  }
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                          sizeof(settings) / sizeof(settings[0]));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        16 << 20);
  return true;
}

RawH2Client::Stream* RawH2Client::StreamFor(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void RawH2Client::CloseWithError(std::string error) {
  if (closed_) return;
  closed_ = true;
  error_ = std::move(error);
  for (auto& [id, stream] : streams_) {
    if (!stream->response.stream_closed) {
      stream->response.connection_closed = true;
      stream->response.error = error_;
    }
  }
}

bool RawH2Client::Flush() {
  if (closed_) return false;
  for (;;) {
    while (out_.size() < kMaxPendingOutput) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        CloseWithError(absl::StrCat("nghttp2_session_mem_send: ",
                                    nghttp2_strerror(static_cast<int>(n))));
        return false;
      }
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out_.empty()) return true;
    const ssize_t n = send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      CloseWithError(absl::StrCat("send: ", strerror(errno)));
      return false;
    }
    out_.erase(0, static_cast<size_t>(n));
    if (!out_.empty()) return true;  // the socket is full; poll for POLLOUT
  }
}

void RawH2Client::ReadAvailable() {
  char buffer[64 * 1024];
  for (int i = 0; i < 16 && !closed_; ++i) {
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n == 0) {
      CloseWithError("connection closed by the server (EOF)");
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      CloseWithError(absl::StrCat("recv: ", strerror(errno)));
      return;
    }
    const ssize_t consumed = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const uint8_t*>(buffer),
        static_cast<size_t>(n));
    if (consumed < 0) {
      CloseWithError(
          absl::StrCat("HTTP/2 error in what the server sent: ",
                       nghttp2_strerror(static_cast<int>(consumed))));
      return;
    }
    if (static_cast<size_t>(n) < sizeof(buffer)) return;
  }
}

absl::Time RawH2Client::FireResets() {
  const absl::Time now = absl::Now();
  absl::Time next = absl::InfiniteFuture();
  for (auto& [id, stream] : streams_) {
    RawResponse& response = stream->response;
    if (response.stream_closed || response.rst_sent) continue;
    const bool has_trigger =
        stream->rst_at != absl::InfiniteFuture() || stream->rst_when;
    if (!has_trigger) continue;
    if (now >= stream->rst_at || (stream->rst_when && stream->rst_when())) {
      ResetStream(id, stream->rst_error_code);
      continue;
    }
    next = std::min(next, stream->rst_when ? now + kTick : stream->rst_at);
  }
  return next;
}

void RawH2Client::ResetStream(int32_t stream_id, uint32_t error_code) {
  Stream* stream = StreamFor(stream_id);
  if (stream != nullptr) stream->response.rst_sent = true;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
  Flush();
}

int32_t RawH2Client::Start(const RawRequest& request) {
  if (closed_) return -1;
  auto stream = std::make_unique<Stream>();
  stream->body = request.shared_body != nullptr
                     ? request.shared_body
                     : std::make_shared<const std::string>(request.body);
  stream->max_data_frame_size = request.max_data_frame_size;
  stream->end_stream = request.end_stream;
  stream->rst_when = request.rst_when;
  stream->rst_error_code = request.rst_error_code;
  if (request.rst_after.has_value()) {
    stream->rst_at = absl::Now() + *request.rst_after;
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(request.headers.size());
  for (const auto& [name, value] : request.headers) {
    nghttp2_nv nv;
    nv.name = reinterpret_cast<uint8_t*>(const_cast<char*>(name.data()));
    nv.namelen = name.size();
    nv.value = reinterpret_cast<uint8_t*>(const_cast<char*>(value.data()));
    nv.valuelen = value.size();
    nv.flags = NGHTTP2_NV_FLAG_NONE;
    nva.push_back(nv);
  }
  nghttp2_data_provider provider;
  provider.source.ptr = stream.get();
  provider.read_callback = &ReadBody;
  const bool headers_only = request.end_stream_on_headers &&
                            stream->body->empty() && request.end_stream;
  const int32_t id =
      nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                             headers_only ? nullptr : &provider, stream.get());
  if (id < 0) {
    error_ = absl::StrCat("nghttp2_submit_request: ", nghttp2_strerror(id));
    return id;
  }
  stream->id = id;
  streams_[id] = std::move(stream);
  Flush();
  return id;
}

bool RawH2Client::RunUntil(const std::function<bool()>& done,
                           absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const absl::Time next_reset = FireResets();
    if (done()) return true;
    if (!Flush()) return done();
    if (!nghttp2_session_want_read(session_) &&
        !nghttp2_session_want_write(session_) && out_.empty()) {
      CloseWithError(absl::StrCat("the HTTP/2 session ended",
                                  goaway_received_ ? " after GOAWAY" : ""));
      return done();
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    pollfd p{fd_, static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
    // `done` may depend on things other than this socket (another thread's
    // progress): look again at least every kDoneTick.
    const absl::Time wake = std::min({deadline, next_reset, now + kDoneTick});
    const int rv = poll(&p, 1, PollMillis(wake - now));
    if (rv < 0 && errno != EINTR) {
      CloseWithError(absl::StrCat("poll: ", strerror(errno)));
      return done();
    }
    if (rv > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) ReadAvailable();
  }
}

RawResponse RawH2Client::Response(int32_t stream_id) const {
  RawResponse response;
  auto it = streams_.find(stream_id);
  if (it != streams_.end()) {
    response = it->second->response;
    response.request_bytes_sent = it->second->offset;
  }
  response.goaway_received = goaway_received_;
  response.goaway_error_code = goaway_error_code_;
  response.goaway_last_stream_id = goaway_last_stream_id_;
  if (closed_ && !response.stream_closed) {
    response.connection_closed = true;
    if (response.error.empty()) response.error = error_;
  }
  return response;
}

RawResponse RawH2Client::Call(const RawRequest& request,
                              absl::Duration timeout) {
  const int32_t id = Start(request);
  if (id < 0) {
    RawResponse response;
    response.connection_closed = closed_;
    response.error = error_.empty() ? "could not submit the request" : error_;
    return response;
  }
  const Stream* stream = streams_[id].get();
  const bool finished = RunUntil(
      [this, stream] { return stream->response.stream_closed || closed_; },
      timeout);
  RawResponse response = Response(id);
  response.timed_out = !finished;
  return response;
}

bool RawH2Client::Ping(absl::Duration timeout) {
  if (closed_) return false;
  const int target = pings_acked_ + 1;
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
  return RunUntil([this, target] { return pings_acked_ >= target; }, timeout) &&
         !closed_;
}

// ---------------------------------------------------------------------------
// nghttp2 callbacks

ssize_t RawH2Client::ReadBody(nghttp2_session*, int32_t, uint8_t* buf,
                              size_t length, uint32_t* data_flags,
                              nghttp2_data_source* source, void*) {
  auto* stream = static_cast<Stream*>(source->ptr);
  const std::string& body = *stream->body;
  size_t n = std::min(length, body.size() - stream->offset);
  if (stream->max_data_frame_size > 0) {
    n = std::min(n, stream->max_data_frame_size);
  }
  std::memcpy(buf, body.data() + stream->offset, n);
  stream->offset += n;
  if (stream->offset == body.size()) {
    if (stream->end_stream) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      // All sent and no END_STREAM wanted: keep the stream open, silent.
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

int RawH2Client::OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame,
                                void* user) {
  Stream* stream = Self(user)->StreamFor(frame->hd.stream_id);
  if (stream != nullptr) stream->response.header_blocks.emplace_back();
  return 0;
}

int RawH2Client::OnHeader(nghttp2_session*, const nghttp2_frame* frame,
                          const uint8_t* name, size_t namelen,
                          const uint8_t* value, size_t valuelen, uint8_t,
                          void* user) {
  Stream* stream = Self(user)->StreamFor(frame->hd.stream_id);
  if (stream == nullptr || stream->response.header_blocks.empty()) return 0;
  stream->response.header_blocks.back().fields.emplace_back(
      std::string(reinterpret_cast<const char*>(name), namelen),
      std::string(reinterpret_cast<const char*>(value), valuelen));
  return 0;
}

int RawH2Client::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame,
                             void* user) {
  RawH2Client* self = Self(user);
  switch (frame->hd.type) {
    case NGHTTP2_GOAWAY:
      self->goaway_received_ = true;
      self->goaway_error_code_ = frame->goaway.error_code;
      self->goaway_last_stream_id_ = frame->goaway.last_stream_id;
      return 0;
    case NGHTTP2_PING:
      if (frame->hd.flags & NGHTTP2_FLAG_ACK) ++self->pings_acked_;
      return 0;
    default:
      break;
  }
  Stream* stream = self->StreamFor(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
      if (!stream->response.header_blocks.empty()) {
        stream->response.header_blocks.back().end_stream = end_stream;
      }
      if (end_stream) stream->response.end_stream_received = true;
      break;
    case NGHTTP2_DATA:
      ++stream->response.data_frames;
      if (end_stream) stream->response.end_stream_received = true;
      break;
    case NGHTTP2_RST_STREAM:
      stream->response.rst_received = true;
      stream->response.rst_error_code = frame->rst_stream.error_code;
      break;
    default:
      break;
  }
  return 0;
}

int RawH2Client::OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id,
                             const uint8_t* data, size_t len, void* user) {
  Stream* stream = Self(user)->StreamFor(stream_id);
  if (stream != nullptr) {
    stream->response.body.append(reinterpret_cast<const char*>(data), len);
  }
  return 0;
}

int RawH2Client::OnStreamClose(nghttp2_session*, int32_t stream_id,
                               uint32_t error_code, void* user) {
  Stream* stream = Self(user)->StreamFor(stream_id);
  if (stream != nullptr) {
    stream->response.stream_closed = true;
    stream->response.close_error_code = error_code;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Helpers

RawHeaders GrpcRequestHeaders(absl::string_view path, int port) {
  return {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", std::string(path)},
      {":authority", absl::StrCat("127.0.0.1:", port)},
      {"content-type", "application/grpc"},
      {"te", "trailers"},
  };
}

void SetHeader(RawHeaders* headers, absl::string_view name,
               absl::string_view value) {
  bool found = false;
  for (auto& [n, v] : *headers) {
    if (n == name) {
      v = std::string(value);
      found = true;
    }
  }
  if (!found) headers->emplace_back(std::string(name), std::string(value));
}

void RemoveHeader(RawHeaders* headers, absl::string_view name) {
  headers->erase(
      std::remove_if(headers->begin(), headers->end(),
                     [name](const auto& field) { return field.first == name; }),
      headers->end());
}

std::string GrpcPrefix(uint8_t flag, uint32_t length) {
  std::string prefix(5, '\0');
  prefix[0] = static_cast<char>(flag);
  prefix[1] = static_cast<char>(length >> 24);
  prefix[2] = static_cast<char>(length >> 16);
  prefix[3] = static_cast<char>(length >> 8);
  prefix[4] = static_cast<char>(length);
  return prefix;
}

std::string GrpcFrame(absl::string_view message, uint8_t flag) {
  return absl::StrCat(GrpcPrefix(flag, static_cast<uint32_t>(message.size())),
                      message);
}

bool ParseGrpcFrames(absl::string_view body, std::vector<std::string>* messages,
                     std::vector<uint8_t>* flags) {
  messages->clear();
  if (flags != nullptr) flags->clear();
  while (!body.empty()) {
    if (body.size() < 5) return false;
    const auto* p = reinterpret_cast<const uint8_t*>(body.data());
    const uint32_t length = (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) |
                            (uint32_t{p[3]} << 8) | uint32_t{p[4]};
    if (body.size() - 5 < length) return false;
    if (flags != nullptr) flags->push_back(p[0]);
    messages->emplace_back(body.substr(5, length));
    body.remove_prefix(5 + length);
  }
  return true;
}

bool SplitFramedBody(absl::string_view body, uint8_t last_flag,
                     std::vector<std::string>* messages, std::string* last) {
  std::vector<uint8_t> flags;
  if (!ParseGrpcFrames(body, messages, &flags) || messages->empty() ||
      flags.back() != last_flag) {
    return false;
  }
  for (size_t i = 0; i + 1 < flags.size(); ++i) {
    if (flags[i] != 0) return false;
  }
  *last = std::move(messages->back());
  messages->pop_back();
  return true;
}

std::string PercentDecode(absl::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 &&
        hex(text[i + 2]) >= 0) {
      out.push_back(
          static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::vector<RawFrame> ParseFrames(absl::string_view bytes) {
  std::vector<RawFrame> frames;
  while (bytes.size() >= 9) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint32_t length =
        (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[2]};
    if (bytes.size() - 9 < length) break;
    RawFrame frame;
    frame.type = p[3];
    frame.flags = p[4];
    frame.stream_id = ((uint32_t{p[5]} << 24) | (uint32_t{p[6]} << 16) |
                       (uint32_t{p[7]} << 8) | uint32_t{p[8]}) &
                      0x7fffffffu;
    frame.payload = std::string(bytes.substr(9, length));
    frames.push_back(std::move(frame));
    bytes.remove_prefix(9 + length);
  }
  return frames;
}

RawBytesResult SendRawBytes(
    int port, absl::string_view bytes, absl::Duration timeout,
    const std::function<bool(const std::vector<RawFrame>&)>& until) {
  RawBytesResult result;
  const absl::Time deadline = absl::Now() + timeout;
  const int fd = ConnectLoopback(port, timeout, &result.connect_error);
  if (fd < 0) return result;
  result.connected = true;
  size_t sent = 0;
  char buffer[16 * 1024];
  for (;;) {
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      result.timed_out = true;
      break;
    }
    pollfd p{fd,
             static_cast<short>(POLLIN | (sent < bytes.size() ? POLLOUT : 0)),
             0};
    const int rv = poll(&p, 1, PollMillis(deadline - now));
    if (rv < 0 && errno != EINTR) break;
    if (rv <= 0) continue;
    if ((p.revents & POLLOUT) && sent < bytes.size()) {
      const ssize_t n =
          send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        if (errno == ECONNRESET || errno == EPIPE) result.reset_by_peer = true;
        break;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n == 0) {
        result.closed_by_peer = true;
        break;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        result.reset_by_peer = true;
        break;
      }
      result.received.append(buffer, static_cast<size_t>(n));
      if (until != nullptr && until(ParseFrames(result.received))) break;
    }
  }
  close(fd);
  result.frames = ParseFrames(result.received);
  return result;
}

}  // namespace h2rpc::testing
