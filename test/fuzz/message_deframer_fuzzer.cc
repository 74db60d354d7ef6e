// Fuzzes MessageDeframer with arbitrary bytes cut into arbitrary chunks.
//
// Input layout:
//   byte 0     max_message_size: low 7 bits, times 16 when the high bit is set
//   byte 1     bit 0: compression_available; bits 1-3: eager_reserve_limit
//              (from a table); bits 4-7: the listener refuses that message
//              (counted from 1; 0 = never)
//   bytes 2-5  chunk sizes, used in turn (each % 40; 0 feeds an empty chunk)
//   the rest   the stream
//
// Invariants (abort() on violation): no delivered message exceeds the limit
// or is compressed without compression_available; the delivered messages,
// framed again, are exactly the start of the stream; the gather buffer never
// exceeds the limit; feeding the stream whole (after Reset()) yields the same
// messages and the same status; both agree with a straightforward reference
// parse of the stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/core/message_deframer.h"
#include "transport/core/message_framer.h"

namespace h2rpc::transport {
namespace {

constexpr size_t kHeaderSize = 6;
constexpr size_t kEagerLimits[8] = {0, 1, 2, 4, 8, 16, 64, 1024};

void Check(bool condition) {
  if (!condition) std::abort();
}

// Frames every delivered message again, so the result can be compared with
// the stream.
class ReframingListener : public MessageDeframer::Listener {
 public:
  ReframingListener(const MessageDeframer::Options& options, uint64_t fail_at)
      : options_(options), fail_at_(fail_at) {}

  Status OnMessage(absl::string_view message, bool compressed) override {
    Check(message.size() <= options_.max_message_size);
    Check(!compressed || options_.compression_available);
    char prefix[kMessagePrefixSize];
    EncodeMessagePrefix(compressed, static_cast<uint32_t>(message.size()),
                        prefix);
    reframed_.append(prefix, kMessagePrefixSize);
    reframed_.append(message.data(), message.size());
    if (++count_ == fail_at_) {
      return Status(StatusCode::kAborted, "listener refused the message");
    }
    return Status();
  }

  const std::string& reframed() const { return reframed_; }
  uint64_t count() const { return count_; }

 private:
  const MessageDeframer::Options options_;
  const uint64_t fail_at_;
  std::string reframed_;
  uint64_t count_ = 0;
};

struct Outcome {
  Status status;
  std::string reframed;
  uint64_t count;
};

// Feeds `stream` in chunks whose sizes cycle through `sizes` (empty if null:
// then the stream goes in one chunk), then ends the stream.
Outcome Run(MessageDeframer& deframer, absl::string_view stream,
            const uint8_t* sizes, uint64_t fail_at) {
  ReframingListener listener(deframer.options(), fail_at);
  Status status;
  if (sizes == nullptr) {
    status = deframer.Feed(stream, listener);
  } else {
    size_t turn = 0;
    int empties_in_a_row = 0;
    while (status.ok() && !stream.empty()) {
      size_t size = sizes[turn++ % 4] % 40;
      if (size == 0 && ++empties_in_a_row > 4) size = 1;
      if (size != 0) empties_in_a_row = 0;
      size = std::min(size, stream.size());
      status = deframer.Feed(stream.substr(0, size), listener);
      stream.remove_prefix(size);
    }
  }
  const Status finish = deframer.Finish();
  if (!status.ok()) {
    Check(finish == status);
    Check(!deframer.at_message_boundary());
    // Sticky, and nothing more is delivered.
    Check(deframer.Feed("\0\0\0\0\0", listener) == status);
  } else {
    Check(deframer.at_message_boundary() == finish.ok());
  }
  Check(deframer.gather_capacity() <= deframer.options().max_message_size);
  Check(deframer.messages_delivered() == listener.count());
  return {finish, listener.reframed(), listener.count()};
}

// The plain reading of the stream: how many messages it delivers, where they
// end, and the resulting status code.
struct Reference {
  StatusCode code = StatusCode::kOk;
  uint64_t count = 0;
  size_t consumed = 0;
};

Reference Parse(absl::string_view stream,
                const MessageDeframer::Options& options, uint64_t fail_at) {
  Reference ref;
  while (ref.consumed < stream.size()) {
    const absl::string_view rest = stream.substr(ref.consumed);
    const uint8_t flag = static_cast<uint8_t>(rest[0]);
    if (flag > 1 || (flag == 1 && !options.compression_available)) {
      ref.code = StatusCode::kInternal;
      return ref;
    }
    if (rest.size() < kMessagePrefixSize) {
      ref.code = StatusCode::kInternal;
      return ref;
    }
    const uint32_t length = DecodeMessagePrefix(rest.data()).length;
    if (length > options.max_message_size) {
      ref.code = StatusCode::kResourceExhausted;
      return ref;
    }
    if (rest.size() - kMessagePrefixSize < length) {
      ref.code = StatusCode::kInternal;
      return ref;
    }
    ref.consumed += kMessagePrefixSize + length;
    if (++ref.count == fail_at) {
      ref.code = StatusCode::kAborted;
      return ref;
    }
  }
  return ref;
}

}  // namespace
}  // namespace h2rpc::transport

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace h2rpc::transport;  // NOLINT(build/namespaces)
  using h2rpc::StatusCode;
  if (size < kHeaderSize) return 0;
  MessageDeframer::Options options;
  options.max_message_size = data[0] & 0x7F;
  if (data[0] & 0x80) options.max_message_size *= 16;
  options.compression_available = (data[1] & 1) != 0;
  options.eager_reserve_limit = kEagerLimits[(data[1] >> 1) & 7];
  const uint64_t fail_at = data[1] >> 4;
  const absl::string_view stream(
      reinterpret_cast<const char*>(data) + kHeaderSize, size - kHeaderSize);

  MessageDeframer deframer(options);
  const Outcome split = Run(deframer, stream, data + 2, fail_at);
  Check(split.reframed.size() <= stream.size());
  Check(std::memcmp(split.reframed.data(), stream.data(),
                    split.reframed.size()) == 0);
  Check(split.status.ok() == (split.reframed.size() == stream.size()) ||
        split.status.code() == StatusCode::kAborted);

  deframer.Reset(options);
  const Outcome whole = Run(deframer, stream, nullptr, fail_at);
  Check(whole.status == split.status);
  Check(whole.count == split.count);
  Check(whole.reframed == split.reframed);

  const Reference ref = Parse(stream, options, fail_at);
  Check(ref.code == split.status.code());
  Check(ref.count == split.count);
  Check(ref.consumed == split.reframed.size());
  return 0;
}
