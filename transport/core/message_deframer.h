#ifndef H2RPC_TRANSPORT_CORE_MESSAGE_DEFRAMER_H_
#define H2RPC_TRANSPORT_CORE_MESSAGE_DEFRAMER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/core/large_buffer_cache.h"
#include "transport/core/memory_quota.h"
#include "transport/core/message_framer.h"

namespace h2rpc::transport {

// The receiving half of gRPC message framing: an incremental state machine
// that takes a stream's DATA payload in chunks of any size (including empty
// ones) and hands each complete length-prefixed message to a Listener.
// No I/O, no threads; one instance per stream, used by one thread at a time.
//
// Memory:
//  * A message lying entirely inside one chunk (its prefix may have come
//    earlier) is passed as a view into that chunk: no copy, no allocation.
//  * Only a message whose body spans chunks is copied into the gather buffer.
//    Its declared length is checked against Options::max_message_size before
//    anything is allocated.
//  * Without a memory quota (Options::quota null, clients): a message
//    declaring at most eager_reserve_limit bytes gets a buffer of exactly its
//    length at once; a larger one grows its buffer only as bytes arrive,
//    doubling from max(current capacity, eager_reserve_limit) and capped at
//    the declared length. Memory held is then at most
//    max(eager_reserve_limit, 2 x the bytes received), and a message of L
//    bytes costs at most log2(L / eager_reserve_limit) + 1 allocations.
//  * With a quota (servers): a message must be *granted* its declared length
//    by the quota (a MemoryQuotaShare) before it is gathered as granted:
//      - granted: one buffer of exactly the declared length; the grant
//        returns when the message is delivered (or abandoned);
//      - refused: the message waits (waiting_for_grant()); the bytes that
//        still arrive are gathered into a buffer growing as above, and
//        ungranted_bytes() reports them so that the stream withholds their
//        flow-control credit (the peer can then send no more than its
//        windows allow); RetryGrant() tries again when memory frees up.
//    A message declaring more than the quota could ever grant
//    (MemoryQuotaShare::max_reservation) fails with RESOURCE_EXHAUSTED.
//    So granted gathering memory stays within the quota, and ungranted
//    memory within 2 x the bytes the peer could send without credit.
//  * A gather buffer of at most eager_reserve_limit keeps its capacity for
//    the next messages (and across Reset()); a larger one is freed once its
//    message is delivered or abandoned. ReleaseGatherBuffer() frees any.
//    With Options::buffer_cache, a message that spans chunks first looks in
//    that cache for a buffer of its whole length (memory the process holds
//    already; within the cache's 1/8 capacity margin), and a large buffer
//    freed after its message goes back to the cache: a stream of large
//    messages of similar sizes then gathers each into one reused buffer,
//    with no allocation and no regrowth.
//
// Errors are sticky: once Feed() fails, every later Feed() and Finish()
// returns the same status and no further message is delivered.
//
//   MessageDeframer deframer(options);
//   for each DATA frame: status = deframer.Feed(payload, listener);
//   at END_STREAM:       status = deframer.Finish();
class MessageDeframer {
 public:
  struct Options {
    // Bytes. The receive limit (max_receive_message_size): a message declaring
    // more fails the stream with RESOURCE_EXHAUSTED.
    size_t max_message_size = 4 * 1024 * 1024;
    // True when a usable non-identity grpc-encoding was negotiated for this
    // stream. When false, a message with the compressed flag set fails the
    // stream with INTERNAL.
    bool compression_available = false;
    // Bytes. Without a quota, messages declaring at most this many bytes get
    // their whole gather buffer at once, larger ones grow it as data arrives.
    // A gather buffer up to this capacity is kept for the next messages; a
    // larger one is freed after its message (see the class comment). 0
    // behaves as 1.
    size_t eager_reserve_limit = 64 * 1024;
    // Grants memory to messages being gathered (see the class comment);
    // null: no quota, no byte is ever ungranted. Used on the deframer's
    // thread; must outlive the deframer (or its next Reset()).
    MemoryQuotaShare* quota = nullptr;
    // Where large gather buffers come from and go back to; null: the
    // allocator. Must outlive the deframer (or its next Reset()).
    LargeBufferCache* buffer_cache = nullptr;
  };

  // Receives complete messages.
  class Listener {
   public:
    virtual ~Listener() = default;
    // Called once per complete message, in stream order. `message` is valid
    // only during the call (it points into the chunk being fed or into the
    // deframer's gather buffer). `compressed` is true when the flag was 1
    // (only possible with Options::compression_available); decompressing is
    // the listener's business. A non-OK return stops the deframer with that
    // status: Feed() returns it, now and from then on. The listener must not
    // call Feed(), Reset(), RetryGrant() or ReleaseGatherBuffer() on this
    // deframer.
    virtual Status OnMessage(absl::string_view message, bool compressed) = 0;
  };

