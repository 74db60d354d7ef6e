#include "transport/http1/server_bridge.h"

#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "transport/http1/bridge_parts.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::transport::http1 {
namespace {

constexpr absl::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// The client session's receive windows, stream and connection: the response
// bytes that may wait for the socket.
constexpr int32_t kResponseWindow = 256 * 1024;
// The rest of a request body read and dropped after its answer, at most,
// for the connection to carry the next request; past it, the connection
// closes.
constexpr size_t kMaxDroppedBody = 256 * 1024;
// How long a closing connection waits for the peer's end of file after its
// last response before it closes.
constexpr absl::Duration kCloseLinger = absl::Seconds(1);

// Fields of HTTP/1.1 that become pseudo-headers or are handled here, or
// mean nothing in HTTP/2.
bool IsHopByHop(absl::string_view name) {
  return IsConnectionSpecific(name) || name == "host" || name == "expect" ||
         name == "http2-settings";
}

// The field names the Connection fields of `head` nominate as hop-by-hop
// (RFC 9110 §7.6.1), read once per request: the first kMaxNominated of
// them, so that a request of many fields and many names costs at most
// that many comparisons per field (names past them are passed on, as
// metadata).
constexpr size_t kMaxNominated = 16;
using NominatedNames = absl::InlinedVector<absl::string_view, kMaxNominated>;

NominatedNames ConnectionNominated(const RequestHead& head) {
  NominatedNames names;
  for (const HeaderField& field : head.fields) {
    if (field.name != "connection") continue;
    for (absl::string_view token : absl::StrSplit(field.value, ',')) {
      token = absl::StripAsciiWhitespace(token);
      if (token.empty()) continue;
      if (names.size() == kMaxNominated) return names;
      names.push_back(token);
    }
  }
  return names;
}

bool IsNominated(const NominatedNames& names, absl::string_view name) {
  for (absl::string_view nominated : names) {
    if (absl::EqualsIgnoreCase(nominated, name)) return true;
  }
  return false;
}

}  // namespace

ServerBridge::ServerBridge(io::Scheduler* scheduler,
                           const Http1Options& options, bool secure)
    : scheduler_(scheduler),
      options_(options),
      secure_(secure),
      parser_(this, options) {}

ServerBridge::~ServerBridge() {
  if (scheduled()) scheduler_->Cancel(this);
  if (client_ != nullptr) nghttp2_session_del(client_);
}

void ServerBridge::Start(io::Wire* wire) {
  outer_ = wire;
  inner_->Start(this);
}

// --- Detection ---------------------------------------------------------

void ServerBridge::Feed(absl::string_view bytes) {
  switch (mode_) {
    case Mode::kHttp2:
      inner_->Feed(bytes);
      return;
    case Mode::kHttp1:
      Http1Input(bytes);
      return;
    case Mode::kUndecided:
      FeedUndecided(bytes);
      return;
  }
}

void ServerBridge::FeedUndecided(absl::string_view bytes) {
  const size_t have = undecided_.size();
  const size_t compare = std::min(bytes.size(), kHttp2Preface.size() - have);
  if (bytes.substr(0, compare) == kHttp2Preface.substr(have, compare)) {
    if (have + compare < kHttp2Preface.size()) {
      undecided_.append(bytes.data(), bytes.size());
      return;
    }
    mode_ = Mode::kHttp2;
    if (!undecided_.empty()) inner_->Feed(undecided_);
    if (!inner_closed_) inner_->Feed(bytes);
    std::string().swap(undecided_);
    // Output the server session queued meanwhile (its SETTINGS).
    outer_->RequestFlush();
    return;
  }
  mode_ = Mode::kHttp1;
  StartHttp1();
  std::string first;
  first.swap(undecided_);
  if (!first.empty()) Http1Input(first);
  Http1Input(bytes);
}

