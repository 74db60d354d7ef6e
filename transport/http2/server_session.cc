#include "transport/http2/server_session.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/connect_protocol.h"
#include "transport/core/grpc_web.h"
#include "transport/core/received_headers.h"
#include "transport/core/response_setup.h"
#include "transport/core/status_synthesis.h"
#include "transport/core/timeout.h"

namespace h2rpc::transport::http2 {
// ---------------------------------------------------------------------------
// ServerStream

const std::string& ServerStream::peer() const {
  static const std::string* const kGone = new std::string("(closed)");
  return connection_ != nullptr ? connection_->peer() : *kGone;
}

const std::shared_ptr<const PeerIdentity>& ServerStream::peer_identity() const {
  static const std::shared_ptr<const PeerIdentity> kNone;
  return connection_ != nullptr ? connection_->peer_identity() : kNone;
}

uint64_t ServerStream::connection_id() const {
  return connection_ != nullptr ? connection_->id() : 0;
}

void ServerStream::Reset() {
  stream_id_ = -1;
  refs_ = 0;
  open_in_nghttp2_ = false;
  observer = nullptr;
  method_.clear();
  authority_.clear();
  client_metadata_.Clear();
  deadline_ = io::MonotonicTime::InfiniteFuture();
  client_accepted_encodings_ = CompressionAlgorithmSet();
  receive_encoding_ = send_encoding_ = CompressionAlgorithm::kIdentity;
  cancelled_.store(false, std::memory_order_relaxed);
  end_code_ = StatusCode::kOk;
  delivered_ = DeliveredMessageBytes();
  headers_sent_ = finished_ = half_closed_ = cancel_on_close_ = false;
  protocol_ = Protocol::kGrpc;
  connect_json_ = false;
  converted_end_ = 0;
  web_text_ = false;
  web_text_decoder_.Reset();
  if (web_text_decoded_.capacity() > OutgoingData::kRetainedCapacity) {
    std::string().swap(web_text_decoded_);
  }
  if (connection_ != nullptr) ReleaseConnectBody();
  cors_origin_.clear();
  header_bytes_ = 0;
  http_check_.Reset();
  malformed_ = false;
  initial_metadata_.Clear();
  trailing_metadata_.Clear();
  block_.Release();
  window_.Reset();
  if (connection_ != nullptr) ReleaseHeldCharge(held_charged_);
  outgoing_.Clear();
}

size_t ServerStream::HoldMessage() {
  const size_t bytes = window_.HoldMessage(
      ReceivedBytesFor(kMessagePrefixSize + delivered_.last) -
      kMessagePrefixSize);
  if (connection_ != nullptr) {
    connection_->memory_share_.ForceReserve(bytes);
    held_charged_ += bytes;
  }
  return bytes;
}

void ServerStream::ReleaseHeldCharge(size_t bytes) {
  bytes = std::min(bytes, held_charged_);
  if (bytes == 0) return;
  held_charged_ -= bytes;
  connection_->memory_share_.Release(bytes);
}

void ServerStream::ReleaseMessage(size_t held_bytes) {
  window_.Release(held_bytes);
  if (connection_ != nullptr) ReleaseHeldCharge(held_bytes);
  if (connection_ != nullptr && open_in_nghttp2_) {
    connection_->ReturnCredit(stream_id_, &window_);
  }
}

void ServerStream::SendInitialMetadata(const Metadata* metadata) {
  if (headers_sent_ || finished_ || cancelled() || connection_ == nullptr) {
    return;
  }
  if (metadata != nullptr) initial_metadata_ = *metadata;
  // Connect unary: the headers go out with the rest of the response.
  if (protocol_ == Protocol::kConnectUnary) return;
  SubmitResponseHeaders();
  connection_->RequestFlush();
}

ResponseDescription ServerStream::DescribeResponse(
    const Metadata* metadata) const {
  ResponseDescription response;
  if (protocol_ == Protocol::kGrpcWeb) {
    response.content_type =
        web_text_ ? kGrpcWebTextProtoContentType : kGrpcWebProtoContentType;
  } else if (protocol_ == Protocol::kConnectStream) {
    response.content_type = connect_json_ ? kConnectStreamJsonContentType
                                          : kConnectStreamProtoContentType;
    response.send_encoding_name = "connect-content-encoding";
    response.accept_encodings_name = "connect-accept-encoding";
  }
  response.cors_origin = cors_origin_;
  if (!cors_origin_.empty()) {
    response.cors_exposed_headers =
        connection_->options().web.cors->exposed_headers();
  }
  response.send_encoding = CompressionAlgorithmName(send_encoding_);
  response.accept_encodings = connection_->accept_encoding();
  response.metadata = metadata;
  return response;
}

void ServerStream::SubmitResponseHeaders() {
  const Status built = BuildResponseHeaders(
      DescribeResponse(&initial_metadata_), &response_headers_);
  if (!built.ok()) {
    // Invalid initial metadata ends the call with INTERNAL naming the key.
    Finish(built, nullptr);
    cancel_on_close_ = true;
    return;
  }
  headers_sent_ = true;
  const Nghttp2DataProvider provider = Session::DataProvider(&outgoing_);
  const int rv = SubmitResponse(connection_->session(), stream_id_,
                                response_headers_.fields().data(),
                                response_headers_.size(), &provider);
  if (rv != 0) FailSubmit(rv, "nghttp2_submit_response");
}

void ServerStream::SubmitTrailersOnly(const Status& status,
                                      const Metadata* trailing) {
  headers_sent_ = true;
  Status built = BuildTrailersOnly(DescribeResponse(&initial_metadata_), status,
                                   trailing, &trailers_);
  if (!built.ok()) {
    // Invalid metadata: the call ends with INTERNAL naming the key instead.
    built = BuildTrailersOnly(DescribeResponse(nullptr), built, nullptr,
                              &trailers_);
  }
  const int rv = built.ok() ? SubmitResponse(connection_->session(), stream_id_,
                                             trailers_.fields().data(),
                                             trailers_.size(), nullptr)
                            : NGHTTP2_ERR_INVALID_ARGUMENT;
  if (rv != 0) FailSubmit(rv, "nghttp2_submit_response");
}

void ServerStream::ResumeData() {
  if (!outgoing_.deferred) return;
  outgoing_.deferred = false;
  const int rv =
      nghttp2_session_resume_data(connection_->session(), stream_id_);
  if (rv != 0) FailSubmit(rv, "nghttp2_session_resume_data");
}

void ServerStream::FailSubmit(int rv, const char* what) {
  finished_ = true;
  cancel_on_close_ = true;
  connection_->ResetStream(stream_id_, NGHTTP2_INTERNAL_ERROR);
  // The client sees INTERNAL from the reset; the reason is only here.
  std::fprintf(stderr, "h2rpc server: %s\n",
               connection_->SubmitFailure(rv, what).ToString().c_str());
}

void ServerStream::ResumeSend() {
  if (finished_ || cancelled() || connection_ == nullptr) return;
  if (protocol_ == Protocol::kConnectUnary) {
    // Everything waits for Finish; a second message can never be sent.
    const std::string& body = outgoing_.buffer();
    if (body.size() > kMessagePrefixSize &&
        body.size() >
            kMessagePrefixSize + DecodeMessagePrefix(body.data()).length) {
      Abort(Status(StatusCode::kUnimplemented,
                   absl::StrCat("method ", method_,
                                " sends more than one response message, "
                                "more than the Connect protocol's unary form "
                                "carries")));
    }
    return;
  }
  if (converts_outgoing()) {
    const Status converted = ConvertOutgoing();
    if (!converted.ok()) {
      Abort(converted);
      return;
    }
  }
  if (!headers_sent_) {
    SubmitResponseHeaders();
  } else {
    ResumeData();
  }
  connection_->RequestFlush();
}

void ServerStream::Finish(const Status& status, const Metadata* trailing) {
  if (finished_ || cancelled() || connection_ == nullptr) return;
  finished_ = true;
  end_code_ = status.code();
  scheduler_->Cancel(this);
  if (trailing != nullptr) {
    trailing_metadata_ = *trailing;
    trailing = &trailing_metadata_;
  }
  if (protocol_ == Protocol::kConnectUnary) {
    SubmitConnectUnaryResponse(status, trailing);
    connection_->RequestFlush();
    return;
  }
  if (protocol_ == Protocol::kConnectStream) {
    EndConnectStream(status, trailing);
    connection_->RequestFlush();
    return;
  }
  if (!headers_sent_) {
    // Nothing sent yet: one HEADERS frame carries everything.
    SubmitTrailersOnly(status, trailing);
  } else {
    const Status built = BuildTrailers(status, trailing, &trailers_);
    if (!built.ok()) {
      // Invalid trailing metadata: the call ends with INTERNAL naming the
      // key instead. Without metadata the trailers always build.
      if (!BuildTrailers(built, nullptr, &trailers_).ok()) {
        FailSubmit(NGHTTP2_ERR_INVALID_ARGUMENT, "BuildTrailers");
        return;
      }
    }
    if (protocol_ == Protocol::kGrpcWeb) {
      // In the body, whose end ends the stream (OnEndOfData sends no
      // trailers). Not charged to the quota, as HTTP/2 trailers are not.
      AppendGrpcWebTrailers(trailers_, &outgoing_.buffer());
      // Base64 for the text form; the growth is not charged either.
      if (web_text_) EncodeOutgoingBase64();
    }
    // The trailers go out from OnEndOfData once the body is drained.
    outgoing_.set_end_of_data();
    ResumeData();
  }
  connection_->RequestFlush();
}

std::vector<ConnectErrorDetail> ServerStream::ErrorDetailsOf(
    const Status& status) const {
  std::vector<ConnectErrorDetail> details;
  const ConnectCodec* codec = connection_->options().web.connect_codec.get();
  if (!status.details().empty() && codec != nullptr) {
    codec->ReadErrorDetails(status.details(), &details);
  }
  return details;
}

Status ServerStream::AppendConnectBody(absl::string_view bytes) {
  const size_t limit = connection_->options().max_receive_message_size;
  if (bytes.size() > limit - connect_body_.size()) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat("request body of more than ", limit,
                               " bytes exceeds the limit of ", limit,
                               " (max_receive_message_size)"));
  }
  if (!connection_->memory_share_.TryReserve(bytes.size())) {
    return connection_->memory_share_.Refusal(absl::StrCat(
        "a request body of ", connect_body_.size() + bytes.size(), " bytes"));
  }
  connect_body_charged_ += bytes.size();
  connect_body_.append(bytes.data(), bytes.size());
  return Status();
}

