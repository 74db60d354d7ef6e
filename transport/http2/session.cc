#include "transport/http2/session.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc::transport::http2 {
namespace {

Session* Self(void* user) { return static_cast<Session*>(user); }

// nghttp2's view of a server's MAX_CONCURRENT_STREAMS (see Start()).
constexpr uint32_t kNghttp2StreamLimit = 0xFFFFFFFFu;

// The GOAWAY error code for a fatal nghttp2 receive error for which nghttp2
// queues no GOAWAY of its own (for the others it has queued one already, and
// Fail() keeps it).
uint32_t GoAwayCodeFor(int error) {
  switch (error) {
    case NGHTTP2_ERR_FLOODED:
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
      return NGHTTP2_ENHANCE_YOUR_CALM;
    case NGHTTP2_ERR_HEADER_COMP:
      return NGHTTP2_COMPRESSION_ERROR;
    case NGHTTP2_ERR_NOMEM:
    case NGHTTP2_ERR_CALLBACK_FAILURE:
      return NGHTTP2_INTERNAL_ERROR;
    default:
      return NGHTTP2_PROTOCOL_ERROR;
  }
}

// The opaque data of our PINGs, told apart when their ACKs come back.
constexpr uint8_t kKeepalivePing[8] = {'k', 'e', 'e', 'p', 'a', 'l', 'i', 'v'};
constexpr uint8_t kGoAwayPing[8] = {'g', 'o', 'a', 'w', 'a', 'y', 'p', 'g'};
constexpr uint8_t kBdpPing[8] = {'b', 'd', 'p', 'p', 'r', 'o', 'b', 'e'};

// The last stream id of a shutdown notice (nghttp2_submit_shutdown_notice).
constexpr int32_t kShutdownNoticeStreamId = (1u << 31) - 1;

// Whether `data`, a whole frame nghttp2 is writing, is a GOAWAY with the
// shutdown notice's last stream id.
bool IsShutdownNotice(const uint8_t* data, size_t length) {
  if (length < 17 || data[3] != NGHTTP2_GOAWAY) return false;
  const uint32_t last_stream_id =
      (uint32_t{data[9]} << 24 | uint32_t{data[10]} << 16 |
       uint32_t{data[11]} << 8 | uint32_t{data[12]}) &
      0x7fffffffu;
  return last_stream_id == static_cast<uint32_t>(kShutdownNoticeStreamId);
}

}  // namespace

static_assert(
    OutputQueue::MaxAdoptedBytesFor(kDefaultWriteBufferLimit) ==
    OutputQueue::kDefaultMaxAdoptedBytes);

Session::Session(io::Scheduler* scheduler, std::string peer,
                 const ConnectionOptions& options)
    : scheduler_(scheduler),
      peer_(std::move(peer)),
      options_(options),
      keepalive_(scheduler, options.keepalive.time, options.keepalive.timeout,
                 options.keepalive.permit_without_calls, this),
      ping_policy_(options.keepalive.min_time,
                   options.keepalive.permit_pings_without_calls,
                   options.keepalive.max_ping_strikes) {
  CompressionAlgorithmSet accepted = options.accepted_compression;
  accepted.Add(CompressionAlgorithm::kIdentity);
  accept_encoding_ = FormatCompressionAlgorithmSet(accepted);
}

bool Session::AcceptsEncoding(absl::optional<absl::string_view> name,
                              CompressionAlgorithm* algorithm) const {
  if (!name.has_value()) {
    *algorithm = CompressionAlgorithm::kIdentity;
    return true;
  }
  const absl::optional<CompressionAlgorithm> parsed =
      ParseCompressionAlgorithm(*name);
  if (!parsed.has_value() ||
      (*parsed != CompressionAlgorithm::kIdentity &&
       !options_.accepted_compression.Contains(*parsed))) {
    return false;
  }
  *algorithm = *parsed;
  return true;
}

Session::~Session() {
  scheduler_->Cancel(&deadline_timer_);
  StopConnectionTimers();
  if (session_ != nullptr) nghttp2_session_del(session_);
}

