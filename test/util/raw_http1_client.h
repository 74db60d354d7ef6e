#ifndef H2RPC_TEST_UTIL_RAW_HTTP1_CLIENT_H_
#define H2RPC_TEST_UTIL_RAW_HTTP1_CLIENT_H_

// A small blocking HTTP/1.1 client for tests that send a server exact bytes
// (pipelined, malformed, slow) and read back what it answers. Responses are
// parsed with Debian's http_parser (no h2rpc code): chunked bodies decoded,
// their trailer section kept apart, bodies that end with the connection
// ended by its close. Every wait is bounded by a timeout.
//
//   std::unique_ptr<RawHttp1Client> client = RawHttp1Client::Connect(port);
//   client->Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
//   absl::optional<Http1Response> response = client->ReadResponse();
//
// Single-threaded: use one client from one thread.

#include <http_parser.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace h2rpc::testing {

struct Http1Response {
  int status = 0;
  // Names lowercased, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  // Decoded from chunked if it was.
  std::string body;
  // A chunked body's trailer section.
  std::vector<std::pair<std::string, std::string>> trailers;
  // The client may send another request (keep-alive).
  bool keep_alive = false;

  // The first value of `name` (lowercase), or "" without one.
  std::string Header(absl::string_view name) const;
  std::string Trailer(absl::string_view name) const;
};

class RawHttp1Client {
 public:
  // Connected to 127.0.0.1:`port`, or null. `receive_buffer` > 0 sets
  // SO_RCVBUF first (a small window: a server's answers fill it soon).
  static std::unique_ptr<RawHttp1Client> Connect(int port,
                                                 int receive_buffer = 0);
  ~RawHttp1Client();
  RawHttp1Client(const RawHttp1Client&) = delete;
  RawHttp1Client& operator=(const RawHttp1Client&) = delete;

  // Sends all of `bytes`; false on an error (the server closed).
  bool Send(absl::string_view bytes);
  // Sends as much of `bytes` as the socket takes now without blocking;
  // returns how much (0 when it takes nothing, or on an error).
  size_t SendSome(absl::string_view bytes);
  // The next response, interim ones (100 Continue) included; nullopt when
  // none completes within `timeout` or the connection ends first (see
  // closed()). `head`: the response to a HEAD request (no body).
  absl::optional<Http1Response> ReadResponse(
      absl::Duration timeout = absl::Seconds(10), bool head = false);
  // Reads and drops what arrives until the server closes the connection;
  // false if it has not within `timeout`.
  bool WaitForClose(absl::Duration timeout = absl::Seconds(10));
  // The server closed the connection (end of file or reset).
  bool closed() const { return closed_; }
  // Closes this side now.
  void Close();

 private:
  explicit RawHttp1Client(int fd);
  // Reads what arrives by `deadline` into input_ (one look at least when
  // it has passed); false when nothing did or the connection closed.
  bool ReadMore(absl::Time deadline);

  static int OnHeaderField(http_parser* parser, const char* at, size_t size);
  static int OnHeaderValue(http_parser* parser, const char* at, size_t size);
  static int OnHeadersComplete(http_parser* parser);
  static int OnBody(http_parser* parser, const char* at, size_t size);
  static int OnMessageComplete(http_parser* parser);

  int fd_;
  bool closed_ = false;
  std::string input_;  // received, not parsed yet
  http_parser parser_;
  http_parser_settings settings_;
  Http1Response response_;
  bool in_trailers_ = false;
  bool value_next_ = false;
  bool complete_ = false;
  bool head_ = false;  // the response is to a HEAD request
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_RAW_HTTP1_CLIENT_H_