void ServerBridge::StartHttp1() {
  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks,
                                                       &OnFrameReceived);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &OnStreamClose);
  nghttp2_option* option;
  nghttp2_option_new(&option);
  // Credit comes back as the socket takes the response (ConsumeOutput).
  nghttp2_option_set_no_auto_window_update(option, 1);
  const int created = nghttp2_session_client_new3(&client_, callbacks, this,
                                                  option, pool_.mem());
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (created != 0) {
    client_ = nullptr;
    closing_ = true;  // input is dropped
    CloseInner(nghttp2_strerror(created));
    return;
  }
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kResponseWindow},
  };
  nghttp2_submit_settings(client_, NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(client_, NGHTTP2_FLAG_NONE, 0,
                                        kResponseWindow);
  SendToInner();
  Arm(TimerPurpose::kHeader, options_.header_timeout);
}

// --- Requests ----------------------------------------------------------

void ServerBridge::Http1Input(absl::string_view bytes) {
  if (closing_ || outer_closed_) return;  // read and dropped until the end
  if (stream_id_ >= 0 && request_body_.complete()) {
    pending_input_.append(bytes.data(), bytes.size());
    return;
  }
  ParseRequests(bytes);
  SendToInner();
}

void ServerBridge::ParseRequests(absl::string_view bytes) {
  while (!bytes.empty() && !closing_) {
    if (!parser_.in_request() && timer_purpose_ != TimerPurpose::kHeader) {
      Arm(TimerPurpose::kHeader, options_.header_timeout);
    }
    const size_t parsed = parser_.Parse(bytes);
    if (parser_.failed()) {
      AnswerError(parser_.error_status(), parser_.error_message());
      return;
    }
    bytes.remove_prefix(parsed);
    if (stream_id_ >= 0 && request_body_.complete()) {
      // Pipelined: the rest waits for this request's answer.
      pending_input_.append(bytes.data(), bytes.size());
      return;
    }
  }
}

void ServerBridge::OnRequestHead(const RequestHead& head) {
  if (scheduled()) scheduler_->Cancel(this);
  timer_purpose_ = TimerPurpose::kNone;
  absl::string_view path, authority;
  if (!TargetToPath(head, &path, &authority)) return;
  if (head.method == "CONNECT") {
    AnswerError(405, "CONNECT is not served");
    return;
  }
  bool continue_expected = false;
  for (const HeaderField& field : head.fields) {
    if (field.name != "expect") continue;
    if (!absl::EqualsIgnoreCase(field.value, "100-continue")) {
      AnswerError(417, "only the 100-continue expectation is met");
      return;
    }
    continue_expected = head.version_minor >= 1;
  }
  ++requests_;
  close_after_response_ = !parser_.keep_alive() ||
                          requests_ >= options_.max_requests_per_connection;
  head_request_ = head.method == "HEAD";
  version_minor_ = head.version_minor;
  request_fields_.clear();
  request_fields_.push_back(CopiedField(":method", head.method));
  request_fields_.push_back(CopiedField(":scheme", secure_ ? "https" : "http"));
  if (!authority.empty()) {
    request_fields_.push_back(CopiedField(":authority", authority));
  }
  request_fields_.push_back(CopiedField(":path", path));
  const NominatedNames nominated = ConnectionNominated(head);
  for (const HeaderField& field : head.fields) {
    if (IsHopByHop(field.name) || IsNominated(nominated, field.name)) continue;
    if (field.name == "te" &&
        !absl::EqualsIgnoreCase(field.value, "trailers")) {
      continue;
    }
    request_fields_.push_back(CopiedField(field.name, field.value));
  }
  nghttp2_data_provider body;
  body.source.ptr = nullptr;
  body.read_callback = &ReadRequestBody;
  request_body_.Reset();
  stream_id_ = nghttp2_submit_request(client_, nullptr, request_fields_.data(),
                                      request_fields_.size(),
                                      head.has_body ? &body : nullptr, nullptr);
  if (stream_id_ < 0) {
    stream_id_ = -1;
    AnswerError(500, "the request could not be passed on");
    return;
  }
  if (continue_expected) out_.append("HTTP/1.1 100 Continue\r\n\r\n");
}

