#include "test/util/raw_frames.h"

#include <nghttp2/nghttp2.h>

#include <memory>

namespace h2rpc::testing {
namespace {

uint32_t ReadU32(const std::string& s, size_t at) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + at);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// An HPACK integer with an N-bit prefix (RFC 7541 section 5.1); the
// prefix's other bits are zero.
void AppendHpackInteger(uint64_t value, int prefix_bits, std::string* out) {
  const uint64_t max_prefix = (uint64_t{1} << prefix_bits) - 1;
  if (value < max_prefix) {
    out->push_back(static_cast<char>(value));
    return;
  }
  out->push_back(static_cast<char>(max_prefix));
  value -= max_prefix;
  while (value >= 128) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendHpackString(absl::string_view s, std::string* out) {
  AppendHpackInteger(s.size(), 7, out);
  out->append(s.data(), s.size());
}

struct InflaterDeleter {
  void operator()(nghttp2_hd_inflater* inflater) const {
    nghttp2_hd_inflate_del(inflater);
  }
};

bool Inflate(nghttp2_hd_inflater* inflater, const std::string& block,
             RawHeaders* headers) {
  const auto* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left,
                                             /*in_final=*/1);
    if (n < 0) return false;
    in += n;
    left -= static_cast<size_t>(n);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      headers->emplace_back(
          std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
          std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater);
      return true;
    }
    if (n == 0 && left == 0) return false;
  }
}

}  // namespace

std::string EncodeFrameHeader(uint32_t length, uint8_t type, uint8_t flags,
                              uint32_t stream_id) {
  std::string h(9, '\0');
  h[0] = static_cast<char>(length >> 16);
  h[1] = static_cast<char>(length >> 8);
  h[2] = static_cast<char>(length);
  h[3] = static_cast<char>(type);
  h[4] = static_cast<char>(flags);
  h[5] = static_cast<char>(stream_id >> 24);
  h[6] = static_cast<char>(stream_id >> 16);
  h[7] = static_cast<char>(stream_id >> 8);
  h[8] = static_cast<char>(stream_id);
  return h;
}

std::string EncodeFrame(uint8_t type, uint8_t flags, uint32_t stream_id,
                        absl::string_view payload) {
  std::string frame = EncodeFrameHeader(static_cast<uint32_t>(payload.size()),
                                        type, flags, stream_id);
  frame.append(payload.data(), payload.size());
  return frame;
}

std::string EncodeLiteralHeaderBlock(const RawHeaders& headers) {
  std::string block;
  for (const auto& [name, value] : headers) {
    block.push_back('\0');  // literal without indexing, new name
    AppendHpackString(name, &block);
    AppendHpackString(value, &block);
  }
  return block;
}

bool DecodeHeaderBlocks(const std::vector<RawFrame>& frames,
                        std::map<uint32_t, std::vector<RawHeaders>>* blocks) {
  nghttp2_hd_inflater* raw = nullptr;
  if (nghttp2_hd_inflate_new(&raw) != 0) return false;
  std::unique_ptr<nghttp2_hd_inflater, InflaterDeleter> inflater(raw);
  std::string block;
  uint32_t block_stream = 0;
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_HEADERS) {
      std::string payload = frame.payload;
      size_t pad = 0;
      if (frame.flags & NGHTTP2_FLAG_PADDED) {
        if (payload.empty()) return false;
        pad = static_cast<uint8_t>(payload[0]);
        payload.erase(0, 1);
      }
      if (frame.flags & NGHTTP2_FLAG_PRIORITY) {
        if (payload.size() < 5) return false;
        payload.erase(0, 5);
      }
      if (pad > payload.size()) return false;
      payload.resize(payload.size() - pad);
      block = std::move(payload);
      block_stream = frame.stream_id;
    } else if (frame.type == NGHTTP2_CONTINUATION) {
      block += frame.payload;
    } else {
      continue;
    }
    if ((frame.flags & NGHTTP2_FLAG_END_HEADERS) == 0) continue;
    RawHeaders headers;
    if (!Inflate(inflater.get(), block, &headers)) return false;
    (*blocks)[block_stream].push_back(std::move(headers));
  }
  return true;
}

absl::optional<std::string> FindHeader(const RawHeaders& headers,
                                       absl::string_view name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return absl::nullopt;
}

absl::optional<uint32_t> GoAwayErrorCode(const std::vector<RawFrame>& frames) {
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_GOAWAY && frame.payload.size() >= 8) {
      return ReadU32(frame.payload, 4);
    }
  }
  return absl::nullopt;
}

absl::optional<std::string> GoAwayDebugData(
    const std::vector<RawFrame>& frames) {
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_GOAWAY && frame.payload.size() >= 8) {
      return frame.payload.substr(8);
    }
  }
  return absl::nullopt;
}

absl::optional<uint32_t> RstStreamErrorCode(const std::vector<RawFrame>& frames,
                                            uint32_t stream_id) {
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_RST_STREAM && frame.stream_id == stream_id &&
        frame.payload.size() == 4) {
      return ReadU32(frame.payload, 0);
    }
  }
  return absl::nullopt;
}

absl::optional<uint32_t> SettingValue(const std::vector<RawFrame>& frames,
                                      uint16_t id) {
  for (const RawFrame& frame : frames) {
    if (frame.type != NGHTTP2_SETTINGS || (frame.flags & NGHTTP2_FLAG_ACK)) {
      continue;
    }
    for (size_t i = 0; i + 6 <= frame.payload.size(); i += 6) {
      const auto* p = reinterpret_cast<const uint8_t*>(frame.payload.data());
      if ((uint16_t{p[i]} << 8 | p[i + 1]) == id) {
        return ReadU32(frame.payload, i + 2);
      }
    }
    return absl::nullopt;
  }
  return absl::nullopt;
}

}  // namespace h2rpc::testing
