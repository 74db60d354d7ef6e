#ifndef H2RPC_TRANSPORT_HTTP2_SESSION_H_
#define H2RPC_TRANSPORT_HTTP2_SESSION_H_

#include <nghttp2/nghttp2.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "base/compression_algorithm.h"
#include "base/connection_events.h"
#include "base/peer_identity.h"
#include "base/status.h"
#include "transport/core/connect_protocol.h"
#include "transport/core/cors.h"
#include "transport/core/memory_quota.h"
#include "transport/core/message_deframer.h"
#include "transport/http2/bdp_estimator.h"
#include "transport/http2/connection_stats.h"
#include "transport/http2/keepalive.h"
#include "transport/http2/nghttp2_compat.h"
#include "transport/http2/nghttp2_memory_pool.h"
#include "transport/http2/output_queue.h"
#include "transport/http2/stream_base.h"
#include "transport/http1/http1_options.h"
#include "transport/io/byte_session.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::http2 {

// Keepalive (gRPC's A8), PING enforcement and connection idleness and age
// (A9) of one connection. Every field: default, unit. The defaults are the
// transport's (everything off); the rpc layer sets them from ChannelOptions
// or ServerOptions, whose defaults are gRPC's for each side.
struct KeepaliveOptions {
  // After `time` without a byte from the peer, send a PING; if nothing
  // arrives within `timeout` of it, the connection is dead: it closes and
  // its calls fail with UNAVAILABLE ("keepalive watchdog timeout"; a
  // server's handlers see cancellation). Without an open stream no PING is
  // sent unless permit_without_calls. `time` InfiniteDuration: no
  // keepalive. Durations, more than zero.
  absl::Duration time = absl::InfiniteDuration();
  absl::Duration timeout = absl::Seconds(20);
  bool permit_without_calls = false;
  // Servers: PING enforcement. A PING sooner than min_time after the
  // previous one (sooner than 2 hours while no stream is open, unless
  // permit_pings_without_calls) is a strike; sending HEADERS or DATA clears
  // the strikes. More than max_ping_strikes strikes end the connection with
  // GOAWAY ENHANCE_YOUR_CALM, debug data "too_many_pings", and its calls
  // with UNAVAILABLE. max_ping_strikes 0: no limit. Duration; PINGs.
  absl::Duration min_time = absl::Minutes(5);
  bool permit_pings_without_calls = false;
  int max_ping_strikes = 2;
  // Servers: a connection older than max_connection_age (give or take 10%,
  // at random) is shut down gracefully (see Session::GracefulShutdown);
  // calls still open max_connection_age_grace later are cancelled and the
  // connection closed. InfiniteDuration: never. Durations.
  absl::Duration max_connection_age = absl::InfiniteDuration();
  absl::Duration max_connection_age_grace = absl::InfiniteDuration();
  // Servers: a connection without open streams for this long is shut down
  // gracefully. InfiniteDuration: never. Duration, more than zero.
  absl::Duration max_connection_idle = absl::InfiniteDuration();
};

// Limits and HTTP/2 settings of one connection. Every field: default, unit.
// ConnectionOptions::write_buffer_limit's default. Bytes.
inline constexpr size_t kDefaultWriteBufferLimit = 256 << 10;

// Servers: what a connection serves browsers besides gRPC (the rpc layer
// sets it from ServerOptions::web).
struct WebOptions {
  // Also answer gRPC-Web requests (application/grpc-web[+proto], and the
  // base64 text form application/grpc-web-text[+proto];
  // transport/core/grpc_web.h). Off: they are refused with HTTP 415 as any
  // other content-type.
  bool grpc_web = false;
  // Also answer the Connect protocol's requests, unary (application/proto)
  // and streaming (application/connect+proto), and with a connect_codec
  // their JSON forms and the GET form (transport/core/connect_protocol.h).
  // Off: they are refused with HTTP 415 as any other content-type.
  bool connect = false;
  // Converts JSON messages, reads error details, tells which methods GET
  // may call. Null: no JSON, no GET, no details.
  std::shared_ptr<const ConnectCodec> connect_codec;
  // Cross-origin calls from browser pages (CORS): a preflight (OPTIONS)
  // from an origin the policy allows is answered 204, and the responses to
  // its calls carry the CORS fields; a preflight or a call from any other
  // origin is refused with HTTP 403. Null: no CORS: OPTIONS is refused
  // (405) as every method but POST, and a call is served whatever its
  // origin.
  std::shared_ptr<const CorsPolicy> cors;
  // With grpc_web or connect, HTTP/1.1 connections are served too
  // (http1::ServerBridge), within these bounds.
  http1::Http1Options http1;
};

