#ifndef H2RPC_TRANSPORT_CORE_HTTP_MESSAGE_CHECK_H_
#define H2RPC_TRANSPORT_CORE_HTTP_MESSAGE_CHECK_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace h2rpc::transport {

// HTTP's rules for what one stream receives (RFC 9113 section 8, with RFC
// 9110's field syntax), checked field by field as HPACK decodes them: the
// checks nghttp2 makes when its HTTP messaging is on (nghttp2 1.52,
// lib/nghttp2_http.c), made here instead so that h2rpc's sessions turn
// nghttp2's off (nghttp2_option_set_no_http_messaging) and look at each field
// once. Same verdicts as nghttp2's for the requests a server and the
// responses a client receives (http_message_check_test and
// //test/fuzz:http_message_check_fuzzer feed both the same messages):
//
//   - a field whose name is not a lowercase token, or whose value has a
//     control character or surrounding whitespace (RFC 9113 section 8.2.1),
//     makes the message malformed (nghttp2's verdict when, as in h2rpc, no
//     invalid-header callback is set);
//   - pseudo-headers: only those of the role, each once, non-empty, before
//     every regular field, never in trailers; a request has :method,
//     :scheme, :path and :authority or host (CONNECT: :authority only), a
//     path that starts with '/' (or is '*' for OPTIONS) when the scheme is
//     http or https, a valid method token, scheme and authority; a response
//     has a three-digit :status that is not 101 (section 8.3);
//   - connection-specific fields (connection, keep-alive, proxy-connection,
//     transfer-encoding, upgrade) and a te other than "trailers" are
//     malformed (section 8.2.2);
//   - content-length, at most once, must be a decimal number the DATA
//     received matches (section 8.1.1); a 204 response may carry
//     content-length 0, which is dropped; trailers must end the stream.
//
// A malformed message is a stream error: the session resets the stream
// with PROTOCOL_ERROR (section 8.1.1). Neither side of h2rpc sends or
// accepts server push or extended CONNECT (:protocol is malformed), and a
// response's content-length is checked as for a POST (h2rpc's only method).
//
// One per stream, reused; loop thread. Allocates nothing.
class HttpMessageCheck {
 public:
  // What the stream receives: requests (a server's stream) or responses (a
  // client's).
  enum class Role : uint8_t { kRequest, kResponse };
  enum class Verdict : uint8_t {
    kKeep,       // a valid field: the session uses it
    kIgnore,     // dropped, the message goes on (a 204's content-length)
    kMalformed,  // the stream must be reset; error() says why
  };

  explicit HttpMessageCheck(Role role) : role_(role) {}

  // A new stream.
  void Reset();
  // A header block starts: the request or response headers first, then
  // trailers.
  void BeginHeaders();
  // One field of the block.
  Verdict OnField(absl::string_view name, absl::string_view value);
  // The block is complete; `end_stream`: it ended the stream. False:
  // malformed.
  bool EndHeaders(bool end_stream);
  // `bytes` of DATA payload arrived. False: more than content-length.
  bool OnData(size_t bytes);
  // A DATA frame ended the stream. False: the DATA did not match
  // content-length.
  bool OnEndStream();

  // Why the last kMalformed or false was: a static string.
  absl::string_view error() const { return error_; }

 private:
  Verdict Malformed(const char* why) {
    error_ = why;
    return Verdict::kMalformed;
  }
  bool Fails(const char* why) {
    error_ = why;
    return false;
  }
  // The fields only requests, or only responses, have rules for: true when
  // `token` is one of them, with *verdict set.
  bool RequestOnlyField(int token, absl::string_view value, Verdict* verdict);
  bool ResponseOnlyField(int token, absl::string_view value, Verdict* verdict);
  // The rules both have (content-length, connection-specific fields, te,
  // unknown pseudo-headers).
  Verdict SharedField(int token, bool pseudo, absl::string_view value);
  // A pseudo-header's first appearance with a value: sets `flag`.
  bool FirstPseudoHeader(uint32_t flag, absl::string_view value);
  bool EndOfStream();

  const Role role_;
  uint32_t flags_ = 0;
  int blocks_ = 0;  // header blocks begun
  int status_code_ = -1;
  int64_t content_length_ = -1;  // -1: none
  int64_t received_ = 0;         // DATA payload bytes
  const char* error_ = "";
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_HTTP_MESSAGE_CHECK_H_
