#ifndef H2RPC_TRANSPORT_CORE_GRPC_WEB_H_
#define H2RPC_TRANSPORT_CORE_GRPC_WEB_H_

#include <string>

#include "absl/strings/string_view.h"
#include "transport/core/header_list.h"

namespace h2rpc::transport {

// gRPC-Web (gRPC's PROTOCOL-WEB.md), binary form, as it differs from gRPC
// over HTTP/2: the request's content-type is application/grpc-web[+proto],
// echoed in the response; request and response messages are framed as in
// gRPC; the trailers travel at the end of the response body as one more
// length-prefixed frame whose flag byte is 0x80, holding the trailer fields
// as HTTP/1 header lines ("grpc-status:0\r\n"), and the body's end ends
// the response. A Trailers-Only response stays one header block.

// The content-type of a gRPC-Web response.
inline constexpr char kGrpcWebProtoContentType[] = "application/grpc-web+proto";

// True for "application/grpc-web" and "application/grpc-web+proto", alone
// or followed by ';' parameters.
bool IsGrpcWebContentType(absl::string_view content_type);

// Bytes AppendGrpcWebTrailers appends for `trailers`.
size_t GrpcWebTrailersSize(const HeaderList& trailers);

// Appends `trailers` (as BuildTrailers makes them: validated, lowercase
// names, values encoded for HTTP) to `*out` as gRPC-Web's trailers frame:
// 0x80, the length (4 bytes, big-endian), then "name:value\r\n" per field.
// Allocates only to grow `*out`.
void AppendGrpcWebTrailers(const HeaderList& trailers, std::string* out);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_GRPC_WEB_H_
