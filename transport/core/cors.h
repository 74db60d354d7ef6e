#ifndef H2RPC_TRANSPORT_CORE_CORS_H_
#define H2RPC_TRANSPORT_CORE_CORS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "transport/core/header_list.h"

namespace h2rpc::transport {

// Which web pages may call a server from a browser (CORS, the Fetch
// standard): the origins allowed, and how the server answers a browser's
// preflight (an OPTIONS request asking whether a cross-origin call may be
// made) and marks the responses to allowed origins. Immutable once built;
// shared by a server's connections. Any thread.
class CorsPolicy {
 public:
  // `allowed_origins`: exact origins ("https://app.example.com",
  // "http://127.0.0.1:8080"), or "*" for any. `max_age_seconds`: how long
  // a browser may cache a preflight's answer. `allow_get`: GET is allowed
  // besides POST (Connect's GET form). `exposed_headers`: response fields
  // of the application's (metadata) that the pages may read, besides the
  // protocols' own (kExposedHeaders).
  CorsPolicy(std::vector<std::string> allowed_origins, int max_age_seconds,
             bool allow_get = false,
             const std::vector<std::string>& exposed_headers = {});

  // The response fields of gRPC-Web and Connect that a page's client
  // reads: the status fields of gRPC-Web (when not in the body) and the
  // encoding of Connect's stream messages.
  static constexpr absl::string_view kExposedHeaders =
      "grpc-status, grpc-message, grpc-status-details-bin, "
      "connect-content-encoding, connect-accept-encoding";
  // access-control-expose-headers' value: kExposedHeaders, then the
  // application's.
  absl::string_view exposed_headers() const { return exposed_headers_; }

  // Whether a page of `origin` may call.
  bool Allows(absl::string_view origin) const;

  // The answer to an allowed preflight (204, no body): :status,
  // access-control-allow-origin (`origin`), -allow-methods (POST, and GET
  // if allowed),
  // -allow-headers (`request_headers`, what the browser asked for, when
  // not empty), -max-age, vary. `origin` and `request_headers` are copied
  // into the list.
  void BuildPreflightAnswer(absl::string_view origin,
                            absl::string_view request_headers,
                            HeaderList* headers) const;
  // How many fields AddResponseFields adds.
  static constexpr size_t kResponseFieldCount = 3;
  // The fields of a response to an allowed origin's call:
  // access-control-allow-origin (`origin`), access-control-expose-headers
  // (`exposed_headers`: a policy's exposed_headers()), vary. Both views
  // must outlive the submission.
  static void AddResponseFields(absl::string_view origin,
                                absl::string_view exposed_headers,
                                HeaderList* headers);

 private:
  const std::vector<std::string> allowed_origins_;
  const bool any_origin_;
  const std::string max_age_;
  const bool allow_get_;
  const std::string exposed_headers_;
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_CORS_H_
