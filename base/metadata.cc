#include "base/metadata.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace h2rpc {
namespace {

constexpr size_t kMaxBytes = std::numeric_limits<uint32_t>::max();

}  // namespace

void Metadata::Reserve(size_t entries, size_t bytes) {
  if (entries > entries_.capacity() - entries_.size()) {
    entries_.reserve(entries_.size() + entries);
  }
  if (bytes > bytes_.capacity() - bytes_.size()) {
    bytes_.reserve(bytes_.size() + bytes);
  }
}

uint32_t Metadata::Append(absl::string_view key, const char* value,
                          size_t value_size) {
  const size_t offset = bytes_.size();
  if (key.size() > kMaxBytes || value_size > kMaxBytes ||
      key.size() + value_size > kMaxBytes - offset) {
    std::abort();
  }
  const size_t needed = offset + key.size() + value_size;
  if (needed > bytes_.capacity()) {
    // Grow into a new buffer before releasing the old one: `key` and `value`
    // may point into it.
    std::string grown;
    grown.reserve(std::max(needed, 2 * bytes_.capacity()));
    grown.append(bytes_);
    grown.append(key.data(), key.size());
    if (value != nullptr) {
      grown.append(value, value_size);
    } else {
      grown.append(value_size, '\0');
    }
    bytes_.swap(grown);
  } else {
    // No reallocation: sources inside bytes_ lie before the append point.
    bytes_.append(key.data(), key.size());
    if (value != nullptr) {
      bytes_.append(value, value_size);
    } else {
      bytes_.append(value_size, '\0');
    }
  }
  // Filled in place: building a Slot on the stack and copying it made the
  // copy's 8-byte load miss store forwarding, the hottest spot of a parse.
  Slot& slot = entries_.emplace_back();
  slot.offset = static_cast<uint32_t>(offset);
  slot.key_size = static_cast<uint32_t>(key.size());
  slot.value_size = static_cast<uint32_t>(value_size);
  return static_cast<uint32_t>(offset);
}

void Metadata::Add(absl::string_view key, absl::string_view value) {
  // A default-constructed `value` has a null data() and size 0: appending
  // zero zeroed bytes is the same thing.
  Append(key, value.data(), value.size());
}

char* Metadata::AddUninitialized(absl::string_view key, size_t value_size) {
  const uint32_t offset = Append(key, nullptr, value_size);
  return bytes_.data() + offset + key.size();
}

void Metadata::ShrinkLastValue(size_t value_size) {
  if (entries_.empty() || value_size > entries_.back().value_size) {
    std::abort();
  }
  Slot& last = entries_.back();
  bytes_.resize(bytes_.size() - (last.value_size - value_size));
  last.value_size = static_cast<uint32_t>(value_size);
}

Metadata::Entry Metadata::operator[](size_t i) const {
  const Slot& slot = entries_[i];
  const char* key = bytes_.data() + slot.offset;
  return Entry{absl::string_view(key, slot.key_size),
               absl::string_view(key + slot.key_size, slot.value_size)};
}

absl::optional<absl::string_view> Metadata::Get(absl::string_view key) const {
  for (const Slot& slot : entries_) {
    if (slot.key_size != key.size()) continue;
    const char* k = bytes_.data() + slot.offset;
    if (key.empty() || std::memcmp(k, key.data(), key.size()) == 0) {
      return absl::string_view(k + slot.key_size, slot.value_size);
    }
  }
  return absl::nullopt;
}

void Metadata::Clear() {
  bytes_.clear();
  entries_.clear();
}

bool IsBinaryHeaderKey(absl::string_view key) {
  return absl::EndsWith(key, "-bin");
}

bool IsValidMetadataKey(absl::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsReservedMetadataKey(absl::string_view key) {
  if (key.empty()) return false;
  if (key[0] == ':') return true;
  if (absl::StartsWith(key, "grpc-")) return key != "grpc-retry-pushback-ms";
  switch (key.size()) {
    case 2:
      return key == "te";
    case 4:
      return key == "host";
    case 7:
      return key == "upgrade";
    case 10:
      return key == "user-agent" || key == "connection" || key == "keep-alive";
    case 12:
      return key == "content-type";
    case 16:
      return key == "proxy-connection";
    case 17:
      return key == "transfer-encoding";
    default:
      return false;
  }
}

bool IsValidAsciiMetadataValue(absl::string_view value) {
  for (char c : value) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7E) return false;
  }
  return true;
}

Status ValidateOutgoingMetadata(const Metadata& metadata) {
  for (Metadata::Entry entry : metadata) {
    if (!IsValidMetadataKey(entry.key)) {
      return Status(
          StatusCode::kInternal,
          absl::StrCat("metadata key '", absl::CHexEscape(entry.key),
                       "' is invalid: keys may contain only "
                       "[0-9a-z_.-]",
                       entry.key.empty() ? " and may not be empty" : ""));
    }
    if (IsReservedMetadataKey(entry.key)) {
      return Status(StatusCode::kInternal,
                    absl::StrCat("metadata key '", entry.key,
                                 "' is reserved for the transport"));
    }
    if (IsBinaryHeaderKey(entry.key)) continue;
    for (size_t i = 0; i < entry.value.size(); ++i) {
      const unsigned char u = static_cast<unsigned char>(entry.value[i]);
      if (u < 0x20 || u > 0x7E) {
        return Status(
            StatusCode::kInternal,
            absl::StrFormat("metadata value of key '%s' has a byte outside "
                            "0x20-0x7E (0x%02X at offset %d); use a key "
                            "ending in -bin for binary values",
                            entry.key, u, i));
      }
    }
  }
  return Status();
}

}  // namespace h2rpc
