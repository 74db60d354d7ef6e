#include "transport/core/received_headers.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "transport/core/base64.h"

namespace h2rpc::transport {
namespace {

// What happens to a received header.
enum class Disposition {
  kUser,             // copied to metadata
  kCaptured,         // stored in ReservedHeaderValues only
  kCapturedFirst,    // the same, a repeat ignored (lists of what a peer takes)
  kCapturedAndKept,  // both (user-agent)
  kDropped,          // neither
};

struct Classification {
  Disposition disposition;
  absl::optional<absl::string_view>* slot;  // for the kCaptured* ones
};

Classification Captured(absl::optional<absl::string_view>* slot) {
  return {Disposition::kCaptured, slot};
}

// A list of what the peer accepts may arrive split over several fields; the
// first one alone names encodings it accepts, so answering from it is always
// acceptable to the peer.
Classification CapturedFirst(absl::optional<absl::string_view>* slot) {
  return {Disposition::kCapturedFirst, slot};
}

constexpr Classification kUser = {Disposition::kUser, nullptr};
constexpr Classification kDropped = {Disposition::kDropped, nullptr};

Classification ClassifyPseudoHeader(absl::string_view name,
                                    ReservedHeaderValues* r) {
  if (name == ":method") return Captured(&r->method);
  if (name == ":scheme") return Captured(&r->scheme);
  if (name == ":path") return Captured(&r->path);
  if (name == ":authority") return Captured(&r->authority);
  if (name == ":status") return Captured(&r->status);
  return kDropped;
}

// `suffix` is the name after "grpc-".
Classification ClassifyGrpcHeader(absl::string_view suffix,
                                  ReservedHeaderValues* r) {
  if (suffix == "status") return Captured(&r->grpc_status);
  if (suffix == "message") return Captured(&r->grpc_message);
  if (suffix == "timeout") return Captured(&r->grpc_timeout);
  if (suffix == "encoding") return Captured(&r->grpc_encoding);
  if (suffix == "accept-encoding") {
    return CapturedFirst(&r->grpc_accept_encoding);
  }
  if (suffix == "status-details-bin") {
    return Captured(&r->grpc_status_details_bin);
  }
  if (suffix == "previous-rpc-attempts") {
    return Captured(&r->grpc_previous_rpc_attempts);
  }
  // A server's word on retrying the call (gRPC's A6): the channel's retry
  // logic reads it from the trailing metadata.
  if (suffix == "retry-pushback-ms") return kUser;
  return kDropped;
}

Classification Classify(absl::string_view name, ReservedHeaderValues* r) {
  if (name.empty()) return kUser;
  if (name[0] == ':') return ClassifyPseudoHeader(name, r);
  if (name[0] == 'g' && absl::StartsWith(name, "grpc-")) {
    return ClassifyGrpcHeader(name.substr(5), r);
  }
  switch (name.size()) {
    case 2:
      if (name == "te") return CapturedFirst(&r->te);
      break;
    case 4:
      if (name == "host") return kDropped;
      break;
    case 7:
      if (name == "upgrade") return kDropped;
      break;
    case 10:
      if (name == "user-agent") {
        return {Disposition::kCapturedAndKept, &r->user_agent};
      }
      if (name == "connection" || name == "keep-alive") return kDropped;
      break;
    case 12:
      if (name == "content-type") return Captured(&r->content_type);
      break;
    case 15:
      if (name == "accept-encoding") return CapturedFirst(&r->accept_encoding);
      break;
    case 16:
      if (name == "proxy-connection") return kDropped;
      if (name == "content-encoding") return Captured(&r->content_encoding);
      break;
    case 17:
      if (name == "transfer-encoding") return kDropped;
      break;
    case 18:
      if (name == "connect-timeout-ms") return Captured(&r->connect_timeout_ms);
      break;
    case 23:
      if (name == "connect-accept-encoding") {
        return CapturedFirst(&r->connect_accept_encoding);
      }
      break;
    case 24:
      if (name == "connect-protocol-version") {
        return Captured(&r->connect_protocol_version);
      }
      if (name == "connect-content-encoding") {
        return Captured(&r->connect_content_encoding);
      }
      break;
  }
  return kUser;
}

bool GoesToMetadata(Disposition d) {
  return d == Disposition::kUser || d == Disposition::kCapturedAndKept;
}

// One part of a comma-split "-bin" value, without surrounding spaces/tabs.
absl::string_view TrimOws(absl::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// True if `name` must be escaped to go into an error message (a peer's bytes
// end up in logs).
bool NeedsEscaping(absl::string_view name) {
  for (char c : name) {
    if (c < 0x20 || c > 0x7E || c == '\\' || c == '\'') return true;
  }
  return false;
}

// INTERNAL "received header '<name>' <what...>", built in one allocation for
// a printable name.
template <typename... What>
Status Error(absl::string_view name, const What&... what) {
  std::string escaped;
  if (NeedsEscaping(name)) {
    escaped = absl::CHexEscape(name);
    name = escaped;
  }
  return Status(StatusCode::kInternal,
                absl::StrCat("received header '", name, "' ", what...));
}

}  // namespace

Status ParseReceivedHeaders(absl::Span<const HeaderField> fields,
                            ReservedHeaderValues* reserved,
                            Metadata* metadata) {
  *reserved = ReservedHeaderValues();

  // Pass 1: capture reserved values, count user entries and bound their bytes.
  size_t block_bytes = 0;
  for (const HeaderField& f : fields) {
    block_bytes += f.name.size() + f.value.size();
  }
  const size_t key_copy_limit = block_bytes + kSplitBinaryKeyCopyAllowance;
  size_t entries = 0;
  size_t bytes = 0;
  size_t key_copies = 0;
  for (const HeaderField& f : fields) {
    const Classification c = Classify(f.name, reserved);
    if (c.slot != nullptr) {
      if (!c.slot->has_value()) {
        *c.slot = f.value;
      } else if (c.disposition != Disposition::kCapturedFirst) {
        return Error(f.name, "appears more than once");
      }
    }
    if (!GoesToMetadata(c.disposition)) continue;
    if (!IsBinaryHeaderKey(f.name)) {
      ++entries;
      bytes += f.name.size() + f.value.size();
      continue;
    }
    const size_t parts = 1 + static_cast<size_t>(std::count(
                                 f.value.begin(), f.value.end(), ','));
    key_copies += (parts - 1) * f.name.size();
    if (key_copies > key_copy_limit) {
      return Error(f.name, "has ", parts,
                   " comma-separated values: storing its key for each would "
                   "exceed the limit of ",
                   key_copy_limit, " repeated key bytes (the block's size + ",
                   kSplitBinaryKeyCopyAllowance, ")");
    }
    entries += parts;
    // Each part p decodes to at most Base64MaxDecodedLength(|p|) =
    // |p|/4*3 + 2 bytes, and the parts' sizes sum to at most |value|.
    bytes += parts * (f.name.size() + 2) + f.value.size() / 4 * 3;
  }
  if (entries == 0) return Status();

  // Pass 2: fill.
  metadata->Reserve(entries, bytes);
  for (const HeaderField& f : fields) {
    if (!GoesToMetadata(Classify(f.name, reserved).disposition)) continue;
    if (!IsBinaryHeaderKey(f.name)) {
      metadata->Add(f.name, f.value);
      continue;
    }
    absl::string_view rest = f.value;
    for (size_t part = 1;; ++part) {
      const size_t comma = rest.find(',');
      const absl::string_view encoded = TrimOws(rest.substr(0, comma));
      char* out = metadata->AddUninitialized(
          f.name, Base64MaxDecodedLength(encoded.size()));
      const ptrdiff_t decoded = Base64Decode(encoded, out);
      if (decoded < 0) {
        metadata->ShrinkLastValue(0);
        if (part == 1 && comma == absl::string_view::npos) {
          return Error(f.name, "has a value that is not valid base64");
        }
        return Error(f.name, "has a comma-separated value (number ", part,
                     ") that is not valid base64");
      }
      metadata->ShrinkLastValue(static_cast<size_t>(decoded));
      if (comma == absl::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return Status();
}

}  // namespace h2rpc::transport