void ServerStream::ReleaseConnectBody() {
  if (connect_body_charged_ > 0) {
    connection_->memory_share_.Release(connect_body_charged_);
    connect_body_charged_ = 0;
  }
  if (connect_body_.capacity() > OutgoingData::kRetainedCapacity) {
    std::string().swap(connect_body_);
  } else {
    connect_body_.clear();
  }
}

void ServerStream::DeliverConnectRequest() {
  const absl::string_view body = connect_body_;
  delivered_.last = body.size();
  delivered_.total += body.size();
  const bool compressed = receive_encoding_ != CompressionAlgorithm::kIdentity;
  const size_t limit = connection_->options().max_receive_message_size;
  absl::string_view message = body;
  Status status;
  if (compressed) {
    status = compression::DecompressMessage(body, receive_encoding_, limit,
                                            &message);
  }
  std::string binary;
  if (status.ok() && connect_json_) {
    status = connection_->options().web.connect_codec->RequestFromJson(
        method_, message, &binary);
    message = binary;
  }
  if (status.ok()) status = observer->OnMessage(message, compressed);
  ReleaseConnectBody();
  if (!status.ok()) {
    Abort(status);
    return;
  }
  if (!finished_ && !cancelled() && observer != nullptr) {
    observer->OnHalfClose();
  }
}

Status ServerStream::TakeConnectResponseMessage(
    absl::string_view* content_encoding) {
  std::string& body = outgoing_.buffer();
  const MessagePrefix prefix = body.size() >= kMessagePrefixSize
                                   ? DecodeMessagePrefix(body.data())
                                   : MessagePrefix{0, 0};
  if (body.size() < kMessagePrefixSize ||
      body.size() != kMessagePrefixSize + prefix.length) {
    return Status(StatusCode::kUnimplemented,
                  absl::StrCat("method ", method_,
                               " ended without a response message, which "
                               "the Connect protocol's unary form needs"));
  }
  body.erase(0, kMessagePrefixSize);
  if (!connect_json_) {
    if (prefix.flag != 0) {
      *content_encoding = CompressionAlgorithmName(send_encoding_);
    }
    return Status();
  }
  // A JSON call's client accepts no compression, so none is used.
  if (prefix.flag != 0) {
    return Status(StatusCode::kInternal,
                  "a compressed response the call cannot convert to JSON");
  }
  std::string json;
  Status converted = connection_->options().web.connect_codec->ResponseToJson(
      method_, body, &json);
  if (!converted.ok()) return converted;
  body.assign(json);
  return outgoing_.ChargeAppended();
}

