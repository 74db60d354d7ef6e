#ifndef H2RPC_TRANSPORT_CORE_RESPONSE_SETUP_H_
#define H2RPC_TRANSPORT_CORE_RESPONSE_SETUP_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/header_list.h"

namespace h2rpc::transport {

// Header lists a server sends: response headers before its first message,
// trailers at the end, or a single Trailers-Only block for an immediate
// error. Like call_setup, each builder counts its fields first and reserves
// once; strings and metadata must outlive the HEADERS submission.

// What a server puts in its response headers.
struct ResponseDescription {
  // "content-type". Empty: application/grpc.
  absl::string_view content_type;
  // The origin of a browser's cross-origin call the server allows: the
  // CORS fields (CorsPolicy::AddResponseFields) follow the content-type.
  // Empty: none.
  absl::string_view cors_origin;
  // With cors_origin: the policy's CorsPolicy::exposed_headers().
  absl::string_view cors_exposed_headers;
  // "grpc-encoding" of the response messages. Empty or "identity": omitted.
  absl::string_view send_encoding;
  // "grpc-accept-encoding": the encodings the server accepts. Empty: omitted.
  absl::string_view accept_encodings;
  // The names of the two fields above (a Connect stream's differ). Literals.
  absl::string_view send_encoding_name = "grpc-encoding";
  absl::string_view accept_encodings_name = "grpc-accept-encoding";
  // Initial metadata. Null: none.
  const Metadata* metadata = nullptr;
};

// Exact field counts of the builders below.
size_t CountResponseHeaderFields(const ResponseDescription& response);
size_t CountTrailerFields(const Status& status, const Metadata* trailing);
size_t CountTrailersOnlyFields(const ResponseDescription& response,
                               const Status& status, const Metadata* trailing);

// :status 200, content-type (application/grpc unless described),
// [grpc-encoding], [grpc-accept-encoding], initial metadata. INTERNAL (naming
// the key) for invalid metadata, leaving `headers` untouched.
Status BuildResponseHeaders(const ResponseDescription& response,
                            HeaderList* headers);

// grpc-status, [grpc-message] (percent-encoded; omitted when empty),
// [grpc-status-details-bin] (unpadded base64; omitted when empty), trailing
// metadata. INTERNAL for invalid metadata, leaving `headers` untouched.
Status BuildTrailers(const Status& status, const Metadata* trailing,
                     HeaderList* headers);

// A Trailers-Only response, one HEADERS frame that ends the stream, for a call
// that fails before any message: :status 200, content-type,
// [grpc-accept-encoding] (so a client learns what the server takes after an
// UNIMPLEMENTED for its encoding), grpc-status, [grpc-message],
// [grpc-status-details-bin], initial then trailing metadata.
// `response.send_encoding` is ignored: no message follows. INTERNAL for
// invalid metadata, leaving `headers` untouched.
Status BuildTrailersOnly(const ResponseDescription& response,
                         const Status& status, const Metadata* trailing,
                         HeaderList* headers);

// The answer to a request that is not gRPC at all (e.g. HTTP 415 for a
// non-gRPC content-type): `:status http_status`, content-type:
// application/grpc, grpc-status and grpc-message from `status`, so gRPC
// clients and plain HTTP clients both learn why.
void BuildHttpErrorResponse(int http_status, const Status& status,
                            HeaderList* headers);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_RESPONSE_SETUP_H_