bool ServerBridge::TargetToPath(const RequestHead& head,
                                absl::string_view* path,
                                absl::string_view* authority) {
  const HeaderField* host = nullptr;
  for (const HeaderField& field : head.fields) {
    if (field.name != "host") continue;
    if (host != nullptr) {
      AnswerError(400, "the request has more than one Host");
      return false;
    }
    host = &field;
  }
  if (host == nullptr && head.version_minor >= 1) {
    AnswerError(400, "an HTTP/1.1 request needs a Host");
    return false;
  }
  if (host != nullptr) *authority = host->value;
  if (absl::StartsWith(head.target, "/")) {
    *path = head.target;
    return true;
  }
  if (head.target == "*" && head.method == "OPTIONS") {
    *path = head.target;
    return true;
  }
  // absolute-form: the target's authority wins over Host (RFC 9112 §3.2.2).
  http_parser_url url;
  http_parser_url_init(&url);
  if (http_parser_parse_url(head.target.data(), head.target.size(), 0, &url) !=
          0 ||
      (url.field_set & (1 << UF_HOST)) == 0) {
    AnswerError(400, "the request target is not valid");
    return false;
  }
  const size_t authority_begin = url.field_data[UF_HOST].off;
  size_t authority_end = authority_begin + url.field_data[UF_HOST].len;
  if (url.field_set & (1 << UF_PORT)) {
    authority_end = url.field_data[UF_PORT].off + url.field_data[UF_PORT].len;
  }
  *authority =
      head.target.substr(authority_begin, authority_end - authority_begin);
  if (url.field_set & (1 << UF_PATH)) {
    *path = head.target.substr(url.field_data[UF_PATH].off);
  } else {
    *path = "/";
  }
  return true;
}

void ServerBridge::OnRequestBody(absl::string_view bytes) {
  if (stream_id_ < 0) {
    // Answered already: the rest is dropped.
    dropped_body_ += bytes.size();
    if (dropping_body_ && dropped_body_ > kMaxDroppedBody) BeginClosing();
    return;
  }
  request_body_.Append(bytes);
  nghttp2_session_resume_data(client_, stream_id_);
}

void ServerBridge::OnRequestComplete() {
  request_body_.set_complete();
  if (stream_id_ >= 0) {
    nghttp2_session_resume_data(client_, stream_id_);
  } else if (dropping_body_ && !closing_) {
    // The end of a request answered before it: on to the next one.
    dropping_body_ = false;
    request_body_.Reset();
    parser_.Resume();
    Arm(TimerPurpose::kIdle, options_.idle_timeout);
  }
}

ssize_t ServerBridge::ReadRequestBody(nghttp2_session*, int32_t, uint8_t* buf,
                                      size_t length, uint32_t* data_flags,
                                      nghttp2_data_source*, void* user_data) {
  auto* self = static_cast<ServerBridge*>(user_data);
  bool drained_full;
  const ssize_t n = self->request_body_.Take(buf, length, data_flags,
                                             self->options_.max_buffered_input,
                                             &drained_full);
  // Input was paused on the body (WantsInput): read again.
  if (drained_full) self->outer_->RequestFlush();
  return n;
}

bool ServerBridge::WantsInput() const {
  if (mode_ != Mode::kHttp1 || closing_) return true;
  return pending_input_.size() < options_.max_buffered_input &&
         request_body_.held() < options_.max_buffered_input;
}

// --- Between the sessions ----------------------------------------------

void ServerBridge::SendToInner() {
  if (client_ != nullptr) FeedSessionOutput(client_, inner_, &inner_closed_);
}

void ServerBridge::PumpInner() {
  if (pumping_ || client_ == nullptr) return;
  pumping_ = true;
  while (!inner_closed_) {
    const absl::string_view output = inner_->PendingOutput();
    if (output.empty()) break;
    const ssize_t used = nghttp2_session_mem_recv(
        client_, reinterpret_cast<const uint8_t*>(output.data()),
        output.size());
    if (inner_closed_) break;
    inner_->ConsumeOutput(output.size());
    if (used < 0) {
      // The server session's own output is always valid HTTP/2.
      CloseInner(absl::StrCat("HTTP/1.1 bridge: ", nghttp2_strerror(used)));
      break;
    }
    if (response_done_) FinishExchange();
    // Body bytes that were dropped (HEAD, a cut response) or that left
    // already give their credit back now.
    if (out_sent_ == out_.size()) ReturnCredit();
    SendToInner();
  }
  pumping_ = false;
}

