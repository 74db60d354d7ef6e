#ifndef H2RPC_TRANSPORT_TLS_TLS_RESUMPTION_H_
#define H2RPC_TRANSPORT_TLS_TLS_RESUMPTION_H_

#include <cstddef>
#include <list>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "transport/io/monotonic_time.h"

typedef struct ssl_session_st SSL_SESSION;

namespace h2rpc::transport::tls {

// A client's TLS sessions to resume, by server (name and address), the
// most recently stored first; at most `capacity`, the oldest dropped. Each
// is used once: Take() removes it (a TLS 1.3 ticket is single-use, and the
// resumed connection receives a fresh one). Thread-safe.
class ClientSessionCache {
 public:
  explicit ClientSessionCache(size_t capacity) : capacity_(capacity) {}
  ~ClientSessionCache();
  ClientSessionCache(const ClientSessionCache&) = delete;
  ClientSessionCache& operator=(const ClientSessionCache&) = delete;

  // The session stored for `key`, removed from the cache; the caller owns
  // its reference (SSL_SESSION_free). Null: none.
  SSL_SESSION* Take(const std::string& key);
  // Stores `session` for `key`, taking its reference; replaces what `key`
  // had.
  void Put(const std::string& key, SSL_SESSION* session);
  size_t size() const;

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::list<std::pair<std::string, SSL_SESSION*>> entries_ ABSL_GUARDED_BY(mu_);
};

// The keys a server encrypts its session tickets with (RFC 5077's
// stateless tickets; TLS 1.3's resumption tickets): a current key, and
// the previous one, still accepted so tickets issued just before a
// rotation resume (and are renewed under the current key). Rotated every
// `rotation` (on the next handshake after it passed) or by Rotate(); a
// ticket is thus accepted for at most two rotations. Random keys from
// OpenSSL's generator, never written anywhere. Thread-safe.
class TicketKeyRing {
 public:
  struct Key {
    unsigned char name[16];
    unsigned char aes_key[32];   // AES-256-CBC
    unsigned char hmac_key[32];  // HMAC-SHA256
  };
  explicit TicketKeyRing(absl::Duration rotation);

  // The key to encrypt a new ticket with.
  Key Current();
  // The key named `name` (16 bytes), if current or previous (false: a
  // ticket too old or from elsewhere).
  bool Find(const unsigned char* name, Key* key);
  // Makes a new current key; the current one becomes the previous.
  void Rotate();

 private:
  void RotateIfDue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RotateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration rotation_;
  Mutex mu_;
  Key current_ ABSL_GUARDED_BY(mu_);
  Key previous_ ABSL_GUARDED_BY(mu_);
  bool has_previous_ ABSL_GUARDED_BY(mu_) = false;
  io::MonotonicTime rotated_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::transport::tls

#endif  // H2RPC_TRANSPORT_TLS_TLS_RESUMPTION_H_
