#include "transport/core/message_deframer.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport {
namespace {

Status CheckFlag(uint8_t flag, bool compression_available) {
  if (flag == 0) return Status();
  if (flag == 1) {
    if (compression_available) return Status();
    return Status(StatusCode::kInternal,
                  "received a message with the compressed flag set but no "
                  "grpc-encoding was negotiated");
  }
  return Status(StatusCode::kInternal,
                absl::StrCat("received a message with invalid compressed flag ",
                             flag, " (must be 0 or 1)"));
}

}  // namespace

MessageDeframer::MessageDeframer(const Options& options) : options_(options) {}

MessageDeframer::~MessageDeframer() { ReturnGrant(); }

void MessageDeframer::ReturnGrant() {
  waiting_ = false;
  if (granted_ == 0) return;
  options_.quota->Release(granted_);
  granted_ = 0;
}

void MessageDeframer::ShrinkGatherBuffer() {
  if (capacity_ <= std::max<size_t>(options_.eager_reserve_limit, 1)) return;
  FreeGatherBuffer();
}

void MessageDeframer::FreeGatherBuffer() {
  if (options_.buffer_cache != nullptr) {
    options_.buffer_cache->Give(&buffer_);
  } else {
    std::string().swap(buffer_);
  }
  capacity_ = 0;
}

void MessageDeframer::Reset(const Options& options) {
  ReturnGrant();
  ShrinkGatherBuffer();  // a large buffer goes back to the old cache
  options_ = options;
  ShrinkGatherBuffer();
  state_ = State::kPrefix;
  compressed_ = false;
  prefix_size_ = 0;
  length_ = 0;
  gathered_ = 0;
  messages_delivered_ = 0;
  error_ = Status();
}

void MessageDeframer::ReleaseGatherBuffer() {
  FreeGatherBuffer();
  gathered_ = 0;
}

bool MessageDeframer::at_message_boundary() const {
  return state_ == State::kPrefix && prefix_size_ == 0;
}

size_t MessageDeframer::ungranted_bytes() const {
  if (options_.quota == nullptr) return 0;
  switch (state_) {
    case State::kPrefix:
      return prefix_size_;
    case State::kBody:
      return granted_ > 0 ? 0 : kMessagePrefixSize + gathered_;
    case State::kError:
      return 0;
  }
  return 0;
}

bool MessageDeframer::RetryGrant() {
  if (!waiting_) return true;
  if (!options_.quota->TryReserve(length_)) return false;
  granted_ = length_;
  waiting_ = false;
  return true;
}

Status MessageDeframer::Finish() const {
  switch (state_) {
    case State::kError:
      return error_;
    case State::kPrefix:
      if (prefix_size_ == 0) return Status();
      return Status(StatusCode::kInternal,
                    absl::StrCat("stream ended inside the prefix of message #",
                                 messages_delivered_ + 1, ": ",
                                 kMessagePrefixSize - prefix_size_, " of its ",
                                 kMessagePrefixSize, " prefix bytes missing"));
    case State::kBody:
      return Status(
          StatusCode::kInternal,
          absl::StrCat("stream ended inside message #", messages_delivered_ + 1,
                       ": ", length_ - gathered_, " of its ", length_,
                       " bytes missing"));
  }
  return Status();
}

Status MessageDeframer::Fail(Status status) {
  ReturnGrant();
  error_ = std::move(status);
  state_ = State::kError;
  return error_;
}

Status MessageDeframer::BeginMessage(const MessagePrefix& prefix) {
  Status status = CheckFlag(prefix.flag, options_.compression_available);
  if (!status.ok()) return status;
  if (prefix.length > options_.max_message_size) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("received message of ", prefix.length,
                     " bytes exceeds the limit of ", options_.max_message_size,
                     " (max_receive_message_size)"));
  }
  if (options_.quota != nullptr &&
      prefix.length > options_.quota->max_reservation()) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("received message of ", prefix.length,
                     " bytes exceeds the most memory the server grants one "
                     "message, ",
                     options_.quota->max_reservation(),
                     " bytes (memory_quota_share, memory_quota)"));
  }
  compressed_ = prefix.flag == 1;
  length_ = prefix.length;
  gathered_ = 0;
  return status;
}

