#ifndef H2RPC_TRANSPORT_MESSAGE_DEFRAMER_H_
#define H2RPC_TRANSPORT_MESSAGE_DEFRAMER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/strings/string_view.h"
#include "transport/message_framer.h"
#include "transport/status.h"

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
//  * Gathering policy. A hostile peer can declare 4 MiB on each of 100 streams
//    and send 5 bytes on each; reserving the declared size up front would
//    commit 400 MiB for 500 bytes. So:
//      - declared length <= eager_reserve_limit: the buffer is grown once, to
//        exactly the declared length;
//      - above it, while Options::gather_budget (shared by a connection's
//        streams) grants the declared length: also grown once, to exactly
//        the declared length; the grant returns to the budget when the
//        message is complete (or abandoned);
//      - otherwise: capacity grows only as bytes arrive, doubling from
//        max(current capacity, eager_reserve_limit) and capped at the declared
//        length. Memory held is then at most max(eager_reserve_limit, 2 x the
//        bytes received), and a message of L bytes costs at most
//        log2(L / eager_reserve_limit) + 1 allocations.
//  * The gather buffer keeps its capacity across messages and across Reset(),
//    so a stream (or a pooled deframer) that has gathered one large message
//    gathers the next ones of that size without allocating.
//    ReleaseGatherBuffer() gives the memory back.
//
// Errors are sticky: once Feed() fails, every later Feed() and Finish()
// returns the same status and no further message is delivered.
//
//   MessageDeframer deframer(options);
//   for each DATA frame: status = deframer.Feed(payload, listener);
//   at END_STREAM:       status = deframer.Finish();
class MessageDeframer {
 public:
  // Bytes that the deframers of one connection may reserve up front for
  // large messages being gathered (see the class comment). One thread.
  class GatherBudget {
   public:
    explicit GatherBudget(size_t bytes) : available_(bytes) {}
    bool TryTake(size_t bytes) {
      if (bytes > available_) return false;
      available_ -= bytes;
      return true;
    }
    void Give(size_t bytes) { available_ += bytes; }
    size_t available() const { return available_; }

   private:
    size_t available_;
  };

  struct Options {
    // Bytes. The receive limit (max_receive_message_size): a message declaring
    // more fails the stream with RESOURCE_EXHAUSTED.
    size_t max_message_size = 4 * 1024 * 1024;
    // True when a usable non-identity grpc-encoding was negotiated for this
    // stream. When false, a message with the compressed flag set fails the
    // stream with INTERNAL.
    bool compression_available = false;
    // Bytes. Messages declaring at most this many bytes get their whole
    // gather buffer at once; larger ones grow it as data arrives (see the
    // class comment). 0 behaves as 1.
    size_t eager_reserve_limit = 64 * 1024;
    // Lets messages above eager_reserve_limit be gathered into one buffer of
    // their declared size; null: they always grow as data arrives. Must
    // outlive the deframer (or its next Reset()).
    GatherBudget* gather_budget = nullptr;
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
    // call Feed(), Reset() or ReleaseGatherBuffer() on this deframer.
    virtual Status OnMessage(absl::string_view message, bool compressed) = 0;
  };

  // Starts at a message boundary. Allocates nothing until a message spans
  // chunks.
  explicit MessageDeframer(const Options& options);
  // Returns any budget grant.
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
  //    exceeds the limit of 4194304 (max_receive_message_size)"), or if the
  //    gather buffer cannot be allocated;
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
  // stream. Forgets any error and partial message; keeps the gather buffer's
  // capacity. Never allocates.
  void Reset(const Options& options);

  // Frees the gather buffer (e.g. when a pooled deframer goes idle). Must not
  // be called while a message is being gathered (!at_message_boundary()
  // without an error).
  void ReleaseGatherBuffer();

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
  // Gives the current message's budget grant back, if it has one.
  void ReturnGrant();

  Options options_;
  State state_ = State::kPrefix;
  bool compressed_ = false;
  size_t prefix_size_ = 0;  // bytes of prefix_ received
  char prefix_[kMessagePrefixSize];
  size_t length_ = 0;    // declared length of the current message
  size_t gathered_ = 0;  // bytes of the current message in buffer_
  size_t granted_ = 0;   // taken from options_.gather_budget for it
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  uint64_t messages_delivered_ = 0;
  Status error_;
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_MESSAGE_DEFRAMER_H_
