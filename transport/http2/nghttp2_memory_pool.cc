#include "transport/http2/nghttp2_memory_pool.h"

#include <cstring>
#include <new>

#include "absl/numeric/bits.h"

namespace h2rpc::transport::http2 {
namespace {

// Every block starts with a header holding its capacity; the 16 bytes keep
// the returned pointer aligned for any type nghttp2 stores.
constexpr size_t kHeader = 16;
constexpr size_t kMinClass = 32;

// Size class index for `size`, or -1 above the largest class.
int ClassOf(size_t size) {
  if (size > Nghttp2MemoryPool::kLargestClass) return -1;
  if (size <= kMinClass) return 0;
  // The smallest i with kMinClass << i >= size.
  return static_cast<int>(absl::bit_width((size - 1) / kMinClass));
}

size_t ClassCapacity(int index) { return kMinClass << index; }

size_t& CapacityOf(void* user) {
  return *reinterpret_cast<size_t*>(static_cast<char*>(user) - kHeader);
}

}  // namespace

Nghttp2MemoryPool::Nghttp2MemoryPool(size_t max_cached_bytes)
    : mem_{this, &MallocHook, &FreeHook, &CallocHook, &ReallocHook},
      max_cached_bytes_(max_cached_bytes) {}

Nghttp2MemoryPool::~Nghttp2MemoryPool() {
  for (FreeBlock*& head : free_) {
    while (head != nullptr) {
      FreeBlock* next = head->next;
      ::operator delete(reinterpret_cast<char*>(head) - kHeader);
      head = next;
    }
  }
}

void* Nghttp2MemoryPool::Allocate(size_t size) {
  const int index = ClassOf(size);
  if (index >= 0 && free_[index] != nullptr) {
    FreeBlock* block = free_[index];
    free_[index] = block->next;
    cached_bytes_ -= ClassCapacity(index);
    in_use_bytes_ += ClassCapacity(index);
    return block;
  }
  const size_t capacity = index >= 0 ? ClassCapacity(index) : size;
  char* raw =
      static_cast<char*>(::operator new(kHeader + capacity, std::nothrow));
  if (raw == nullptr) return nullptr;
  void* user = raw + kHeader;
  CapacityOf(user) = capacity;
  in_use_bytes_ += capacity;
  return user;
}

void Nghttp2MemoryPool::Free(void* p) {
  if (p == nullptr) return;
  const size_t capacity = CapacityOf(p);
  in_use_bytes_ -= capacity;
  const int index = ClassOf(capacity);
  if (index >= 0 && ClassCapacity(index) == capacity &&
      cached_bytes_ + capacity <= max_cached_bytes_) {
    auto* block = static_cast<FreeBlock*>(p);
    block->next = free_[index];
    free_[index] = block;
    cached_bytes_ += capacity;
    return;
  }
  ::operator delete(static_cast<char*>(p) - kHeader);
}

void Nghttp2MemoryPool::Trim(size_t max_cached_bytes) {
  for (int index = kClasses - 1; index >= 0 && cached_bytes_ > max_cached_bytes;
       --index) {
    while (free_[index] != nullptr && cached_bytes_ > max_cached_bytes) {
      FreeBlock* block = free_[index];
      free_[index] = block->next;
      cached_bytes_ -= ClassCapacity(index);
      ::operator delete(reinterpret_cast<char*>(block) - kHeader);
    }
  }
}

void* Nghttp2MemoryPool::Reallocate(void* p, size_t size) {
  if (p == nullptr) return Allocate(size);
  if (size == 0) {
    Free(p);
    return nullptr;
  }
  const size_t capacity = CapacityOf(p);
  if (size <= capacity) return p;
  void* grown = Allocate(size);
  if (grown == nullptr) return nullptr;
  std::memcpy(grown, p, capacity);
  Free(p);
  return grown;
}

void* Nghttp2MemoryPool::MallocHook(size_t size, void* self) {
  return static_cast<Nghttp2MemoryPool*>(self)->Allocate(size);
}

void Nghttp2MemoryPool::FreeHook(void* p, void* self) {
  static_cast<Nghttp2MemoryPool*>(self)->Free(p);
}

void* Nghttp2MemoryPool::CallocHook(size_t n, size_t size, void* self) {
  if (size != 0 && n > static_cast<size_t>(-1) / size) return nullptr;
  void* p = static_cast<Nghttp2MemoryPool*>(self)->Allocate(n * size);
  if (p != nullptr) std::memset(p, 0, n * size);
  return p;
}

void* Nghttp2MemoryPool::ReallocHook(void* p, size_t size, void* self) {
  return static_cast<Nghttp2MemoryPool*>(self)->Reallocate(p, size);
}

}  // namespace h2rpc::transport::http2
