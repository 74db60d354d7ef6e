#include "transport/http2/client_session.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "transport/core/connect_protocol.h"
#include "transport/core/received_headers.h"
#include "transport/core/status_synthesis.h"

namespace h2rpc::transport::http2 {

// ---------------------------------------------------------------------------
// ClientStream

void ClientStream::Reset() {
  description = CallDescription();
  observer = nullptr;
  max_receive_message_size = 0;
  outgoing_.Clear();
  connect_prefix_dropped_ = false;
  ClearAttempt();
}

bool ClientStream::PrepareRetry() {
  if (!outgoing_.Rewind()) return false;
  ClearAttempt();
  return true;
}

void ClientStream::ClearAttempt() {
  connection_ = nullptr;
  stream_id_ = -1;
  prev_ = next_ = nullptr;
  block_.Release();
  window_.Reset();
  header_blocks_ = 0;
  header_bytes_ = 0;
  http_check_.Reset();
  receive_encoding_ = CompressionAlgorithm::kIdentity;
  delivered_ = DeliveredMessageBytes();
  initial_metadata_.Clear();
  trailing_metadata_.Clear();
  status_known_ = false;
  status_ = Status();
  connect_http_status_ = 0;
  if (connect_body_.capacity() > OutgoingData::kRetainedCapacity) {
    std::string().swap(connect_body_);
  } else {
    connect_body_.clear();
  }
  connect_headers_.Clear();
}

void ClientStream::ReleaseMessage(size_t held_bytes) {
  window_.Release(held_bytes);
  if (connection_ != nullptr && stream_id_ >= 0) {
    connection_->ReturnCredit(stream_id_, &window_);
  }
}

void ClientStream::ResumeSend() {
  if (connection_ != nullptr) connection_->ResumeSend(this);
}

void ClientStream::Cancel(const Status& status) {
  if (connection_ != nullptr) connection_->CancelCall(this, status);
}

void ClientStream::OnTimer() {
  if (connection_ == nullptr) return;
  connection_->CancelCall(
      this, Status(StatusCode::kDeadlineExceeded, "deadline exceeded"));
}

// ---------------------------------------------------------------------------
// ClientSession

ClientSession::ClientSession(io::Scheduler* scheduler, std::string peer,
                             const ConnectionOptions& options,
                             Listener* listener)
    : Session(scheduler, std::move(peer), options), listener_(listener) {
  InitSession(/*server=*/false);
}

ClientSession::~ClientSession() = default;

void ClientSession::Link(ClientStream* stream) {
  stream->prev_ = nullptr;
  stream->next_ = streams_;
  if (streams_ != nullptr) {
    streams_->prev_ = stream;
  } else {
    SetIdle(false);
  }
  streams_ = stream;
}

void ClientSession::Unlink(ClientStream* stream) {
  if (stream->prev_ != nullptr) stream->prev_->next_ = stream->next_;
  if (stream->next_ != nullptr) stream->next_->prev_ = stream->prev_;
  if (streams_ == stream) streams_ = stream->next_;
  stream->prev_ = stream->next_ = nullptr;
  if (streams_ == nullptr) SetIdle(true);
}

void ClientSession::CountStreamEnd(ClientStream* stream, bool call_ok) {
  if (!stream->counted_) return;
  stream->counted_ = false;
  ConnectionStats& stats = *this->stats();
  (stream->eos_received_ ? stats.streams_succeeded : stats.streams_failed)
      .Add(1);
  if (stats.calls != nullptr) {
    (call_ok ? stats.calls->succeeded : stats.calls->failed).Add(1);
  }
}

// Hands the outcome to the observer; the stream is free after this.
void ClientSession::Deliver(ClientStream* stream) {
  CountStreamEnd(stream, stream->status_.ok());
  scheduler()->Cancel(stream);
  ReturnAllCredit(&stream->window_);
  ReleaseDeframer(&stream->deframer_);
  // The request may be read (a retry) or cleared off the loop thread next.
  stream->outgoing_.TakeBackLent();
  stream->connection_ = nullptr;
  stream->block_.Release();
  stream->observer->OnClose(stream->status_, stream->trailing_metadata_);
}

void ClientSession::StartCall(ClientStream* stream) {
  stream->connection_ = this;
  stream->status_known_ = true;  // until the stream exists
  if (!accepting_calls()) {
    stream->status_ = Status(
        StatusCode::kUnavailable,
        absl::StrCat("connection to ", peer(), " is not accepting calls"));
    Deliver(stream);
    return;
  }
  stream->description.accept_encodings = accept_encoding();
  if (stream->description.connect_unary && !stream->connect_prefix_dropped_) {
    // Connect's unary form sends the message alone.
    std::string& body = stream->outgoing_.buffer();
    if (body.size() < kMessagePrefixSize ||
        body.size() !=
            kMessagePrefixSize + DecodeMessagePrefix(body.data()).length) {
      stream->status_ = Status(StatusCode::kInternal,
                               "a Connect unary call sends one message");
      Deliver(stream);
      return;
    }
    if (DecodeMessagePrefix(body.data()).flag == 0) {
      stream->description.send_encoding = absl::string_view();
    }
    body.erase(0, kMessagePrefixSize);
    stream->connect_prefix_dropped_ = true;
  }
  stream->status_ = BuildRequestHeaders(stream->description, scheduler()->Now(),
                                        &stream->headers_);
  if (!stream->status_.ok()) {
    Deliver(stream);
    return;
  }
  // The peer's limit, once its SETTINGS arrived (unlimited before): a
  // request over it would only be refused, after the bytes went out.
  const uint32_t peer_limit = nghttp2_session_get_remote_settings(
      session(), NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE);
  size_t header_bytes = 0;
  for (const nghttp2_nv& field : stream->headers_.fields()) {
    // HPACK's size: 32 bytes of overhead per field (RFC 7541 section 4.1).
    header_bytes += field.namelen + field.valuelen + 32;
  }
  if (header_bytes > peer_limit) {
    stream->status_ = Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("the request's header list is ", header_bytes,
                     " bytes, over the limit of ", peer_limit, " that ", peer(),
                     " advertises (SETTINGS_MAX_HEADER_LIST_SIZE): send less "
                     "metadata"));
    Deliver(stream);
    return;
  }
  stream->deframer_.Reset(
      StreamDeframerOptions(*stream, CompressionAlgorithm::kIdentity));
  const Nghttp2DataProvider provider = DataProvider(&stream->outgoing_);
  const int32_t id = SubmitRequest(session(), stream->headers_.fields().data(),
                                   stream->headers_.size(), &provider, stream);
  if (id < 0) {
    stream->status_ = Status(StatusCode::kUnavailable,
                             absl::StrCat("cannot open a stream to ", peer(),
                                          ": ", nghttp2_strerror(id)));
    Deliver(stream);
    return;
  }
  stream->stream_id_ = id;
  stream->status_known_ = false;
  stream->eos_received_ = false;
  if (ConnectionStats* stats = this->stats()) {
    stream->counted_ = true;
    const io::MonotonicTime now = scheduler()->Now();
    stats->streams_started.Add(1);
    stats->last_local_stream_created.Set(now);
    if (stats->calls != nullptr) {
      stats->calls->started.Add(1);
      stats->calls->last_started.Set(now);
    }
  }
  Link(stream);
  if (!stream->description.deadline.is_infinite_future()) {
    scheduler()->Schedule(stream, stream->description.deadline);
  }
  RequestFlush();
}

