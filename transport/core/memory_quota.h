#ifndef H2RPC_TRANSPORT_CORE_MEMORY_QUOTA_H_
#define H2RPC_TRANSPORT_CORE_MEMORY_QUOTA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/status.h"

namespace h2rpc::transport {

// A server-wide budget of the bytes a server holds on its peers' behalf:
// received message bytes not yet delivered (messages being gathered) and
// outgoing message bytes not yet written to a connection. Each connection
// reserves through its own MemoryQuotaShare, which caps what one peer can
// take. What the quota refuses is not taken: a partial message waits for
// its flow-control credit (the peer stalls), a response fails its call.
//
// Thread-safe: reserving and releasing are lock-free (atomics) and never
// allocate, from any thread. Listeners are added before the quota is shared
// and must outlive it.
class MemoryQuota {
 public:
  // Told that bytes were released while a holder waits for memory (see
  // AddWaiter()). Runs on the releasing thread, possibly inside a
  // connection's callbacks: it must only hand the news to its own thread
  // (e.g. post a task), never call back into a connection.
  class Listener {
   public:
    virtual void OnMemoryQuotaReleased() = 0;

   protected:
    ~Listener() = default;
  };

  // `limit`: bytes.
  explicit MemoryQuota(size_t limit) : limit_(limit) {}
  MemoryQuota(const MemoryQuota&) = delete;
  MemoryQuota& operator=(const MemoryQuota&) = delete;

  // Before the quota is used from more than one thread: `listener` hears
  // of releases (see Listener) for the quota's whole life. Allocates.
  void AddListener(Listener* listener) { listeners_.push_back(listener); }

  // Any thread. Takes `bytes` if they fit under the limit; true if taken.
  [[nodiscard]] bool TryReserve(size_t bytes);
  // Any thread. Takes `bytes` whether or not they fit: memory already
  // held (bounded elsewhere, e.g. by flow control) that must count, so that
  // later reservations see it. used() may then pass limit().
  void ForceReserve(size_t bytes);
  // Any thread. Gives back bytes taken by TryReserve() or ForceReserve(). While
  // a holder waits, tells every listener.
  void Release(size_t bytes);

  // Any thread. A holder starts (stops) waiting for bytes to be released:
  // while at least one waits, every Release() tells the listeners. To miss
  // no release, a holder calls AddWaiter() and then tries TryReserve()
  // once more.
  void AddWaiter() { waiters_.fetch_add(1, std::memory_order_seq_cst); }
  void RemoveWaiter() { waiters_.fetch_sub(1, std::memory_order_seq_cst); }

  size_t limit() const { return limit_; }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  // Fewer than limit() / 16 bytes are free. The server then refuses new
  // calls at once, keeping what is left for the calls in progress.
  bool exhausted() const { return used() > limit_ - limit_ / 16; }

  // Observability (tests, diagnostics): reservations granted and refused,
  // and the most bytes ever in use, since construction.
  uint64_t grants() const { return grants_.load(std::memory_order_relaxed); }
  uint64_t refusals() const {
    return refusals_.load(std::memory_order_relaxed);
  }
  size_t peak_used() const { return peak_.load(std::memory_order_relaxed); }
  int waiters() const { return waiters_.load(std::memory_order_relaxed); }

 private:
  // Raises peak_ to `used` if it is higher.
  void NotePeak(size_t used);

  const size_t limit_;
  std::atomic<size_t> used_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<int> waiters_{0};
  std::atomic<uint64_t> grants_{0};
  std::atomic<uint64_t> refusals_{0};
  std::vector<Listener*> listeners_;  // fixed once the quota is shared
};

// One connection's part of a MemoryQuota: at most `limit` bytes at a time,
// each of them also reserved from the server-wide quota. Used on the
// connection's loop thread only (plain counters); never allocates except to
// describe a refusal.
class MemoryQuotaShare {
 public:
  // `quota` must outlive the share; `limit`: bytes.
  MemoryQuotaShare(MemoryQuota* quota, size_t limit)
      : quota_(quota), limit_(limit) {}
  // Gives back whatever is still reserved and stops waiting.
  ~MemoryQuotaShare();
  MemoryQuotaShare(const MemoryQuotaShare&) = delete;
  MemoryQuotaShare& operator=(const MemoryQuotaShare&) = delete;

  // Takes `bytes` if both the share and the server-wide quota have room.
  [[nodiscard]] bool TryReserve(size_t bytes);
  // Takes `bytes` from both whether or not they fit (see
  // MemoryQuota::ForceReserve).
  void ForceReserve(size_t bytes);
  void Release(size_t bytes);

  // Whether something on this connection waits for memory: registers the
  // connection as a waiter of the server-wide quota (see
  // MemoryQuota::AddWaiter) while true. The caller then retries its
  // reservations once, and again whenever a listener hears of a release.
  void SetWaiting(bool waiting);
  bool waiting() const { return waiting_; }

  // The largest reservation that can ever succeed: min(limit(),
  // quota()->limit()).
  size_t max_reservation() const;
  size_t limit() const { return limit_; }
  size_t used() const { return used_; }
  MemoryQuota* quota() const { return quota_; }

  // RESOURCE_EXHAUSTED for `what` (e.g. "a response of 16777221 bytes")
  // that could not be reserved, naming both limits and what is in use.
  Status Refusal(absl::string_view what) const;

 private:
  MemoryQuota* const quota_;
  const size_t limit_;
  size_t used_ = 0;
  bool waiting_ = false;
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_MEMORY_QUOTA_H_