  // Starts at a message boundary. Allocates nothing until a message spans
  // chunks.
  explicit MessageDeframer(const Options& options);
  // Returns any grant.
  ~MessageDeframer();
  MessageDeframer(const MessageDeframer&) = delete;
  MessageDeframer& operator=(const MessageDeframer&) = delete;

  // Consumes all of `chunk`, calling `listener` for each message it
  // completes. `chunk` need only be valid during the call. Allocates only to
  // gather a message spanning chunks (see the class comment) or to build an
  // error. Returns OK, or (and from then on, for every call):
  //  * INTERNAL if a compressed flag is not 0 or 1, or is 1 without
  //    Options::compression_available;
  //  * RESOURCE_EXHAUSTED if a message declares more than
  //    Options::max_message_size bytes ("received message of 5242880 bytes
  //    exceeds the limit of 4194304 (max_receive_message_size)"), or more
  //    than Options::quota could ever grant, or if the gather buffer cannot
  //    be allocated;
  //  * whatever non-OK status the listener returned.
  Status Feed(absl::string_view chunk, Listener& listener);

  // To be called at the end of the stream. Returns the sticky error if any;
  // else INTERNAL if the stream stopped inside a message, naming the message
  // (counted from 1) and how many of its prefix or body bytes are missing;
  // else OK. Does not change the state.
  Status Finish() const;

  // True when no error happened and no part of a message is pending: the
  // stream may end here.
  bool at_message_boundary() const;

  // Returns to the initial state with new options, for reuse by another
  // stream. Forgets any error and partial message (returning its grant);
  // keeps the gather buffer if its capacity is at most both the old and the
  // new options' eager_reserve_limit, frees it otherwise (to the old
  // options' buffer_cache, if any). Never allocates.
  void Reset(const Options& options);

  // Frees the gather buffer (e.g. when a pooled deframer goes idle). Must not
  // be called while a message is being gathered (!at_message_boundary()
  // without an error).
  void ReleaseGatherBuffer();

  // With a quota: bytes of the current message received and not covered by
  // a grant (its prefix, and its gathered body while it has no grant).
  // Their flow-control credit is withheld until the message is granted or
  // delivered. 0 without a quota.
  size_t ungranted_bytes() const;
  // The current message needs a grant that the quota refused.
  bool waiting_for_grant() const { return waiting_; }
  // While waiting_for_grant(): asks the quota again. True once the message
  // no longer waits (then ungranted_bytes() is 0). Never allocates (the
  // buffer grows to the granted size with the next bytes).
  bool RetryGrant();
  // Declared length of the message being received (0 between messages).
  size_t current_length() const { return state_ == State::kBody ? length_ : 0; }
  // Bytes of the current message's body still to come (0 between messages).
  size_t remaining_bytes() const {
    return state_ == State::kBody ? length_ - gathered_ : 0;
  }

  // Bytes currently allocated for gathering.
  size_t gather_capacity() const { return capacity_; }
  // Messages delivered to the listener since construction or Reset(),
  // including one the listener refused.
  uint64_t messages_delivered() const { return messages_delivered_; }
  // The options given at construction or to the last Reset().
  const Options& options() const { return options_; }

 private:
  enum class State : uint8_t { kPrefix, kBody, kError };

  // Validates a complete prefix and starts its message.
  Status BeginMessage(const MessagePrefix& prefix);
  // Makes room for `needed` gathered bytes of the current message.
  Status EnsureGatherCapacity(size_t needed);
  Status Deliver(absl::string_view message, Listener& listener);
  Status Fail(Status status);
  // Gives the current message's grant back, if it has one, and stops
  // waiting for one.
  void ReturnGrant();
  // Frees the gather buffer if it is larger than eager_reserve_limit.
  void ShrinkGatherBuffer();
  // Frees the gather buffer (to the cache, if there is one).
  void FreeGatherBuffer();

  Options options_;
  State state_ = State::kPrefix;
  bool compressed_ = false;
  size_t prefix_size_ = 0;  // bytes of prefix_ received
  char prefix_[kMessagePrefixSize];
  size_t length_ = 0;     // declared length of the current message
  size_t gathered_ = 0;   // bytes of the current message in buffer_
  size_t granted_ = 0;    // taken from options_.quota for it
  bool waiting_ = false;  // for a grant options_.quota refused
  // Its first gathered_ bytes are the current message's. Its size is how
  // far it has ever been written (at least gathered_): gathering overwrites
  // the bytes a previous message left (a buffer from the cache comes with
  // them, see LargeBufferCache) and appends past them.
  std::string buffer_;
  size_t capacity_ = 0;  // of buffer_'s heap storage; 0 without any
  uint64_t messages_delivered_ = 0;
  Status error_;
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_MESSAGE_DEFRAMER_H_