void ClientSession::ResumeSend(ClientStream* stream) {
  if (stream->connection_ != this || stream->status_known_) return;
  if (stream->outgoing_.deferred) {
    stream->outgoing_.deferred = false;
    const int rv = nghttp2_session_resume_data(session(), stream->stream_id_);
    if (rv != 0) {
      FailStream(stream, SubmitFailure(rv, "nghttp2_session_resume_data"));
      return;
    }
  }
  RequestFlush();
}

void ClientSession::CancelCall(ClientStream* stream, const Status& status) {
  if (stream->connection_ != this || stream->status_known_) return;
  FailStream(stream, status);
}

void ClientSession::FailStream(ClientStream* stream, Status status,
                               uint32_t error_code) {
  if (stream->status_known_) return;
  stream->status_known_ = true;
  stream->status_ = std::move(status);
  scheduler()->Cancel(stream);
  ResetStream(stream->stream_id_, error_code);
  // A request still waiting for a stream slot may wait for ever: deliver
  // now. nghttp2 still holds its queued HEADERS, with `stream` as user data,
  // and reports that stream closed when it takes the HEADERS off the queue
  // (once a slot frees up); by then the call may be over and its pooled
  // objects serving another call. So nghttp2 forgets `stream` first (it
  // accepts that for a queued request); if it could not, that report
  // delivers the call instead.
  if (nghttp2_session_find_stream(session(), stream->stream_id_) == nullptr &&
      nghttp2_session_set_stream_user_data(session(), stream->stream_id_,
                                           nullptr) == 0) {
    Unlink(stream);
    Deliver(stream);
  }
}

