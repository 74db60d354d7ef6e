#include "transport/tls/tls_resumption.h"

#include <openssl/rand.h>
#include <openssl/ssl.h>

#include <cstdlib>
#include <cstring>

namespace h2rpc::transport::tls {
namespace {

TicketKeyRing::Key NewKey() {
  TicketKeyRing::Key key;
  if (RAND_bytes(key.name, sizeof(key.name)) != 1 ||
      RAND_bytes(key.aes_key, sizeof(key.aes_key)) != 1 ||
      RAND_bytes(key.hmac_key, sizeof(key.hmac_key)) != 1) {
    // No randomness: nothing secure can be done.
    std::abort();
  }
  return key;
}

}  // namespace

ClientSessionCache::~ClientSessionCache() {
  for (auto& [key, session] : entries_) SSL_SESSION_free(session);
}

SSL_SESSION* ClientSessionCache::Take(const std::string& key) {
  MutexLock lock(&mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      SSL_SESSION* session = it->second;
      entries_.erase(it);
      return session;
    }
  }
  return nullptr;
}

void ClientSessionCache::Put(const std::string& key, SSL_SESSION* session) {
  SSL_SESSION* dropped[2] = {nullptr, nullptr};
  {
    MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        dropped[0] = it->second;
        entries_.erase(it);
        break;
      }
    }
    entries_.emplace_front(key, session);
    if (entries_.size() > capacity_) {
      dropped[1] = entries_.back().second;
      entries_.pop_back();
    }
  }
  for (SSL_SESSION* old : dropped) SSL_SESSION_free(old);  // null: no-op
}

size_t ClientSessionCache::size() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

TicketKeyRing::TicketKeyRing(absl::Duration rotation)
    : rotation_(rotation),
      current_(NewKey()),
      rotated_at_(io::MonotonicTime::Now()) {}

TicketKeyRing::Key TicketKeyRing::Current() {
  MutexLock lock(&mu_);
  RotateIfDue();
  return current_;
}

bool TicketKeyRing::Find(const unsigned char* name, Key* key) {
  MutexLock lock(&mu_);
  RotateIfDue();
  if (std::memcmp(name, current_.name, sizeof(current_.name)) == 0) {
    *key = current_;
    return true;
  }
  if (has_previous_ &&
      std::memcmp(name, previous_.name, sizeof(previous_.name)) == 0) {
    *key = previous_;
    return true;
  }
  return false;
}

void TicketKeyRing::Rotate() {
  MutexLock lock(&mu_);
  RotateLocked();
}

void TicketKeyRing::RotateIfDue() {
  const absl::Duration age = io::MonotonicTime::Now() - rotated_at_;
  if (age < rotation_) return;
  RotateLocked();
  // Idle past two rotations: the old current key is too old to accept.
  if (age >= 2 * rotation_) has_previous_ = false;
}

void TicketKeyRing::RotateLocked() {
  previous_ = current_;
  has_previous_ = true;
  current_ = NewKey();
  rotated_at_ = io::MonotonicTime::Now();
}

}  // namespace h2rpc::transport::tls