void Session::InitSession(bool server) {
  server_ = server;
  // A server's stream windows stay within a quarter of connection_window:
  // its memory bounds count connection_window, which does not grow, and a
  // stream waiting for a memory grant alone never passes the waiting limit
  // (ConnectionOptions::memory_quota_share).
  uint32_t max_window = 0;
  if (options_.bdp_probe) {
    max_window = server ? std::min(options_.max_receive_window,
                                   options_.connection_window / 4)
                        : options_.max_receive_window;
  }
  bdp_ = BdpEstimator(options_.initial_stream_window, max_window);
  nghttp2_session_callbacks* cbs;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return;  // Start() fails
  SetSendCallback(cbs, &Session::SendCallback);
  nghttp2_session_callbacks_set_send_data_callback(cbs,
                                                   &Session::SendDataCallback);
  nghttp2_session_callbacks_set_on_begin_headers_callback(
      cbs, &Session::BeginHeadersCallback);
  nghttp2_session_callbacks_set_on_header_callback2(cbs,
                                                    &Session::HeaderCallback);
  nghttp2_session_callbacks_set_on_frame_recv_callback(
      cbs, &Session::FrameRecvCallback);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
      cbs, &Session::DataChunkCallback);
  nghttp2_session_callbacks_set_on_stream_close_callback(
      cbs, &Session::StreamCloseCallback);
  nghttp2_session_callbacks_set_on_frame_send_callback(
      cbs, &Session::FrameSendCallback);

  nghttp2_option* option;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(cbs);
    return;  // Start() fails
  }
  // Keep memory bounded: no closed-stream retention for priorities.
  nghttp2_option_set_no_closed_streams(option, 1);
  nghttp2_option_set_max_send_header_block_length(option, 64 << 10);
  // Flow control is backpressure: received bytes go back to the peer's
  // windows only once the application has taken them (ReturnCredit).
  nghttp2_option_set_no_auto_window_update(option, 1);
  // The sessions check HTTP's rules themselves (HttpMessageCheck), on each
  // field as it is decoded, instead of nghttp2 checking it first.
  nghttp2_option_set_no_http_messaging(option, 1);
  if (server) {
    // ServerSession limits incoming RST_STREAM frames itself and says so in
    // its GOAWAY (ENHANCE_YOUR_CALM, "too_many_resets"); nghttp2's own limit
    // would answer GOAWAY(INTERNAL_ERROR) without debug data first.
    DisableStreamResetRateLimit(option);
  }
  // On failure session_ stays null and Start() fails.
  const int rv = server ? nghttp2_session_server_new3(&session_, cbs, this,
                                                      option, memory_.mem())
                        : nghttp2_session_client_new3(&session_, cbs, this,
                                                      option, memory_.mem());
  if (rv != 0) session_ = nullptr;
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(cbs);
}

Nghttp2DataProvider Session::DataProvider(OutgoingData* data) {
  Nghttp2DataProvider provider;
  provider.source.ptr = data;
  provider.read_callback = &Session::ReadDataCallback;
  return provider;
}

MessageDeframer::Options Session::DeframerOptions(
    CompressionAlgorithm encoding) {
  MessageDeframer::Options deframer_options;
  deframer_options.compression_available =
      encoding != CompressionAlgorithm::kIdentity;
  deframer_options.max_message_size = options_.max_receive_message_size;
  deframer_options.quota = memory_share_;
  deframer_options.buffer_cache = &LargeBufferCache::Global();
  return deframer_options;
}

void Session::ReturnCredit(int32_t stream_id, ReceiveWindow* window) {
  const size_t credit = window->TakeCredit();
  if (credit == 0) return;
  unreturned_bytes_ -= credit;
  if (closed_ ||
      !Submitted(nghttp2_session_consume(session_, stream_id, credit),
                 "nghttp2_session_consume")) {
    return;
  }
  // A stream window is never below initial_stream_window, so a stream that
  // returned less than a quarter of it in all has nothing to announce (a
  // unary call's few bytes cost no lookup).
  if (window->returned() >= options_.initial_stream_window / 4) {
    static_cast<void>(AnnounceReturned(stream_id, window->unreturned()));
  }
  AnnounceConnectionReturned(credit);
  RequestFlush();
}

void Session::ReturnAllCredit(ReceiveWindow* window) {
  const size_t credit = window->CloseAndTakeAll();
  if (credit == 0) return;
  unreturned_bytes_ -= credit;
  if (closed_ ||
      !Submitted(nghttp2_session_consume_connection(session_, credit),
                 "nghttp2_session_consume_connection")) {
    return;
  }
  AnnounceConnectionReturned(credit);
  RequestFlush();
}

void Session::ReturnUntracked(int32_t stream_id, size_t bytes) {
  unreturned_bytes_ -= bytes;
  if (closed_ || !Submitted(nghttp2_session_consume(session_, stream_id, bytes),
                            "nghttp2_session_consume")) {
    return;
  }
  AnnounceConnectionReturned(bytes);
  RequestFlush();
}

