// Fuzzes what the web protocols parse of a peer's request outside HTTP/2
// and protobuf: gRPC-Web's text bodies, Connect's GET query and its
// timeout header. The first input byte picks the parser and, for text
// bodies, the chunk size. Invariants:
//  * GrpcWebTextDecoder decodes a body fed in chunks of any size as it
//    decodes it whole (same verdict, same bytes), at most 3 bytes per 4
//    characters; what it decodes, encoded again (EncodeBase64PaddedInPlace),
//    decodes back to itself.
//  * ParseConnectGetRequest never crashes; when it accepts, the method is
//    the path before its '?'.
//  * DecodeConnectTimeout accepts 1 to 10 digits only.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "transport/core/connect_protocol.h"
#include "transport/core/grpc_web.h"

namespace {

using h2rpc::transport::ConnectGetRequest;
using h2rpc::transport::GrpcWebTextDecoder;

void Check(bool condition) {
  if (!condition) abort();
}

void FuzzTextBody(absl::string_view body, size_t chunk) {
  GrpcWebTextDecoder whole;
  std::string whole_out;
  const bool whole_ok = whole.Decode(body, &whole_out);
  GrpcWebTextDecoder chunked;
  std::string chunked_out;
  bool chunked_ok = true;
  for (size_t at = 0; at < body.size() && chunked_ok; at += chunk) {
    chunked_ok = chunked.Decode(body.substr(at, chunk), &chunked_out);
  }
  Check(whole_ok == chunked_ok);
  if (!whole_ok) return;
  Check(whole_out == chunked_out);
  Check(whole.at_group_boundary() == chunked.at_group_boundary());
  Check(whole_out.size() <= body.size() / 4 * 3);
  std::string encoded = whole_out;
  h2rpc::transport::EncodeBase64PaddedInPlace(&encoded, 0);
  GrpcWebTextDecoder again;
  std::string decoded;
  Check(again.Decode(encoded, &decoded));
  Check(again.at_group_boundary());
  Check(decoded == whole_out);
}

void FuzzGetPath(absl::string_view path) {
  ConnectGetRequest request;
  if (!h2rpc::transport::ParseConnectGetRequest(path, &request).ok()) return;
  const size_t question = path.find('?');
  Check(question != absl::string_view::npos);
  Check(request.method == path.substr(0, question));
}

void FuzzTimeout(absl::string_view value) {
  if (!h2rpc::transport::DecodeConnectTimeout(value).has_value()) return;
  Check(!value.empty() && value.size() <= 10);
  for (char c : value) Check(c >= '0' && c <= '9');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1,
                                size - 1);
  switch (control % 3) {
    case 0:
      FuzzTextBody(input, size_t{1} + control / 3 % 16);
      break;
    case 1:
      FuzzGetPath(input);
      break;
    default:
      FuzzTimeout(input);
      break;
  }
  return 0;
}
