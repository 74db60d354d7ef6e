#include "transport/http1/client_bridge.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "transport/http1/bridge_parts.h"

namespace h2rpc::transport::http1 {
namespace {

// What HTTP/2 counts per field besides its name and value.
constexpr size_t kFieldOverhead = 32;

ClientBridge* Self(http_parser* parser) {
  return static_cast<ClientBridge*>(parser->data);
}

}  // namespace

ClientBridge::ClientBridge(const Http1Options& options) : options_(options) {
  http_parser_settings_init(&settings_);
  settings_.on_header_field = &OnResponseHeaderField;
  settings_.on_header_value = &OnResponseHeaderValue;
  settings_.on_headers_complete = &OnResponseHeadersComplete;
  settings_.on_body = &OnResponseBody;
  settings_.on_message_complete = &OnResponseComplete;
}

ClientBridge::~ClientBridge() {
  if (server_ != nullptr) nghttp2_session_del(server_);
}

void ClientBridge::Start(io::Wire* wire) {
  outer_ = wire;
  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          &OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks,
                                                       &OnFrameReceived);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &OnStreamClose);
  const int created = nghttp2_session_server_new3(&server_, callbacks, this,
                                                  nullptr, pool_.mem());
  nghttp2_session_callbacks_del(callbacks);
  if (created != 0) {
    server_ = nullptr;
    ending_ = true;  // input is dropped
    inner_->Start(this);
    inner_->OnWireError(
        Status(StatusCode::kUnavailable, nghttp2_strerror(created)));
    return;
  }
  // One call at a time: HTTP/1.1 answers in order, one request after the
  // other.
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1},
  };
  nghttp2_submit_settings(server_, NGHTTP2_FLAG_NONE, settings, 1);
  inner_->Start(this);
  SendToInner();
}

// --- Requests ----------------------------------------------------------

int ClientBridge::OnBeginHeaders(nghttp2_session* session,
                                 const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<ClientBridge*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS ||
      frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
    return 0;
  }
  if (self->stream_id_ >= 0 || self->ending_) {
    // Before the client session applied MAX_CONCURRENT_STREAMS, or after
    // the connection's end: it retries the call elsewhere.
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                              NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  self->stream_id_ = frame->hd.stream_id;
  self->method_.clear();
  self->path_.clear();
  self->authority_.clear();
  self->request_fields_.clear();
  self->request_body_.clear();
  self->request_sent_ = false;
  return 0;
}

int ClientBridge::OnHeader(nghttp2_session*, const nghttp2_frame* frame,
                           const uint8_t* name, size_t namelen,
                           const uint8_t* value, size_t valuelen, uint8_t,
                           void* user_data) {
  auto* self = static_cast<ClientBridge*>(user_data);
  if (frame->hd.stream_id != self->stream_id_) return 0;
  const absl::string_view n(reinterpret_cast<const char*>(name), namelen);
  const absl::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":method") {
    self->method_.assign(v.data(), v.size());
  } else if (n == ":path") {
    self->path_.assign(v.data(), v.size());
  } else if (n == ":authority") {
    self->authority_.assign(v.data(), v.size());
  } else if (n.front() != ':' && n != "te") {
    absl::StrAppend(&self->request_fields_, n, ": ", v, "\r\n");
  }
  return 0;
}

int ClientBridge::OnFrameReceived(nghttp2_session*, const nghttp2_frame* frame,
                                  void* user_data) {
  auto* self = static_cast<ClientBridge*>(user_data);
  if (frame->hd.stream_id != self->stream_id_ || self->request_sent_) return 0;
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    self->WriteRequest();
  }
  return 0;
}

int ClientBridge::OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id,
                              const uint8_t* data, size_t len,
                              void* user_data) {
  auto* self = static_cast<ClientBridge*>(user_data);
  if (stream_id == self->stream_id_) {
    self->request_body_.append(reinterpret_cast<const char*>(data), len);
  }
  return 0;
}

int ClientBridge::OnStreamClose(nghttp2_session*, int32_t stream_id,
                                uint32_t error_code, void* user_data) {
  auto* self = static_cast<ClientBridge*>(user_data);
  if (stream_id != self->stream_id_) return 0;
  self->stream_id_ = -1;
  if (self->request_sent_ && !self->response_body_.complete()) {
    // Cancelled while its request is out: HTTP/1.1 cancels only by ending
    // the connection (after this callback: EndConnection sends).
    self->end_requested_ = true;
  }
  return 0;
}

