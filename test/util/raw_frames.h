#ifndef H2RPC_TEST_UTIL_RAW_FRAMES_H_
#define H2RPC_TEST_UTIL_RAW_FRAMES_H_

// Hand-made HTTP/2 bytes for tests that must break rules an HTTP/2 library
// would not let them break (more streams than the peer allows, floods,
// endless CONTINUATION), and decoding of what a server sends back. Write the
// bytes with SendRawBytes() (raw_h2_client.h).
//
//   std::string bytes = absl::StrCat(
//       kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
//       EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
//                   EncodeLiteralHeaderBlock(GrpcRequestHeaders(path, port))));

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "test/util/raw_h2_client.h"

namespace h2rpc::testing {

// The client connection preface (RFC 9113 section 3.4), without SETTINGS.
inline constexpr absl::string_view kClientPreface =
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// A 9-byte frame header.
std::string EncodeFrameHeader(uint32_t length, uint8_t type, uint8_t flags,
                              uint32_t stream_id);
// A whole frame: header and `payload`.
std::string EncodeFrame(uint8_t type, uint8_t flags, uint32_t stream_id,
                        absl::string_view payload);
// An HPACK block of `headers` as literals without indexing with new names
// and no Huffman coding: it changes no decoder state, so blocks can be sent
// in any order.
std::string EncodeLiteralHeaderBlock(const RawHeaders& headers);

// The header blocks in `frames` (HEADERS with its CONTINUATIONs), decoded
// in order with one HPACK decoder as the connection's peer would, by stream.
// Returns false if a block does not decode.
bool DecodeHeaderBlocks(const std::vector<RawFrame>& frames,
                        std::map<uint32_t, std::vector<RawHeaders>>* blocks);

// First value of `name` in `headers`.
absl::optional<std::string> FindHeader(const RawHeaders& headers,
                                       absl::string_view name);

// The GOAWAY in `frames`, if any: its error code.
absl::optional<uint32_t> GoAwayErrorCode(const std::vector<RawFrame>& frames);
// The GOAWAY in `frames`, if any: its debug data.
absl::optional<std::string> GoAwayDebugData(
    const std::vector<RawFrame>& frames);
// The RST_STREAM error code on `stream_id`, if one was sent.
absl::optional<uint32_t> RstStreamErrorCode(const std::vector<RawFrame>& frames,
                                            uint32_t stream_id);
// The value of `id` in the first non-ACK SETTINGS frame.
absl::optional<uint32_t> SettingValue(const std::vector<RawFrame>& frames,
                                      uint16_t id);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_RAW_FRAMES_H_
