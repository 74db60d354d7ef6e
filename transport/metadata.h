#ifndef H2RPC_TRANSPORT_METADATA_H_
#define H2RPC_TRANSPORT_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "transport/status.h"

namespace h2rpc::transport {

// An ordered list of gRPC metadata entries (key, value), duplicates allowed.
//
// All keys and values live in one flat byte buffer and the entry table holds
// offsets into it, so a Metadata of any size costs two allocations, none once
// Reserve()d or reused after Clear(). Values of keys ending in "-bin" are the
// raw binary bytes; base64 happens only on the wire.
//
// Add() does not validate: ValidateOutgoingMetadata() does, before a call
// starts, so a bad key fails that call with a clear status.
class Metadata {
 public:
  struct Entry {
    absl::string_view key;
    absl::string_view value;
  };

  Metadata() = default;

  // Makes room for `entries` more entries holding `bytes` more key and value
  // bytes, so the next Add()s up to those totals do not allocate.
  void Reserve(size_t entries, size_t bytes);

  void Add(absl::string_view key, absl::string_view value);

  // Appends an entry whose value has `value_size` bytes and returns a pointer
  // to write them; the pointer is valid until the next mutation. Used to
  // decode straight into the storage. ShrinkLastValue() trims the value.
  char* AddUninitialized(absl::string_view key, size_t value_size);
  void ShrinkLastValue(size_t value_size);

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  Entry operator[](size_t i) const;

  // First value for `key`, or nullopt.
  absl::optional<absl::string_view> Get(absl::string_view key) const;

  // Removes every entry, keeping the capacity for reuse.
  void Clear();

  size_t entry_capacity() const { return entries_.capacity(); }
  size_t byte_capacity() const { return bytes_.capacity(); }
  // Total key and value bytes held.
  size_t byte_size() const { return bytes_.size(); }

  class const_iterator {
   public:
    const_iterator(const Metadata* md, size_t i) : md_(md), i_(i) {}
    Entry operator*() const { return (*md_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const Metadata* md_;
    size_t i_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

 private:
  struct Slot {
    uint32_t offset;  // of the key in bytes_; the value follows it
    uint32_t key_size;
    uint32_t value_size;
  };
  std::string bytes_;
  std::vector<Slot> entries_;
};

// True for a key ending in "-bin", whose values are binary.
bool IsBinaryHeaderKey(absl::string_view key);

// True for a non-empty key made only of [0-9a-z_.-] (gRPC's rule; HTTP/2 also
// requires lowercase).
bool IsValidMetadataKey(absl::string_view key);

// True for a key the transport owns and users may not send: pseudo-headers,
// every "grpc-" name, te, content-type, user-agent (set on the channel), host,
// and HTTP/1 connection-specific headers that HTTP/2 forbids.
bool IsReservedMetadataKey(absl::string_view key);

// True when every byte of a non-binary value is printable ASCII (0x20-0x7E).
bool IsValidAsciiMetadataValue(absl::string_view value);

// Checks user metadata before a stream opens. Returns INTERNAL (as gRPC C++
// does) with a message naming the offending key for an invalid or reserved
// key, or a non-binary value with bytes outside 0x20-0x7E.
Status ValidateOutgoingMetadata(const Metadata& metadata);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_METADATA_H_