struct ConnectionOptions {
  // SETTINGS_MAX_CONCURRENT_STREAMS we advertise (servers); a stream past
  // it is refused alone with RST_STREAM(REFUSED_STREAM). Streams.
  uint32_t max_concurrent_streams = 1024;
  // SETTINGS_INITIAL_WINDOW_SIZE we advertise. Bytes per stream.
  uint32_t initial_stream_window = 1 << 20;
  // Our connection-level receive window. Bytes.
  uint32_t connection_window = 16 << 20;
  // Receive windows sized by the path's bandwidth-delay product (gRPC's
  // BDP probing, GRPC_ARG_HTTP2_BDP_PROBE): while DATA arrives the
  // connection times PING round trips and, when a round trip's worth of
  // DATA fills most of the window, raises SETTINGS_INITIAL_WINDOW_SIZE (the
  // window of every open and new stream) to twice that, up to
  // max_receive_window, and the connection window with it when it is
  // smaller; after 10 s without DATA both go back. false: the windows stay
  // initial_stream_window and connection_window.
  bool bdp_probe = true;
  // The largest stream window BDP probing grows to: by default four times
  // connection_window, so that one stream carries about 4 Gbit/s across a
  // path of 100 ms round trip (three quarters of the window in flight, see
  // ReturnCredit). Servers grow no stream window past a quarter of
  // connection_window (4 MiB by default) and never grow connection_window,
  // so a server's memory bounds (see memory_quota_share) do not change.
  // At or below initial_stream_window: no probing. Bytes.
  uint32_t max_receive_window = 64 << 20;
  // SETTINGS_MAX_FRAME_SIZE we advertise. Bytes.
  uint32_t max_frame_size = 16384;
  // SETTINGS_MAX_HEADER_LIST_SIZE we advertise (decoded size, 32 bytes of
  // overhead per field). A larger request header list is answered
  // RESOURCE_EXHAUSTED (servers); a larger response header list fails the
  // call with RESOURCE_EXHAUSTED (clients). Bytes.
  uint32_t max_header_list_size = 16384;
  // Largest message accepted (max_receive_message_size). Bytes.
  size_t max_receive_message_size = 4 << 20;
  // Servers: the most bytes of the server's memory quota
  // (ServerOptions::memory_quota) this connection may hold at once: received
  // messages that span DATA frames (each takes its declared length while it
  // is gathered) and response bytes waiting to be written. A message the
  // quota cannot grant yet waits with its flow-control credit withheld, so
  // the peer stalls, and is granted when memory frees up; a response that
  // does not fit fails its call with RESOURCE_EXHAUSTED. A received message
  // larger than this (or than the server's quota) is refused with
  // RESOURCE_EXHAUSTED, so a server refuses to start when it is smaller
  // than max_receive_message_size plus the 5-byte prefix, or larger than
  // ServerOptions::memory_quota.
  // How the bounds combine: outside the quota, a connection holds only what
  // its peer sent without credit, at most connection_window bytes (messages
  // queued unread, and messages waiting for a grant, which may hold at most
  // a quarter of it: a stream whose waiting bytes would pass that fails with
  // RESOURCE_EXHAUSTED; their gather buffers may take twice their bytes). So
  // one connection holds at most memory_quota_share + 2 x connection_window
  // of message bytes, and a server memory_quota + 2 x connection_window per
  // connection. Clients have no quota. Bytes.
  size_t memory_quota_share = 32 << 20;
  // Largest message sent (max_send_message_size); a larger one fails its
  // call with RESOURCE_EXHAUSTED and is never serialized. Bytes. The
  // default, 2147483647 (INT_MAX), is the largest message protobuf
  // serializes: a protobuf message above it is refused whatever this says.
  size_t max_send_message_size = INT_MAX;
  // nghttp2 stops producing frames while this many bytes wait to be written;
  // besides them the connection keeps at most 16 times this in finished
  // bodies whose last bytes wait to be written (past that, those bytes are
  // copied and the body freed: OutputQueue::MaxAdoptedBytesFor). Bytes.
  size_t write_buffer_limit = kDefaultWriteBufferLimit;
  // Message encodings this side decompresses, advertised in every call's
  // grpc-accept-encoding. A request in another encoding is answered
  // UNIMPLEMENTED (servers); a response in another encoding fails the call
  // with INTERNAL (clients). identity is always accepted.
  CompressionAlgorithmSet accepted_compression = CompressionAlgorithmSet::All();
  // The peer must complete its side of the handshake (the connection preface
  // and its first SETTINGS frame) within this time of the connection's
  // start, or the connection is closed (a server sends GOAWAY first).
  absl::Duration handshake_timeout = absl::Seconds(5);
  // Servers: a connection that has written its last frame (a GOAWAY after
  // a protocol violation, a flood or a handshake timeout, or the end of a
  // graceful shutdown) half-closes and keeps its socket until the peer
  // closes too, at most this long, reading and discarding what the peer
  // still sends, so the GOAWAY is not lost to a TCP reset; then it closes
  // and fails its calls.
  absl::Duration close_linger = absl::Seconds(1);
  // Keepalive, PING enforcement, connection idleness and age. The rpc layer
  // sets them from ChannelOptions or ServerOptions, whose defaults differ by
  // side.
  KeepaliveOptions keepalive;
  // Servers: what the connection serves browsers besides gRPC.
  WebOptions web;
};

