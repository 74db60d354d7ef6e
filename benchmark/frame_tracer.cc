#include "benchmark/frame_tracer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace h2rpc::benchmark {
namespace {

constexpr size_t kHeaderSize = 9;

uint32_t Read32(absl::string_view bytes, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(bytes[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 3]));
}

const char* TypeName(uint8_t type) {
  static const char* const kNames[] = {
      "DATA",         "HEADERS", "PRIORITY", "RST_STREAM",    "SETTINGS",
      "PUSH_PROMISE", "PING",    "GOAWAY",   "WINDOW_UPDATE", "CONTINUATION"};
  return type < 10 ? kNames[type] : "UNKNOWN";
}

// Frame types whose payload the line describes.
bool Described(uint8_t type) {
  return type == 3 || type == 4 || type == 6 || type == 7 || type == 8;
}

}  // namespace

std::vector<std::string> FrameTracer::Feed(absl::string_view bytes) {
  std::vector<std::string> lines;
  const size_t skip = std::min(preface_left_, bytes.size());
  preface_left_ -= skip;
  bytes.remove_prefix(skip);
  while (!bytes.empty()) {
    if (payload_left_ > 0) {
      const size_t take = std::min(payload_left_, bytes.size());
      if (gather_payload_) payload_.append(bytes.data(), take);
      payload_left_ -= take;
      bytes.remove_prefix(take);
      if (payload_left_ == 0 && gather_payload_) {
        lines.push_back(Describe());
        header_.clear();
      }
      continue;
    }
    const size_t take = std::min(kHeaderSize - header_.size(), bytes.size());
    header_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (header_.size() < kHeaderSize) break;
    payload_left_ = Read32(header_, 0) >> 8;
    gather_payload_ =
        Described(static_cast<uint8_t>(header_[3])) && payload_left_ > 0;
    payload_.clear();
    if (!gather_payload_) {
      lines.push_back(Describe());
      header_.clear();
    }
  }
  return lines;
}

std::string FrameTracer::Describe() const {
  const uint8_t type = static_cast<uint8_t>(header_[3]);
  const uint8_t flags = static_cast<uint8_t>(header_[4]);
  const uint32_t stream = Read32(header_, 5) & 0x7fffffffu;
  const uint32_t length = Read32(header_, 0) >> 8;
  std::string line =
      absl::StrCat(TypeName(type), " stream=", stream, " len=", length,
                   " flags=0x", absl::Hex(flags));
  const absl::string_view payload = payload_;
  if (type == 8 && payload.size() >= 4) {
    absl::StrAppend(&line, " increment=", Read32(payload, 0) & 0x7fffffffu);
  } else if ((type == 3 || type == 7) && payload.size() >= 4) {
    absl::StrAppend(&line, " error=", Read32(payload, type == 7 ? 4 : 0));
  } else if (type == 4) {
    for (size_t i = 0; i + 6 <= payload.size(); i += 6) {
      const uint16_t id =
          static_cast<uint16_t>(static_cast<uint8_t>(payload[i]) << 8 |
                                static_cast<uint8_t>(payload[i + 1]));
      absl::StrAppend(&line, " ", id, "=", Read32(payload, i + 2));
    }
  } else if (type == 6 && payload.size() >= 8) {
    absl::StrAppend(&line, " opaque=", absl::Hex(Read32(payload, 0)),
                    absl::Hex(Read32(payload, 4), absl::kZeroPad8));
  }
  return line;
}

}  // namespace h2rpc::benchmark