void ClientBridge::WriteRequest() {
  request_sent_ = true;
  response_keep_alive_ = true;
  response_storage_.clear();
  response_fields_.clear();
  response_trailers_.clear();
  in_trailers_ = false;
  value_next_ = false;
  response_body_.Reset();
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  absl::StrAppend(&out_, method_, " ", path_, " HTTP/1.1\r\nhost: ", authority_,
                  "\r\n", request_fields_,
                  "content-length: ", request_body_.size(), "\r\n\r\n",
                  request_body_);
  outer_->RequestFlush();
}

// --- Answers -----------------------------------------------------------

void ClientBridge::Feed(absl::string_view bytes) {
  if (ending_ || outer_closed_) return;
  if (!request_sent_ || response_body_.complete()) {
    // Bytes no request asked for.
    Fail(NGHTTP2_PROTOCOL_ERROR);
    return;
  }
  const size_t parsed =
      http_parser_execute(&parser_, &settings_, bytes.data(), bytes.size());
  const http_errno error = HTTP_PARSER_ERRNO(&parser_);
  if ((error != HPE_OK && error != HPE_PAUSED) ||
      (response_body_.complete() && parsed < bytes.size())) {
    Fail(NGHTTP2_PROTOCOL_ERROR);
    return;
  }
  SendToInner();
  if (response_body_.complete() && !response_keep_alive_) EndConnection();
}

bool ClientBridge::AddField(const char* at, size_t size, bool value) {
  std::vector<Field>& fields =
      in_trailers_ ? response_trailers_ : response_fields_;
  if (!value && (fields.empty() || value_next_)) {
    fields.push_back({response_storage_.size(), 0, 0, 0});
    value_next_ = false;
  }
  Field& field = fields.back();
  if (value && !value_next_) {
    field.value_begin = response_storage_.size();
    value_next_ = true;
  }
  const size_t begin = response_storage_.size();
  response_storage_.append(at, size);
  if (value) {
    field.value_size += size;
  } else {
    for (size_t i = begin; i < response_storage_.size(); ++i) {
      response_storage_[i] = absl::ascii_tolower(response_storage_[i]);
    }
    field.name_size += size;
  }
  return response_storage_.size() +
             kFieldOverhead *
                 (response_fields_.size() + response_trailers_.size()) <=
         options_.max_header_bytes;
}

int ClientBridge::OnResponseHeaderField(http_parser* parser, const char* at,
                                        size_t size) {
  return Self(parser)->AddField(at, size, /*value=*/false) ? 0 : -1;
}

int ClientBridge::OnResponseHeaderValue(http_parser* parser, const char* at,
                                        size_t size) {
  return Self(parser)->AddField(at, size, /*value=*/true) ? 0 : -1;
}

int ClientBridge::OnResponseHeadersComplete(http_parser* parser) {
  ClientBridge* self = Self(parser);
  if (parser->status_code < 200) return 0;  // interim: the answer follows
  self->in_trailers_ = true;
  self->value_next_ = false;
  self->response_keep_alive_ = http_should_keep_alive(parser) != 0;
  char status[4];
  snprintf(status, sizeof(status), "%03u", parser->status_code % 1000);
  self->nv_.clear();
  self->nv_.push_back(CopiedField(":status", absl::string_view(status, 3)));
  const char* base = self->response_storage_.data();
  for (const Field& field : self->response_fields_) {
    const absl::string_view name(base + field.name_begin, field.name_size);
    if (IsConnectionSpecific(name)) continue;
    self->nv_.push_back(CopiedField(
        name, absl::string_view(base + field.value_begin, field.value_size)));
  }
  nghttp2_data_provider body;
  body.source.ptr = nullptr;
  body.read_callback = &ReadResponseBody;
  if (self->stream_id_ < 0 ||
      nghttp2_submit_response(self->server_, self->stream_id_, self->nv_.data(),
                              self->nv_.size(), &body) != 0) {
    return -1;
  }
  return 0;
}

int ClientBridge::OnResponseBody(http_parser* parser, const char* at,
                                 size_t size) {
  ClientBridge* self = Self(parser);
  self->response_body_.Append(absl::string_view(at, size));
  if (self->stream_id_ >= 0) {
    nghttp2_session_resume_data(self->server_, self->stream_id_);
  }
  return 0;
}

int ClientBridge::OnResponseComplete(http_parser* parser) {
  ClientBridge* self = Self(parser);
  if (parser->status_code < 200) {
    // An interim answer (100 Continue): the real one follows.
    self->response_storage_.clear();
    self->response_fields_.clear();
    return 0;
  }
  self->response_body_.set_complete();
  http_parser_pause(parser, 1);
  if (self->stream_id_ >= 0) {
    nghttp2_session_resume_data(self->server_, self->stream_id_);
  }
  return 0;
}