void ServerStream::SubmitConnectUnaryResponse(const Status& status,
                                              const Metadata* trailing,
                                              int http_status) {
  headers_sent_ = true;
  finished_ = true;
  ConnectResponseDescription response;
  response.content_type =
      connect_json_ ? kConnectJsonContentType : kConnectProtoContentType;
  response.accept_encodings = connection_->accept_encoding();
  response.cors_origin = cors_origin_;
  if (!cors_origin_.empty()) {
    response.cors_exposed_headers =
        connection_->options().web.cors->exposed_headers();
  }
  response.metadata = &initial_metadata_;
  response.trailing = trailing;
  Status outcome = status;
  if (outcome.ok()) {
    outcome = TakeConnectResponseMessage(&response.content_encoding);
  }
  Status built;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!outcome.ok()) {
      outgoing_.buffer().clear();
      // Not charged to the quota: a few bytes, as a gRPC error's trailers.
      AppendConnectErrorJson(outcome, ErrorDetailsOf(outcome),
                             &outgoing_.buffer());
      response.http_status =
          http_status != 0 ? http_status : ConnectHttpStatus(outcome.code());
      response.content_type = kConnectJsonContentType;
      response.content_encoding = absl::string_view();
    }
    end_code_ = outcome.code();
    built = BuildConnectUnaryHeaders(response, &response_headers_);
    if (built.ok()) break;
    // Invalid metadata: the call ends with INTERNAL naming the key instead.
    outcome = built;
    response.metadata = response.trailing = nullptr;
  }
  outgoing_.set_end_of_data();
  const Nghttp2DataProvider provider = Session::DataProvider(&outgoing_);
  const int rv = SubmitResponse(connection_->session(), stream_id_,
                                response_headers_.fields().data(),
                                response_headers_.size(), &provider);
  if (rv != 0) FailSubmit(rv, "nghttp2_submit_response");
}

void ServerStream::EncodeOutgoingBase64() {
  std::string& buffer = outgoing_.buffer();
  const size_t first =
      static_cast<size_t>(converted_end_ - outgoing_.dropped());
  // One padded base64 run per conversion.
  EncodeBase64PaddedInPlace(&buffer, first);
  converted_end_ = outgoing_.dropped() + buffer.size();
}

Status ServerStream::ConvertOutgoing() {
  std::string& buffer = outgoing_.buffer();
  const size_t first =
      static_cast<size_t>(converted_end_ - outgoing_.dropped());
  Status status;
  if (web_text_) {
    EncodeOutgoingBase64();
  } else {
    const ConnectCodec& codec = *connection_->options().web.connect_codec;
    std::string json;
    size_t at = first;
    while (status.ok() && at + kMessagePrefixSize <= buffer.size()) {
      const MessagePrefix prefix = DecodeMessagePrefix(buffer.data() + at);
      const size_t framed = kMessagePrefixSize + prefix.length;
      // A JSON stream's client accepts no compression, so none is used.
      if (prefix.flag != 0 || framed > buffer.size() - at) {
        status = Status(StatusCode::kInternal,
                        "a response message the stream cannot convert to "
                        "JSON");
        break;
      }
      json.clear();
      status = codec.ResponseToJson(
          method_,
          absl::string_view(buffer.data() + at + kMessagePrefixSize,
                            prefix.length),
          &json);
      if (!status.ok()) break;
      char json_prefix[kMessagePrefixSize];
      EncodeMessagePrefix(false, static_cast<uint32_t>(json.size()),
                          json_prefix);
      buffer.replace(at, framed, json_prefix, kMessagePrefixSize);
      buffer.insert(at + kMessagePrefixSize, json);
      at += kMessagePrefixSize + json.size();
    }
    converted_end_ = outgoing_.dropped() + at;
  }
  if (status.ok()) status = outgoing_.ChargeAppended();
  if (!status.ok()) {
    buffer.resize(first);
    converted_end_ = outgoing_.dropped() + first;
  }
  return status;
}

void ServerStream::EndConnectStream(const Status& status,
                                    const Metadata* trailing) {
  Status outcome = status;
  if (trailing != nullptr) {
    const Status valid = ValidateOutgoingMetadata(*trailing);
    if (!valid.ok()) {
      outcome = valid;
      trailing = nullptr;
    }
  }
  if (!headers_sent_) {
    const Status valid = ValidateOutgoingMetadata(initial_metadata_);
    if (!valid.ok()) {
      outcome = valid;
      initial_metadata_.Clear();
    }
  }
  if (connect_json_) {
    const Status converted = ConvertOutgoing();
    if (outcome.ok()) outcome = converted;
  }
  end_code_ = outcome.code();
  // Not charged to the quota, as HTTP/2 trailers are not.
  AppendConnectEndStream(outcome, ErrorDetailsOf(outcome), trailing,
                         &outgoing_.buffer());
  outgoing_.set_end_of_data();
  if (!headers_sent_) {
    SubmitResponseHeaders();
  } else {
    ResumeData();
  }
}

void ServerStream::Cancel() {
  if (cancelled()) return;
  if (!finished_) end_code_ = StatusCode::kCancelled;
  cancelled_.store(true, std::memory_order_release);
  scheduler_->Cancel(this);
  if (observer != nullptr) observer->OnCancel();
}

void ServerStream::ResetWithCancel() {
  if (finished_ || cancelled() || connection_ == nullptr) return;
  finished_ = true;
  end_code_ = StatusCode::kCancelled;
  connection_->ResetStream(stream_id_, NGHTTP2_CANCEL);
  Cancel();
}

void ServerStream::Abort(const Status& status) {
  Finish(status, nullptr);
  Cancel();
}

void ServerStream::OnTimer() {
  Abort(Status(StatusCode::kDeadlineExceeded, "deadline exceeded"));
}

void ServerStream::Release() {
  if (!finished_ && !cancelled()) {
    Finish(Status(StatusCode::kUnknown, "the handler ended without a status"),
           nullptr);
  }
  observer = nullptr;
  Unref();
}

void ServerStream::Unref() {
  if (--refs_ > 0) return;
  scheduler_->Cancel(this);
  if (connection_ != nullptr) {
    connection_->Recycle(this);
  } else {
    delete this;
  }
}