// One HTTP/2 connection's protocol state, without I/O: the nghttp2
// session, its streams (in the subclasses), flow control, and the
// connection's deadlines (handshake, keepalive, idle, age, linger) as timers
// on an injected Scheduler. It consumes the peer's bytes (Feed) and produces
// its own (PendingOutput) for whatever drives it (io::SocketDriver, or a test);
// nothing here touches a descriptor, a thread or the real clock.
//
// Output is coalesced: frames accumulate in an OutputQueue until the driver
// takes them, after the Feed() that produced them or at the end of the loop
// iteration (Wire::RequestFlush). DATA payloads go from the streams'
// OutgoingData straight into that queue (NGHTTP2_DATA_FLAG_NO_COPY): copied
// into its buffer, or, for large bodies, lent and written from where they
// are.
//
// Client and server sessions derive from it and handle the stream-level
// callbacks. Everything runs on the scheduler's thread.
class Session : public io::ByteSession, private KeepalivePinger::Delegate {
 public:
  Session(io::Scheduler* scheduler, std::string peer,
          const ConnectionOptions& options);
  virtual ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // io::ByteSession: the driver's side.
  void Start(io::Wire* wire) override;
  void Feed(absl::string_view bytes) override;
  void OnPeerClosed() override;
  void OnWireError(const Status& why) override;
  absl::string_view PendingOutput() override;
  size_t PendingOutputPieces(iovec* pieces, size_t max) override;
  void ConsumeOutput(size_t n) override;
  // True while the stream whose DATA came last is in the middle of a message
  // with at least kLargeInputBytes still to come.
  bool ExpectsLargeInput() const override { return expects_large_input_; }
  // Servers.
  bool PausesInputWhileOutputBlocked() const override { return server_; }

  // Closes the connection now: streams are failed by the subclass with
  // `why`, the wire is closed, OnClosed runs. Idempotent.
  void Close(const Status& why);

  // Ends the connection on a fatal error: queues GOAWAY with `error_code`
  // and `debug_data` as its opaque data (without debug data, none if
  // nghttp2 has queued a GOAWAY for the error already), stops processing
  // what the peer sends, and writes what was queued up to and including the
  // GOAWAY and nothing after it. A server then closes with `why` once the
  // peer has closed its side too, or after options().close_linger,
  // whichever comes first (Close() ends the linger at once); a client
  // closes at once after one attempt to write. Idempotent.
  void Fail(uint32_t error_code, const Status& why,
            absl::string_view debug_data = absl::string_view());

