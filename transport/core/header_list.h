#ifndef H2RPC_TRANSPORT_CORE_HEADER_LIST_H_
#define H2RPC_TRANSPORT_CORE_HEADER_LIST_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/metadata.h"

namespace h2rpc::transport {

// An outgoing HTTP/2 header list in the form nghttp2_submit_* takes, built
// with an exact size known up front: Start() reserves the field vector and a
// scratch buffer once, so a list costs at most one allocation for the fields
// and one for the scratch (none when reused with enough capacity, none for
// scratch that fits the small-string buffer).
//
// Every field carries NGHTTP2_NV_FLAG_NO_COPY_NAME | NO_COPY_VALUE: nghttp2
// does not copy the bytes, so names must be static and values must outlive
// the submission of the HEADERS frame. Values the list derives itself (numbers,
// base64 of -bin metadata, percent-encoded messages) live in its scratch.
// The fields point into the object itself, so it cannot be copied or moved.
//
//   HeaderList list;
//   list.Start(/*field_count=*/2, /*scratch_bytes=*/0);
//   list.Add(":status", "200");
//   list.Add("content-type", "application/grpc");
//   nghttp2_submit_headers(..., list.fields().data(), list.fields().size(),
//   ...);
class HeaderList {
 public:
  HeaderList() = default;
  HeaderList(const HeaderList&) = delete;
  HeaderList& operator=(const HeaderList&) = delete;

  // Clears the list and makes room for exactly `field_count` fields and
  // `scratch_bytes` bytes of derived values. Adding more than announced is a
  // programming error (checked in debug builds).
  void Start(size_t field_count, size_t scratch_bytes);

  // Appends a field. `name` must be a lowercase literal or otherwise outlive
  // the list; `value` must outlive the HEADERS submission. `extra_flags` is
  // OR-ed in, e.g. NGHTTP2_NV_FLAG_NO_INDEX for values that change per call.
  void Add(absl::string_view name, absl::string_view value,
           uint8_t extra_flags = NGHTTP2_NV_FLAG_NONE);

  // Appends a field whose value is `size` bytes of the scratch reserved by
  // Start, and returns where to write those bytes.
  char* AddScratchValue(absl::string_view name, size_t size,
                        uint8_t extra_flags = NGHTTP2_NV_FLAG_NONE);

  // Appends a field whose value is copied into the scratch reserved by Start.
  void AddWithScratchValue(absl::string_view name, absl::string_view value,
                           uint8_t extra_flags = NGHTTP2_NV_FLAG_NONE);

  // Appends a field whose value is the decimal form of `value`, written into
  // DecimalDigits(value) bytes of the scratch.
  void AddDecimal(absl::string_view name, uint32_t value,
                  uint8_t extra_flags = NGHTTP2_NV_FLAG_NONE);
  static size_t DecimalDigits(uint32_t value);

  // Appends one field per metadata entry, in order; values of "-bin" keys are
  // base64-encoded (unpadded) into the scratch. With a `name_prefix` (a
  // lowercase literal), each name is the prefix then the key, written into
  // the scratch. The metadata must outlive the HEADERS submission.
  void AddMetadata(const Metadata& metadata,
                   absl::string_view name_prefix = {});

  // Scratch bytes AddMetadata needs for `metadata` and `name_prefix`.
  static size_t MetadataScratchBytes(const Metadata& metadata,
                                     absl::string_view name_prefix = {});

  absl::Span<const nghttp2_nv> fields() const { return fields_; }
  size_t size() const { return fields_.size(); }
  size_t capacity() const { return fields_.capacity(); }

 private:
  char* TakeScratch(size_t size);

  std::vector<nghttp2_nv> fields_;
  std::string scratch_;
  size_t scratch_used_ = 0;
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_HEADER_LIST_H_