// ---------------------------------------------------------------------------
// ServerSession

namespace {

// Hands each deframed message of a JSON Connect stream to the observer,
// inflated and converted to binary, as DeliverToObserver does for binary
// messages.
class JsonToObserver final : public MessageDeframer::Listener {
 public:
  JsonToObserver(ServerStream::Observer* observer,
                 CompressionAlgorithm encoding, size_t max_message_size,
                 DeliveredMessageBytes* delivered, const ConnectCodec* codec,
                 absl::string_view method)
      : observer_(observer),
        encoding_(encoding),
        max_message_size_(max_message_size),
        delivered_(delivered),
        codec_(codec),
        method_(method) {}

  Status OnMessage(absl::string_view message, bool compressed) override {
    delivered_->last = message.size();
    delivered_->total += message.size();
    if (compressed) {
      Status status = compression::DecompressMessage(
          message, encoding_, max_message_size_, &message);
      if (!status.ok()) return status;
    }
    binary_.clear();
    Status status = codec_->RequestFromJson(method_, message, &binary_);
    if (!status.ok()) return status;
    return observer_->OnMessage(binary_, compressed);
  }

 private:
  ServerStream::Observer* const observer_;
  const CompressionAlgorithm encoding_;
  const size_t max_message_size_;
  DeliveredMessageBytes* const delivered_;
  const ConnectCodec* const codec_;
  const absl::string_view method_;
  std::string binary_;
};

uint64_t NextConnectionId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

ServerSession::ServerSession(io::Scheduler* scheduler, std::string peer,
                             const ConnectionOptions& options,
                             MemoryQuota* memory_quota,
                             ServerDispatcher* dispatcher, Listener* listener)
    : Session(scheduler, std::move(peer), options),
      id_(NextConnectionId()),
      dispatcher_(dispatcher),
      listener_(listener),
      memory_share_(memory_quota, options.memory_quota_share) {
  set_memory_share(&memory_share_);
  InitSession(/*server=*/true);
}

ServerSession::~ServerSession() {
  while (free_streams_ != nullptr) {
    ServerStream* stream = free_streams_;
    free_streams_ = stream->next_;
    delete stream;
  }
}

ServerStream* ServerSession::NewStream() {
  ServerStream* stream = free_streams_;
  if (stream != nullptr) {
    free_streams_ = stream->next_;
  } else {
    stream = new ServerStream(this, scheduler());
    stream->outgoing_.set_quota(&memory_share_);
  }
  stream->prev_ = nullptr;
  stream->next_ = streams_;
  if (streams_ != nullptr) streams_->prev_ = stream;
  streams_ = stream;
  return stream;
}

void ServerSession::Recycle(ServerStream* stream) {
  if (stream->prev_ != nullptr) stream->prev_->next_ = stream->next_;
  if (stream->next_ != nullptr) stream->next_->prev_ = stream->prev_;
  if (streams_ == stream) streams_ = stream->next_;
  stream->Reset();
  stream->prev_ = nullptr;
  stream->next_ = free_streams_;
  free_streams_ = stream;
}

ServerStream* ServerSession::StreamFor(int32_t stream_id) {
  return static_cast<ServerStream*>(
      nghttp2_session_get_stream_user_data(session(), stream_id));
}

int ServerSession::OnBeginHeaders(const nghttp2_frame* frame) {
  header_stream_id_ = frame->hd.stream_id;
  header_stream_ = nullptr;
  if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
    ServerStream* stream = header_stream_ = StreamFor(frame->hd.stream_id);
    if (stream != nullptr) {
      stream->http_check_.BeginHeaders();
      stream->block_.Release();
      stream->header_bytes_ = 0;
    }
    return 0;
  }
  if (open_streams_ >= options().max_concurrent_streams) {
    // Past the advertised limit: this stream alone is refused (the client
    // may retry it transparently); its frames are then ignored. A peer that
    // knows the limit (it acknowledged our SETTINGS) and keeps passing it
    // only makes the server work for nothing.
    if (settings_acked_ && ++refused_after_ack_ > kMaxRefusedStreams) {
      Fail(NGHTTP2_ENHANCE_YOUR_CALM,
           Status(StatusCode::kUnavailable,
                  absl::StrCat("too_many_refused_streams: ", peer(),
                               " opened more than ", kMaxRefusedStreams,
                               " streams past SETTINGS_MAX_CONCURRENT_STREAMS "
                               "(",
                               options().max_concurrent_streams,
                               ") after acknowledging it")),
           "too_many_refused_streams");
      // What follows in this read is not processed.
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (nghttp2_submit_rst_stream(session(), NGHTTP2_FLAG_NONE,
                                  frame->hd.stream_id,
                                  NGHTTP2_REFUSED_STREAM) != 0) {
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
  }
  ServerStream* stream = header_stream_ = NewStream();
  stream->stream_id_ = frame->hd.stream_id;
  stream->http_check_.BeginHeaders();
  stream->refs_ = 1;  // the transport's, until nghttp2 closes the stream
  stream->open_in_nghttp2_ = true;
  if (open_streams_++ == 0) SetIdle(false);
  if (ConnectionEventCounts* events = event_counts()) {
    events->streams_opened.Add(1);
  }
  if (ConnectionStats* stats = this->stats()) {
    const io::MonotonicTime now = scheduler()->Now();
    stats->streams_started.Add(1);
    stats->last_remote_stream_created.Set(now);
    if (stats->calls != nullptr) {
      stats->calls->started.Add(1);
      stats->calls->last_started.Set(now);
    }
  }
  // Cannot fail: nghttp2 has just opened the stream.
  Submitted(nghttp2_session_set_stream_user_data(session(), frame->hd.stream_id,
                                                 stream),
            "nghttp2_session_set_stream_user_data");
  return 0;
}

int ServerSession::OnHeader(const nghttp2_frame* frame, nghttp2_rcbuf* name,
                            nghttp2_rcbuf* value) {
  ServerStream* stream = frame->hd.stream_id == header_stream_id_
                             ? header_stream_
                             : StreamFor(frame->hd.stream_id);
  if (stream == nullptr || stream->malformed_) return 0;
  const absl::string_view name_view = RcbufView(name);
  const absl::string_view value_view = RcbufView(value);
  const HttpMessageCheck::Verdict verdict =
      stream->http_check_.OnField(name_view, value_view);
  if (verdict != HttpMessageCheck::Verdict::kKeep) {
    if (verdict == HttpMessageCheck::Verdict::kMalformed) Malformed(stream);
    return 0;
  }
  // HPACK counts 32 bytes of overhead per field (RFC 7541 section 4.1).
  stream->header_bytes_ += name_view.size() + value_view.size() + 32;
  if (stream->header_bytes_ > options().max_header_list_size) {
    // Counted on, but no longer kept: OnRequestHeaders answers
    // RESOURCE_EXHAUSTED (trailers are dropped).
    stream->block_.Release();
    return 0;
  }
  stream->block_.Add(name, value);
  return 0;
}

void ServerSession::Malformed(ServerStream* stream) {
  stream->malformed_ = true;
  stream->block_.Release();
  ResetStream(stream->stream_id_, NGHTTP2_PROTOCOL_ERROR);
}

bool ServerSession::TakeResetToken() {
  const io::MonotonicTime now = scheduler()->Now();
  if (reset_tokens_ == kResetBurst) {
    reset_tokens_added_ = now;
  } else {
    const absl::Duration per_token = absl::Seconds(1) / kResetsPerSecond;
    absl::Duration rest;
    const int64_t earned =
        absl::IDivDuration(now - reset_tokens_added_, per_token, &rest);
    if (earned >= kResetBurst - reset_tokens_) {
      reset_tokens_ = kResetBurst;
      reset_tokens_added_ = now;
    } else if (earned > 0) {
      reset_tokens_ += static_cast<int>(earned);
      reset_tokens_added_ = now - rest;
    }
  }
  if (reset_tokens_ == 0) return false;
  --reset_tokens_;
  return true;
}

int ServerSession::OnFrameRecv(const nghttp2_frame* frame) {
  if (frame->hd.type == NGHTTP2_SETTINGS &&
      (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
    settings_acked_ = true;
    return 0;
  }
  if (frame->hd.type == NGHTTP2_RST_STREAM && !TakeResetToken()) {
    Fail(NGHTTP2_ENHANCE_YOUR_CALM,
         Status(StatusCode::kUnavailable,
                absl::StrCat("too_many_resets: ", peer(), " sent more than ",
                             kResetBurst,
                             " RST_STREAM frames at once, or more than ",
                             kResetsPerSecond, " per second after")),
         "too_many_resets");
    // What follows in this read is not processed.
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  ServerStream* stream = StreamFor(frame->hd.stream_id);
  if (stream == nullptr || stream->malformed_) return 0;
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  bool follows_rules = true;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    follows_rules = stream->http_check_.EndHeaders(end_stream);
  } else if (frame->hd.type == NGHTTP2_DATA && end_stream) {
    follows_rules = stream->http_check_.OnEndStream();
  }
  if (!follows_rules) {
    Malformed(stream);
    return 0;
  }
  if (frame->hd.type == NGHTTP2_HEADERS &&
      frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    OnRequestHeaders(stream, end_stream);
    return 0;
  }
  if (frame->hd.type == NGHTTP2_HEADERS) stream->block_.Release();
  if (!end_stream || stream->half_closed_) return 0;
  stream->half_closed_ = true;
  if (stream->finished_ || stream->cancelled() || stream->observer == nullptr) {
    return 0;
  }
  if (stream->protocol_ == ServerStream::Protocol::kConnectUnary) {
    stream->DeliverConnectRequest();
    return 0;
  }
  Status status = stream->deframer_.Finish();
  if (status.ok() && stream->web_text_ &&
      !stream->web_text_decoder_.at_group_boundary()) {
    status = Status(StatusCode::kInternal,
                    "a gRPC-Web text request body ending inside a base64 "
                    "group");
  }
  if (!status.ok()) {
    stream->Abort(status);
    return 0;
  }
  stream->observer->OnHalfClose();
  return 0;
}

void ServerSession::Refuse(ServerStream* stream, const Status& status,
                           int http_status) {
  stream->finished_ = true;
  if (stream->protocol_ == ServerStream::Protocol::kConnectUnary) {
    // The error's own HTTP status and JSON body (or the one given).
    stream->SubmitConnectUnaryResponse(status, nullptr,
                                       http_status == 405 ? 405 : 0);
  } else if (stream->protocol_ == ServerStream::Protocol::kConnectStream) {
    // HTTP 200, the error at the end of the body.
    stream->EndConnectStream(status, nullptr);
  } else if (http_status == 200) {
    stream->SubmitTrailersOnly(status, nullptr);
  } else {
    stream->headers_sent_ = true;
    BuildHttpErrorResponse(http_status, status, &stream->trailers_);
    const int rv = SubmitResponse(session(), stream->stream_id_,
                                  stream->trailers_.fields().data(),
                                  stream->trailers_.size(), nullptr);
    if (rv != 0) stream->FailSubmit(rv, "nghttp2_submit_response");
  }
  RequestFlush();
}

namespace {

// Why a browser page of `origin` may not call (CORS).
Status OriginRefusal(absl::string_view origin) {
  return Status(StatusCode::kPermissionDenied,
                absl::StrCat("calls from origin '", origin,
                             "' are not allowed (ServerOptions::web.cors_"
                             "allowed_origins)"));
}

}  // namespace

void ServerSession::AnswerPreflight(ServerStream* stream,
                                    const CorsPolicy& cors,
                                    absl::optional<absl::string_view> origin) {
  if (!origin.has_value() || !cors.Allows(*origin)) {
    Refuse(stream,
           origin.has_value() ? OriginRefusal(*origin)
                              : Status(StatusCode::kPermissionDenied,
                                       "an OPTIONS request without an origin"),
           403);
    return;
  }
  stream->finished_ = true;
  stream->headers_sent_ = true;
  cors.BuildPreflightAnswer(
      *origin,
      stream->client_metadata_.Get("access-control-request-headers")
          .value_or(""),
      &stream->trailers_);
  const int rv = SubmitResponse(session(), stream->stream_id_,
                                stream->trailers_.fields().data(),
                                stream->trailers_.size(), nullptr);
  if (rv != 0) stream->FailSubmit(rv, "nghttp2_submit_response");
  RequestFlush();
}

bool ServerSession::ClassifyContentType(absl::string_view content_type,
                                        ServerStream* stream) const {
  if (IsGrpcContentType(content_type)) return true;
  const WebOptions& web = options().web;
  if (web.grpc_web && IsGrpcWebContentType(content_type)) {
    stream->protocol_ = ServerStream::Protocol::kGrpcWeb;
    return true;
  }
  if (web.grpc_web && IsGrpcWebTextContentType(content_type)) {
    stream->protocol_ = ServerStream::Protocol::kGrpcWeb;
    stream->web_text_ = true;
    return true;
  }
  bool json = false;
  if (web.connect && IsConnectUnaryContentType(content_type, &json) &&
      (!json || web.connect_codec != nullptr)) {
    stream->protocol_ = ServerStream::Protocol::kConnectUnary;
    stream->connect_json_ = json;
    return true;
  }
  if (web.connect && IsConnectStreamContentType(content_type, &json) &&
      (!json || web.connect_codec != nullptr)) {
    stream->protocol_ = ServerStream::Protocol::kConnectStream;
    stream->connect_json_ = json;
    return true;
  }
  return false;
}

Status ServerSession::ReadConnectGet(ServerStream* stream, int* http_status) {
  ConnectGetRequest request;
  Status status = ParseConnectGetRequest(stream->method_, &request);
  if (!status.ok()) return status;
  stream->method_.resize(request.method.size());  // the query goes
  if (!options().web.connect_codec->HasNoSideEffects(stream->method_)) {
    *http_status = 405;
    return Status(StatusCode::kUnimplemented,
                  absl::StrCat("method ", stream->method_,
                               " has side effects (no idempotency_level "
                               "NO_SIDE_EFFECTS): Connect's GET form may not "
                               "call it"));
  }
  stream->connect_json_ = request.json;
  if (!request.compression.empty() &&
      !AcceptsEncoding(request.compression, &stream->receive_encoding_)) {
    return Status(
        StatusCode::kUnimplemented,
        absl::StrCat("compression '", request.compression,
                     "' is not supported; supported: ", accept_encoding()));
  }
  return stream->AppendConnectBody(request.message);
}

Status ServerSession::ReadConnectRequest(
    const ReservedHeaderValues& reserved, ServerStream* stream,
    absl::optional<absl::Duration>* timeout) const {
  if (reserved.connect_protocol_version.has_value() &&
      *reserved.connect_protocol_version != "1") {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("connect-protocol-version '",
                               *reserved.connect_protocol_version,
                               "' is not supported; supported: 1"));
  }
  if (reserved.connect_timeout_ms.has_value() &&
      !(*timeout = DecodeConnectTimeout(*reserved.connect_timeout_ms))) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("malformed connect-timeout-ms '",
                               *reserved.connect_timeout_ms, "'"));
  }
  const bool unary = stream->protocol_ == ServerStream::Protocol::kConnectUnary;
  const absl::optional<absl::string_view> encoding =
      unary ? reserved.content_encoding : reserved.connect_content_encoding;
  if (!AcceptsEncoding(encoding, &stream->receive_encoding_)) {
    return Status(
        StatusCode::kUnimplemented,
        absl::StrCat(
            unary ? "content-encoding '" : "connect-content-encoding '",
            *encoding, "' is not supported; supported: ", accept_encoding()));
  }
  return Status();
}

