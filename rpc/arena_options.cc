#include "rpc/arena_options.h"

#include <new>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace h2rpc {
namespace {

class FreeBlocks {
 public:
  FreeBlocks() { blocks_.reserve(kMaxPooledArenaBlocks); }

  void* Take() {
    MutexLock lock(&mutex_);
    if (blocks_.empty()) return nullptr;
    void* block = blocks_.back();
    blocks_.pop_back();
    return block;
  }

  // False when full: the caller frees `block`.
  bool Give(void* block) {
    MutexLock lock(&mutex_);
    if (blocks_.size() >= kMaxPooledArenaBlocks) return false;
    blocks_.push_back(block);
    return true;
  }

  size_t size() {
    MutexLock lock(&mutex_);
    return blocks_.size();
  }

 private:
  Mutex mutex_;
  std::vector<void*> blocks_ ABSL_GUARDED_BY(mutex_);
};

FreeBlocks& Pool() {
  static FreeBlocks* const pool = new FreeBlocks();
  return *pool;
}

void* AllocateBlock(size_t size) {
  if (size == kArenaBlockSize) {
    if (void* block = Pool().Take()) return block;
  }
  return ::operator new(size);
}

void FreeBlock(void* block, size_t size) {
  if (size == kArenaBlockSize && Pool().Give(block)) return;
  ::operator delete(block);
}

}  // namespace

google::protobuf::ArenaOptions RecyclingArenaOptions(
    char* initial_block, size_t initial_block_size) {
  google::protobuf::ArenaOptions options;
  options.initial_block = initial_block;
  options.initial_block_size = initial_block_size;
  options.start_block_size = kArenaBlockSize;
  options.max_block_size = kArenaBlockSize;
  options.block_alloc = &AllocateBlock;
  options.block_dealloc = &FreeBlock;
  return options;
}

size_t PooledArenaBlocks() { return Pool().size(); }

}  // namespace h2rpc