void ServerBridge::ReturnCredit() {
  if (unconsumed_body_ == 0 || inner_closed_) return;
  if (stream_id_ >= 0) {
    nghttp2_session_consume(client_, stream_id_, unconsumed_body_);
  } else {
    nghttp2_session_consume_connection(client_, unconsumed_body_);
  }
  unconsumed_body_ = 0;
}

// --- Responses ---------------------------------------------------------

int ServerBridge::OnHeader(nghttp2_session*, const nghttp2_frame* frame,
                           const uint8_t* name, size_t namelen,
                           const uint8_t* value, size_t valuelen, uint8_t,
                           void* user_data) {
  auto* self = static_cast<ServerBridge*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS ||
      frame->hd.stream_id != self->stream_id_) {
    return 0;
  }
  const absl::string_view n(reinterpret_cast<const char*>(name), namelen);
  const absl::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") {
    if (!absl::SimpleAtoi(v, &self->response_status_)) {
      self->response_status_ = 500;
    }
    return 0;
  }
  Field field;
  field.name_begin = self->response_storage_.size();
  field.name_size = n.size();
  self->response_storage_.append(n.data(), n.size());
  field.value_begin = self->response_storage_.size();
  field.value_size = v.size();
  self->response_storage_.append(v.data(), v.size());
  self->response_fields_.push_back(field);
  return 0;
}

int ServerBridge::OnFrameReceived(nghttp2_session*, const nghttp2_frame* frame,
                                  void* user_data) {
  auto* self = static_cast<ServerBridge*>(user_data);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    self->close_after_response_ = true;
    return 0;
  }
  if (frame->hd.stream_id != self->stream_id_ || self->response_done_) {
    return 0;
  }
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (!self->response_head_written_) {
      self->WriteResponseHead(end_stream);
    } else {
      self->WriteTrailers();
    }
    self->response_storage_.clear();
    self->response_fields_.clear();
  }
  if (end_stream) self->EndResponseBody();
  return 0;
}

int ServerBridge::OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id,
                              const uint8_t* data, size_t len,
                              void* user_data) {
  auto* self = static_cast<ServerBridge*>(user_data);
  self->unconsumed_body_ += len;
  if (stream_id != self->stream_id_ || self->response_done_) return 0;
  self->WriteBody(absl::string_view(reinterpret_cast<const char*>(data), len));
  return 0;
}

int ServerBridge::OnStreamClose(nghttp2_session*, int32_t stream_id,
                                uint32_t error_code, void* user_data) {
  auto* self = static_cast<ServerBridge*>(user_data);
  if (stream_id != self->stream_id_) return 0;
  self->stream_id_ = -1;
  if (!self->response_done_) self->AbortResponse(error_code);
  return 0;
}

void ServerBridge::AppendStatusLine(int status) {
  const char* reason = http_status_str(static_cast<http_status>(status));
  absl::StrAppend(&out_, "HTTP/1.1 ", status, " ", reason, "\r\n");
}

void ServerBridge::WriteResponseHead(bool end_stream) {
  response_head_written_ = true;
  AppendStatusLine(response_status_);
  bool has_length = false;
  const char* base = response_storage_.data();
  for (const Field& field : response_fields_) {
    const absl::string_view name(base + field.name_begin, field.name_size);
    has_length = has_length || name == "content-length";
    absl::StrAppend(
        &out_, name, ": ",
        absl::string_view(base + field.value_begin, field.value_size), "\r\n");
  }
  const bool bodiless = response_status_ == 204 || response_status_ == 304;
  if (!has_length && !bodiless) {
    if (end_stream) {
      out_.append("content-length: 0\r\n");
    } else if (version_minor_ >= 1) {
      out_.append("transfer-encoding: chunked\r\n");
      response_chunked_ = !head_request_;
    } else {
      // HTTP/1.0 has no chunks: the body ends with the connection.
      close_after_response_ = true;
    }
  }
  if (close_after_response_) {
    out_.append("connection: close\r\n");
  } else if (version_minor_ == 0) {
    out_.append("connection: keep-alive\r\n");
  }
  out_.append("\r\n");
}

