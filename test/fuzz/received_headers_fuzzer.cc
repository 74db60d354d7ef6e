// Fuzzes ParseReceivedHeaders. The first input byte is the separator; the
// rest splits on it into name, value, name, value... (a trailing name gets an
// empty value). Checks that user metadata never holds a transport-owned
// header, that the entry table is sized exactly, that storage stays
// proportional to the input, that reserved values point into the input, and
// that reparsing into the cleared Metadata gives the same result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/header_field.h"
#include "transport/core/received_headers.h"

namespace {

using h2rpc::IsReservedMetadataKey;
using h2rpc::Metadata;
using h2rpc::Status;
using h2rpc::transport::HeaderField;
using h2rpc::transport::kSplitBinaryKeyCopyAllowance;
using h2rpc::transport::ParseReceivedHeaders;
using h2rpc::transport::ReservedHeaderValues;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckPointsInto(const absl::optional<absl::string_view>& v,
                     absl::string_view input) {
  if (!v.has_value() || v->empty()) return;
  Check(v->data() >= input.data() &&
        v->data() + v->size() <= input.data() + input.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char separator = static_cast<char>(data[0]);
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1,
                                size - 1);
  std::vector<HeaderField> fields;
  absl::string_view rest = input;
  while (!rest.empty()) {
    size_t end = rest.find(separator);
    const absl::string_view name = rest.substr(0, end);
    rest = end == absl::string_view::npos ? absl::string_view()
                                          : rest.substr(end + 1);
    end = rest.find(separator);
    const absl::string_view value = rest.substr(0, end);
    rest = end == absl::string_view::npos ? absl::string_view()
                                          : rest.substr(end + 1);
    fields.push_back(HeaderField{name, value});
  }

  ReservedHeaderValues reserved;
  Metadata metadata;
  const Status status = ParseReceivedHeaders(fields, &reserved, &metadata);

  // Storage is bounded by what was received: key copies of comma-split -bin
  // values are limited, decoded bytes are at most the encoded ones plus two
  // per part, one part per comma. (+32: std::string's minimum growth.)
  Check(metadata.byte_capacity() <=
        4 * input.size() + kSplitBinaryKeyCopyAllowance + 32);
  Check(metadata.entry_capacity() <= input.size() + fields.size());
  if (!status.ok()) {
    Check(status.code() == h2rpc::StatusCode::kInternal);
    Check(!status.message().empty());
    return 0;
  }

  Check(metadata.entry_capacity() == metadata.size());
  size_t user_agents = 0;
  for (Metadata::Entry entry : metadata) {
    if (entry.key == "user-agent") {
      ++user_agents;
      Check(reserved.user_agent.has_value() &&
            *reserved.user_agent == entry.value);
      continue;
    }
    Check(!IsReservedMetadataKey(entry.key));
  }
  Check(user_agents == (reserved.user_agent.has_value() ? 1 : 0));
  for (const auto* v :
       {&reserved.method, &reserved.scheme, &reserved.path, &reserved.authority,
        &reserved.status, &reserved.content_type, &reserved.te,
        &reserved.user_agent, &reserved.grpc_timeout, &reserved.grpc_encoding,
        &reserved.grpc_accept_encoding, &reserved.grpc_status,
        &reserved.grpc_message, &reserved.grpc_status_details_bin,
        &reserved.grpc_previous_rpc_attempts}) {
    CheckPointsInto(*v, input);
  }

  // Reuse: same result, no growth.
  std::vector<std::pair<std::string, std::string>> first;
  for (Metadata::Entry entry : metadata) {
    first.emplace_back(std::string(entry.key), std::string(entry.value));
  }
  const size_t entry_capacity = metadata.entry_capacity();
  const size_t byte_capacity = metadata.byte_capacity();
  metadata.Clear();
  ReservedHeaderValues again;
  Check(ParseReceivedHeaders(fields, &again, &metadata).ok());
  Check(metadata.entry_capacity() == entry_capacity);
  Check(metadata.byte_capacity() == byte_capacity);
  Check(metadata.size() == first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    Check(metadata[i].key == first[i].first);
    Check(metadata[i].value == first[i].second);
  }
  return 0;
}
