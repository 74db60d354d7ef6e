#ifndef H2RPC_TRANSPORT_CORE_RECEIVED_HEADERS_H_
#define H2RPC_TRANSPORT_CORE_RECEIVED_HEADERS_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/header_field.h"

namespace h2rpc::transport {

// Values of the transport-owned headers of one received header block (request
// headers, response headers or trailers). Views point into the HeaderFields
// given to ParseReceivedHeaders and are raw wire text: nothing is parsed or
// decoded here (grpc-status-details-bin stays base64, grpc-message stays
// percent-encoded). An absent header is nullopt; an empty one is "".
struct ReservedHeaderValues {
  absl::optional<absl::string_view> method;     // :method
  absl::optional<absl::string_view> scheme;     // :scheme
  absl::optional<absl::string_view> path;       // :path
  absl::optional<absl::string_view> authority;  // :authority
  absl::optional<absl::string_view> status;     // :status
  absl::optional<absl::string_view> content_type;
  absl::optional<absl::string_view> te;
  absl::optional<absl::string_view> user_agent;  // also kept in metadata
  absl::optional<absl::string_view> grpc_timeout;
  absl::optional<absl::string_view> grpc_encoding;
  absl::optional<absl::string_view> grpc_accept_encoding;
  absl::optional<absl::string_view> grpc_status;
  absl::optional<absl::string_view> grpc_message;
  absl::optional<absl::string_view> grpc_status_details_bin;
  absl::optional<absl::string_view> grpc_previous_rpc_attempts;
  // HTTP's and the Connect protocol's (transport/core/connect_protocol.h).
  absl::optional<absl::string_view> content_encoding;
  absl::optional<absl::string_view> accept_encoding;
  absl::optional<absl::string_view> connect_protocol_version;
  absl::optional<absl::string_view> connect_timeout_ms;
  absl::optional<absl::string_view> connect_content_encoding;
  absl::optional<absl::string_view> connect_accept_encoding;
};

// A "-bin" value split on ',' stores its key once per part. The extra key
// copies, summed over a header block, may not exceed the block's own size
// (names plus values) plus this many bytes, so a long key followed by a value
// of many commas cannot make the parse allocate far more than was received.
inline constexpr size_t kSplitBinaryKeyCopyAllowance = 8192;

// Splits one received header block into the transport-owned headers, captured
// in `*reserved` (reset first), and the user metadata, appended to `*metadata`
// (callers Clear() it) in the order received.
//
// Not copied to `metadata`: every pseudo-header (":..."; unknown ones are
// dropped), te, content-type, content-encoding, accept-encoding, every
// "grpc-" header (unknown grpc-* names are dropped), the Connect protocol's
// connect-protocol-version, connect-timeout-ms, connect-content-encoding
// and connect-accept-encoding, host, and the HTTP/1 connection-specific
// headers (connection, keep-alive, proxy-connection, transfer-encoding,
// upgrade). user-agent is captured and also kept in `metadata`, as gRPC
// servers expose it.
//
// A "-bin" value is split on ',' first (a peer or proxy may combine several
// values into one field), then each part, with surrounding spaces and tabs
// trimmed, is base64-decoded (padded or unpadded) into its own entry. Every
// part counts, so an empty value, or an empty part as in "AAAA,,BBBB", gives
// an entry with an empty value (as gRPC Go does). Other values are copied
// as they are: the sessions checked names and values against RFC 9113
// (HttpMessageCheck) as they arrived.
//
// Allocation: the block is scanned once to count user entries and bound
// their bytes, `metadata` is Reserve()d once, then filled. A fresh Metadata
// costs at most 2 allocations and ends with entry_capacity() equal to its
// entry count; one whose capacity suffices (e.g. reused after Clear()) costs
// none, as does a block without user metadata.
//
// A list of what the peer accepts (te, accept-encoding, grpc-accept-encoding,
// connect-accept-encoding) may be split over several fields: the first is
// captured and the rest ignored, since the first alone names what the peer
// takes.
//
// Errors (INTERNAL, naming the header): any other transport-owned header
// captured above that appears twice; a "-bin" part that is not valid base64; a
// "-bin" split exceeding kSplitBinaryKeyCopyAllowance. Duplicates and the split
// limit are found before `metadata` is touched; after a base64 error
// `metadata` holds an unspecified prefix of the block's entries, and callers
// fail the stream.
Status ParseReceivedHeaders(absl::Span<const HeaderField> fields,
                            ReservedHeaderValues* reserved, Metadata* metadata);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_RECEIVED_HEADERS_H_
