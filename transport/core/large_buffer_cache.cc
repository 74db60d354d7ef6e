#include "transport/core/large_buffer_cache.h"

#include <utility>

namespace h2rpc::transport {

LargeBufferCache& LargeBufferCache::Global() {
  static LargeBufferCache* const cache = new LargeBufferCache();
  return *cache;
}

bool LargeBufferCache::Take(size_t capacity, std::string* buffer) {
  if (buffer->capacity() >= capacity) return false;
  if (TakeCached(capacity, buffer)) return true;
  std::string().swap(*buffer);
  buffer->reserve(capacity);
  return false;
}

bool LargeBufferCache::TakeCached(size_t capacity, std::string* buffer) {
  if (capacity < kMinCapacity) return false;
  const size_t most = capacity + capacity / 8;
  std::string taken;
  {
    MutexLock lock(&mutex_);
    ++takes_;
    EvictIdle();
    // Newest first, stopping at an exact fit (none can be smaller): a
    // stream of equal messages finds its buffer at the end, where removing
    // it moves nothing.
    size_t best = buffers_.size();
    for (size_t i = buffers_.size(); i-- > 0;) {
      const size_t c = buffers_[i].buffer.capacity();
      if (c >= capacity && c <= most &&
          (best == buffers_.size() || c < buffers_[best].buffer.capacity())) {
        best = i;
        if (c == capacity) break;
      }
    }
    if (best == buffers_.size()) return false;
    taken = Remove(best);
  }
  buffer->swap(taken);  // what *buffer held is freed with `taken`
  return true;
}

void LargeBufferCache::Give(std::string* buffer) {
  std::string storage;
  storage.swap(*buffer);
  const size_t capacity = storage.capacity();
  if (capacity < kMinCapacity) return;
  MutexLock lock(&mutex_);
  EvictIdle();
  if (buffers_.size() >= kMaxBuffers ||
      retained_bytes_ + capacity > max_retained_bytes_) {
    return;  // freed when `storage` goes
  }
  retained_bytes_ += capacity;
  buffers_.push_back(Cached{std::move(storage), takes_});
}

std::string LargeBufferCache::Remove(size_t index) {
  std::string buffer = std::move(buffers_[index].buffer);
  retained_bytes_ -= buffer.capacity();
  buffers_.erase(buffers_.begin() + static_cast<ptrdiff_t>(index));
  return buffer;
}

void LargeBufferCache::EvictIdle() {
  while (!buffers_.empty() &&
         takes_ - buffers_.front().given_at > kMaxIdleTakes) {
    Remove(0);
  }
}

void LargeBufferCache::Clear() {
  MutexLock lock(&mutex_);
  buffers_.clear();
  retained_bytes_ = 0;
}

size_t LargeBufferCache::retained_bytes() const {
  MutexLock lock(&mutex_);
  return retained_bytes_;
}

size_t LargeBufferCache::retained_buffers() const {
  MutexLock lock(&mutex_);
  return buffers_.size();
}

size_t LargeBufferCache::max_retained_bytes() const {
  MutexLock lock(&mutex_);
  return max_retained_bytes_;
}

void LargeBufferCache::set_max_retained_bytes(size_t bytes) {
  MutexLock lock(&mutex_);
  max_retained_bytes_ = bytes;
  EvictToFit();
}

void LargeBufferCache::EvictToFit() {
  while (retained_bytes_ > max_retained_bytes_) Remove(0);
}

}  // namespace h2rpc::transport
