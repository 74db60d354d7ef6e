#include "transport/core/grpc_web.h"

#include <cstdint>

namespace h2rpc::transport {
namespace {

constexpr absl::string_view kGrpcWeb = "application/grpc-web";
constexpr absl::string_view kProto = "+proto";
constexpr char kTrailersFlag = static_cast<char>(0x80);
constexpr size_t kPrefixSize = 5;

}  // namespace

bool IsGrpcWebContentType(absl::string_view content_type) {
  if (content_type.substr(0, kGrpcWeb.size()) != kGrpcWeb) return false;
  absl::string_view rest = content_type.substr(kGrpcWeb.size());
  if (rest.substr(0, kProto.size()) == kProto)
    rest.remove_prefix(kProto.size());
  return rest.empty() || rest.front() == ';';
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