void Session::AnnounceConnectionReturned(size_t credit) {
  // The connection window is never below connection_window: below a
  // quarter of it nothing can be due.
  returned_bound_ += credit;
  if (returned_bound_ < options_.connection_window / 4) return;
  returned_bound_ = AnnounceReturned(0, unreturned_bytes_);
}

size_t Session::AnnounceReturned(int32_t stream_id, size_t unreturned) {
  // Received and not announced: what we hold plus what we returned (and
  // padding, which nghttp2 returns itself).
  const int32_t unannounced =
      stream_id == 0 ? nghttp2_session_get_effective_recv_data_length(session_)
                     : nghttp2_session_get_stream_effective_recv_data_length(
                           session_, stream_id);
  const int32_t window =
      stream_id == 0 ? nghttp2_session_get_effective_local_window_size(session_)
                     : nghttp2_session_get_stream_effective_local_window_size(
                           session_, stream_id);
  if (unannounced <= 0 || window <= 0 ||
      static_cast<size_t>(unannounced) <= unreturned) {
    return 0;
  }
  const size_t returned = static_cast<size_t>(unannounced) - unreturned;
  if (returned < static_cast<size_t>(window) / 4) return returned;
  // At most what was received unannounced: the window does not grow.
  static_cast<void>(Submitted(
      nghttp2_submit_window_update(session_, NGHTTP2_FLAG_NONE, stream_id,
                                   static_cast<int32_t>(returned)),
      "nghttp2_submit_window_update"));
  return 0;
}

void Session::Start(io::Wire* wire) {
  wire_ = wire;
  if (events_ != nullptr) events_->opened.Add(1);
  if (session_ == nullptr) {
    Close(Status(
        StatusCode::kInternal,
        absl::StrCat("cannot start HTTP/2 with ", peer_, ": out of memory")));
    return;
  }
  // A server enforces MAX_CONCURRENT_STREAMS itself, refusing the excess
  // stream alone with RST_STREAM(REFUSED_STREAM) (see ServerSession);
  // nghttp2 would treat it as a connection error. So nghttp2 is told there
  // is no limit, and the frame on the wire is patched to advertise the real
  // one (PatchAdvertisedSettings).
  settings_patch_pending_ = server_;
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
       server_ ? kNghttp2StreamLimit : options_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options_.initial_stream_window},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, options_.max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options_.max_header_list_size},
  };
  int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                                   sizeof(settings) / sizeof(settings[0]));
  if (rv == 0) {
    rv = nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                               options_.connection_window);
  }
  if (rv != 0) {
    Close(Status(StatusCode::kInternal,
                 absl::StrCat("cannot start HTTP/2 with ", peer_,
                              ": SETTINGS refused: ", nghttp2_strerror(rv))));
    return;
  }
  const io::MonotonicTime now = scheduler_->Now();
  if (options_.handshake_timeout != absl::InfiniteDuration()) {
    scheduler_->Schedule(&deadline_timer_, now + options_.handshake_timeout);
  }
  keepalive_.Start();
  const absl::Duration max_age = options_.keepalive.max_connection_age;
  if (server_ && max_age != absl::InfiniteDuration()) {
    scheduler_->Schedule(&age_timer_, now + JitteredAge(max_age, JitterBits()));
  }
  RequestFlush();
}

void Session::OnHandshakeDone() {
  if (handshake_done_) return;
  handshake_done_ = true;
  scheduler_->Cancel(&deadline_timer_);
  SetIdle(idle_);
  OnPeerHandshakeDone();
}

void Session::SetIdle(bool idle) {
  idle_ = idle;
  keepalive_.SetActive(!idle);
  if (!idle) return;
  idle_since_ = scheduler_->Now();
  // The trim timer is lazy too: set when the connection becomes idle with
  // more cached than it keeps, it checks idle_since_ when it fires.
  if (memory_.cached_bytes() > kIdleCachedBytes && !trim_timer_.scheduled() &&
      !closed()) {
    scheduler_->Schedule(&trim_timer_, idle_since_ + kIdleTrimDelay);
  }
  // A server's idle timer is lazy: it is set when the connection becomes
  // idle with no timer pending, and when it fires it checks idle_since_.
  if (!server_ || !handshake_done_ || closed() || going_away_ ||
      options_.keepalive.max_connection_idle == absl::InfiniteDuration()) {
    return;
  }
  if (!idle_timer_.scheduled()) {
    scheduler_->Schedule(&idle_timer_,
                         idle_since_ + options_.keepalive.max_connection_idle);
  }
}

