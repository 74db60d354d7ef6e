#ifndef H2RPC_BASE_METADATA_H_
#define H2RPC_BASE_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "base/status.h"

namespace h2rpc {

// An ordered list of gRPC metadata entries (key, value), duplicates allowed.
//
// All keys and values live in one flat byte buffer and the entry table holds
// offsets into it, so a Metadata holds at most two heap blocks. Reserve() with
// the final totals makes the next Add()s allocation-free (two allocations for
// a fresh object, none when the capacity is already there, e.g. reused after
// Clear()); without it Add() grows both geometrically. Values of keys ending
// in "-bin" are the raw binary bytes; base64 happens only on the wire.
//
// Add() does not validate: ValidateOutgoingMetadata() does, before a call
// starts, so a bad key fails that call with a clear status. Total key and
// value bytes are limited to 4 GiB - 1 (offsets are 32-bit); exceeding it
// aborts. The transport's header-list limits keep real metadata far below.
class Metadata {
 public:
  // Views into the Metadata, valid until its next mutation.
  struct Entry {
    absl::string_view key;
    absl::string_view value;
  };

  Metadata() = default;

  // Makes room for `entries` more entries holding `bytes` more key and value
  // bytes, so the next Add()s up to those totals do not allocate. Reserves
  // exactly (like std::vector::reserve): a fresh Metadata ends up with
  // entry_capacity() == entries. Does nothing when the capacity suffices.
  void Reserve(size_t entries, size_t bytes);

  // Appends (key, value), copying both. They may point into this Metadata.
  void Add(absl::string_view key, absl::string_view value);

  // Appends an entry whose value has `value_size` bytes and returns a pointer
  // to write them; the pointer is valid until the next mutation. Used to
  // decode straight into the storage. ShrinkLastValue() trims the value.
  // The bytes are zeroed until written. `key` may point into this Metadata.
  char* AddUninitialized(absl::string_view key, size_t value_size);

  // Trims the last entry's value to its first `value_size` bytes, keeping the
  // capacity. Requires a last entry whose value has at least `value_size`
  // bytes; aborts otherwise.
  void ShrinkLastValue(size_t value_size);

  // Number of entries.
  size_t size() const { return entries_.size(); }
  // True when there are no entries.
  bool empty() const { return entries_.empty(); }
  // The i-th entry in insertion order. Requires i < size().
  Entry operator[](size_t i) const;

  // First value for `key` (exact, case-sensitive match), or nullopt.
  absl::optional<absl::string_view> Get(absl::string_view key) const;

  // Removes every entry, keeping the capacity for reuse.
  void Clear();

  // Entries and key+value bytes that fit without allocating.
  size_t entry_capacity() const { return entries_.capacity(); }
  size_t byte_capacity() const { return bytes_.capacity(); }
  // Total key and value bytes held.
  size_t byte_size() const { return bytes_.size(); }

  // Iterates the entries in insertion order, yielding Entry by value.
  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Entry;

    const_iterator(const Metadata* md, size_t i) : md_(md), i_(i) {}
    Entry operator*() const { return (*md_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++i_;
      return old;
    }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const Metadata* md_;
    size_t i_;
  };
  using value_type = Entry;
  using iterator = const_iterator;
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

 private:
  struct Slot {
    uint32_t offset;  // of the key in bytes_; the value follows it
    uint32_t key_size;
    uint32_t value_size;
  };

  // Appends `key` and then `value_size` bytes (copied from `value` when it is
  // non-null, zeroed otherwise) plus the slot; returns the slot's offset.
  uint32_t Append(absl::string_view key, const char* value, size_t value_size);

  std::string bytes_;
  std::vector<Slot> entries_;
};

// True for a key ending in "-bin", whose values are binary.
bool IsBinaryHeaderKey(absl::string_view key);

// True for a non-empty key made only of [0-9a-z_.-] (gRPC's rule; HTTP/2 also
// requires lowercase).
bool IsValidMetadataKey(absl::string_view key);

// True for a key the transport owns and users may not send: pseudo-headers
// (":..."), every "grpc-" name but grpc-retry-pushback-ms (a server's
// trailer that steers the client's retries, gRPC's A6), te, content-type,
// user-agent (set on the channel), host, and the HTTP/1 connection-specific
// headers HTTP/2 forbids (connection, keep-alive, proxy-connection,
// transfer-encoding, upgrade). Case-sensitive: HTTP/2 names are lowercase, and
// IsValidMetadataKey() rejects any other.
bool IsReservedMetadataKey(absl::string_view key);

// True when every byte of a non-binary value is printable ASCII (0x20-0x7E).
// The empty value is valid.
bool IsValidAsciiMetadataValue(absl::string_view value);

// Checks user metadata before a stream opens. Returns INTERNAL (as gRPC C++
// does) with a message naming the offending key for an invalid or reserved
// key, or a non-binary value with bytes outside 0x20-0x7E. Values of "-bin"
// keys may hold any bytes. Allocates only to build an error.
Status ValidateOutgoingMetadata(const Metadata& metadata);

}  // namespace h2rpc

#endif  // H2RPC_BASE_METADATA_H_