  // Shuts the connection down without losing a stream: the connection ends
  // once every open stream has finished (a server lingers then, see
  // ConnectionOptions::close_linger). A client sends GOAWAY (NO_ERROR). A
  // server does what gRPC servers do: GOAWAY with last stream id 2^31-1,
  // then a PING; streams the client opens meanwhile are served. When the
  // PING's ACK arrives (or, without one, after kGoAwayPingTimeout or
  // options().keepalive.timeout, whichever is shorter) the final GOAWAY
  // names the last stream accepted, and later streams are refused.
  // Idempotent; no-op once closed().
  void GracefulShutdown();
  // The longest a server waits for the ACK of its shutdown PING before it
  // sends the final GOAWAY (gRPC C++'s bound).
  static constexpr absl::Duration kGoAwayPingTimeout = absl::Seconds(20);
  // What of nghttp2's freed blocks a connection keeps cached once it has
  // had no open stream for kIdleTrimDelay: more than one call's worth
  // (about 2 KiB), far less than what a burst of streams leaves.
  static constexpr size_t kIdleCachedBytes = 4096;
  static constexpr absl::Duration kIdleTrimDelay = absl::Seconds(1);

  // Asks the driver to take the pending output (after the Feed() in
  // progress, or at the end of this loop iteration).
  void RequestFlush();

  // Whether `rv`, the result of an nghttp2 call named `what` that queues or
  // changes what is sent, is success. On failure no promise about the
  // streams holds any more: the connection ends (Fail() with
  // INTERNAL_ERROR) and its calls fail with INTERNAL naming `what`.
  bool Submitted(int rv, const char* what);
  // INTERNAL: the nghttp2 call `what` failed with `rv` (an nghttp2_error).
  Status SubmitFailure(int rv, const char* what) const;
  // Queues RST_STREAM with `error_code` for `stream_id`; Submitted() decides
  // what a failure does.
  void ResetStream(int32_t stream_id, uint32_t error_code);

  // Attaches `data` as the body source of a stream (a data provider for
  // nghttp2_submit_request / submit_response / submit_data).
  static Nghttp2DataProvider DataProvider(OutgoingData* data);

  // Returns to the peer the bytes `window` allows (see ReceiveWindow), and
  // announces returned bytes (WINDOW_UPDATE) once they reach a quarter of
  // the stream's or the connection's window: a sender with data then holds
  // at least three quarters of each window as credit (nghttp2 on its own
  // waits for half). Only returned bytes are announced, so no window grows.
  void ReturnCredit(int32_t stream_id, ReceiveWindow* window);
  // The stream is closed: returns every byte it still holds to the
  // connection window.
  void ReturnAllCredit(ReceiveWindow* window);
  // DATA of a stream the session does not track: returned at once.
  void ReturnUntracked(int32_t stream_id, size_t bytes);

  // Options for a new stream's deframer: the receive limit, the connection's
  // memory quota share if it has one (servers), and whether messages may
  // arrive compressed (`encoding` is not identity). A stream leaving the
  // connection must ReleaseDeframer() so the share is not referenced after
  // it.
  MessageDeframer::Options DeframerOptions(
      CompressionAlgorithm encoding = CompressionAlgorithm::kIdentity);
  static void ReleaseDeframer(MessageDeframer* deframer) {
    deframer->Reset(MessageDeframer::Options());
  }

  // Where the connection counts its streams, messages and keepalives
  // (channelz); null, the default: nowhere. Set before Start(); `stats`
  // must outlive the session.
  void set_stats(ConnectionStats* stats) { stats_ = stats; }
  // Where the connection also counts its start and end, its streams, its
  // keepalive timeouts and the GOAWAYs it sends, with its group's (call
  // metrics); null, the default: nowhere. Set before Start(); `events` must
  // outlive the session.
  void set_event_counts(ConnectionEventCounts* events) { events_ = events; }

  // Why the connection closed, where the transport knows it (for call
  // metrics' disconnect reasons): the peer answered no keepalive PING, or
  // a read or write failed (close_error_number(): its errno).
  enum class CloseCause : uint8_t { kOther, kKeepaliveTimeout, kSocketError };
  CloseCause close_cause() const { return close_cause_; }
  int close_error_number() const { return close_error_number_; }