void Session::OnIdleTimer() {
  // Busy: the timer is set again when the connection next becomes idle.
  if (!idle_ || closed() || going_away_) return;
  const io::MonotonicTime due =
      idle_since_ + options_.keepalive.max_connection_idle;
  if (scheduler_->Now() < due) {
    scheduler_->Schedule(&idle_timer_, due);
    return;
  }
  GracefulShutdown();
}

void Session::OnTrimTimer() {
  // Busy: the timer is set again when the connection next becomes idle.
  if (!idle_ || closed()) return;
  const io::MonotonicTime due = idle_since_ + kIdleTrimDelay;
  if (scheduler_->Now() < due) {
    scheduler_->Schedule(&trim_timer_, due);
    return;
  }
  memory_.Trim(kIdleCachedBytes);
}

void Session::OnAgeTimer() {
  if (closed()) return;
  const KeepaliveOptions& keepalive = options_.keepalive;
  if (!age_reached_) {
    age_reached_ = true;
    GracefulShutdown();
    if (!closed() &&
        keepalive.max_connection_age_grace != absl::InfiniteDuration()) {
      scheduler_->Schedule(
          &age_timer_, scheduler_->Now() + keepalive.max_connection_age_grace);
    }
    return;
  }
  // The grace is over: what is queued gets one attempt to be written, and
  // the calls still open are cancelled now.
  CloseWith(
      Status(StatusCode::kUnavailable,
             absl::StrCat(
                 "connection to ", peer_,
                 " closed: its calls were still open "
                 "max_connection_age_grace (",
                 absl::FormatDuration(keepalive.max_connection_age_grace),
                 ") after it reached max_connection_age (",
                 absl::FormatDuration(keepalive.max_connection_age), ")")),
      /*flush_first=*/true);
}

bool Session::SendKeepalivePing() {
  if (closed()) return false;
  if (!Submitted(
          nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, kKeepalivePing),
          "nghttp2_submit_ping")) {
    return false;
  }
  if (stats_ != nullptr) stats_->keepalives_sent.Add(1);
  RequestFlush();
  return true;
}

void Session::OnKeepaliveTimeout() {
  if (events_ != nullptr) events_->keepalive_timeouts.Add(1);
  if (!closed()) close_cause_ = CloseCause::kKeepaliveTimeout;
  Close(Status(StatusCode::kUnavailable,
               absl::StrCat("keepalive watchdog timeout: nothing from ", peer_,
                            " within keepalive_timeout (",
                            absl::FormatDuration(keepalive_.timeout()),
                            ") of a keepalive PING")));
}

int Session::OnPing(const nghttp2_frame* frame) {
  if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
    keepalive_.OnPingAck(scheduler_->Now());
    if (std::memcmp(frame->ping.opaque_data, kBdpPing, sizeof(kBdpPing)) == 0 &&
        bdp_.OnPingAck(scheduler_->Now())) {
      ApplyReceiveWindow();
    }
    if (drain_ == Drain::kPingOut &&
        std::memcmp(frame->ping.opaque_data, kGoAwayPing,
                    sizeof(kGoAwayPing)) == 0) {
      SendFinalGoAway();
    }
    return 0;
  }
  if (!server_ || !ping_policy_.OnPingReceived(scheduler_->Now(), !idle_)) {
    return 0;
  }
  const KeepaliveOptions& keepalive = options_.keepalive;
  Fail(NGHTTP2_ENHANCE_YOUR_CALM,
       Status(StatusCode::kUnavailable,
              absl::StrCat(
                  "too_many_pings: ", peer_, " sent ", ping_policy_.strikes(),
                  " PINGs sooner than ",
                  idle_ && !keepalive.permit_pings_without_calls
                      ? absl::StrCat(absl::FormatDuration(
                                         PingAbusePolicy::kIdlePingInterval),
                                     " (no call open)")
                      : absl::StrCat("keepalive_min_time (",
                                     absl::FormatDuration(keepalive.min_time),
                                     ")"),
                  " after the previous one, more than max_ping_strikes (",
                  keepalive.max_ping_strikes, ")")),
       "too_many_pings");
  // What follows the PING in this read is not processed.
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

void Session::StopConnectionTimers() {
  scheduler_->Cancel(&idle_timer_);
  scheduler_->Cancel(&trim_timer_);
  scheduler_->Cancel(&age_timer_);
  scheduler_->Cancel(&goaway_ping_timer_);
  keepalive_.Stop();
}