void ServerSession::OnRequestHeaders(ServerStream* stream, bool end_stream) {
  stream->half_closed_ = end_stream;
  if (stream->header_bytes_ > options().max_header_list_size) {
    Refuse(stream,
           Status(StatusCode::kResourceExhausted,
                  absl::StrCat("request header list of ", stream->header_bytes_,
                               " bytes exceeds the limit of ",
                               options().max_header_list_size,
                               " (max_header_list_size)")),
           200);
    return;
  }
  ReservedHeaderValues reserved;
  const Status parsed = ParseReceivedHeaders(stream->block_.fields(), &reserved,
                                             &stream->client_metadata_);
  // Copy what outlives the header block before releasing it.
  if (reserved.path.has_value()) {
    stream->method_.assign(reserved.path->data(), reserved.path->size());
  }
  if (reserved.authority.has_value()) {
    stream->authority_.assign(reserved.authority->data(),
                              reserved.authority->size());
  }
  // Decide everything that needs the header values before releasing the
  // block; error messages (cold path) are built here too.
  Status refusal;
  int refusal_http_status = 200;
  absl::optional<absl::Duration> timeout;
  // Connect's GET form: the request in the :path's query.
  const bool connect_get = reserved.method == absl::string_view("GET") &&
                           options().web.connect &&
                           options().web.connect_codec != nullptr;
  if (connect_get) stream->protocol_ = ServerStream::Protocol::kConnectUnary;
  const bool served_content_type =
      connect_get || (reserved.content_type.has_value() &&
                      ClassifyContentType(*reserved.content_type, stream));
  const CorsPolicy* const cors = options().web.cors.get();
  const absl::optional<absl::string_view> origin =
      cors == nullptr ? absl::nullopt : stream->client_metadata_.Get("origin");
  if (cors != nullptr && reserved.method == absl::string_view("OPTIONS")) {
    stream->block_.Release();
    AnswerPreflight(stream, *cors, origin);
    return;
  }
  const bool origin_refused = origin.has_value() && !cors->Allows(*origin);
  if (reserved.method != absl::string_view("POST") && !connect_get) {
    refusal = Status(StatusCode::kInternal, "gRPC requests must use POST");
    refusal_http_status = 405;
  } else if (!served_content_type) {
    refusal = Status(StatusCode::kInternal,
                     absl::StrCat("invalid gRPC request content-type '",
                                  reserved.content_type.value_or(""), "'"));
    refusal_http_status = 415;
  } else if (origin_refused) {
    refusal = OriginRefusal(*origin);
    refusal_http_status = 403;
  } else if (!parsed.ok()) {
    refusal = parsed;
  } else if (stream->protocol_ == ServerStream::Protocol::kConnectUnary ||
             stream->protocol_ == ServerStream::Protocol::kConnectStream) {
    refusal = ReadConnectRequest(reserved, stream, &timeout);
    if (refusal.ok() && connect_get) {
      refusal = ReadConnectGet(stream, &refusal_http_status);
    }
  } else if (reserved.grpc_timeout.has_value() &&
             !(timeout = DecodeGrpcTimeout(*reserved.grpc_timeout))) {
    refusal = Status(
        StatusCode::kInternal,
        absl::StrCat("malformed grpc-timeout '", *reserved.grpc_timeout, "'"));
  } else if (!AcceptsEncoding(reserved.grpc_encoding,
                              &stream->receive_encoding_)) {
    refusal = Status(
        StatusCode::kUnimplemented,
        absl::StrCat("grpc-encoding '", *reserved.grpc_encoding,
                     "' is not supported; supported: ", accept_encoding()));
  }
  if (!reserved.grpc_previous_rpc_attempts.has_value() ||
      !absl::SimpleAtoi(*reserved.grpc_previous_rpc_attempts,
                        &stream->previous_rpc_attempts_) ||
      stream->previous_rpc_attempts_ < 0) {
    stream->previous_rpc_attempts_ = 0;
  }
  if (stream->protocol_ == ServerStream::Protocol::kConnectUnary ||
      stream->protocol_ == ServerStream::Protocol::kConnectStream) {
    const absl::optional<absl::string_view> accepted =
        stream->protocol_ == ServerStream::Protocol::kConnectUnary
            ? reserved.accept_encoding
            : reserved.connect_accept_encoding;
    // A JSON response goes out uncompressed.
    if (accepted.has_value() && !stream->connect_json_) {
      stream->client_accepted_encodings_ = ParseAcceptEncoding(*accepted);
    }
  } else if (reserved.grpc_accept_encoding.has_value()) {
    stream->client_accepted_encodings_ =
        ParseAcceptEncoding(*reserved.grpc_accept_encoding);
  }
  stream->client_accepted_encodings_.Add(CompressionAlgorithm::kIdentity);
  stream->block_.Release();
  // The responses to an allowed origin carry the CORS fields, refusals
  // in a Trailers-Only response included.
  if (origin.has_value() && !origin_refused) {
    stream->cors_origin_.assign(origin->data(), origin->size());
  }
  if (!refusal.ok()) {
    Refuse(stream, refusal, refusal_http_status);
    return;
  }
  if (timeout.has_value()) {
    stream->deadline_ = scheduler()->Now() + *timeout;
    scheduler()->Schedule(stream, stream->deadline_);
  }
  stream->deframer_.Reset(DeframerOptions(stream->receive_encoding_));

  ++stream->refs_;  // the rpc layer's, until Release()
  const Status dispatched = dispatcher_->Dispatch(stream);
  if (!dispatched.ok()) {
    --stream->refs_;
    scheduler()->Cancel(stream);
    Refuse(stream, dispatched, 200);
    return;
  }
  if (end_stream && !stream->finished_ && !stream->cancelled() &&
      stream->observer != nullptr) {
    if (stream->protocol_ == ServerStream::Protocol::kConnectUnary) {
      stream->DeliverConnectRequest();
    } else {
      stream->observer->OnHalfClose();
    }
  }
}

