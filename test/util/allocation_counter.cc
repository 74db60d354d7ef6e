// The books behind AllocationCounter: each thread counts into a slot of its
// own (a slot of a fixed table, taken at its first allocation and given
// back when it exits), so that counting is a few plain increments; totals
// sum the table.
#include "test/util/allocation_counter.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "test/util/allocation_record.h"

namespace h2rpc::testing {
namespace {

constexpr int kRoles = 3;

// Counts by role, and live bytes, of the threads that held the slot. Its
// owner writes it with plain loads and stores (no read-modify-write);
// totals read it from any thread. A thread that exits gives its slot back;
// a later thread adds to the counts it holds. Trivial, so the table is
// zero before any code runs (the first allocations come before static
// initialization).
struct alignas(64) Slot {
  std::atomic<bool> taken;
  std::atomic<int64_t> allocations[kRoles];
  std::atomic<int64_t> bytes[kRoles];
  std::atomic<int64_t> live_bytes;
};

// More threads than this at once share `shared_slot`.
constexpr int kSlots = 4096;
Slot slots[kSlots];
// Threads without a slot of their own (the table was full, or their exit
// has begun) count here, with atomic read-modify-writes.
Slot shared_slot;
// One past the highest slot ever taken: totals read no further.
std::atomic<int> slots_bound{0};
// Where the next search for a free slot starts.
std::atomic<int> next_slot{0};

// Gives a thread's slot back when the thread exits.
pthread_key_t slot_key;
std::atomic<bool> slot_key_created{false};

std::atomic<int> default_role{static_cast<int>(ThreadRole::kOther)};

// A thread without a role may be named later: its name is read at each of
// its first kEagerNameChecks allocations (threads are named as they
// start), then again after 1, 2, 4, ... more, and after at most
// kMaxNameCheckInterval.
constexpr uint32_t kEagerNameChecks = 64;
constexpr uint32_t kMaxNameCheckInterval = 1024;

// Zero is the state of a new thread.
struct ThreadBooks {
  Slot* slot;      // null until the first allocation or free
  bool owns_slot;  // slot is this thread's alone (else: shared_slot)
  int role;        // ThreadRole + 1; 0: from the name, when it has one
  uint32_t name_checks;
  uint32_t until_name_check;
  uint32_t name_check_interval;
  int64_t allocations;
  int64_t bytes;
};
// Trivial: reading it never allocates, even inside malloc.
thread_local ThreadBooks books;

// Peak tracking (ResetPeakLiveHeapBytes): every live-bytes change since
// tracking began, and the highest their running sum reached.
std::atomic<bool> tracking_peak{false};
std::atomic<int64_t> tracked_delta{0};
std::atomic<int64_t> tracked_peak_delta{0};
// LiveHeapBytes() less tracked_delta at the last reset.
std::atomic<int64_t> peak_base{0};

void ReleaseSlot(void* slot) {
  static_cast<Slot*>(slot)->taken.store(false, std::memory_order_release);
  // What the rest of the thread's exit allocates counts as shared: no
  // slot is taken again.
  books.slot = &shared_slot;
  books.owns_slot = false;
}

// Before main, so every thread but the main one finds the key.
const bool slot_key_ready = [] {
  if (pthread_key_create(&slot_key, &ReleaseSlot) != 0) return false;
  slot_key_created.store(true, std::memory_order_release);
  return true;
}();

Slot* TakeSlot(ThreadBooks& t) {
  // Until a slot is found (for good if none is), and for what
  // pthread_setspecific() may allocate meanwhile: the shared one.
  t.slot = &shared_slot;
  const int start = next_slot.load(std::memory_order_relaxed);
  for (int i = 0; i < kSlots; ++i) {
    const int index = (start + i) % kSlots;
    Slot& slot = slots[index];
    bool free = false;
    if (slot.taken.load(std::memory_order_relaxed) ||
        !slot.taken.compare_exchange_strong(free, true,
                                            std::memory_order_acquire)) {
      continue;
    }
    next_slot.store((index + 1) % kSlots, std::memory_order_relaxed);
    int bound = slots_bound.load(std::memory_order_relaxed);
    while (bound < index + 1 &&
           !slots_bound.compare_exchange_weak(bound, index + 1,
                                              std::memory_order_relaxed)) {
    }
    // The main thread may allocate before the key exists; it never gives
    // its slot back. (A key past the first 32 may make glibc allocate
    // here: that allocation counts in shared_slot.)
    if (slot_key_created.load(std::memory_order_acquire)) {
      pthread_setspecific(slot_key, &slot);
    }
    t.slot = &slot;
    t.owns_slot = true;
    break;
  }
  return t.slot;
}

Slot* SlotOf(ThreadBooks& t) {
  return t.slot != nullptr ? t.slot : TakeSlot(t);
}

void Add(std::atomic<int64_t>& counter, int64_t delta, bool owner) {
  if (owner) {
    counter.store(counter.load(std::memory_order_relaxed) + delta,
                  std::memory_order_relaxed);
  } else {
    counter.fetch_add(delta, std::memory_order_relaxed);
  }
}

int RoleFromName() {
  // For the calling thread glibc reads the name with prctl: no allocation.
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  if (std::strncmp(name, "h2rpc-channel", 13) == 0) {
    return static_cast<int>(ThreadRole::kClient);
  }
  if (std::strncmp(name, "h2rpc-server", 12) == 0 ||
      std::strncmp(name, "h2rpc-worker", 12) == 0) {
    return static_cast<int>(ThreadRole::kServer);
  }
  return -1;
}

int CurrentRole(ThreadBooks& t) {
  if (t.role > 0) return t.role - 1;
  if (t.until_name_check > 0) {
    --t.until_name_check;
  } else {
    const int named = RoleFromName();
    if (named >= 0) {
      t.role = named + 1;
      return named;
    }
    if (++t.name_checks >= kEagerNameChecks) {
      t.name_check_interval =
          std::min(std::max<uint32_t>(1, 2 * t.name_check_interval),
                   kMaxNameCheckInterval);
      t.until_name_check = t.name_check_interval;
    }
  }
  return default_role.load(std::memory_order_relaxed);
}

void TrackLiveBytes(int64_t delta) {
  const int64_t now =
      tracked_delta.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = tracked_peak_delta.load(std::memory_order_relaxed);
  while (now > peak && !tracked_peak_delta.compare_exchange_weak(
                           peak, now, std::memory_order_relaxed)) {
  }
}

template <class Field>
int64_t Sum(Field field) {
  int64_t sum = field(shared_slot).load(std::memory_order_relaxed);
  const int bound = slots_bound.load(std::memory_order_relaxed);
  for (int i = 0; i < bound; ++i) {
    sum += field(slots[i]).load(std::memory_order_relaxed);
  }
  return sum;
}

}  // namespace

namespace allocation_internal {

void RecordAllocation(size_t requested, size_t usable) {
  ThreadBooks& t = books;
  ++t.allocations;
  t.bytes += static_cast<int64_t>(requested);
  const int role = CurrentRole(t);
  Slot* const slot = SlotOf(t);
  Add(slot->allocations[role], 1, t.owns_slot);
  Add(slot->bytes[role], static_cast<int64_t>(requested), t.owns_slot);
  Add(slot->live_bytes, static_cast<int64_t>(usable), t.owns_slot);
  if (tracking_peak.load(std::memory_order_relaxed)) {
    TrackLiveBytes(static_cast<int64_t>(usable));
  }
}

void RecordFree(size_t usable) {
  ThreadBooks& t = books;
  Slot* const slot = SlotOf(t);
  Add(slot->live_bytes, -static_cast<int64_t>(usable), t.owns_slot);
  if (tracking_peak.load(std::memory_order_relaxed)) {
    TrackLiveBytes(-static_cast<int64_t>(usable));
  }
}

}  // namespace allocation_internal

AllocationCounter::AllocationCounter() { Reset(); }

int64_t AllocationCounter::allocations() const {
  return books.allocations - start_allocations_;
}

int64_t AllocationCounter::bytes() const { return books.bytes - start_bytes_; }

void AllocationCounter::Reset() {
  start_allocations_ = books.allocations;
  start_bytes_ = books.bytes;
}

void SetDefaultRole(ThreadRole role) {
  default_role.store(static_cast<int>(role), std::memory_order_relaxed);
}

void SetThisThreadRole(ThreadRole role) {
  books.role = static_cast<int>(role) + 1;
}

AllocationTotals AllocationsByRole(ThreadRole role) {
  const int i = static_cast<int>(role);
  return {
      Sum([i](Slot& s) -> std::atomic<int64_t>& { return s.allocations[i]; }),
      Sum([i](Slot& s) -> std::atomic<int64_t>& { return s.bytes[i]; })};
}

int64_t LiveHeapBytes() {
  return Sum([](Slot& s) -> std::atomic<int64_t>& { return s.live_bytes; });
}

int64_t PeakLiveHeapBytes() {
  if (!tracking_peak.load(std::memory_order_seq_cst)) return LiveHeapBytes();
  return peak_base.load(std::memory_order_relaxed) +
         tracked_peak_delta.load(std::memory_order_relaxed);
}

void ResetPeakLiveHeapBytes() {
  tracking_peak.store(true, std::memory_order_seq_cst);
  const int64_t delta = tracked_delta.load(std::memory_order_relaxed);
  tracked_peak_delta.store(delta, std::memory_order_relaxed);
  peak_base.store(LiveHeapBytes() - delta, std::memory_order_relaxed);
}

}  // namespace h2rpc::testing