Status MessageDeframer::EnsureGatherCapacity(size_t needed) {
  // A message small enough for the string's inline storage needs nothing.
  if (needed <= capacity_ || length_ <= buffer_.capacity()) return Status();
  const size_t eager_limit = std::max<size_t>(options_.eager_reserve_limit, 1);
  size_t new_capacity;
  if (granted_ > 0 || (options_.quota == nullptr && length_ <= eager_limit)) {
    new_capacity = length_;
  } else {
    // needed <= length_, so this ends, without overflow, at most at length_.
    new_capacity = std::max(capacity_, eager_limit);
    while (new_capacity < needed) {
      new_capacity = new_capacity > length_ / 2 ? length_ : new_capacity * 2;
    }
    new_capacity = std::min(new_capacity, length_);
  }
  std::string buffer;
  if (gathered_ == 0 && options_.buffer_cache != nullptr &&
      options_.buffer_cache->TakeCached(length_, &buffer)) {
    // Memory the process holds already: the whole message at once.
    FreeGatherBuffer();
    buffer_.swap(buffer);
    capacity_ = buffer_.capacity();
    return Status();
  }
  try {
    buffer.reserve(new_capacity);
  } catch (const std::bad_alloc&) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("could not allocate ", new_capacity,
                     " bytes to receive a message of ", length_, " bytes"));
  }
  buffer.append(buffer_.data(), gathered_);
  // A step of the growth goes back to the allocator, not to the cache,
  // which keeps the sizes that whole messages need.
  buffer_.swap(buffer);
  capacity_ = buffer_.capacity();
  return Status();
}

Status MessageDeframer::Deliver(absl::string_view message, Listener& listener) {
  ++messages_delivered_;
  state_ = State::kPrefix;
  prefix_size_ = 0;
  gathered_ = 0;
  Status status = listener.OnMessage(message, compressed_);
  // The message (which may lie in the buffer) is no longer needed.
  ShrinkGatherBuffer();
  ReturnGrant();
  if (!status.ok()) return Fail(std::move(status));
  return status;
}

Status MessageDeframer::Feed(absl::string_view chunk, Listener& listener) {
  if (state_ == State::kError) return error_;
  const char* data = chunk.data();
  size_t size = chunk.size();
  while (size > 0) {
    if (state_ == State::kPrefix) {
      MessagePrefix prefix;
      if (prefix_size_ == 0 && size >= kMessagePrefixSize) {
        // Fast path: the whole prefix is in this chunk.
        prefix = DecodeMessagePrefix(data);
        data += kMessagePrefixSize;
        size -= kMessagePrefixSize;
      } else {
        const size_t take = std::min(size, kMessagePrefixSize - prefix_size_);
        std::memcpy(prefix_ + prefix_size_, data, take);
        if (prefix_size_ == 0) {
          // Judge the flag as soon as it arrives.
          Status status = CheckFlag(static_cast<uint8_t>(prefix_[0]),
                                    options_.compression_available);
          if (!status.ok()) return Fail(std::move(status));
        }
        prefix_size_ += take;
        data += take;
        size -= take;
        if (prefix_size_ < kMessagePrefixSize) break;  // chunk used up
        prefix = DecodeMessagePrefix(prefix_);
      }
      Status status = BeginMessage(prefix);
      if (!status.ok()) return Fail(std::move(status));
      state_ = State::kBody;
      // Fall through to the body, even with size == 0: a zero-length message
      // is complete now.
    }
    // State::kBody.
    if (gathered_ == 0 && size >= length_) {
      // The whole body is in this chunk: hand out a view, no copy.
      const absl::string_view message(data, length_);
      data += length_;
      size -= length_;
      Status status = Deliver(message, listener);
      if (!status.ok()) return status;
      continue;
    }
    if (size == 0) break;  // the body starts in a later chunk
    if (gathered_ == 0 && options_.quota != nullptr && granted_ == 0 &&
        !waiting_) {
      // The message spans chunks: it needs a grant to be gathered as one.
      if (options_.quota->TryReserve(length_)) {
        granted_ = length_;
      } else {
        waiting_ = true;
      }
    }
    const size_t take = std::min(size, length_ - gathered_);
    Status status = EnsureGatherCapacity(gathered_ + take);
    if (!status.ok()) return Fail(std::move(status));
    // Overwrites what the buffer holds past the message's bytes, then
    // appends: each byte is written once (capacity for all is reserved).
    const size_t overwrite = std::min(take, buffer_.size() - gathered_);
    std::memcpy(buffer_.data() + gathered_, data, overwrite);
    buffer_.append(data + overwrite, take - overwrite);
    gathered_ += take;
    data += take;
    size -= take;
    if (gathered_ == length_) {
      status = Deliver(absl::string_view(buffer_.data(), length_), listener);
      if (!status.ok()) return status;
    }
  }
  return Status();
}

}  // namespace h2rpc::transport
