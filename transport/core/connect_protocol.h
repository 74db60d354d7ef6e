#ifndef H2RPC_TRANSPORT_CORE_CONNECT_PROTOCOL_H_
#define H2RPC_TRANSPORT_CORE_CONNECT_PROTOCOL_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/header_list.h"

namespace h2rpc::transport {

// The Connect protocol (connectrpc.com/docs/protocol), as it differs from
// gRPC.
//
// Unary form: a POST whose body is one unframed message, binary
// (application/proto) or JSON (application/json); Connect-Timeout-Ms for
// the deadline; Content-Encoding and Accept-Encoding for compression; and a
// response whose HTTP status says how the call ended: 200 with the response
// message as the body, or the error's status (ConnectHttpStatus) with a JSON
// body naming the code. The response's headers carry the initial metadata
// and, prefixed with "trailer-", the trailing metadata: nothing goes out
// before the call ends.
//
// Streaming form (application/connect+proto, application/connect+json):
// messages framed as gRPC's both ways (flag 0x01: compressed with
// Connect-Content-Encoding; Connect-Accept-Encoding lists what the client
// takes), the response always HTTP 200, and its body ending with one more
// frame, flagged 0x02, holding the end of the stream as JSON: the error,
// if any, and the trailing metadata.

// Whether `content_type` is a Connect unary request's ("application/proto"
// or "application/json", alone or followed by ';' parameters); sets `*json`
// for the second.
bool IsConnectUnaryContentType(absl::string_view content_type, bool* json);

// The content-types of a Connect unary response: the message's, and an
// error's.
inline constexpr char kConnectProtoContentType[] = "application/proto";
inline constexpr char kConnectJsonContentType[] = "application/json";

// Whether `content_type` is a Connect streaming request's
// ("application/connect+proto" or "application/connect+json", alone or
// followed by ';' parameters); sets `*json` for the second.
bool IsConnectStreamContentType(absl::string_view content_type, bool* json);

inline constexpr char kConnectStreamProtoContentType[] =
    "application/connect+proto";
inline constexpr char kConnectStreamJsonContentType[] =
    "application/connect+json";

// Connect-Timeout-Ms: 1 to 10 ASCII digits. nullopt for anything else.
absl::optional<absl::Duration> DecodeConnectTimeout(absl::string_view value);

// The Connect name of `code` ("invalid_argument"); "unknown" for OK (a
// Connect error never carries it) and for values outside the enum.
absl::string_view ConnectCodeName(StatusCode code);

// The HTTP status of a Connect error with `code` (the spec's table:
// INVALID_ARGUMENT 400, NOT_FOUND 404, UNAVAILABLE 503, ...); 200 for OK.
int ConnectHttpStatus(StatusCode code);

// A client's reading of a Connect unary response's headers (the metadata
// ParseReceivedHeaders left): "trailer-<key>" ones are appended to
// `*trailing` without the prefix, the others to `*initial`. Reserves each
// once: no allocation when their capacity suffices.
void SplitConnectResponseMetadata(const Metadata& headers, Metadata* initial,
                                  Metadata* trailing);

// A client's reading of a Connect unary response that is not 200: the code
// and message of its JSON error body; for a body that is not one (a proxy's
// page), the gRPC code of the HTTP status (GrpcCodeFromHttpStatus) and a
// message naming it. Allocates.
Status ConnectErrorFromBody(int http_status, absl::string_view body);

// One entry of a Connect error's details: a message of `type` (its full
// name, "google.rpc.ErrorInfo"), serialized.
struct ConnectErrorDetail {
  std::string type;
  std::string value;
};

// Appends the JSON body of a Connect error with `status`:
// {"code":"<name>","message":"<text>","details":[{"type":"...","value":
// "<base64>"}]}, the message omitted when empty and the details when there
// are none. Allocates.
void AppendConnectErrorJson(const Status& status,
                            const std::vector<ConnectErrorDetail>& details,
                            std::string* out);

// Appends the end of a Connect stream to `*out`: a frame flagged 0x02
// holding {"error": {"code": ..., "message": ...}, "metadata": {"key":
// ["value", ...]}}, the error omitted for OK and the metadata when there is
// none ("-bin" values in unpadded base64, as in headers). Allocates only to
// grow `*out` and to build the JSON.
void AppendConnectEndStream(const Status& status,
                            const std::vector<ConnectErrorDetail>& details,
                            const Metadata* trailing, std::string* out);

// What a server puts in a Connect unary response's headers.
struct ConnectResponseDescription {
  // 200, or ConnectHttpStatus of the error.
  int http_status = 200;
  // kConnectProtoContentType, kConnectJsonContentType (also the errors').
  absl::string_view content_type;
  // "content-encoding" of the body. Empty or "identity": omitted.
  absl::string_view content_encoding;
  // "accept-encoding": the encodings the server accepts. Empty: omitted.
  absl::string_view accept_encodings;
  // The origin of a browser's cross-origin call the server allows: the
  // CORS fields follow the content-type. Empty: none.
  absl::string_view cors_origin;
  // With cors_origin: the policy's CorsPolicy::exposed_headers().
  absl::string_view cors_exposed_headers;
  // Initial metadata, sent as they are, then trailing metadata, each name
  // prefixed with "trailer-". Null: none.
  const Metadata* metadata = nullptr;
  const Metadata* trailing = nullptr;
};

// :status, content-type, [content-encoding], [accept-encoding], [CORS
// fields], initial metadata, "trailer-" + trailing metadata. INTERNAL
// (naming the key) for invalid metadata, leaving `headers` untouched.
Status BuildConnectUnaryHeaders(const ConnectResponseDescription& response,
                                HeaderList* headers);

// What the Connect protocol needs to know of protobuf: messages converted
// between the binary form and the JSON mapping (application/json), error
// details read, and which methods its GET form may call (the rpc layer
// implements it with protobuf and the services' descriptors). Called on a
// connection's loop thread, from any number of loops at once.
class ConnectCodec {
 public:
  virtual ~ConnectCodec() = default;
  // The request message of `method` (a request's :path,
  // "/package.Service/Method"), from JSON into `*binary`. INVALID_ARGUMENT
  // for JSON that is not a request of the method; UNIMPLEMENTED when the
  // method's types are unknown.
  virtual Status RequestFromJson(absl::string_view method,
                                 absl::string_view json,
                                 std::string* binary) const = 0;
  // The response message of `method`, from binary into `*json`. INTERNAL
  // for bytes that are not a response of the method; UNIMPLEMENTED when
  // the method's types are unknown.
  virtual Status ResponseToJson(absl::string_view method,
                                absl::string_view binary,
                                std::string* json) const = 0;
  // The details of an error: Status::details(), a serialized
  // google.rpc.Status, whose `details` (google.protobuf.Any) become
  // `*out`. Nothing for bytes that are not one.
  virtual void ReadErrorDetails(absl::string_view status_details,
                                std::vector<ConnectErrorDetail>* out) const = 0;
  // Whether `method` is marked `option idempotency_level =
  // NO_SIDE_EFFECTS`: the only methods Connect's GET form may call.
  virtual bool HasNoSideEffects(absl::string_view method) const = 0;
};

// A Connect GET request (the unary form of a call without side effects):
// the request is in the query of its :path, "?encoding=proto|json&
// message=...[&base64=1][&compression=gzip][&connect=v1]", the message
// percent-encoded, and also URL-safe base64 with base64=1.
struct ConnectGetRequest {
  // :path before the '?'.
  absl::string_view method;
  // The request message as sent (compressed with `compression`).
  std::string message;
  bool json = false;
  // Empty: none.
  std::string compression;
};

// Reads a GET request's :path. INVALID_ARGUMENT naming what is missing or
// malformed (no query, no message or encoding, an unknown encoding, bad
// percent-encoding or base64, connect= other than v1). Allocates.
Status ParseConnectGetRequest(absl::string_view path, ConnectGetRequest* out);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_CONNECT_PROTOCOL_H_
