#ifndef H2RPC_TRANSPORT_IO_BYTE_SESSION_H_
#define H2RPC_TRANSPORT_IO_BYTE_SESSION_H_

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "base/peer_identity.h"
#include "base/status.h"

namespace h2rpc::transport::io {

// The seam between what moves a connection's bytes (a socket driver) and
// the protocol that consumes and produces them (an HTTP/2 session), which
// owns no descriptor, thread or clock. A byte transformer (TLS) sits in
// between by being both: a ByteSession to the driver and a Wire to the
// session it wraps.
//
// Both sides run on one thread (an EventLoop's loop thread) and call each
// other synchronously; neither allocates on these calls.

// What a secure wire negotiated, for diagnostics (channelz).
struct TlsDetails {
  // The cipher suite's standard (RFC) name, "TLS_AES_128_GCM_SHA256".
  std::string cipher;
  // DER certificates: the one this side presented (empty if none), the
  // peer's (empty if it sent none).
  std::string local_certificate;
  std::string peer_certificate;
};

// What a ByteSession asks of the layer that moves its bytes.
class Wire {
 public:
  // The session has output (ByteSession::PendingOutput()): write it right
  // after the Feed() in progress returns, or else at the end of this loop
  // iteration.
  virtual void RequestFlush() = 0;
  // The session has written everything it ever will: half-close the write
  // side (FIN). Input keeps going to Feed() until the peer closes.
  virtual void ShutdownWrite() = 0;
  // Ends the wire now; the session is not called again. `flush_first`:
  // first one non-blocking attempt to write what PendingOutput() offers.
  virtual void CloseWire(bool flush_first) = 0;
  // Whether output the session queues now can reach the peer: false while
  // a secure wire's own handshake is under way (nothing the session queues
  // is written before it completes, so a GOAWAY queued then would never
  // leave); always true for plaintext.
  virtual bool CarriesOutput() const { return true; }
  // What a secure wire established about the peer; null for plaintext.
  // Final by the time the session is first fed bytes.
  virtual const std::shared_ptr<const PeerIdentity>& peer_identity() const {
    static const std::shared_ptr<const PeerIdentity> kNone;
    return kNone;
  }
  // A secure wire whose handshake is done fills `*details` and returns
  // true (allocating the certificates' copies); others return false.
  virtual bool GetTlsDetails(TlsDetails* details) const { return false; }
  // The errno of the socket error behind the last OnWireError the wire
  // reported; 0 when there was none or it was not a socket's.
  virtual int error_number() const { return 0; }

 protected:
  ~Wire() = default;
};

// The protocol side of a connection.
class ByteSession {
 public:
  // Starts on `wire`, which stays valid until the session calls
  // CloseWire(): queues the session's first output (a preface, SETTINGS).
  virtual void Start(Wire* wire) = 0;
  // Bytes from the peer, in order. The view is valid during the call only.
  virtual void Feed(absl::string_view bytes) = 0;
  // The peer closed its side (end of file): no more input.
  virtual void OnPeerClosed() = 0;
  // Reading or writing failed (UNAVAILABLE with the cause): the wire is
  // unusable.
  virtual void OnWireError(const Status& why) = 0;
  // Output to write, produced on demand: empty when there is nothing (more)
  // to write. Valid until the next call into the session.
  virtual absl::string_view PendingOutput() = 0;
  // PendingOutput() as up to `max` pieces, in order, for one gathering
  // write: the first piece is PendingOutput()'s view. Returns how many
  // (0: nothing to write). Valid until the next call into the session. By
  // default PendingOutput() alone.
  virtual size_t PendingOutputPieces(iovec* pieces, size_t max) {
    const absl::string_view out = PendingOutput();
    if (out.empty() || max == 0) return 0;
    pieces[0].iov_base = const_cast<char*>(out.data());
    pieces[0].iov_len = out.size();
    return 1;
  }
  // The first `n` bytes of the pending output were written.
  virtual void ConsumeOutput(size_t n) = 0;
  // Whether the input now under way is the body of a large message, whose
  // rest (kLargeInputBytes or more) is better read in large chunks: fewer
  // reads, each fed whole. By default never.
  static constexpr size_t kLargeInputBytes = 64 * 1024;
  virtual bool ExpectsLargeInput() const { return false; }
  // Whether the driver stops reading while the peer does not take the
  // output (the socket refuses more), until it does: a peer that does not
  // read then cannot make the session queue more answers (RST_STREAM,
  // SETTINGS and PING ACKs) to what it sends. Servers do; a client keeps
  // reading, so two peers writing to each other never both wait. By
  // default the driver keeps reading.
  virtual bool PausesInputWhileOutputBlocked() const { return false; }
  // Whether the driver reads now: false while the session holds all the
  // input it may hold unprocessed; it calls Wire::RequestFlush() once it
  // wants input again. By default always.
  virtual bool WantsInput() const { return true; }

 protected:
  ~ByteSession() = default;
};

// A byte transformer between a wire and the session it serves (TLS): a
// ByteSession to the layer that moves its bytes and a Wire to `inner`.
// Same thread and allocation rules as both.
class ByteFilter : public ByteSession, public Wire {
 public:
  virtual ~ByteFilter() = default;
  // The session this filter serves; set once, before Start().
  virtual void Attach(ByteSession* inner) = 0;
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_BYTE_SESSION_H_
