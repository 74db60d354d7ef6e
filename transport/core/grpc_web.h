#ifndef H2RPC_TRANSPORT_CORE_GRPC_WEB_H_
#define H2RPC_TRANSPORT_CORE_GRPC_WEB_H_

#include <string>

#include "absl/strings/string_view.h"
#include "transport/core/header_list.h"

namespace h2rpc::transport {

// gRPC-Web (gRPC's PROTOCOL-WEB.md), as it differs from gRPC over HTTP/2:
// the request's content-type is application/grpc-web[+proto], echoed in the
// response; request and response messages are framed as in gRPC; the
// trailers travel at the end of the response body as one more
// length-prefixed frame whose flag byte is 0x80, holding the trailer fields
// as HTTP/1 header lines ("grpc-status:0\r\n"), and the body's end ends
// the response. A Trailers-Only response stays one header block.
//
// The text form (application/grpc-web-text[+proto]) carries the same
// bodies in base64, both ways: a body may be several padded base64 runs one
// after another (each sender's chunk encoded on its own).

// The content-types of a gRPC-Web response, binary and text.
inline constexpr char kGrpcWebProtoContentType[] = "application/grpc-web+proto";
inline constexpr char kGrpcWebTextProtoContentType[] =
    "application/grpc-web-text+proto";

// True for "application/grpc-web" and "application/grpc-web+proto", alone
// or followed by ';' parameters.
bool IsGrpcWebContentType(absl::string_view content_type);

// The same for the text form: "application/grpc-web-text[+proto]".
bool IsGrpcWebTextContentType(absl::string_view content_type);

// Replaces the bytes of `*buffer` from `from` on with their padded base64,
// in place. Allocates only if the buffer's capacity is short of the
// encoding.
void EncodeBase64PaddedInPlace(std::string* buffer, size_t from);

// Decodes a gRPC-Web text body arriving in chunks of any size: whole
// 4-character groups as they complete, a padded group ending one base64
// run and the next run starting after it. One per stream, on its thread.
class GrpcWebTextDecoder {
 public:
  // Appends the bytes of the groups `chunk` completes to `*out` (the rest
  // waits for the next chunk). False, and from then on, when the body is
  // not base64 (a character outside the standard alphabet, whitespace
  // included, or misplaced padding). Allocates only to grow `*out`.
  bool Decode(absl::string_view chunk, std::string* out);
  // No partial group waits: the body may end here.
  bool at_group_boundary() const { return pending_size_ == 0 && !failed_; }
  void Reset() {
    pending_size_ = 0;
    failed_ = false;
  }

 private:
  bool DecodeGroups(absl::string_view groups, std::string* out);

  char pending_[4];
  size_t pending_size_ = 0;
  bool failed_ = false;
};

// Bytes AppendGrpcWebTrailers appends for `trailers`.
size_t GrpcWebTrailersSize(const HeaderList& trailers);

// Appends `trailers` (as BuildTrailers makes them: validated, lowercase
// names, values encoded for HTTP) to `*out` as gRPC-Web's trailers frame:
// 0x80, the length (4 bytes, big-endian), then "name:value\r\n" per field.
// Allocates only to grow `*out`.
void AppendGrpcWebTrailers(const HeaderList& trailers, std::string* out);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_GRPC_WEB_H_
