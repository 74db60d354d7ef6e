#ifndef H2RPC_TRANSPORT_CORE_HEADER_FIELD_H_
#define H2RPC_TRANSPORT_CORE_HEADER_FIELD_H_

#include "absl/strings/string_view.h"

namespace h2rpc::transport {

// One received HTTP/2 header field, as HPACK decoded it. The views point into
// storage the HTTP/2 session keeps alive (nghttp2 rcbufs) until the header
// block has been parsed.
struct HeaderField {
  absl::string_view name;
  absl::string_view value;
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_HEADER_FIELD_H_