  // True once Close() or Fail() has run: the connection takes no new work.
  bool closed() const { return closed_ || lingering_; }
  io::Scheduler* scheduler() const { return scheduler_; }
  const std::string& peer() const { return peer_; }
  // What TLS established about the peer; null on plaintext or before
  // Start().
  const std::shared_ptr<const PeerIdentity>& peer_identity() const {
    static const std::shared_ptr<const PeerIdentity> kNone;
    return wire_ != nullptr ? wire_->peer_identity() : kNone;
  }
  // What TLS negotiated (Wire::GetTlsDetails); false on plaintext, before
  // Start() and once the wire is closed.
  bool GetTlsDetails(io::TlsDetails* details) const {
    return wire_ != nullptr && wire_->GetTlsDetails(details);
  }
  // Whether the peer completed its side of the HTTP/2 handshake (its
  // preface and first SETTINGS arrived).
  bool handshake_done() const { return handshake_done_; }
  // Bytes of nghttp2's freed blocks the connection keeps for reuse.
  size_t nghttp2_cached_bytes() const { return memory_.cached_bytes(); }
  const ConnectionOptions& options() const { return options_; }
  // options().accepted_compression (plus identity) as a
  // grpc-accept-encoding value, formatted once.
  absl::string_view accept_encoding() const { return accept_encoding_; }
  // Whether a peer's grpc-encoding `name` (absent: identity) is one this
  // side accepts; sets `*algorithm` if so.
  bool AcceptsEncoding(absl::optional<absl::string_view> name,
                       CompressionAlgorithm* algorithm) const;

 protected:
  nghttp2_session* session() const { return session_; }

  // Creates the nghttp2 session; called by the subclass constructor.
  void InitSession(bool server);
  // The memory quota share messages being gathered are granted from (see
  // DeframerOptions); null (clients): none. Set by the subclass
  // constructor.
  void set_memory_share(MemoryQuotaShare* share) { memory_share_ = share; }
  ConnectionStats* stats() const { return stats_; }
  ConnectionEventCounts* event_counts() const { return events_; }
  // ConnectionStats: `messages` more were delivered.
  void CountReceived(uint64_t messages) {
    if (stats_ == nullptr || messages == 0) return;
    stats_->messages_received.Add(messages);
    stats_->last_message_received.Set(scheduler_->Now());
  }
  // After a DATA chunk went to `deframer`: whether the rest of its message
  // is large (ExpectsLargeInput).
  void NoteMessageInput(const MessageDeframer& deframer) {
    expects_large_input_ =
        deframer.remaining_bytes() >= io::ByteSession::kLargeInputBytes;
  }

  // Whether the connection has no open stream; subclasses on both sides
  // report every change. Keepalive PINGs need an open stream (unless
  // permitted without), PING enforcement is stricter without one, and a
  // server idle (once its handshake is done) for
  // options().keepalive.max_connection_idle shuts down gracefully.
  // Costs a few stores (and a clock read when an idle server has a
  // max_connection_idle); never schedules more than once per idle period.
  void SetIdle(bool idle);

  // Stream-level nghttp2 callbacks. Return 0, or NGHTTP2_ERR_CALLBACK_FAILURE
  // to tear the connection down.
  virtual int OnBeginHeaders(const nghttp2_frame* frame) = 0;
  virtual int OnHeader(const nghttp2_frame* frame, nghttp2_rcbuf* name,
                       nghttp2_rcbuf* value) = 0;
  virtual int OnFrameRecv(const nghttp2_frame* frame) = 0;
  virtual int OnDataChunk(int32_t stream_id, const uint8_t* data,
                          size_t size) = 0;
  virtual int OnStreamClose(int32_t stream_id, uint32_t error_code) = 0;
  // A frame was written to the send buffer.
  virtual void OnFrameSent(const nghttp2_frame* frame) {}
  // The peer sent GOAWAY; `debug_data` is its opaque data (valid during the
  // call only).
  virtual void OnGoAway(int32_t last_stream_id, uint32_t error_code,
                        absl::string_view debug_data) {}
  // The peer completed its side of the HTTP/2 handshake (its preface and
  // first SETTINGS arrived): handshake_done() is now true.
  virtual void OnPeerHandshakeDone() {}
  // Asked for the body's end by the data read callback: the stream's
  // OutgoingData is drained and marked end_of_data. A server submits its
  // trailers here and returns true (the DATA frame then does not end the
  // stream); a client returns false.
  virtual bool OnEndOfData(int32_t stream_id) { return false; }
  // The connection closed; fail every stream still open with `why`. The
  // object may be destroyed after this returns (by its owner, later).
  virtual void OnClosed(const Status& why) = 0;