Status ServerSession::FeedDeframer(ServerStream* stream,
                                   absl::string_view chunk) {
  if (stream->connect_json_) {
    JsonToObserver listener(stream->observer, stream->receive_encoding_,
                            options().max_receive_message_size,
                            &stream->delivered_,
                            options().web.connect_codec.get(), stream->method_);
    return stream->deframer_.Feed(chunk, listener);
  }
  DeliverToObserver<ServerStream::Observer> listener(
      stream->observer, stream->receive_encoding_,
      options().max_receive_message_size, &stream->delivered_);
  return stream->deframer_.Feed(chunk, listener);
}

int ServerSession::OnDataChunk(int32_t stream_id, const uint8_t* data,
                               size_t size) {
  ServerStream* stream = StreamFor(stream_id);
  if (stream == nullptr) {
    ReturnUntracked(stream_id, size);
    return 0;
  }
  if (!stream->malformed_ && !stream->http_check_.OnData(size)) {
    Malformed(stream);
  }
  stream->window_.Received(size);
  if (stream->protocol_ == ServerStream::Protocol::kConnectUnary) {
    if (!stream->ignoring_data()) {
      const Status status = stream->AppendConnectBody(
          absl::string_view(reinterpret_cast<const char*>(data), size));
      if (!status.ok()) stream->Abort(status);
    }
  } else if (!stream->ignoring_data()) {
    MessageDeframer& deframer = stream->deframer_;
    const uint64_t delivered = deframer.messages_delivered();
    absl::string_view chunk(reinterpret_cast<const char*>(data), size);
    Status status;
    if (stream->web_text_) {
      stream->web_text_decoded_.clear();
      if (!stream->web_text_decoder_.Decode(chunk,
                                            &stream->web_text_decoded_)) {
        status = Status(StatusCode::kInternal,
                        "a gRPC-Web text request body that is not base64");
      }
      chunk = stream->web_text_decoded_;
    }
    if (status.ok()) status = FeedDeframer(stream, chunk);
    NoteMessageInput(deframer);
    CountReceived(deframer.messages_delivered() - delivered);
    if (deframer.messages_delivered() != delivered) memory_refusals_ = 0;
    if (!status.ok()) {
      stream->Abort(status);
    } else if (deframer.waiting_for_grant()) {
      // Waiting messages must leave most of the connection window to the
      // granted ones, or those could never complete and free memory.
      const size_t waiting_bytes = ungranted_bytes_ -
                                   stream->window_.ungranted() +
                                   deframer.ungranted_bytes();
      if (waiting_bytes > options().connection_window / 4) {
        stream->Abort(WaitingLimitStatus(stream, waiting_bytes));
        if (++memory_refusals_ > kMaxMemoryRefusals) {
          Fail(NGHTTP2_ENHANCE_YOUR_CALM,
               Status(StatusCode::kUnavailable,
                      absl::StrCat("too_many_memory_refusals: more than ",
                                   kMaxMemoryRefusals, " calls from ", peer(),
                                   " failed for this connection's memory "
                                   "while none of its messages arrived")),
               "too_many_memory_refusals");
          // What follows in this read is not processed.
          return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
      }
    }
  }
  SettleReceive(stream);
  return 0;
}

void ServerSession::SettleReceive(ServerStream* stream) {
  MessageDeframer& deframer = stream->deframer_;
  if (stream->ignoring_data() && !deframer.at_message_boundary()) {
    // Nothing more is delivered: the partial message (and its grant) goes.
    ReleaseDeframer(&deframer);
  }
  if (deframer.waiting_for_grant() && !stream->waiting_for_memory_) {
    AddMemoryWaiter(stream);
    // Memory released between the refusal and the registration as a waiter
    // woke nobody: ask once more.
    deframer.RetryGrant();
  }
  if (!deframer.waiting_for_grant() && stream->waiting_for_memory_) {
    RemoveMemoryWaiter(stream);
  }
  const size_t ungranted = stream->ReceivedBytesFor(deframer.ungranted_bytes());
  ungranted_bytes_ = ungranted_bytes_ - stream->window_.ungranted() + ungranted;
  stream->window_.set_ungranted(ungranted);
  ReturnCredit(stream->stream_id_, &stream->window_);
}

void ServerSession::ForgetReceive(ServerStream* stream) {
  if (stream->waiting_for_memory_) RemoveMemoryWaiter(stream);
  ungranted_bytes_ -= stream->window_.ungranted();
  stream->window_.set_ungranted(0);
}

void ServerSession::AddMemoryWaiter(ServerStream* stream) {
  stream->waiting_for_memory_ = true;
  stream->waiting_next_ = nullptr;
  stream->waiting_prev_ = waiting_tail_;
  if (waiting_tail_ != nullptr) {
    waiting_tail_->waiting_next_ = stream;
  } else {
    waiting_head_ = stream;
    memory_share_.SetWaiting(true);
  }
  waiting_tail_ = stream;
}

void ServerSession::RemoveMemoryWaiter(ServerStream* stream) {
  stream->waiting_for_memory_ = false;
  if (stream->waiting_prev_ != nullptr) {
    stream->waiting_prev_->waiting_next_ = stream->waiting_next_;
  } else {
    waiting_head_ = stream->waiting_next_;
  }
  if (stream->waiting_next_ != nullptr) {
    stream->waiting_next_->waiting_prev_ = stream->waiting_prev_;
  } else {
    waiting_tail_ = stream->waiting_prev_;
  }
  stream->waiting_prev_ = stream->waiting_next_ = nullptr;
  if (waiting_head_ == nullptr) memory_share_.SetWaiting(false);
}

void ServerSession::RetryMemoryWaiters() {
  // Oldest first; any that fits is granted, so a large message does not
  // hold back smaller ones while memory is free for them.
  ServerStream* stream = waiting_head_;
  while (stream != nullptr) {
    ServerStream* const next = stream->waiting_next_;
    if (stream->ignoring_data() || stream->deframer_.RetryGrant()) {
      SettleReceive(stream);
    }
    stream = next;
  }
}

Status ServerSession::WaitingLimitStatus(const ServerStream* stream,
                                         size_t waiting_bytes) const {
  return memory_share_.Refusal(absl::StrCat(
      "a received message of ", stream->deframer_.current_length(),
      " bytes, and the messages waiting for memory on this connection would "
      "hold ",
      waiting_bytes, " bytes, more than ", options().connection_window / 4,
      " (a quarter of connection_window)"));
}

bool ServerSession::OnEndOfData(int32_t stream_id) {
  ServerStream* stream = StreamFor(stream_id);
  if (stream == nullptr || !stream->finished_ ||
      stream->protocol_ != ServerStream::Protocol::kGrpc) {
    return false;
  }
  const int rv = nghttp2_submit_trailer(session(), stream_id,
                                        stream->trailers_.fields().data(),
                                        stream->trailers_.size());
  if (rv != 0) {
    // The DATA frame ends the stream instead: the client fails the call
    // with INTERNAL (no trailers).
    std::fprintf(
        stderr, "h2rpc server: %s\n",
        SubmitFailure(rv, "nghttp2_submit_trailer").ToString().c_str());
    return false;
  }
  return true;
}

void ServerSession::OnFrameSent(const nghttp2_frame* frame) {
  // After our END_STREAM, a client still sending is told to stop
  // (RST_STREAM NO_ERROR, as PROTOCOL-HTTP2 asks).
  if (frame->hd.type == NGHTTP2_HEADERS &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
      nghttp2_session_get_stream_remote_close(session(), frame->hd.stream_id) ==
          0) {
    ResetStream(frame->hd.stream_id, NGHTTP2_NO_ERROR);
  }
}

void ServerSession::CountStreamEnd(const ServerStream& stream,
                                   bool sent_end_stream) {
  if (ConnectionEventCounts* events = event_counts()) {
    events->streams_closed.Add(1);
  }
  ConnectionStats* stats = this->stats();
  if (stats == nullptr) return;
  (sent_end_stream ? stats->streams_succeeded : stats->streams_failed).Add(1);
  if (stats->calls != nullptr) {
    (sent_end_stream && stream.end_code() == StatusCode::kOk
         ? stats->calls->succeeded
         : stats->calls->failed)
        .Add(1);
  }
}

int ServerSession::OnStreamClose(int32_t stream_id, uint32_t error_code) {
  if (stream_id == header_stream_id_) header_stream_ = nullptr;
  ServerStream* stream = StreamFor(stream_id);
  if (stream == nullptr) return 0;
  // Cannot fail: nghttp2 knows the stream it reports closed.
  Submitted(nghttp2_session_set_stream_user_data(session(), stream_id, nullptr),
            "nghttp2_session_set_stream_user_data");
  stream->open_in_nghttp2_ = false;
  if (--open_streams_ == 0) SetIdle(true);
  CountStreamEnd(*stream, stream->finished_ && error_code == NGHTTP2_NO_ERROR);
  ReturnAllCredit(&stream->window_);
  ForgetReceive(stream);
  ReleaseDeframer(&stream->deframer_);
  stream->ReleaseConnectBody();
  if (!stream->finished_ || stream->cancel_on_close_) stream->Cancel();
  stream->Unref();
  return 0;
}

void ServerSession::OnClosed(const Status& why) {
  // Detach every live stream: those the rpc layer still holds outlive us.
  while (streams_ != nullptr) {
    ServerStream* stream = streams_;
    streams_ = stream->next_;
    if (streams_ != nullptr) streams_->prev_ = nullptr;
    stream->prev_ = stream->next_ = nullptr;
    stream->ReleaseHeldCharge(stream->held_charged_);
    stream->ReleaseConnectBody();
    stream->connection_ = nullptr;
    ForgetReceive(stream);
    ReleaseDeframer(&stream->deframer_);
    // Its bytes no longer count against the connection's share.
    stream->outgoing_.set_quota(nullptr);
    if (stream->open_in_nghttp2_) {
      stream->open_in_nghttp2_ = false;
      --open_streams_;
      CountStreamEnd(*stream, /*sent_end_stream=*/false);
      if (!stream->finished_ || stream->cancel_on_close_) stream->Cancel();
      stream->Unref();
    }
  }
  listener_->OnConnectionClosed(this);
}

}  // namespace h2rpc::transport::http2