void Session::OnDeadline() {
  if (closed_) return;
  if (lingering_) {
    Close(linger_status_);
  } else if (!handshake_done_) {
    const Status why(
        StatusCode::kUnavailable,
        absl::StrCat("HTTP/2 handshake with ", peer_,
                     " did not complete within ",
                     absl::FormatDuration(options_.handshake_timeout),
                     " (handshake_timeout)"));
    if (wire_ != nullptr && !wire_->CarriesOutput()) {
      // The wire's own handshake (TLS) is not done: no GOAWAY can reach the
      // peer, so there is nothing to linger for; the wire ends its own way.
      Close(why);
      return;
    }
    Fail(NGHTTP2_NO_ERROR, why);
  }
}

void Session::PatchAdvertisedSettings(uint8_t* frame, size_t length) {
  // 9-byte frame header, then 6-byte entries: 16-bit id, 32-bit value.
  for (size_t i = 9; i + 6 <= length; i += 6) {
    const uint16_t id = static_cast<uint16_t>(frame[i] << 8 | frame[i + 1]);
    if (id != NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) continue;
    const uint32_t value = options_.max_concurrent_streams;
    frame[i + 2] = static_cast<uint8_t>(value >> 24);
    frame[i + 3] = static_cast<uint8_t>(value >> 16);
    frame[i + 4] = static_cast<uint8_t>(value >> 8);
    frame[i + 5] = static_cast<uint8_t>(value);
  }
}

void Session::Close(const Status& why) { CloseWith(why, false); }

void Session::CloseWith(const Status& why, bool flush_first) {
  if (closed_ || closing_) return;
  if (io::Wire* const wire = std::exchange(wire_, nullptr)) {
    // The wire may take PendingOutput() first, which may try to close
    // again (ignored).
    closing_ = true;
    wire->CloseWire(flush_first);
    closing_ = false;
  }
  closed_ = true;
  output_.Clear();
  lingering_ = false;
  scheduler_->Cancel(&deadline_timer_);
  StopConnectionTimers();
  if (events_ != nullptr) events_->closed.Add(1);
  OnClosed(why);
}

void Session::Fail(uint32_t error_code, const Status& why,
                   absl::string_view debug_data) {
  if (closed()) return;
  lingering_ = true;
  linger_status_ = why;
  StopConnectionTimers();
  const int32_t last_stream_id =
      nghttp2_session_get_last_proc_stream_id(session_);
  // Without debug data, a no-op when nghttp2 has queued its own GOAWAY for
  // the error.
  const int rv =
      debug_data.empty()
          ? nghttp2_session_terminate_session2(session_, last_stream_id,
                                               error_code)
          : nghttp2_submit_goaway(
                session_, NGHTTP2_FLAG_NONE, last_stream_id, error_code,
                reinterpret_cast<const uint8_t*>(debug_data.data()),
                debug_data.size());
  if (rv != 0) {
    // No GOAWAY to deliver.
    Close(why);
    return;
  }
  if (!server_) {
    // A client fails its calls at once: one attempt to deliver the GOAWAY.
    CloseWith(why, /*flush_first=*/true);
    return;
  }
  scheduler_->Schedule(&deadline_timer_,
                       scheduler_->Now() + options_.close_linger);
  RequestFlush();
}

void Session::OnLingerFlushed() {
  if (write_side_shut_) return;
  write_side_shut_ = true;
  if (peer_shut_) {
    Close(linger_status_);
    return;
  }
  // FIN after the GOAWAY; what the peer still sends is dropped (Feed)
  // until it closes too.
  if (wire_ != nullptr) wire_->ShutdownWrite();
}

void Session::GracefulShutdown() {
  if (closed() || going_away_) return;
  going_away_ = true;
  scheduler_->Cancel(&idle_timer_);
  if (!server_) {
    if (!Submitted(nghttp2_submit_goaway(
                       session_, NGHTTP2_FLAG_NONE,
                       nghttp2_session_get_last_proc_stream_id(session_),
                       NGHTTP2_NO_ERROR, nullptr, 0),
                   "nghttp2_submit_goaway")) {
      return;
    }
    RequestFlush();
    return;
  }
  // GOAWAY(2^31-1) now; the PING goes out once the GOAWAY is written
  // (FrameSendCallback), so its ACK proves the client has seen the GOAWAY.
  if (!Submitted(nghttp2_submit_shutdown_notice(session_),
                 "nghttp2_submit_shutdown_notice")) {
    return;
  }
  drain_ = Drain::kNoticeQueued;
  scheduler_->Schedule(
      &goaway_ping_timer_,
      scheduler_->Now() +
          std::min(kGoAwayPingTimeout, options_.keepalive.timeout));
  RequestFlush();
}