 private:
  // A timer that calls a member function of its session.
  template <void (Session::*kFire)()>
  class MemberTimer final : public io::Timer {
   public:
    explicit MemberTimer(Session* s) : session_(s) {}
    void OnTimer() override { (session_->*kFire)(); }

   private:
    Session* const session_;
  };

  // The peer's handshake, or the end of a linger.
  void OnDeadline();
  // Servers: max_connection_idle may have passed.
  void OnIdleTimer();
  // The connection may have been idle for kIdleTrimDelay: trims the cache.
  void OnTrimTimer();
  // Servers: max_connection_age, then the end of max_connection_age_grace.
  void OnAgeTimer();
  // Servers: the shutdown PING went unanswered.
  void OnGoAwayPingTimer() { SendFinalGoAway(); }
  // Servers, graceful shutdown: the GOAWAY naming the last stream accepted.
  void SendFinalGoAway();
  // A PING frame arrived. Returns 0, or NGHTTP2_ERR_CALLBACK_FAILURE once
  // the connection failed for too many PINGs.
  int OnPing(const nghttp2_frame* frame);
  // KeepalivePinger::Delegate.
  bool SendKeepalivePing() override;
  void OnKeepaliveTimeout() override;
  // Cancels the timers of a connection that is ending (lingering or
  // closed), all but deadline_timer_.
  void StopConnectionTimers();
  // The peer's first SETTINGS arrived.
  void OnHandshakeDone();
  // The output buffer is empty and nghttp2 has nothing more to send now:
  // ends a linger, or a connection nghttp2 is done with.
  void OnOutputDrained();
  // Lingering: the GOAWAY and everything before it are written.
  void OnLingerFlushed();
  // The server's own SETTINGS frame as nghttp2 serialized it: rewrites the
  // SETTINGS_MAX_CONCURRENT_STREAMS value to the advertised limit.
  void PatchAdvertisedSettings(uint8_t* frame, size_t length);
  // `bytes` of DATA arrived: feeds the BDP estimator, which may ask for a
  // PING or, after an idle spell, for the windows to shrink back.
  void NoteDataForBdp(size_t bytes);
  // Sends the BDP estimator's PING.
  void SendBdpPing(io::MonotonicTime now);
  // Queues WINDOW_UPDATE for what `stream_id` (0: the connection) received
  // and returned but did not announce, once that is a quarter of its window;
  // `unreturned` is what it received and still holds. Returns what stays
  // returned and unannounced.
  size_t AnnounceReturned(int32_t stream_id, size_t unreturned);
  // `credit` bytes went back to the connection window: announces them with
  // AnnounceReturned(0, ...) when returned_bound_ says it may be due.
  void AnnounceConnectionReturned(size_t credit);
  // Advertises bdp_.window(): SETTINGS_INITIAL_WINDOW_SIZE (every open and
  // new stream) and the connection window when it is the larger.
  void ApplyReceiveWindow();
  // Servers: brings the charge of nghttp2's own memory (its stream state,
  // queued frames and HPACK tables, through memory_) to the connection's
  // memory share up to date, after nghttp2 read or wrote.
  void ChargeNghttp2Memory();
  // Whether PendingOutput() should ask nghttp2 for more frames.
  bool WantsToProduce() const;
  // Asks nghttp2 for frames while the queue's round is under
  // write_buffer_limit; true if output is pending.
  bool ProduceOutput();
  // Closes with `why` after CloseWire(flush_first).
  void CloseWith(const Status& why, bool flush_first);

  static Nghttp2Ssize SendCallback(nghttp2_session*, const uint8_t* data,
                                   size_t length, int flags, void* user);
  static int SendDataCallback(nghttp2_session*, nghttp2_frame* frame,
                              const uint8_t* framehd, size_t length,
                              nghttp2_data_source* source, void* user);
  static Nghttp2Ssize ReadDataCallback(nghttp2_session*, int32_t stream_id,
                                       uint8_t* buf, size_t length,
                                       uint32_t* data_flags,
                                       nghttp2_data_source* source, void* user);
  static int BeginHeadersCallback(nghttp2_session*, const nghttp2_frame*,
                                  void* user);
  static int HeaderCallback(nghttp2_session*, const nghttp2_frame* frame,
                            nghttp2_rcbuf* name, nghttp2_rcbuf* value,
                            uint8_t flags, void* user);
  static int FrameRecvCallback(nghttp2_session*, const nghttp2_frame* frame,
                               void* user);
  static int DataChunkCallback(nghttp2_session*, uint8_t flags,
                               int32_t stream_id, const uint8_t* data,
                               size_t len, void* user);
  static int FrameSendCallback(nghttp2_session*, const nghttp2_frame* frame,
                               void* user);
  static int StreamCloseCallback(nghttp2_session*, int32_t stream_id,
                                 uint32_t error_code, void* user);

