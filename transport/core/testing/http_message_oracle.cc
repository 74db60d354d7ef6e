#include "transport/core/testing/http_message_oracle.h"

#include <nghttp2/nghttp2.h>

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace h2rpc::transport::testing {
namespace {

std::string FrameHeader(size_t length, uint8_t type, uint8_t flags,
                        int32_t stream_id) {
  return std::string{
      static_cast<char>(length >> 16),    static_cast<char>(length >> 8),
      static_cast<char>(length),          static_cast<char>(type),
      static_cast<char>(flags),           static_cast<char>(stream_id >> 24),
      static_cast<char>(stream_id >> 16), static_cast<char>(stream_id >> 8),
      static_cast<char>(stream_id)};
}

// The peer's side of the connection: frames for stream 1, header blocks
// encoded by an HPACK encoder that checks nothing.
class Peer {
 public:
  Peer() { nghttp2_hd_deflate_new(&deflater_, 4096); }
  ~Peer() { nghttp2_hd_deflate_del(deflater_); }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  std::string Headers(const HttpMessage::Block& block, bool end_stream) {
    std::vector<nghttp2_nv> nva;
    for (const auto& [name, value] : block.fields) {
      nva.push_back(nghttp2_nv{
          reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
          name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    std::string encoded(
        nghttp2_hd_deflate_bound(deflater_, nva.data(), nva.size()), '\0');
    const ssize_t n = nghttp2_hd_deflate_hd(
        deflater_, reinterpret_cast<uint8_t*>(encoded.data()), encoded.size(),
        nva.data(), nva.size());
    encoded.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return FrameHeader(encoded.size(), NGHTTP2_HEADERS,
                       NGHTTP2_FLAG_END_HEADERS |
                           (end_stream ? NGHTTP2_FLAG_END_STREAM : 0),
                       1) +
           encoded;
  }

  static std::string Data(size_t size, bool end_stream) {
    return FrameHeader(size, NGHTTP2_DATA,
                       end_stream ? NGHTTP2_FLAG_END_STREAM : 0, 1) +
           std::string(size, 'x');
  }

 private:
  nghttp2_hd_deflater* deflater_ = nullptr;
};

struct Observed {
  std::vector<std::vector<std::pair<std::string, std::string>>> kept;
};

int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.stream_id == 1)
    static_cast<Observed*>(user)->kept.emplace_back();
  return 0;
}

int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
             size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
             void* user) {
  auto* observed = static_cast<Observed*>(user);
  if (frame->hd.stream_id != 1 || observed->kept.empty()) return 0;
  observed->kept.back().emplace_back(
      std::string(reinterpret_cast<const char*>(name), namelen),
      std::string(reinterpret_cast<const char*>(value), valuelen));
  return 0;
}

// Whether `output` (what the session wrote) holds RST_STREAM on stream 1
// with PROTOCOL_ERROR.
bool ResetsStreamOne(const std::string& output, size_t* offset) {
  bool reset = false;
  while (*offset + 9 <= output.size()) {
    const auto byte = [&](size_t i) {
      return static_cast<uint8_t>(output[*offset + i]);
    };
    const size_t length = (byte(0) << 16) | (byte(1) << 8) | byte(2);
    if (*offset + 9 + length > output.size()) break;
    const int32_t stream_id = static_cast<int32_t>(
        ((byte(5) & 0x7F) << 24) | (byte(6) << 16) | (byte(7) << 8) | byte(8));
    if (byte(3) == NGHTTP2_RST_STREAM && stream_id == 1 && length == 4 &&
        byte(12) == NGHTTP2_PROTOCOL_ERROR && byte(9) == 0 && byte(10) == 0 &&
        byte(11) == 0) {
      reset = true;
    }
    *offset += 9 + length;
  }
  return reset;
}

std::string Drain(nghttp2_session* session) {
  std::string out;
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

HttpMessageOutcome Nghttp2Verdict(const HttpMessage& message) {
  Observed observed;
  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, OnHeader);
  nghttp2_session* session = nullptr;
  const bool server = message.role == HttpMessageCheck::Role::kRequest;
  if (server) {
    nghttp2_session_server_new(&session, callbacks, &observed);
  } else {
    nghttp2_session_client_new(&session, callbacks, &observed);
  }
  nghttp2_session_callbacks_del(callbacks);

  std::string output;
  size_t parsed = 0;
  auto feed = [&](const std::string& bytes) {
    nghttp2_session_mem_recv(
        session, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    output += Drain(session);
  };
  if (server) {
    feed(absl::StrCat(NGHTTP2_CLIENT_MAGIC,
                      FrameHeader(0, NGHTTP2_SETTINGS, 0, 0)));
  } else {
    const nghttp2_nv request[] = {
        {(uint8_t*)":method", (uint8_t*)"POST", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t*)":scheme", (uint8_t*)"http", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t*)":path", (uint8_t*)"/a.B/C", 5, 6, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t*)":authority", (uint8_t*)"h", 10, 1, NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_submit_request(session, nullptr, request, 4, nullptr, nullptr);
    output += Drain(session);
    // The client's connection preface is not a frame.
    parsed = NGHTTP2_CLIENT_MAGIC_LEN;
    feed(FrameHeader(0, NGHTTP2_SETTINGS, 0, 0));
  }
  ResetsStreamOne(output, &parsed);

  Peer peer;
  HttpMessageOutcome outcome;
  for (const HttpMessage::Block& block : message.blocks) {
    feed(peer.Headers(block, block.end_stream && block.data == 0));
    if (block.data > 0) feed(Peer::Data(block.data, block.end_stream));
    if (ResetsStreamOne(output, &parsed)) {
      outcome.malformed = true;
      break;
    }
    if (block.end_stream) break;
  }
  outcome.kept = std::move(observed.kept);
  nghttp2_session_del(session);
  return outcome;
}

HttpMessageOutcome CheckVerdict(const HttpMessage& message) {
  HttpMessageOutcome outcome;
  HttpMessageCheck check(message.role);
  check.Reset();
  auto malformed = [&] {
    outcome.malformed = true;
    outcome.error = std::string(check.error());
    return outcome;
  };
  for (const HttpMessage::Block& block : message.blocks) {
    check.BeginHeaders();
    outcome.kept.emplace_back();
    for (const auto& [name, value] : block.fields) {
      switch (check.OnField(name, value)) {
        case HttpMessageCheck::Verdict::kKeep:
          outcome.kept.back().emplace_back(name, value);
          break;
        case HttpMessageCheck::Verdict::kIgnore:
          break;
        case HttpMessageCheck::Verdict::kMalformed:
          return malformed();
      }
    }
    if (!check.EndHeaders(block.end_stream && block.data == 0)) {
      return malformed();
    }
    if (block.data > 0) {
      if (!check.OnData(block.data)) return malformed();
      if (block.end_stream && !check.OnEndStream()) return malformed();
    }
    if (block.end_stream) break;
  }
  return outcome;
}

std::string Describe(const HttpMessage& message) {
  std::string out = message.role == HttpMessageCheck::Role::kRequest
                        ? "request:"
                        : "response:";
  for (const HttpMessage::Block& block : message.blocks) {
    absl::StrAppend(&out, "\n  [");
    for (const auto& [name, value] : block.fields) {
      absl::StrAppend(&out, " '", absl::CHexEscape(name), "': '",
                      absl::CHexEscape(value), "'");
    }
    absl::StrAppend(&out, " ] data=", block.data,
                    block.end_stream ? " END_STREAM" : "");
  }
  return out;
}

}  // namespace h2rpc::transport::testing