size_t ClientSession::ReceiveLimit(const ClientStream& stream) const {
  const size_t connection_limit = options().max_receive_message_size;
  return stream.max_receive_message_size == 0
             ? connection_limit
             : std::min(connection_limit, stream.max_receive_message_size);
}

MessageDeframer::Options ClientSession::StreamDeframerOptions(
    const ClientStream& stream, CompressionAlgorithm encoding) {
  MessageDeframer::Options options = DeframerOptions(encoding);
  options.max_message_size = ReceiveLimit(stream);
  return options;
}

ClientStream* ClientSession::StreamFor(int32_t stream_id) {
  return static_cast<ClientStream*>(
      nghttp2_session_get_stream_user_data(session(), stream_id));
}

void ClientSession::FailMalformed(ClientStream* stream) {
  FailStream(stream,
             Status(StatusCode::kInternal,
                    absl::StrCat("malformed response from ", peer(), ": ",
                                 stream->http_check_.error())),
             NGHTTP2_PROTOCOL_ERROR);
}

int ClientSession::OnBeginHeaders(const nghttp2_frame* frame) {
  ClientStream* stream = StreamFor(frame->hd.stream_id);
  header_stream_id_ = frame->hd.stream_id;
  header_stream_ = stream;
  if (stream != nullptr) {
    stream->http_check_.BeginHeaders();
    stream->block_.Release();
    stream->header_bytes_ = 0;
  }
  return 0;
}

int ClientSession::OnHeader(const nghttp2_frame* frame, nghttp2_rcbuf* name,
                            nghttp2_rcbuf* value) {
  ClientStream* stream = frame->hd.stream_id == header_stream_id_
                             ? header_stream_
                             : StreamFor(frame->hd.stream_id);
  if (stream == nullptr || stream->status_known_) return 0;
  const absl::string_view name_view = RcbufView(name);
  const absl::string_view value_view = RcbufView(value);
  const HttpMessageCheck::Verdict verdict =
      stream->http_check_.OnField(name_view, value_view);
  if (verdict != HttpMessageCheck::Verdict::kKeep) {
    if (verdict == HttpMessageCheck::Verdict::kMalformed) FailMalformed(stream);
    return 0;
  }
  // HPACK counts 32 bytes of overhead per field (RFC 7541 section 4.1). A
  // small frame can reference a large table entry many times, so the decoded
  // size is what is bounded.
  stream->header_bytes_ += name_view.size() + value_view.size() + 32;
  if (stream->header_bytes_ > options().max_header_list_size) {
    stream->block_.Release();
    FailStream(stream, Status(StatusCode::kResourceExhausted,
                              absl::StrCat("received header list of more than ",
                                           options().max_header_list_size,
                                           " bytes (max_header_list_size)")));
    return 0;
  }
  stream->block_.Add(name, value);
  return 0;
}

int ClientSession::OnFrameRecv(const nghttp2_frame* frame) {
  ClientStream* stream = StreamFor(frame->hd.stream_id);
  if (stream == nullptr || stream->status_known_) return 0;
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
      if (!stream->http_check_.EndHeaders(end_stream)) {
        FailMalformed(stream);
        break;
      }
      OnResponseHeaderBlock(stream, end_stream);
      break;
    case NGHTTP2_DATA:
      if (end_stream && !stream->http_check_.OnEndStream()) {
        FailMalformed(stream);
        break;
      }
      if (end_stream && stream->description.connect_unary) {
        EndConnectResponse(stream);
      } else if (end_stream) {
        // The body ended without trailers.
        Status status = stream->deframer_.Finish();
        if (status.ok()) {
          status = Status(StatusCode::kInternal,
                          "server ended the stream without trailers");
        }
        FailStream(stream, std::move(status));
      }
      break;
    default:
      break;
  }
  return 0;
}