void Session::SendFinalGoAway() {
  if (drain_ == Drain::kFinal || closed()) return;
  drain_ = Drain::kFinal;
  scheduler_->Cancel(&goaway_ping_timer_);
  if (!Submitted(nghttp2_submit_goaway(
                     session_, NGHTTP2_FLAG_NONE,
                     nghttp2_session_get_last_proc_stream_id(session_),
                     NGHTTP2_NO_ERROR, nullptr, 0),
                 "nghttp2_submit_goaway")) {
    return;
  }
  RequestFlush();
}

bool Session::Submitted(int rv, const char* what) {
  if (rv == 0) return true;
  Status why = SubmitFailure(rv, what);
  if (in_session_call_) {
    // Inside nghttp2's callbacks: fail once it has returned.
    if (submit_failure_.ok()) submit_failure_ = std::move(why);
  } else {
    Fail(NGHTTP2_INTERNAL_ERROR, why);
  }
  return false;
}

Status Session::SubmitFailure(int rv, const char* what) const {
  return Status(StatusCode::kInternal,
                absl::StrCat(what, " failed on connection to ", peer_, ": ",
                             nghttp2_strerror(rv)));
}

void Session::ResetStream(int32_t stream_id, uint32_t error_code) {
  if (!Submitted(nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE,
                                           stream_id, error_code),
                 "nghttp2_submit_rst_stream")) {
    return;
  }
  RequestFlush();
}

void Session::RequestFlush() {
  if (!closed_ && wire_ != nullptr) wire_->RequestFlush();
}

void Session::Feed(absl::string_view bytes) {
  // Lingering: what the peer sends is read and dropped.
  if (closed()) return;
  keepalive_.OnRead(scheduler_->Now());
  in_session_call_ = true;
  const Nghttp2Ssize consumed = MemRecv(
      session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  in_session_call_ = false;
  ChargeNghttp2Memory();
  if (!submit_failure_.ok()) {
    Fail(NGHTTP2_INTERNAL_ERROR, std::exchange(submit_failure_, Status()));
  }
  if (closed() || consumed >= 0) return;
  const int error = static_cast<int>(consumed);
  Fail(GoAwayCodeFor(error),
       Status(StatusCode::kUnavailable,
              absl::StrCat("HTTP/2 error on connection to ", peer_, ": ",
                           nghttp2_strerror(error))));
}

void Session::NoteDataForBdp(size_t bytes) {
  if (!bdp_.enabled()) return;
  const io::MonotonicTime now = scheduler_->Now();
  if (bdp_.ResetIfIdle(now)) ApplyReceiveWindow();
  if (bdp_.OnDataReceived(bytes, now)) SendBdpPing(now);
}

void Session::SendBdpPing(io::MonotonicTime now) {
  if (closed() ||
      !Submitted(nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, kBdpPing),
                 "nghttp2_submit_ping")) {
    return;
  }
  bdp_.OnPingSent(now);
  RequestFlush();
}

void Session::ApplyReceiveWindow() {
  if (closed()) return;
  const uint32_t window = bdp_.window();
  const nghttp2_settings_entry setting = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
                                          window};
  // The peer may use a larger window as soon as it reads the SETTINGS;
  // nghttp2 applies it to our side when the ACK arrives, which the peer
  // sends before any DATA that needs it. The connection window (servers:
  // never above connection_window) changes at once: up with a
  // WINDOW_UPDATE, down by withholding the next updates.
  if (!Submitted(
          nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, &setting, 1),
          "nghttp2_submit_settings") ||
      !Submitted(nghttp2_session_set_local_window_size(
                     session_, NGHTTP2_FLAG_NONE, 0,
                     std::max(options_.connection_window, window)),
                 "nghttp2_session_set_local_window_size")) {
    return;
  }
  RequestFlush();
}

void Session::ChargeNghttp2Memory() {
  if (memory_share_ == nullptr) return;
  const size_t in_use = memory_.in_use_bytes();
  if (in_use > nghttp2_charged_) {
    memory_share_->ForceReserve(in_use - nghttp2_charged_);
  } else if (in_use < nghttp2_charged_) {
    memory_share_->Release(nghttp2_charged_ - in_use);
  }
  nghttp2_charged_ = in_use;
}

