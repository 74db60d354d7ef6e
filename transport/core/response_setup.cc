#include "transport/core/response_setup.h"

#include <cstdint>

#include "transport/core/base64.h"
#include "transport/core/cors.h"
#include "transport/core/grpc_message.h"

namespace h2rpc::transport {
namespace {

constexpr absl::string_view kGrpcContentType = "application/grpc";

absl::string_view ContentType(const ResponseDescription& response) {
  return response.content_type.empty() ? kGrpcContentType
                                       : response.content_type;
}

size_t CorsFieldCount(const ResponseDescription& response) {
  return response.cors_origin.empty() ? 0 : CorsPolicy::kResponseFieldCount;
}

// The content-type, then the CORS fields if any.
void AddContentFields(const ResponseDescription& response,
                      HeaderList* headers) {
  headers->Add("content-type", ContentType(response));
  if (!response.cors_origin.empty()) {
    CorsPolicy::AddResponseFields(response.cors_origin,
                                  response.cors_exposed_headers, headers);
  }
}

bool SendsEncoding(const ResponseDescription& response) {
  return !response.send_encoding.empty() &&
         response.send_encoding != "identity";
}

size_t MetadataSize(const Metadata* metadata) {
  return metadata != nullptr ? metadata->size() : 0;
}

size_t MetadataScratch(const Metadata* metadata) {
  return metadata != nullptr ? HeaderList::MetadataScratchBytes(*metadata) : 0;
}

Status Validate(const Metadata* metadata) {
  return metadata != nullptr ? ValidateOutgoingMetadata(*metadata) : Status();
}

uint32_t WireCode(const Status& status) {
  return static_cast<uint32_t>(status.code());
}

// Fields grpc-status, [grpc-message], [grpc-status-details-bin].
size_t StatusFieldCount(const Status& status) {
  return 1 + !status.message().empty() + !status.details().empty();
}

size_t StatusScratch(const Status& status) {
  return HeaderList::DecimalDigits(WireCode(status)) +
         PercentEncodedLength(status.message()) +
         Base64UnpaddedLength(status.details().size());
}

void AddStatusFields(const Status& status, HeaderList* headers) {
  headers->AddDecimal("grpc-status", WireCode(status));
  if (!status.message().empty()) {
    PercentEncode(status.message(),
                  headers->AddScratchValue(
                      "grpc-message", PercentEncodedLength(status.message())));
  }
  if (!status.details().empty()) {
    Base64EncodeUnpadded(status.details(),
                         headers->AddScratchValue(
                             "grpc-status-details-bin",
                             Base64UnpaddedLength(status.details().size())));
  }
}

}  // namespace

size_t CountResponseHeaderFields(const ResponseDescription& response) {
  return 2 + CorsFieldCount(response) + SendsEncoding(response) +
         !response.accept_encodings.empty() + MetadataSize(response.metadata);
}

size_t CountTrailerFields(const Status& status, const Metadata* trailing) {
  return StatusFieldCount(status) + MetadataSize(trailing);
}

size_t CountTrailersOnlyFields(const ResponseDescription& response,
                               const Status& status, const Metadata* trailing) {
  return 2 + CorsFieldCount(response) + !response.accept_encodings.empty() +
         StatusFieldCount(status) + MetadataSize(response.metadata) +
         MetadataSize(trailing);
}

Status BuildResponseHeaders(const ResponseDescription& response,
                            HeaderList* headers) {
  Status valid = Validate(response.metadata);
  if (!valid.ok()) return valid;
  headers->Start(CountResponseHeaderFields(response),
                 MetadataScratch(response.metadata));
  headers->Add(":status", "200");
  AddContentFields(response, headers);
  if (SendsEncoding(response)) {
    headers->Add(response.send_encoding_name, response.send_encoding);
  }
  if (!response.accept_encodings.empty()) {
    headers->Add(response.accept_encodings_name, response.accept_encodings);
  }
  if (response.metadata != nullptr) headers->AddMetadata(*response.metadata);
  return Status();
}

Status BuildTrailers(const Status& status, const Metadata* trailing,
                     HeaderList* headers) {
  Status valid = Validate(trailing);
  if (!valid.ok()) return valid;
  headers->Start(CountTrailerFields(status, trailing),
                 StatusScratch(status) + MetadataScratch(trailing));
  AddStatusFields(status, headers);
  if (trailing != nullptr) headers->AddMetadata(*trailing);
  return Status();
}

Status BuildTrailersOnly(const ResponseDescription& response,
                         const Status& status, const Metadata* trailing,
                         HeaderList* headers) {
  Status valid = Validate(response.metadata);
  if (valid.ok()) valid = Validate(trailing);
  if (!valid.ok()) return valid;
  headers->Start(CountTrailersOnlyFields(response, status, trailing),
                 StatusScratch(status) + MetadataScratch(response.metadata) +
                     MetadataScratch(trailing));
  headers->Add(":status", "200");
  AddContentFields(response, headers);
  if (!response.accept_encodings.empty()) {
    headers->Add("grpc-accept-encoding", response.accept_encodings);
  }
  AddStatusFields(status, headers);
  if (response.metadata != nullptr) headers->AddMetadata(*response.metadata);
  if (trailing != nullptr) headers->AddMetadata(*trailing);
  return Status();
}

void BuildHttpErrorResponse(int http_status, const Status& status,
                            HeaderList* headers) {
  const uint32_t code = static_cast<uint32_t>(http_status);
  headers->Start(2 + StatusFieldCount(status),
                 HeaderList::DecimalDigits(code) + StatusScratch(status));
  headers->AddDecimal(":status", code);
  headers->Add("content-type", kGrpcContentType);
  AddStatusFields(status, headers);
}

}  // namespace h2rpc::transport