void ClientSession::OnConnectResponseHeaders(ClientStream* stream,
                                             bool end_stream) {
  if (stream->header_blocks_++ > 0) {
    stream->block_.Release();
    FailStream(stream, Status(StatusCode::kInternal,
                              "a Connect unary response with trailers"));
    return;
  }
  ReservedHeaderValues reserved;
  Status status = ParseReceivedHeaders(stream->block_.fields(), &reserved,
                                       &stream->connect_headers_);
  if (status.ok() &&
      !(reserved.status.has_value() &&
        absl::SimpleAtoi(*reserved.status, &stream->connect_http_status_))) {
    status = Status(StatusCode::kInternal, "a response without :status");
  }
  if (status.ok() && stream->connect_http_status_ == 200 &&
      !AcceptsEncoding(reserved.content_encoding, &stream->receive_encoding_)) {
    status = Status(StatusCode::kInternal,
                    absl::StrCat("the response's content-encoding '",
                                 *reserved.content_encoding,
                                 "' is not one this client accepts (",
                                 accept_encoding(), ")"));
  }
  stream->block_.Release();
  if (!status.ok()) {
    FailStream(stream, std::move(status));
    return;
  }
  SplitConnectResponseMetadata(stream->connect_headers_,
                               &stream->initial_metadata_,
                               &stream->trailing_metadata_);
  if (stream->connect_http_status_ == 200) {
    stream->observer->OnInitialMetadata(stream->initial_metadata_);
  }
  if (end_stream) EndConnectResponse(stream);
}

void ClientSession::EndConnectResponse(ClientStream* stream) {
  Status status;
  if (stream->connect_http_status_ == 200) {
    DeliverToObserver<ClientStream::Observer> listener(
        stream->observer, stream->receive_encoding_, ReceiveLimit(*stream),
        &stream->delivered_);
    status = listener.OnMessage(
        stream->connect_body_,
        stream->receive_encoding_ != CompressionAlgorithm::kIdentity);
    CountReceived(1);
  } else {
    status = ConnectErrorFromBody(stream->connect_http_status_,
                                  stream->connect_body_);
  }
  EndResponse(stream, std::move(status));
}

void ClientSession::OnResponseHeaderBlock(ClientStream* stream,
                                          bool end_stream) {
  if (stream->description.connect_unary) {
    OnConnectResponseHeaders(stream, end_stream);
    return;
  }
  const bool first_block = stream->header_blocks_++ == 0;
  ReservedHeaderValues reserved;
  Metadata& metadata = first_block && !end_stream ? stream->initial_metadata_
                                                  : stream->trailing_metadata_;
  // Everything that reads the header values (views into the block) happens
  // before the block is released.
  Status status =
      ParseReceivedHeaders(stream->block_.fields(), &reserved, &metadata);
  if (status.ok() && first_block) {
    status = StatusFromResponseHeaders(reserved.status, reserved.content_type);
  }
  if (status.ok() && !first_block && !end_stream) {
    status = Status(StatusCode::kInternal, "trailers did not end the stream");
  }
  if (status.ok() && !end_stream &&
      !AcceptsEncoding(reserved.grpc_encoding, &stream->receive_encoding_)) {
    status = Status(
        StatusCode::kInternal,
        absl::StrCat("the response's grpc-encoding '", *reserved.grpc_encoding,
                     "' is not one this client accepts (", accept_encoding(),
                     ")"));
  }
  Status call_status;  // from the trailers, or a Trailers-Only response
  if (status.ok() && end_stream) {
    call_status = stream->deframer_.Finish();
    if (call_status.ok()) {
      call_status =
          StatusFromTrailers(reserved.grpc_status, reserved.grpc_message,
                             reserved.grpc_status_details_bin);
    }
  }
  stream->block_.Release();
  if (!status.ok()) {
    FailStream(stream, std::move(status));
    return;
  }
  if (!end_stream) {
    // Nothing was fed yet: the deframer now takes compressed messages if an
    // encoding was given (and refuses them otherwise).
    stream->deframer_.Reset(
        StreamDeframerOptions(*stream, stream->receive_encoding_));
    stream->observer->OnInitialMetadata(stream->initial_metadata_);
    return;
  }
  EndResponse(stream, std::move(call_status));
}

void ClientSession::EndResponse(ClientStream* stream, Status status) {
  stream->status_known_ = true;
  stream->eos_received_ = true;
  stream->status_ = std::move(status);
  scheduler()->Cancel(stream);
  // If our side is still sending, stop: the call is over (gRPC servers may
  // finish before reading the whole request).
  if (nghttp2_session_get_stream_local_close(session(), stream->stream_id_) ==
      0) {
    ResetStream(stream->stream_id_, NGHTTP2_NO_ERROR);
  }
}