  io::Scheduler* const scheduler_;
  io::Wire* wire_ = nullptr;  // from Start() until CloseWire()
  const std::string peer_;
  const ConnectionOptions options_;
  std::string accept_encoding_;
  Nghttp2MemoryPool memory_;  // outlives session_ (deleted in ~Session)
  MemoryQuotaShare* memory_share_ = nullptr;
  ConnectionStats* stats_ = nullptr;
  ConnectionEventCounts* events_ = nullptr;
  CloseCause close_cause_ = CloseCause::kOther;  // the first known
  int close_error_number_ = 0;
  // memory_.in_use_bytes() as last charged to memory_share_.
  size_t nghttp2_charged_ = 0;
  // DATA payload bytes of tracked streams not yet returned (the sum of their
  // ReceiveWindow::unreturned()), for the connection's WINDOW_UPDATEs.
  size_t unreturned_bytes_ = 0;
  // At least the connection's returned, unannounced bytes (nghttp2's own
  // announcements only lower the true figure), so AnnounceReturned(0) runs
  // only when a quarter of connection_window may be due.
  size_t returned_bound_ = 0;
  bool expects_large_input_ = false;  // NoteMessageInput()
  nghttp2_session* session_ = nullptr;
  MemberTimer<&Session::OnDeadline> deadline_timer_{this};
  MemberTimer<&Session::OnIdleTimer> idle_timer_{this};
  MemberTimer<&Session::OnTrimTimer> trim_timer_{this};
  MemberTimer<&Session::OnAgeTimer> age_timer_{this};
  MemberTimer<&Session::OnGoAwayPingTimer> goaway_ping_timer_{this};
  KeepalivePinger keepalive_;
  PingAbusePolicy ping_policy_;
  // Receive windows sized by the path (ConnectionOptions::bdp_probe); set
  // up by InitSession.
  BdpEstimator bdp_{0, 0};
  bool server_ = false;
  bool handshake_done_ = false;
  bool idle_ = true;
  // Since when the connection has had no open stream (while idle_).
  io::MonotonicTime idle_since_;
  // Servers: max_connection_age has passed; age_timer_ now runs the grace.
  bool age_reached_ = false;
  // Servers: how far a graceful shutdown has got.
  enum class Drain : uint8_t {
    kNone,
    // GOAWAY(2^31-1) is queued; the PING follows once it is written.
    kNoticeQueued,
    // The PING is out; its ACK (or goaway_ping_timer_) sends the final
    // GOAWAY.
    kPingOut,
    // The final GOAWAY is queued.
    kFinal,
  };
  Drain drain_ = Drain::kNone;
  // Our SETTINGS frame has not been serialized yet (servers).
  bool settings_patch_pending_ = false;
  bool closed_ = false;
  bool closing_ = false;  // inside Wire::CloseWire()
  // Fail() ran: only the GOAWAY and what precedes it are written.
  bool lingering_ = false;
  bool goaway_written_ = false;  // while lingering
  bool write_side_shut_ = false;
  bool peer_shut_ = false;  // end of file seen while lingering
  Status linger_status_;
  bool going_away_ = false;
  // The error code of the GOAWAY written (NO_ERROR if none, or graceful).
  uint32_t goaway_sent_error_ = NGHTTP2_NO_ERROR;
  // Inside nghttp2_session_mem_recv or nghttp2_session_send, where Fail()
  // must not run; a submit failure seen there waits in submit_failure_.
  bool in_session_call_ = false;
  Status submit_failure_;
  // Frames produced and not yet taken by the driver.
  OutputQueue output_{
      OutputQueue::MaxAdoptedBytesFor(options_.write_buffer_limit)};
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_SESSION_H_
