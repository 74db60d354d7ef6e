#ifndef H2RPC_TRANSPORT_CORE_TESTING_HTTP_MESSAGE_ORACLE_H_
#define H2RPC_TRANSPORT_CORE_TESTING_HTTP_MESSAGE_ORACLE_H_

// nghttp2's own HTTP messaging checks as the oracle for HttpMessageCheck:
// one message (header blocks and DATA) is fed to an nghttp2 session with
// its checks on, and to an HttpMessageCheck, and the two verdicts compared.
// For the differential test and fuzzer only.

#include <string>
#include <utility>
#include <vector>

#include "transport/core/http_message_check.h"

namespace h2rpc::transport::testing {

// What one stream receives: header blocks (the first the request or
// response headers, later ones trailers, or a final response after an
// interim one), each optionally followed by DATA.
struct HttpMessage {
  struct Block {
    std::vector<std::pair<std::string, std::string>> fields;
    // DATA payload bytes after the block (none when 0).
    size_t data = 0;
    // END_STREAM on the last frame of this part (the DATA frame when there
    // is DATA, else the HEADERS frame); the message ends here.
    bool end_stream = false;
  };
  HttpMessageCheck::Role role;
  std::vector<Block> blocks;
};

// What a side made of the message.
struct HttpMessageOutcome {
  // The stream was reset with PROTOCOL_ERROR (a malformed message).
  bool malformed = false;
  // The fields passed on, block by block (until the stream was malformed).
  std::vector<std::vector<std::pair<std::string, std::string>>> kept;
  // The first reason given (HttpMessageCheck only).
  std::string error;

  bool operator==(const HttpMessageOutcome& other) const {
    return malformed == other.malformed && (malformed || kept == other.kept);
  }
};

// nghttp2 1.52's verdict: the message fed to a server session (requests) or
// to a client session that sent a request on stream 1 (responses).
HttpMessageOutcome Nghttp2Verdict(const HttpMessage& message);

// HttpMessageCheck's verdict, driven as h2rpc's sessions drive it.
HttpMessageOutcome CheckVerdict(const HttpMessage& message);

// A readable form of `message`, for failure messages.
std::string Describe(const HttpMessage& message);

}  // namespace h2rpc::transport::testing

#endif  // H2RPC_TRANSPORT_CORE_TESTING_HTTP_MESSAGE_ORACLE_H_
