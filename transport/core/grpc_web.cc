#include "transport/core/grpc_web.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "transport/core/base64.h"

namespace h2rpc::transport {
namespace {

constexpr absl::string_view kGrpcWeb = "application/grpc-web";
constexpr absl::string_view kGrpcWebText = "application/grpc-web-text";
constexpr absl::string_view kProto = "+proto";
constexpr char kTrailersFlag = static_cast<char>(0x80);
constexpr size_t kPrefixSize = 5;

// `content_type` is `type`, `type`+proto, either alone or followed by ';'
// parameters.
bool IsTypeOrProto(absl::string_view content_type, absl::string_view type) {
  if (content_type.substr(0, type.size()) != type) return false;
  absl::string_view rest = content_type.substr(type.size());
  if (rest.substr(0, kProto.size()) == kProto) {
    rest.remove_prefix(kProto.size());
  }
  return rest.empty() || rest.front() == ';';
}

}  // namespace

bool IsGrpcWebContentType(absl::string_view content_type) {
  return IsTypeOrProto(content_type, kGrpcWeb);
}

bool IsGrpcWebTextContentType(absl::string_view content_type) {
  return IsTypeOrProto(content_type, kGrpcWebText);
}

void EncodeBase64PaddedInPlace(std::string* buffer, size_t from) {
  const size_t size = buffer->size() - from;
  const size_t groups = (size + 2) / 3;
  buffer->resize(from + groups * 4);
  char* const bytes = buffer->data() + from;
  // Last group first: group g's 4 characters land at 4g, past the 3 bytes
  // of every group before it, so no byte is overwritten before it is read.
  for (size_t g = groups; g-- > 0;) {
    const size_t length = std::min<size_t>(3, size - g * 3);
    char in[3];
    std::memcpy(in, bytes + g * 3, length);
    char out[4] = {'=', '=', '=', '='};
    Base64EncodeUnpadded(absl::string_view(in, length), out);
    std::memcpy(bytes + g * 4, out, 4);
  }
}

bool GrpcWebTextDecoder::DecodeGroups(absl::string_view groups,
                                      std::string* out) {
  const size_t start = out->size();
  out->resize(start + Base64MaxDecodedLength(groups.size()));
  const ptrdiff_t decoded = Base64Decode(groups, out->data() + start);
  if (decoded < 0) {
    out->resize(start);
    failed_ = true;
    return false;
  }
  out->resize(start + static_cast<size_t>(decoded));
  return true;
}

bool GrpcWebTextDecoder::Decode(absl::string_view chunk, std::string* out) {
  if (failed_) return false;
  while (!chunk.empty()) {
    if (pending_size_ > 0 || chunk.size() < 4) {
      const size_t take = std::min(4 - pending_size_, chunk.size());
      std::memcpy(pending_ + pending_size_, chunk.data(), take);
      pending_size_ += take;
      chunk.remove_prefix(take);
      if (pending_size_ < 4) break;
      pending_size_ = 0;
      if (!DecodeGroups(absl::string_view(pending_, 4), out)) return false;
      continue;
    }
    // Whole groups, up to and including the first padded one (padding may
    // only end a run).
    size_t run = chunk.size() / 4 * 4;
    const size_t pad = chunk.substr(0, run).find('=');
    if (pad != absl::string_view::npos) run = (pad / 4 + 1) * 4;
    if (!DecodeGroups(chunk.substr(0, run), out)) return false;
    chunk.remove_prefix(run);
  }
  return true;
}

size_t GrpcWebTrailersSize(const HeaderList& trailers) {
  size_t size = kPrefixSize;
  for (const nghttp2_nv& field : trailers.fields()) {
    size += field.namelen + 1 + field.valuelen + 2;
  }
  return size;
}

void AppendGrpcWebTrailers(const HeaderList& trailers, std::string* out) {
  const size_t start = out->size();
  const size_t size = GrpcWebTrailersSize(trailers);
  const uint32_t length = static_cast<uint32_t>(size - kPrefixSize);
  out->reserve(start + size);
  out->push_back(kTrailersFlag);
  out->push_back(static_cast<char>(length >> 24));
  out->push_back(static_cast<char>(length >> 16));
  out->push_back(static_cast<char>(length >> 8));
  out->push_back(static_cast<char>(length));
  for (const nghttp2_nv& field : trailers.fields()) {
    out->append(reinterpret_cast<const char*>(field.name), field.namelen);
    out->push_back(':');
    out->append(reinterpret_cast<const char*>(field.value), field.valuelen);
    out->append("\r\n");
  }
}

}  // namespace h2rpc::transport
