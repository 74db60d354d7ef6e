#include "transport/core/cors.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace h2rpc::transport {

CorsPolicy::CorsPolicy(std::vector<std::string> allowed_origins,
                       int max_age_seconds, bool allow_get,
                       const std::vector<std::string>& exposed_headers)
    : allowed_origins_(std::move(allowed_origins)),
      any_origin_(std::find(allowed_origins_.begin(), allowed_origins_.end(),
                            "*") != allowed_origins_.end()),
      max_age_(absl::StrCat(std::max(max_age_seconds, 0))),
      allow_get_(allow_get),
      exposed_headers_(
          exposed_headers.empty()
              ? std::string(kExposedHeaders)
              : absl::StrCat(kExposedHeaders, ", ",
                             absl::StrJoin(exposed_headers, ", "))) {}

bool CorsPolicy::Allows(absl::string_view origin) const {
  if (origin.empty()) return false;
  return any_origin_ ||
         std::find(allowed_origins_.begin(), allowed_origins_.end(), origin) !=
             allowed_origins_.end();
}

void CorsPolicy::BuildPreflightAnswer(absl::string_view origin,
                                      absl::string_view request_headers,
                                      HeaderList* headers) const {
  headers->Start(5 + !request_headers.empty(),
                 origin.size() + request_headers.size());
  headers->Add(":status", "204");
  headers->AddWithScratchValue("access-control-allow-origin", origin);
  headers->Add("access-control-allow-methods",
               allow_get_ ? "GET, POST" : "POST");
  if (!request_headers.empty()) {
    headers->AddWithScratchValue("access-control-allow-headers",
                                 request_headers);
  }
  headers->Add("access-control-max-age", max_age_);
  headers->Add("vary",
               "origin, access-control-request-method, "
               "access-control-request-headers");
}

void CorsPolicy::AddResponseFields(absl::string_view origin,
                                   absl::string_view exposed_headers,
                                   HeaderList* headers) {
  headers->Add("access-control-allow-origin", origin);
  headers->Add("access-control-expose-headers", exposed_headers);
  headers->Add("vary", "origin");
}

}  // namespace h2rpc::transport
