#ifndef H2RPC_TRANSPORT_HTTP1_REQUEST_PARSER_H_
#define H2RPC_TRANSPORT_HTTP1_REQUEST_PARSER_H_

#include <http_parser.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "transport/core/header_field.h"
#include "transport/http1/http1_options.h"

namespace h2rpc::transport::http1 {

// The head of one HTTP/1.1 request: request line and header section.
// Header names are lowercased; the views point into the parser's storage
// and are valid during Handler::OnRequestHead only.
struct RequestHead {
  absl::string_view method;  // "POST"
  absl::string_view target;  // the request-target as sent
  int version_minor = 1;     // HTTP/1.<version_minor>
  std::vector<HeaderField> fields;
  // The request has a body (Content-Length above 0, or chunked).
  bool has_body = false;
  // Content-Length, when the request sent one.
  bool has_content_length = false;
  uint64_t content_length = 0;
};

// Parses the requests of one HTTP/1.1 connection with the Debian-packaged
// http_parser (nodejs/http-parser), which frames the messages
// (Content-Length, chunked bodies) and refuses ambiguous ones
// (Content-Length with chunked, a transfer coding other than chunked last,
// bare CR or LF where CRLF belongs). On top of it: size limits on the
// request line and the header section, HTTP/1.x only.
//
// Parse() stops after each complete request, so the caller answers it
// before the next one (pipelined requests are answered in order), and
// resumes on Resume().
//
// One thread. Allocates while a request's head is larger than any before it
// on this parser; its storage is reused across requests.
class RequestParser {
 public:
  class Handler {
   public:
    // The head is complete. The body (if any) follows; trailer fields of a
    // chunked body count against max_header_bytes and are dropped.
    virtual void OnRequestHead(const RequestHead& head) = 0;
    // Part of the body, decoded from chunked if it was; valid during the
    // call only.
    virtual void OnRequestBody(absl::string_view bytes) = 0;
    // The request is complete: Parse() returns right after this.
    virtual void OnRequestComplete() = 0;

   protected:
    ~Handler() = default;
  };

  // Limits from `options`: max_target_bytes (414 past it) and
  // max_header_bytes (431).
  RequestParser(Handler* handler, const Http1Options& options);
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Parses `bytes` and returns how many it consumed: all of them, unless a
  // request completed in them (the rest belongs to the next request: feed
  // it again after Resume()) or the input is not valid (failed()).
  size_t Parse(absl::string_view bytes);
  // After a complete request: parses the next one.
  void Resume();
  // Whether bytes of a request that is not complete have arrived: a
  // request's first byte up to its end.
  bool in_request() const { return in_request_; }
  // Whether the current request's head is complete.
  bool head_complete() const { return head_complete_; }
  // After OnRequestHead: whether the client lets the connection carry
  // another request after this one (HTTP/1.1 without Connection: close,
  // or HTTP/1.0 with keep-alive).
  bool keep_alive() const;

  // Set when Parse() found the input invalid: the HTTP status to answer
  // (400, 414, 431, 505) and why. The connection carries no further request.
  bool failed() const { return error_status_ != 0; }
  int error_status() const { return error_status_; }
  absl::string_view error_message() const { return error_message_; }

 private:
  struct FieldOffsets {
    size_t name_begin, name_size, value_begin, value_size;
  };

  static int OnMessageBegin(http_parser* parser);
  static int OnUrl(http_parser* parser, const char* at, size_t size);
  static int OnHeaderField(http_parser* parser, const char* at, size_t size);
  static int OnHeaderValue(http_parser* parser, const char* at, size_t size);
  static int OnHeadersComplete(http_parser* parser);
  static int OnBody(http_parser* parser, const char* at, size_t size);
  static int OnMessageComplete(http_parser* parser);

  // Fails the request with `status`; returns http_parser's "stop".
  int Fail(int status, absl::string_view message);
  bool HeaderBytesExceeded() const;

  Handler* const handler_;
  const size_t max_target_bytes_;
  const size_t max_header_bytes_;
  http_parser parser_;
  http_parser_settings settings_;
  // The method, the target, then each field's name and value.
  std::string storage_;
  size_t target_size_ = 0;
  std::vector<FieldOffsets> offsets_;
  bool value_in_progress_ = false;
  RequestHead head_;
  bool in_request_ = false;
  bool head_complete_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace h2rpc::transport::http1

#endif  // H2RPC_TRANSPORT_HTTP1_REQUEST_PARSER_H_