void ServerBridge::WriteBody(absl::string_view bytes) {
  if (head_request_ || bytes.empty()) return;
  if (response_chunked_) {
    char size[20];
    const int n = snprintf(size, sizeof(size), "%zx\r\n", bytes.size());
    out_.append(size, n);
  }
  out_.append(bytes.data(), bytes.size());
  if (response_chunked_) out_.append("\r\n");
}

void ServerBridge::WriteTrailers() {
  if (!response_chunked_) return;  // no place for them
  trailers_written_ = true;
  out_.append("0\r\n");
  const char* base = response_storage_.data();
  for (const Field& field : response_fields_) {
    absl::StrAppend(
        &out_, absl::string_view(base + field.name_begin, field.name_size),
        ": ", absl::string_view(base + field.value_begin, field.value_size),
        "\r\n");
  }
  out_.append("\r\n");
}

void ServerBridge::EndResponseBody() {
  if (response_chunked_ && !trailers_written_) out_.append("0\r\n\r\n");
  response_done_ = true;
}

void ServerBridge::AbortResponse(uint32_t error_code) {
  response_done_ = true;
  close_after_response_ = true;
  if (response_head_written_) {
    // The body stops short: the client sees the connection end inside it.
    response_chunked_ = false;
    return;
  }
  switch (error_code) {
    case NGHTTP2_REFUSED_STREAM:
      AnswerError(503, "the server is not taking requests now");
      break;
    case NGHTTP2_PROTOCOL_ERROR:
      AnswerError(400, "the request is not valid");
      break;
    default:
      AnswerError(500, "the request failed");
      break;
  }
}

void ServerBridge::FinishExchange() {
  if (stream_id_ >= 0) {
    // The server answered before the request's end: the rest of the body
    // is dropped; the stream is over on the server's side already.
    nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, stream_id_,
                              NGHTTP2_NO_ERROR);
    stream_id_ = -1;
  }
  response_done_ = false;
  response_head_written_ = false;
  response_chunked_ = false;
  trailers_written_ = false;
  response_status_ = 0;
  response_storage_.clear();
  response_fields_.clear();
  request_body_.DropHeld();
  if (close_after_response_) {
    BeginClosing();
    return;
  }
  if (!request_body_.complete()) {
    // Answered before its end (a client may send the end of a chunked body
    // late): the next request begins past the rest of this body, which is
    // read and dropped, kMaxDroppedBody at most, within header_timeout.
    dropping_body_ = true;
    dropped_body_ = 0;
    Arm(TimerPurpose::kHeader, options_.header_timeout);
    return;
  }
  request_body_.Reset();
  parser_.Resume();
  Arm(TimerPurpose::kIdle, options_.idle_timeout);
  if (pending_input_.empty()) return;
  parse_buffer_.clear();
  parse_buffer_.swap(pending_input_);
  const bool was_full = parse_buffer_.size() >= options_.max_buffered_input;
  ParseRequests(parse_buffer_);
  if (was_full) outer_->RequestFlush();  // input was paused: read again
}

void ServerBridge::AnswerError(int status, absl::string_view message) {
  if (stream_id_ >= 0) {
    nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, stream_id_,
                              NGHTTP2_CANCEL);
    stream_id_ = -1;
    if (response_head_written_) {
      BeginClosing();
      return;
    }
  }
  AppendStatusLine(status);
  absl::StrAppend(&out_,
                  "content-type: text/plain; charset=utf-8\r\n"
                  "content-length: ",
                  message.size() + 1, "\r\nconnection: close\r\n\r\n", message,
                  "\n");
  BeginClosing();
}

// --- The connection's end ------------------------------------------------

void ServerBridge::BeginClosing() {
  if (closing_) return;
  closing_ = true;
  outer_->RequestFlush();
  MaybeShutdownWrite();
}