int ClientSession::OnDataChunk(int32_t stream_id, const uint8_t* data,
                               size_t size) {
  ClientStream* stream = StreamFor(stream_id);
  if (stream == nullptr) {
    ReturnUntracked(stream_id, size);
    return 0;
  }
  stream->window_.Received(size);
  if (!stream->status_known_ && !stream->http_check_.OnData(size)) {
    FailMalformed(stream);
  }
  if (stream->status_known_) {
    // Ignored: returned at once below.
  } else if (stream->header_blocks_ == 0) {
    FailStream(stream, Status(StatusCode::kInternal,
                              "DATA received before response headers"));
  } else if (stream->description.connect_unary) {
    // Gathered whole: the response message, or an error's JSON.
    if (size > ReceiveLimit(*stream) - stream->connect_body_.size()) {
      FailStream(stream,
                 Status(StatusCode::kResourceExhausted,
                        absl::StrCat("response body of more than ",
                                     ReceiveLimit(*stream),
                                     " bytes (max_receive_message_size)")));
    } else {
      stream->connect_body_.append(reinterpret_cast<const char*>(data), size);
    }
  } else {
    DeliverToObserver<ClientStream::Observer> listener(
        stream->observer, stream->receive_encoding_, ReceiveLimit(*stream),
        &stream->delivered_);
    const uint64_t delivered = stream->deframer_.messages_delivered();
    Status status = stream->deframer_.Feed(
        absl::string_view(reinterpret_cast<const char*>(data), size), listener);
    NoteMessageInput(stream->deframer_);
    CountReceived(stream->deframer_.messages_delivered() - delivered);
    if (!status.ok()) FailStream(stream, std::move(status));
  }
  ReturnCredit(stream_id, &stream->window_);
  return 0;
}

int ClientSession::OnStreamClose(int32_t stream_id, uint32_t error_code) {
  if (stream_id == header_stream_id_) header_stream_ = nullptr;
  ClientStream* stream = StreamFor(stream_id);
  if (stream == nullptr) return 0;
  // Cannot fail: nghttp2 knows the stream it reports closed.
  Submitted(nghttp2_session_set_stream_user_data(session(), stream_id, nullptr),
            "nghttp2_session_set_stream_user_data");
  if (!stream->status_known_ && error_code == NGHTTP2_REFUSED_STREAM &&
      stream->header_blocks_ == 0 && stream->outgoing_.Rewind()) {
    // Nothing was processed: offer the call a transparent retry.
    CountStreamEnd(stream, /*call_ok=*/false);
    Unlink(stream);
    scheduler()->Cancel(stream);
    ReleaseDeframer(&stream->deframer_);
    stream->outgoing_.TakeBackLent();
    stream->connection_ = nullptr;
    stream->stream_id_ = -1;
    stream->block_.Release();
    if (stream->observer->OnRefused()) return 0;
    stream->status_known_ = true;
    stream->status_ = StatusFromRstStream(error_code, false);
    Deliver(stream);
    return 0;
  }
  if (!stream->status_known_) {
    stream->status_known_ = true;
    const bool deadline_passed =
        !stream->description.deadline.is_infinite_future() &&
        scheduler()->Now() >= stream->description.deadline;
    stream->status_ =
        error_code == NGHTTP2_NO_ERROR
            ? Status(StatusCode::kInternal, "stream closed without a status")
            : StatusFromRstStream(error_code, deadline_passed);
  }
  Unlink(stream);
  Deliver(stream);
  return 0;
}

void ClientSession::OnGoAway(int32_t last_stream_id, uint32_t error_code,
                             absl::string_view debug_data) {
  listener_->OnGoAwayReceived(this, error_code, debug_data);
  if (draining_) return;
  draining_ = true;
  listener_->OnConnectionDraining(this);
}

void ClientSession::OnPeerHandshakeDone() {
  listener_->OnConnectionReady(this);
}

void ClientSession::OnClosed(const Status& why) {
  while (streams_ != nullptr) {
    ClientStream* stream = streams_;
    Unlink(stream);
    if (!stream->status_known_) {
      stream->status_known_ = true;
      stream->status_ = why;
    }
    Deliver(stream);
  }
  listener_->OnConnectionClosed(this, why);
}

}  // namespace h2rpc::transport::http2
