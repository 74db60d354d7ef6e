#include "transport/core/header_list.h"

#include <cassert>
#include <cstring>

#include "transport/core/base64.h"

namespace h2rpc::transport {
namespace {

uint8_t* AsBytes(const char* p) {
  return reinterpret_cast<uint8_t*>(const_cast<char*>(p));
}

}  // namespace

void HeaderList::Start(size_t field_count, size_t scratch_bytes) {
  fields_.clear();
  fields_.reserve(field_count);
  scratch_used_ = 0;
  // resize, not reserve: values are written through pointers into the buffer,
  // which must not move once a field points at it.
  if (scratch_.size() < scratch_bytes) scratch_.resize(scratch_bytes);
}

void HeaderList::Add(absl::string_view name, absl::string_view value,
                     uint8_t extra_flags) {
  assert(fields_.size() < fields_.capacity() && "more fields than announced");
  fields_.push_back(nghttp2_nv{
      AsBytes(name.data()), AsBytes(value.data()), name.size(), value.size(),
      static_cast<uint8_t>(NGHTTP2_NV_FLAG_NO_COPY_NAME |
                           NGHTTP2_NV_FLAG_NO_COPY_VALUE | extra_flags)});
}

char* HeaderList::AddScratchValue(absl::string_view name, size_t size,
                                  uint8_t extra_flags) {
  char* out = TakeScratch(size);
  Add(name, absl::string_view(out, size), extra_flags);
  return out;
}

void HeaderList::AddWithScratchValue(absl::string_view name,
                                     absl::string_view value,
                                     uint8_t extra_flags) {
  char* out = AddScratchValue(name, value.size(), extra_flags);
  if (!value.empty()) std::memcpy(out, value.data(), value.size());
}

size_t HeaderList::DecimalDigits(uint32_t value) {
  size_t digits = 1;
  while (value >= 10) {
    value /= 10;
    ++digits;
  }
  return digits;
}

void HeaderList::AddDecimal(absl::string_view name, uint32_t value,
                            uint8_t extra_flags) {
  const size_t digits = DecimalDigits(value);
  char* out = AddScratchValue(name, digits, extra_flags);
  for (size_t i = digits; i > 0; --i) {
    out[i - 1] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

char* HeaderList::TakeScratch(size_t size) {
  assert(scratch_used_ + size <= scratch_.size() && "scratch overflow");
  char* out = scratch_.data() + scratch_used_;
  scratch_used_ += size;
  return out;
}

size_t HeaderList::MetadataScratchBytes(const Metadata& metadata,
                                        absl::string_view name_prefix) {
  size_t bytes = 0;
  for (Metadata::Entry entry : metadata) {
    if (!name_prefix.empty()) bytes += name_prefix.size() + entry.key.size();
    if (IsBinaryHeaderKey(entry.key)) {
      bytes += Base64UnpaddedLength(entry.value.size());
    }
  }
  return bytes;
}

void HeaderList::AddMetadata(const Metadata& metadata,
                             absl::string_view name_prefix) {
  for (Metadata::Entry entry : metadata) {
    absl::string_view name = entry.key;
    if (!name_prefix.empty()) {
      char* out = TakeScratch(name_prefix.size() + entry.key.size());
      std::memcpy(out, name_prefix.data(), name_prefix.size());
      std::memcpy(out + name_prefix.size(), entry.key.data(), entry.key.size());
      name = absl::string_view(out, name_prefix.size() + entry.key.size());
    }
    if (!IsBinaryHeaderKey(entry.key)) {
      Add(name, entry.value);
      continue;
    }
    Base64EncodeUnpadded(
        entry.value,
        AddScratchValue(name, Base64UnpaddedLength(entry.value.size())));
  }
}

}  // namespace h2rpc::transport