void ServerBridge::MaybeShutdownWrite() {
  if (!closing_ || write_shut_ || outer_closed_ || out_sent_ < out_.size()) {
    return;
  }
  write_shut_ = true;
  outer_->ShutdownWrite();
  Arm(TimerPurpose::kLinger, kCloseLinger);
}

void ServerBridge::CloseInner(absl::string_view why) {
  if (inner_closed_) {
    if (!outer_closed_) {
      outer_closed_ = true;
      outer_->CloseWire(false);
    }
    return;
  }
  inner_->OnWireError(Status(StatusCode::kUnavailable, std::string(why)));
}

void ServerBridge::Arm(TimerPurpose purpose, absl::Duration after) {
  timer_purpose_ = purpose;
  scheduler_->Schedule(this, scheduler_->Now() + after);
}

void ServerBridge::OnTimer() {
  const TimerPurpose purpose = timer_purpose_;
  timer_purpose_ = TimerPurpose::kNone;
  switch (purpose) {
    case TimerPurpose::kNone:
      return;
    case TimerPurpose::kIdle:
      if (out_sent_ < out_.size()) {
        // The last answer is still being written: idle from its end.
        Arm(TimerPurpose::kIdle, options_.idle_timeout);
      } else if (stream_id_ < 0 && !parser_.in_request()) {
        CloseInner("HTTP/1.1 connection idle");
      }
      return;
    case TimerPurpose::kHeader:
      if (parser_.in_request() && !parser_.head_complete()) {
        AnswerError(408, "the request's head did not arrive in time");
      } else if (dropping_body_) {
        BeginClosing();
      } else if (stream_id_ < 0) {
        CloseInner("HTTP/1.1 connection idle");
      }
      return;
    case TimerPurpose::kLinger:
      CloseInner("HTTP/1.1 connection closed");
      return;
  }
}

// --- The outer wire's calls ----------------------------------------------

void ServerBridge::OnPeerClosed() {
  // HTTP/1.1 has no half-close: a client that closes is gone, and the call
  // in progress is cancelled with the connection.
  inner_->OnPeerClosed();
}

void ServerBridge::OnWireError(const Status& why) { inner_->OnWireError(why); }

absl::string_view ServerBridge::PendingOutput() {
  switch (mode_) {
    case Mode::kHttp2:
      return inner_->PendingOutput();
    case Mode::kUndecided:
      return absl::string_view();
    case Mode::kHttp1:
      break;
  }
  PumpInner();
  return absl::string_view(out_).substr(out_sent_);
}

size_t ServerBridge::PendingOutputPieces(iovec* pieces, size_t max) {
  if (mode_ == Mode::kHttp2) return inner_->PendingOutputPieces(pieces, max);
  return ByteSession::PendingOutputPieces(pieces, max);
}

void ServerBridge::ConsumeOutput(size_t n) {
  if (mode_ == Mode::kHttp2) {
    inner_->ConsumeOutput(n);
    return;
  }
  out_sent_ += n;
  if (out_sent_ < out_.size()) return;
  out_.clear();
  out_sent_ = 0;
  if (unconsumed_body_ > 0) {
    ReturnCredit();
    SendToInner();
  }
  MaybeShutdownWrite();
}

// --- The inner session's calls -------------------------------------------

void ServerBridge::RequestFlush() {
  if (!outer_closed_) outer_->RequestFlush();
}

void ServerBridge::ShutdownWrite() {
  if (mode_ != Mode::kHttp1) {
    outer_->ShutdownWrite();
    return;
  }
  // The server session wrote its last frame (GOAWAY): the response in
  // progress, if any, goes out, then the connection ends.
  close_after_response_ = true;
  if (stream_id_ < 0) BeginClosing();
  outer_->RequestFlush();
}

void ServerBridge::CloseWire(bool flush_first) {
  inner_closed_ = true;
  if (scheduled()) scheduler_->Cancel(this);
  if (outer_closed_) return;
  outer_closed_ = true;
  outer_->CloseWire(flush_first);
}

}  // namespace h2rpc::transport::http1