ssize_t ClientBridge::ReadResponseBody(nghttp2_session* session,
                                       int32_t stream_id, uint8_t* buf,
                                       size_t length, uint32_t* data_flags,
                                       nghttp2_data_source*, void* user_data) {
  auto* self = static_cast<ClientBridge*>(user_data);
  bool drained_full;
  const ssize_t n = self->response_body_.Take(buf, length, data_flags,
                                              self->options_.max_buffered_input,
                                              &drained_full);
  // Input was paused on the body (WantsInput): read again.
  if (drained_full) self->outer_->RequestFlush();
  if ((*data_flags & NGHTTP2_DATA_FLAG_EOF) != 0 &&
      !self->response_trailers_.empty()) {
    *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    const char* base = self->response_storage_.data();
    self->nv_.clear();
    for (const Field& field : self->response_trailers_) {
      self->nv_.push_back(CopiedField(
          absl::string_view(base + field.name_begin, field.name_size),
          absl::string_view(base + field.value_begin, field.value_size)));
    }
    nghttp2_submit_trailer(session, stream_id, self->nv_.data(),
                           self->nv_.size());
  }
  return static_cast<ssize_t>(n);
}

bool ClientBridge::WantsInput() const {
  return response_body_.held() < options_.max_buffered_input;
}

// --- Between the sessions ----------------------------------------------

void ClientBridge::SendToInner() {
  if (server_ != nullptr) FeedSessionOutput(server_, inner_, &inner_closed_);
}

void ClientBridge::PumpInner() {
  if (pumping_ || server_ == nullptr) return;
  pumping_ = true;
  while (!inner_closed_) {
    const absl::string_view output = inner_->PendingOutput();
    if (output.empty()) break;
    const ssize_t used = nghttp2_session_mem_recv(
        server_, reinterpret_cast<const uint8_t*>(output.data()),
        output.size());
    if (inner_closed_) break;
    inner_->ConsumeOutput(output.size());
    if (end_requested_) EndConnection();
    SendToInner();
    if (used < 0) {
      // The client session's own output is always valid HTTP/2.
      inner_->OnWireError(
          Status(StatusCode::kInternal,
                 absl::StrCat("HTTP/1.1 bridge: ", nghttp2_strerror(used))));
      break;
    }
  }
  pumping_ = false;
}

void ClientBridge::Fail(uint32_t error_code) {
  if (stream_id_ >= 0) {
    nghttp2_submit_rst_stream(server_, NGHTTP2_FLAG_NONE, stream_id_,
                              error_code);
    stream_id_ = -1;
  }
  EndConnection();
  if (!inner_closed_) {
    inner_->OnWireError(Status(StatusCode::kUnavailable,
                               "the server's HTTP/1.1 answer was malformed"));
  }
}

void ClientBridge::EndConnection() {
  end_requested_ = false;
  if (ending_) return;
  ending_ = true;
  nghttp2_submit_goaway(server_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(server_),
                        NGHTTP2_NO_ERROR, nullptr, 0);
  SendToInner();
}

// --- The outer wire's calls ----------------------------------------------

void ClientBridge::OnPeerClosed() {
  if (request_sent_ && !response_body_.complete() && !ending_) {
    // An answer whose body ends with the connection, or one cut short.
    http_parser_execute(&parser_, &settings_, nullptr, 0);
    SendToInner();
  }
  inner_->OnPeerClosed();
}

void ClientBridge::OnWireError(const Status& why) { inner_->OnWireError(why); }

absl::string_view ClientBridge::PendingOutput() {
  PumpInner();
  return absl::string_view(out_).substr(out_sent_);
}

void ClientBridge::ConsumeOutput(size_t n) {
  out_sent_ += n;
  if (out_sent_ < out_.size()) return;
  out_.clear();
  out_sent_ = 0;
}

// --- The inner session's calls -------------------------------------------

void ClientBridge::RequestFlush() {
  if (!outer_closed_) outer_->RequestFlush();
}

void ClientBridge::ShutdownWrite() {
  if (!outer_closed_) outer_->ShutdownWrite();
}

void ClientBridge::CloseWire(bool flush_first) {
  inner_closed_ = true;
  if (outer_closed_) return;
  outer_closed_ = true;
  outer_->CloseWire(flush_first);
}

}  // namespace h2rpc::transport::http1
