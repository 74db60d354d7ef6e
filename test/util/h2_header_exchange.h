#ifndef H2RPC_TEST_UTIL_H2_HEADER_EXCHANGE_H_
#define H2RPC_TEST_UTIL_H2_HEADER_EXCHANGE_H_

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "absl/types/span.h"

namespace h2rpc::testing {

// A header field as a real nghttp2 peer decoded it.
struct DecodedField {
  std::string name;
  std::string value;
  bool never_indexed = false;  // sent with NGHTTP2_NV_FLAG_NO_INDEX
};

// What the receiving nghttp2 session made of a header block.
struct HeaderExchange {
  // False when the receiver rejected the block as malformed HTTP/2 (e.g. a
  // pseudo-header after a regular one); `error` then says why.
  bool accepted = false;
  std::string error;
  std::vector<DecodedField> headers;   // the first header block
  std::vector<DecodedField> trailers;  // the second one, if any
};

// Submits `request` from an nghttp2 client session and decodes it in an
// nghttp2 server session, entirely in memory, with nghttp2's HTTP messaging
// checks on. Shows what a real peer receives.
HeaderExchange ExchangeRequestHeaders(absl::Span<const nghttp2_nv> request);

// Opens a stream with a minimal gRPC request, answers it from the server
// session with `response` (ending the stream when `trailers` is empty and
// `end_stream_with_headers` is set, as a Trailers-Only response does) and,
// if given, `trailers`; returns what the client session decoded.
HeaderExchange ExchangeResponseHeaders(
    absl::Span<const nghttp2_nv> response,
    absl::optional<absl::Span<const nghttp2_nv>> trailers,
    bool end_stream_with_headers);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_H2_HEADER_EXCHANGE_H_