void Session::OnPeerClosed() {
  if (closed_) return;
  if (!lingering_) {
    Close(Status(StatusCode::kUnavailable,
                 absl::StrCat("connection to ", peer_, " closed by peer")));
  } else if (write_side_shut_) {
    Close(linger_status_);
  } else {
    // Wait only for the GOAWAY to be written.
    peer_shut_ = true;
  }
}

void Session::OnWireError(const Status& why) {
  if (!closed() && close_cause_ == CloseCause::kOther && wire_ != nullptr &&
      wire_->error_number() != 0) {
    close_cause_ = CloseCause::kSocketError;
    close_error_number_ = wire_->error_number();
  }
  Close(lingering_
            ? linger_status_
            : Status(why.code(),
                     absl::StrCat(why.message(), " on connection to ", peer_)));
}

bool Session::WantsToProduce() const {
  if (lingering_) {
    return !goaway_written_ && nghttp2_session_want_write(session_) != 0;
  }
  return nghttp2_session_want_write(session_) != 0;
}

bool Session::ProduceOutput() {
  if (closed_ || write_side_shut_) return false;
  if (output_.appended() < options_.write_buffer_limit && WantsToProduce()) {
    in_session_call_ = true;
    const int rv = nghttp2_session_send(session_);
    in_session_call_ = false;
    ChargeNghttp2Memory();
    if (!submit_failure_.ok()) {
      Fail(NGHTTP2_INTERNAL_ERROR, std::exchange(submit_failure_, Status()));
    } else if (rv != 0) {
      Close(Status(StatusCode::kInternal,
                   absl::StrCat("HTTP/2 send failed on connection to ", peer_,
                                ": ", nghttp2_strerror(rv))));
    }
    if (closed_) return false;
  }
  if (output_.pending() == 0) {
    OnOutputDrained();
    return false;
  }
  return true;
}

absl::string_view Session::PendingOutput() {
  return ProduceOutput() ? output_.Front() : absl::string_view();
}

size_t Session::PendingOutputPieces(iovec* pieces, size_t max) {
  return ProduceOutput() ? output_.Peek(pieces, max) : 0;
}

void Session::ConsumeOutput(size_t n) { output_.Consume(n); }

void Session::OnOutputDrained() {
  if (lingering_) {
    if (goaway_written_ || !WantsToProduce()) OnLingerFlushed();
    return;
  }
  if (nghttp2_session_want_read(session_) ||
      nghttp2_session_want_write(session_)) {
    return;
  }
  // nghttp2 is done: its GOAWAY (after a graceful shutdown, or for a
  // connection error it handled itself) is written.
  const Status why(
      StatusCode::kUnavailable,
      goaway_sent_error_ == NGHTTP2_NO_ERROR
          ? absl::StrCat("connection to ", peer_, " shut down")
          : absl::StrCat("connection to ", peer_,
                         " ended on an HTTP/2 error by the peer (GOAWAY ",
                         nghttp2_http2_strerror(goaway_sent_error_), ")"));
  if (!server_) {
    Close(why);
    return;
  }
  // A server lingers as after Fail(), so unread input does not turn the
  // close into a reset that destroys the GOAWAY.
  lingering_ = true;
  linger_status_ = why;
  StopConnectionTimers();
  scheduler_->Schedule(&deadline_timer_,
                       scheduler_->Now() + options_.close_linger);
  OnLingerFlushed();
}

Nghttp2Ssize Session::SendCallback(nghttp2_session*, const uint8_t* data,
                                   size_t length, int, void* user) {
  Session* self = Self(user);
  if (self->output_.appended() >= self->options_.write_buffer_limit ||
      self->goaway_written_) {
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  // nghttp2 passes whole frames here (DATA goes to SendDataCallback).
  // After a graceful shutdown started, a GOAWAY with the last stream id
  // 2^31-1 is the shutdown notice, not the GOAWAY Fail() queued (whose last
  // stream id is that of a stream received, which cannot be 2^31-1 unless
  // the connection carried 2^30 streams).
  if (self->lingering_ && length >= 9 && data[3] == NGHTTP2_GOAWAY &&
      !(self->drain_ != Drain::kNone && IsShutdownNotice(data, length))) {
    self->goaway_written_ = true;
  }
  char* const copy = self->output_.Append(
      absl::string_view(reinterpret_cast<const char*>(data), length));
  if (self->settings_patch_pending_ && length >= 9 &&
      data[3] == NGHTTP2_SETTINGS && (data[4] & NGHTTP2_FLAG_ACK) == 0) {
    self->settings_patch_pending_ = false;
    self->PatchAdvertisedSettings(reinterpret_cast<uint8_t*>(copy), length);
  }
  return static_cast<Nghttp2Ssize>(length);
}

int Session::SendDataCallback(nghttp2_session*, nghttp2_frame* frame,
                              const uint8_t* framehd, size_t length,
                              nghttp2_data_source* source, void* user) {
  Session* self = Self(user);
  if (self->output_.appended() >= self->options_.write_buffer_limit ||
      self->goaway_written_) {
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  self->output_.Append(
      absl::string_view(reinterpret_cast<const char*>(framehd), 9));
  static_cast<OutgoingData*>(source->ptr)->SendReserved(length, &self->output_);
  (void)frame;  // no padding is ever requested
  return 0;
}

Nghttp2Ssize Session::ReadDataCallback(nghttp2_session*, int32_t stream_id,
                                       uint8_t*, size_t length,
                                       uint32_t* data_flags,
                                       nghttp2_data_source* source,
                                       void* user) {
  auto* data = static_cast<OutgoingData*>(source->ptr);
  if (ConnectionStats* stats = Self(user)->stats_) {
    if (const uint32_t messages = data->TakeUncountedMessages()) {
      stats->messages_sent.Add(messages);
      stats->last_message_sent.Set(Self(user)->scheduler_->Now());
    }
  }
  const size_t n = data->Reserve(length);
  *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (data->unreserved() == 0 && data->end_of_data()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    if (Self(user)->OnEndOfData(stream_id)) {
      *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return static_cast<Nghttp2Ssize>(n);
  }
  if (n == 0) {
    data->deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<Nghttp2Ssize>(n);
}

int Session::BeginHeadersCallback(nghttp2_session*, const nghttp2_frame* frame,
                                  void* user) {
  return Self(user)->OnBeginHeaders(frame);
}

int Session::HeaderCallback(nghttp2_session*, const nghttp2_frame* frame,
                            nghttp2_rcbuf* name, nghttp2_rcbuf* value, uint8_t,
                            void* user) {
  return Self(user)->OnHeader(frame, name, value);
}

int Session::FrameRecvCallback(nghttp2_session*, const nghttp2_frame* frame,
                               void* user) {
  Session* self = Self(user);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    self->OnGoAway(frame->goaway.last_stream_id, frame->goaway.error_code,
                   absl::string_view(
                       reinterpret_cast<const char*>(frame->goaway.opaque_data),
                       frame->goaway.opaque_data_len));
    return 0;
  }
  if (frame->hd.type == NGHTTP2_SETTINGS &&
      (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
    self->OnHandshakeDone();
  } else if (frame->hd.type == NGHTTP2_PING) {
    const int rv = self->OnPing(frame);
    if (rv != 0) return rv;
  }
  return self->OnFrameRecv(frame);
}

int Session::DataChunkCallback(nghttp2_session*, uint8_t, int32_t stream_id,
                               const uint8_t* data, size_t len, void* user) {
  Session* self = Self(user);
  self->NoteDataForBdp(len);
  // Unreturned until the stream's window or ReturnUntracked returns it.
  self->unreturned_bytes_ += len;
  return self->OnDataChunk(stream_id, data, len);
}

int Session::FrameSendCallback(nghttp2_session*, const nghttp2_frame* frame,
                               void* user) {
  Session* self = Self(user);
  if (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) {
    self->ping_policy_.OnDataSent();
  } else if (frame->hd.type == NGHTTP2_GOAWAY) {
    if (self->events_ != nullptr &&
        frame->goaway.error_code < static_cast<uint32_t>(kHttp2ErrorCodes)) {
      self->events_->goaways_sent[frame->goaway.error_code].Add(1);
    }
    if (self->drain_ == Drain::kNoticeQueued &&
        frame->goaway.last_stream_id == kShutdownNoticeStreamId) {
      // The notice is out: the PING follows it.
      self->drain_ = Drain::kPingOut;
      if (!self->closed()) {
        self->Submitted(
            nghttp2_submit_ping(self->session_, NGHTTP2_FLAG_NONE, kGoAwayPing),
            "nghttp2_submit_ping");
      }
    } else {
      self->goaway_sent_error_ = frame->goaway.error_code;
    }
  }
  self->OnFrameSent(frame);
  return 0;
}

int Session::StreamCloseCallback(nghttp2_session*, int32_t stream_id,
                                 uint32_t error_code, void* user) {
  return Self(user)->OnStreamClose(stream_id, error_code);
}

}  // namespace h2rpc::transport::http2
